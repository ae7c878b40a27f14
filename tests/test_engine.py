"""The checker engine: verdicts, readers, the comparison, and the loop that runs an answer on fixed and drawn cases."""
import sys
from functools import partial
from math import inf, pi

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention_torch import SelfAttention
from helpers.exercises.engine import (
    Case,
    Exercise,
    Feedback,
    Refusal,
    as_numbers,
    calls_library,
    compare_numbers,
    correct,
    named_slip,
    not_a_function,
    one_number,
    raised,
    rounded,
    solved_by,
    whole_numbers,
    wrong,
)
from helpers.similarity import softmax


def test_feedback_prints_a_verdict_and_refuses_truthiness():
    assert repr(correct("well done")) == "✅ Correct: well done"
    assert repr(wrong("shape")) == "❌ Not yet: shape"
    assert "Not yet" in wrong("x")._repr_html_()
    with pytest.raises(TypeError, match="use feedback.passed"):
        bool(wrong("x"))
    assert "&lt;b&gt;" in Feedback(False, "<b>")._repr_html_()


def test_a_solution_is_folded_in_html_and_plain_in_text():
    def reference():
        return 42

    @solved_by("answer", reference, "because")
    def check(answer):
        return correct("yes")

    shown = check.solution()
    assert "<details>" in shown._repr_html_()
    assert repr(shown).startswith("Solution: answer\n\ndef reference():")
    assert repr(shown).endswith("because")
    assert solved_by("text", "    x = 1\n")(check).solution().code == "x = 1"   # text is dedented


def test_a_reader_given_to_solved_by_reads_the_answer_before_the_checker_sees_it():
    @solved_by("a number", "x = 2.5", read=partial(one_number, name="x", what="a number such as 2.5"))
    def check(x):
        return correct(f"read as {x!r}")

    assert check(np.float32(2.5)).message == "read as 2.5" and check.solution().code == "x = 2.5"
    assert check("2.5").message.startswith("x is the text '2.5' (a str), not a number")
    assert check(None).message == "x is still None. Replace None with a number such as 2.5."
    assert check(x=2.5).message == "read as 2.5"   # by the name help(check) shows
    with pytest.raises(TypeError, match="argument: 'x'"):
        check(y=2.5)                               # a name it does not have: a TypeError naming the one it has


def test_not_a_function_says_how_to_pass_one():
    feedback = not_a_function(3, "f(x) -> y")
    assert not feedback.passed and "without calling it" in feedback.message and "int" in feedback.message


def test_the_placeholder_is_told_apart_from_a_library_not_implemented_error():
    """Newer torch raises NotImplementedError (with a message) for arithmetic it refuses, e.g. on bool masks."""
    assert raised(NotImplementedError()) == ("the function still raises NotImplementedError. Replace that line "
                                             "with your code.")
    message = raised(NotImplementedError("Subtraction, the `-` operator, with a bool tensor is not supported."))
    assert message.startswith("your function raised NotImplementedError: Subtraction")
    assert raised(ZeroDivisionError("division by zero")) == "your function raised ZeroDivisionError: division by zero"


@pytest.mark.parametrize(
    "value, message",
    [(None, "x is still None"), ("12", "the text '12'"), (True, "truth value"), ([1.0, 2.0], "list of 2 items"),
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
    (None, "forget to `return`"), ("text", "should be numbers"), (["0.21", "0.21", "0.58"], "holds text"),
    (np.array([1.0, 2.0]) + 1j, "complex number"), ([None, 1.0], "holds None"),
    ((torch.ones(3, 4), None), "came as a tuple of 2: Tensor of shape (3, 4), NoneType (None). Keep only the array"),
    ((np.ones(4), np.ones(3)), "tuple of 2: ndarray of shape (4,), ndarray of shape (3,)"),
    (torch.empty(3, device="meta"), "meta tensor"),   # a tensor with no numbers to copy: named, not raised
])
def test_as_numbers_refuses_what_is_not_numbers(value, says):
    got, problem = as_numbers(value, "w")
    assert got is None and not problem.passed and says in problem.message


def test_as_numbers_reads_tensors_that_require_grad_inside_lists():
    got, problem = as_numbers([torch.tensor(1.5, requires_grad=True), torch.tensor(2.0)], "w")
    assert problem is None and got.tolist() == [1.5, 2.0]


def test_text_inside_a_list_of_numbers_is_found_where_it_is():
    _, problem = as_numbers([0.07, 0.11, "0.82"], "w")
    assert "position (2,)" in problem.message and "'0.82'" in problem.message


def test_compare_numbers_says_how_the_answer_differs_without_giving_it_away():
    a = np.array
    assert compare_numbers(a([1.0, 2.0]), a([1.0, 2.0]), "y") is None
    assert "shape (3,), expected (2,)" in compare_numbers(a([1, 2, 3.0]), a([1, 2.0]), "y")
    message = compare_numbers(a([1.0, 2.5]), a([1.0, 2.0]), "y")
    assert "position (1,)" in message and "2.5 is too large" in message and "2.0" not in message
    assert "1 is too small." in compare_numbers(a(1.0), a(2.0), "y")
    assert "NaN" in compare_numbers(a([np.nan, 1.0]), a([1.0, 1.0]), "y")


def test_compare_numbers_compares_shapes_not_sizes():
    assert "shape (3, 2), expected (2, 3)" in compare_numbers(np.ones((3, 2)), np.ones((2, 3)), "y")
    assert "shape (1, 6)" in compare_numbers(np.ones((1, 6)), np.ones(6), "y")


def test_compare_numbers_names_the_right_numbers_transposed_square_or_not_and_never_a_symmetric_answer():
    Y, square, symmetric = np.arange(6.0).reshape(2, 3), np.arange(9.0).reshape(3, 3), np.ones((3, 3)) + np.eye(3)
    assert compare_numbers(Y.T, Y, "Y").endswith("shape (3, 2), expected (2, 3): the numbers are right, transposed "
                                                 "(rows and columns swapped).")
    assert compare_numbers(square.T, square, "Y", hint="Look again.") == (
        "Y has the right shape: the numbers are right, transposed (rows and columns swapped).")
    assert compare_numbers(symmetric.T, symmetric, "Y") is None           # right, though its transpose matches too
    masked = np.where(np.tril(np.ones((4, 4))) == 1, 0.0, -np.inf)        # -inf where hidden: no "overflow" story
    assert compare_numbers(masked.T, masked, "S").endswith("the numbers are right, transposed (rows and columns "
                                                          "swapped).")
    batch = np.arange(24.0).reshape(2, 3, 4)                               # (B, T, d): each matrix transposed
    assert compare_numbers(batch.transpose(0, 2, 1), batch, "Y").endswith("the numbers are right, transposed (rows "
                                                                          "and columns swapped).")
    assert "transposed" not in compare_numbers(square.T + 1, square, "Y") + compare_numbers(Y.T + 1, Y, "Y")
    assert "the shape is not" in compare_numbers(Y.reshape(3, 2), Y, "Y")


def test_compare_numbers_holds_its_tolerance():
    assert compare_numbers(np.array([1.0 + 9e-7]), np.array([1.0]), "y", atol=1e-6) is None
    assert "wrong values" in compare_numbers(np.array([1.0 + 2e-6]), np.array([1.0]), "y", atol=1e-6)
    assert compare_numbers(np.array([101.0]), np.array([100.0]), "y", atol=0, rtol=0.011) is None
    assert "wrong values" in compare_numbers(np.array([102.0]), np.array([100.0]), "y", atol=0, rtol=0.011)


def test_a_rounded_answer_is_told_so_and_only_when_it_is_off():
    expected = np.array([0.123456, 2.5])
    assert rounded(np.round(expected, 2), expected) == 2 and rounded(np.round(expected, 5), expected) == 5
    assert rounded(expected, expected) is None and rounded(np.array([0.12, 2.6]), expected) is None
    assert rounded(np.round(expected, 0), expected) is None                       # 0 decimals is not counted
    assert "rounded to 3 decimals" in compare_numbers(np.round(expected, 3), expected, "y", atol=1e-6)
    assert compare_numbers(np.round(expected, 3), expected, "y", atol=1e-3) is None   # within the tolerance


def test_minus_infinity_is_right_where_the_answer_is_minus_infinity():
    expected = np.array([0.0, -np.inf])
    assert compare_numbers(np.array([0.0, -np.inf]), expected, "mask") is None
    assert "NaN or infinity" in compare_numbers(np.array([-np.inf, -np.inf]), expected, "mask")
    assert "wrong values" in compare_numbers(np.array([0.0, np.inf]), expected, "mask")


def test_a_slip_is_named_only_when_it_matches_and_differs_from_the_right_answer():
    right = np.array([1.0, 2.0])
    slips = [(np.array([9.0, 9.0]), "nine"), (np.array([1.0, 3.0]), "three"), (right, "right itself")]
    assert named_slip(np.array([1.0, 3.0]), slips, right=right) == "three"
    assert named_slip(right, slips, right=right) is None
    assert named_slip(np.array([1.0, 3.0, 0.0]), slips, right=right) is None        # another shape: no match
    assert "three" in compare_numbers(np.array([1.0, 3.0]), right, "y", slips=slips)


def test_a_slip_that_cannot_be_computed_for_this_input_is_skipped():
    def does_not_fit():
        return torch.ones(2, 3) @ torch.ones(2, 3)

    assert named_slip(np.ones(2), [(does_not_fit, "never"), (lambda: np.ones(2), "ones")]) == "ones"


# ----------------------------------------------------------------------------- the loop


def _doubling(**hooks):
    """An exercise: double(x) = 2 x, on two fixed cases and two drawn ones of a random size."""
    hooks.setdefault("cases", lambda: [Case(np.array([1.0, 2.0]), what="[1, 2]"), Case(np.array([3.0]), what="[3]")])
    hooks.setdefault("draw", lambda rng: (lambda n: Case(rng.normal(size=n), what=f"{n} numbers drawn at random"))(
        int(rng.integers(3, 30))))
    return Exercise(lambda x: 2 * x, title="doubling", expects="double(x)", draws=2, success="doubled", **hooks)


def test_a_right_answer_passes_and_a_slip_is_named_on_the_first_case_it_shows():
    check = _doubling(slips=lambda case: [(case.args[0], f"on {case.what} you returned x itself.")])
    assert check(lambda x: x + x).passed and check(lambda x: x + x).message == "doubled"
    assert check(lambda x: x).message == "on [1, 2] you returned x itself."
    assert check(lambda x: 3 * x).message.startswith("the result on [1, 2] has the right shape but the wrong values")
    assert check(4).message.startswith("expected a function (double(x))")


def test_an_answer_copied_from_the_page_fails_on_a_drawn_case_that_names_its_size():
    page = {(1.0, 2.0): [2.0, 4.0], (3.0,): [6.0]}
    feedback = _doubling()(lambda x: np.array(page[tuple(x)]))
    assert not feedback.passed and "numbers drawn at random" in feedback.message
    size = int(feedback.message.split("on ")[1].split(" numbers")[0])
    assert 3 <= size < 30


def test_float32_anywhere_is_held_to_atol32_a_result_rounded_by_hand_to_atol_and_float16_is_refused():
    check = _doubling(atol=1e-9, atol32=1e-5)
    assert check(lambda x: (2 * x).astype(np.float32)).passed                 # off by float32's rounding only
    assert check(lambda x: torch.from_numpy(2 * x).float()).passed
    assert check(lambda x: (2 * x.astype(np.float32)).astype(np.float64) + 1e-7).passed   # float32 inside, float64 out
    assert not check(lambda x: (2 * x + 1e-4).astype(np.float32)).passed      # a real slip in float32 still fails
    assert not check(lambda x: 2 * x + 1e-4).passed
    assert not _doubling(atol=1e-9)(lambda x: (2 * x + 1e-7).astype(np.float32)).passed   # no atol32: atol
    assert check(lambda x: [np.float32(v) for v in 2 * x + 3e-6]).passed      # float32 entries in a list too
    assert check(lambda x: list(torch.from_numpy(2 * x + 3e-6).float())).passed
    within = _doubling(atol=1e-9, atol32=1e-3)   # rounded by hand, and off by less than atol32: atol, and named
    assert "rounded to 4 decimals" in within(lambda x: np.round(2 * x, 4)).message
    for half in (lambda x: (2 * x).astype(np.float16), lambda x: torch.from_numpy(2 * x).half()):
        assert "float16, which keeps only about 3 significant digits" in check(half).message


def test_an_answer_that_exits_is_told_so_and_the_notebook_goes_on():
    for code in (3, None):
        assert _doubling()(lambda x, c=code: sys.exit(c)).message == (
            "on [1, 2]: your function called exit(), which ends the program (SystemExit). Return the result instead.")


def test_a_pair_of_arrays_is_told_to_return_only_the_result():
    message = _doubling(reads="the doubled x")(lambda x: (2 * x, np.ones((len(x), len(x))))).message
    assert message == ("on [1, 2]: you returned a pair of arrays, of shapes (2,) and (2, 2): perhaps (output, "
                       "weights). Return only the doubled x.")


def test_drawn_cases_are_drawn_afresh_for_every_call():
    per_call = []
    check = _doubling()
    for _ in range(6):
        sizes = []
        assert check(lambda x, sizes=sizes: sizes.append(len(x)) or 2 * x).passed
        per_call.append(tuple(n for n in sizes if n >= 3))          # the two drawn cases of this call
    assert all(len(drawn) == 2 for drawn in per_call)
    assert len(set(per_call)) > 1                                    # not the same draw at every call


def test_a_case_is_made_only_when_its_turn_comes():
    made = []

    def cases():   # a generator: a case that is costly to make (notebook 10 measures a model for each)
        for n in (1, 2):
            made.append(n)
            yield Case(np.ones(n), what=f"{n} ones")

    def draw(rng):
        made.append("drawn")
        return Case(np.ones(3), what="3 ones")

    assert _doubling(cases=cases, draw=draw)(lambda x: x).message.startswith("the result on 1 ones")
    assert made == [1]
    assert _doubling(cases=cases, draw=draw)(lambda x: 2 * x).passed and made == [1, 1, 2, "drawn", "drawn"]


def test_an_answer_that_changes_its_argument_in_place_is_refused_and_the_cases_stay_as_they_were():
    check = _doubling()
    before = [case.args[0].copy() for case in check.cases()]

    def vandal(x):
        y = 2 * x
        x[:] = 0
        return y
    feedback = check(vandal)
    assert not feedback.passed and "changed its argument x in place" in feedback.message, feedback
    assert all(np.array_equal(case.args[0], b) for case, b in zip(check.cases(), before))

    def doubles_in_place(x):
        x *= 2
        return x
    assert "x = x + …" in check(doubles_in_place).message


def test_an_answer_that_returns_the_same_for_different_inputs_is_asked_whether_it_reads_the_notebook():
    page = np.array([1.0, 2.0])                                      # a notebook's variable
    check = _doubling(cases=lambda: [Case(page.copy(), what="[1, 2]"), Case(np.array([3.0, 5.0]), what="[3, 5]")])

    def reads_the_page(x):
        return 2 * page
    feedback = check(reads_the_page)
    assert not feedback.passed and "on [3, 5]: your function returned what it returned on [1, 2], though the " \
                                   "inputs differ: does it ignore an argument, or read a variable" in feedback.message
    assert check(lambda x: x + page).message.startswith("the result on [3, 5] has the right shape")   # not a twin


def test_the_exception_itself_reaches_the_diagnosis():
    seen = []

    def errors(case, error):
        seen.append(error)
        return f"on {case.what}: a {type(error).__name__}" if isinstance(error, KeyError) else None

    check = _doubling(errors=errors)
    assert check(lambda x: {}["x"]).message == "on [1, 2]: a KeyError"
    assert isinstance(seen[0], KeyError)
    assert check(lambda x: 1 / 0).message == "on [1, 2]: your function raised ZeroDivisionError: division by zero"


def test_the_placeholder_line_is_named_once_and_stops_the_check():
    def unfinished(x):
        raise NotImplementedError

    assert _doubling()(unfinished).message == raised(NotImplementedError())


def test_hooks_read_judge_expected_call_and_refusal():
    assert _doubling(read=lambda result, case: (None, "unreadable"))(lambda x: 2 * x).message == "unreadable"
    assert _doubling(judge=lambda case, got, expected: "judged")(lambda x: 3 * x).message == "judged"
    assert _doubling(judge=lambda case, got, expected: "judged")(lambda x: 2 * x).passed   # never on a right answer
    assert _doubling(expected=lambda case: 3 * case.args[0])(lambda x: 3 * x).passed

    def call(answer, case):
        raise Refusal("cannot be built")

    assert _doubling(call=call)(lambda x: 2 * x).message == "cannot be built"
    forgot = _doubling(where="for {what} -> ")(lambda x: None).message
    assert forgot.startswith("for [1, 2] -> your function returned None"), forgot


def test_a_case_can_carry_its_own_prefix_and_sizes():
    case = Case(1, 2, what="two numbers", where="", d_k=8)
    assert case.args == (1, 2) and case.d_k == 8

    def add(a, b):
        return a + b   # the worked solution

    check = Exercise(add, title="sum", expects="add(a, b)", cases=lambda: [case],
                     draw=lambda rng: Case(1, 1, what="drawn"), success="ok", explanation="one line")
    assert check(lambda a, b: None).message.startswith("your function returned None")
    assert check(lambda a, b: a + b + 2.0 * (a == b)).message.startswith("the result on drawn is not right: 4 is too ")
    assert check(lambda a, b: 3.0).message.startswith("on drawn: your function returned what it returned on two")
    assert check.solution().code == "def add(a, b):\n    return a + b   # the worked solution"
    assert check.solution().explanation == "one line"


def test_a_shape_error_names_the_shapes_given_and_the_hint():
    message = _doubling(hint="Double each entry.")(lambda x: x @ np.ones((3, 3))).message
    assert message.startswith("on [1, 2]: your function raised ValueError: matmul")
    assert message.endswith("(it was given x (2,)). Double each entry.")
    assert _doubling()(lambda x: torch.ones(3) + torch.from_numpy(x)).message.endswith("(it was given x (2,)).")
    assert "given" not in _doubling(hint="h")(lambda x: 1 / 0).message                  # no shapes: no shapes named
    assert "given" not in _doubling(hint="h")(lambda x: exec("raise NotImplementedError('a library')")).message


def test_an_unfinished_function_the_answer_calls_is_named():
    def sinusoidal(x):
        raise NotImplementedError

    def answer(x):
        return 2 * x + 0 * sinusoidal(x)

    assert _doubling()(answer).message == ("your function calls sinusoidal, which still raises NotImplementedError: "
                                           "finish sinusoidal first.")


def test_whole_numbers_reads_sizes_of_every_kind_and_names_the_rest():
    for sizes in ((5, 64), [5, 64.0], np.array([5, 64]), torch.tensor([5, 64]), (np.int64(5), torch.tensor(64)),
                  (np.array([5]), torch.tensor([64]))):                        # one number in an array, too
        assert whole_numbers(sizes) == ((5, 64), None)
    for sizes, says in (({5, 64}, "is not a tuple"), ("5, 64", "is not a tuple"), ((5.5, 64), "5.5 is not a whole"),
                        ((True, 64), "True is a truth value"), ((np.zeros((2, 2)), 1), "ndarray of shape (2, 2)"),
                        ((None, 1), "None is not a number")):
        assert whole_numbers(sizes)[0] is None and says in whole_numbers(sizes)[1], sizes


def own_softmax(x):
    def softmax(row):                     # its own helper, named like the page's import
        e = np.exp(row - row.max())
        return e / e.sum()
    return softmax(x)


def pages_softmax(x):
    return softmax(x)                     # the course's, imported at the top as on the page


class MySelfAttention(SelfAttention):
    """The course's layer, subclassed and passed as the student's own."""


class WrapsTheCourses(torch.nn.Module):
    """The course's layer inside the student's, read from the whole class with its module's names."""

    def __init__(self, d_model, d_k):
        super().__init__()
        self.inner = SelfAttention(d_model, d_k)

    def forward(self, x):
        return self.inner(x)


def test_calls_library_reads_nested_functions_as_the_students_own_and_subclasses_as_the_courses():
    assert not calls_library(own_softmax, "softmax")
    assert calls_library(pages_softmax, "softmax")
    assert calls_library(MySelfAttention, "SelfAttention") and calls_library(SelfAttention, "SelfAttention")
    assert calls_library(WrapsTheCourses, "SelfAttention")

    class Student(torch.nn.Module):       # torch's nn.Module under it, no course class
        def forward(self, x):
            return x
    assert not calls_library(Student, "SelfAttention")


def test_an_unnamed_case_is_called_an_earlier_input():
    check = _doubling(cases=lambda: [Case(np.array([1.0, 2.0]), what=""), Case(np.array([3.0, 5.0]), what="")],
                      where="")
    assert check(lambda x: np.array([2.0, 4.0])).message.startswith("your function returned what it returned on an "
                                                                     "earlier input, though the inputs differ")


def test_a_type_error_names_the_library_of_the_inputs():
    numpy_check = _doubling()
    message = numpy_check(lambda x: 2 * x.max(dim=-1, keepdim=True).values).message
    assert "raised TypeError" in message and message.endswith(
        "The inputs are NumPy arrays: torch's functions need torch.as_tensor(x) first; NumPy writes S.max(axis=-1, "
        "keepdims=True) where torch writes S.amax(dim=-1, keepdim=True) (torch's S.max(dim) returns a pair, (values, "
        "indices))."), message
    torch_check = _doubling(cases=lambda: [Case(torch.tensor([1.0, 2.0]), what="[1, 2]")],
                            draw=lambda rng: Case(torch.ones(3), what="three ones"))
    message = torch_check(lambda x: 2 * torch.from_numpy(x)).message
    assert "raised TypeError" in message and "The inputs are torch tensors: use torch's functions on them" in message
    assert "torch writes S.amax(dim=-1, keepdim=True)" in message
    message = numpy_check(lambda x: 2 * F.softmax(x, dim=-1)).message   # torch's function on an array: AttributeError
    assert "raised AttributeError" in message and "torch's functions need torch.as_tensor(x) first" in message
    message = numpy_check(lambda x: 2 * torch.as_tensor(x).numpyy()).message   # a typo: no array has .numpyy
    assert "raised AttributeError" in message and "as_tensor(x) first" not in message


def test_a_builtin_without_a_readable_signature_gets_its_own_error_not_a_parameter_list():
    message = _doubling()(getattr).message   # getattr(x): TypeError, and inspect.signature(getattr) fails
    assert "raised TypeError" in message and "has the parameters" not in message, message


PAGE_X, PAGE_ROWS, PAGE_SIZE, EPS = np.array([1.0, 2.0]), [[1.0], [2.0]], 3, 1e-9   # a notebook's variables


def test_an_answer_that_reads_the_notebook_s_data_is_told_which():
    check = _doubling()
    assert check(lambda x: 2 * PAGE_X).message.endswith(" Your function reads the notebook's PAGE_X: use the "
                                                        "arguments it is given.")

    def nested(x):
        def inner():
            return np.asarray(PAGE_ROWS)[:, 0] * 2
        return inner()
    assert check(nested).message.endswith("reads the notebook's PAGE_ROWS: use the arguments it is given.")
    for answer in (lambda x: 3 * x + EPS, lambda x: x[:PAGE_SIZE] * 2, lambda x: np.maximum(3 * x, -inf * pi),
                   lambda x: torch.as_tensor(3 * x, dtype=torch.float64)):   # numbers, constants, types: no data
        assert "reads the notebook" not in check(answer).message
    assert check(lambda x: x + x + 0 * PAGE_X.sum()).passed          # a right answer is never told


class _Odd:
    """A callable whose attributes are all missing in an unusual way: the verdict still comes."""
    def __call__(self, x):
        return 3 * x

    def __getattr__(self, name):
        raise KeyError(name)


def test_an_answer_that_is_no_plain_function_gets_its_verdict():
    assert check_is_a_verdict(_doubling()(_Odd()))


def check_is_a_verdict(feedback):
    return not feedback.passed and "wrong values" in feedback.message and "reads the notebook" not in feedback.message


def _exercises() -> dict:
    """Every checker the notebooks call whose answer is a function: {name: Exercise}."""
    import importlib
    import pkgutil

    import helpers.exercises as package
    modules = [importlib.import_module(f"helpers.exercises.{m.name}") for m in pkgutil.iter_modules(package.__path__)]
    return {name: value for module in modules for name, value in vars(module).items()
            if isinstance(value, Exercise) and name.startswith("check_")}


def test_there_are_twenty_exercises_whose_answer_is_a_function():
    assert len(_exercises()) == 20


@pytest.mark.parametrize("name", sorted(_exercises()))
def test_every_size_of_every_argument_is_drawn_afresh(name):
    """Over its drawn cases, each argument of every checker varies in every axis (an array's sizes), in its length (a
    list's) or in its value (a number's): a draw that keeps one of them at the page's value fails here."""
    check, seen = _exercises()[name], {}
    for seed in range(40):
        rng = np.random.default_rng(seed)
        for draw in check.draws:
            for i, arg in enumerate(draw(rng).args):
                if hasattr(arg, "shape") and len(arg.shape):
                    sizes = ("shape", *arg.shape)
                else:
                    sizes = ("length", len(arg)) if isinstance(arg, (list, tuple)) else ("value", arg)
                for axis, size in enumerate(sizes[1:]):
                    seen.setdefault((i, sizes[0], axis), set()).add(size)
    assert seen and all(len(sizes) > 1 for sizes in seen.values()), {k: v for k, v in seen.items() if len(v) == 1}
