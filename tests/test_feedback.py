import numpy as np
import pytest
import torch

from helpers.exercises.feedback import (
    Feedback,
    Solution,
    as_numbers,
    call_student,
    compare_numbers,
    correct,
    numbers_from,
    one_number,
    require_callable,
    wrong,
)


def test_feedback_prints_a_verdict_and_refuses_truthiness():
    assert repr(correct("well done")) == "✅ Correct: well done"
    assert repr(wrong("shape")) == "❌ Not yet: shape"
    assert "Not yet" in wrong("x")._repr_html_()
    with pytest.raises(TypeError, match="use feedback.passed"):
        bool(wrong("x"))
    assert "&lt;b&gt;" in Feedback(False, "<b>")._repr_html_()


def test_solution_is_folded_in_html_and_plain_in_text():
    def reference():
        return 42

    s = Solution.from_function("answer", reference, "because")
    assert "<details>" in s._repr_html_()
    assert repr(s).startswith("Solution: answer\n\ndef reference():")
    assert repr(s).endswith("because")


def test_require_callable_explains_how_to_pass_a_function():
    assert require_callable(len, "f(x)") is None
    feedback = require_callable(3, "f(x) -> y")
    assert not feedback.passed and "without calling it" in feedback.message and "int" in feedback.message


def test_call_student_turns_errors_into_feedback():
    def unfinished(x):
        raise NotImplementedError

    assert call_student(lambda x: x + 1, 1) == (2, None)
    _, feedback = call_student(unfinished, 1)
    assert "still raises NotImplementedError. Replace that line" in feedback.message


def test_a_library_not_implemented_error_is_not_the_placeholder():
    """Newer torch raises NotImplementedError (with a message) for arithmetic it refuses, e.g. on bool masks."""
    def from_the_library(mask):
        raise NotImplementedError("Subtraction, the `-` operator, with a bool tensor is not supported.")

    _, feedback = call_student(from_the_library, None)
    assert "still raises" not in feedback.message
    assert feedback.message.startswith("your function raised NotImplementedError: Subtraction")
    _, feedback = call_student(lambda x: x / 0, 1)
    assert "ZeroDivisionError" in feedback.message


def test_as_numbers_and_compare_numbers_say_what_is_wrong():
    assert "forget to `return`" in as_numbers(None, "y")[1].message
    assert "should be numbers" in as_numbers("text", "y")[1].message
    assert compare_numbers([1.0, 2.0], [1.0, 2.0], "y") is None
    assert "shape (3,), expected (2,)" in compare_numbers([1, 2, 3], [1, 2], "y").message
    message = compare_numbers([1.0, 2.5], [1.0, 2.0], "y").message
    assert "position (1,)" in message and "2.5 is too large" in message
    assert "2.0" not in message, "the expected value is not given away"
    assert "NaN" in compare_numbers([np.nan, 1.0], [1.0, 1.0], "y").message
    message = compare_numbers([1.0], [2.0], "y").message
    assert "1 is too small." in message and ".." not in message


def test_numbers_from_calls_reads_and_names_the_test_input():
    got, problem = numbers_from(lambda x: [x, x], 2.0, on="two")
    assert problem is None and got.tolist() == [2.0, 2.0]
    _, problem = numbers_from(lambda x: None, 1.0, on="a small input")
    assert problem.message.startswith("on a small input: the result is None")
    _, problem = numbers_from(lambda x: 1 / 0, 1.0)
    assert "ZeroDivisionError" in problem.message


@pytest.mark.parametrize(
    "value, message",
    [(None, "x is still None"), ("12", "the text '12'"), (True, "truth value"), ([1.0, 2.0], "list of 2 numbers"),
     (np.ones(3), "has 3 numbers"), (1 + 2j, "complex"), (float("nan"), "x = nan is not a finite number"),
     ({"a": 1}, "should be one number")],
)
def test_one_number_names_what_came(value, message):
    number, problem = one_number(value, "x")
    assert number is None and message in problem.message


def test_one_number_accepts_scalars_of_every_kind():
    for value in (3, 3.0, np.float32(3.0), np.array(3.0), np.array([3.0]), torch.tensor(3.0)):
        assert one_number(value, "x") == (3.0, None)
    assert one_number(float("inf"), "x", finite=False) == (float("inf"), None)
    assert "returned None" in one_number(None, "f(1)", returned=True)[1].message


@pytest.mark.parametrize("value, says", [
    (["0.21", "0.21", "0.58"], "holds text"),
    (np.array([1.0, 2.0]) + 1j, "complex number"),
    ([None, 1.0], "holds None"),
])
def test_as_numbers_refuses_text_complex_and_none(value, says):
    got, problem = as_numbers(value, "w")
    assert got is None and not problem.passed and says in problem.message


def test_as_numbers_reads_tensors_that_require_grad_inside_lists():
    got, problem = as_numbers([torch.tensor(1.5, requires_grad=True), torch.tensor(2.0)], "w")
    assert problem is None and got.tolist() == [1.5, 2.0]


def test_text_inside_a_list_of_numbers_is_found_where_it_is():
    _, problem = as_numbers([0.07, 0.11, "0.82"], "w")
    assert "position (2,)" in problem.message and "'0.82'" in problem.message
    _, problem = as_numbers([[1, 2], [3, "x"]], "E")
    assert "position (1, 1)" in problem.message
