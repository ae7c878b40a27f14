import numpy as np
import pytest
import torch

from helpers import validation as check
from helpers.exercises.engine import one_number


def test_as_array_accepts_lists_arrays_and_tensors():
    np.testing.assert_array_equal(check.as_array([1, 2], "x"), [1.0, 2.0])
    np.testing.assert_array_equal(check.as_array(np.array([3]), "x"), [3.0])
    np.testing.assert_array_equal(check.as_array(torch.tensor([4.0]), "x"), [4.0])


def test_a_sparse_tensor_is_read_as_its_numbers():
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    np.testing.assert_array_equal(check.as_array(dense.to_sparse(), "W"), dense.numpy())
    assert one_number(torch.tensor([5.0]).to_sparse(), "the result") == (5.0, None)


@pytest.mark.parametrize("bad", ["abc", None, {"a": 1}, [[1, 2], [3]]])
def test_as_array_names_the_argument_for_non_numbers(bad):
    with pytest.raises(TypeError, match="E should be numbers"):
        check.as_array(bad, "E")


def test_a_type_passed_for_its_values_is_named_as_a_type():
    with pytest.raises(TypeError, match="E should hold real numbers, but holds the type float itself"):
        check.as_array(float, "E")


def test_text_is_quoted_whole_or_cut_with_an_ellipsis():
    with pytest.raises(TypeError, match=r"but got the text 'abc'\.$"):
        check.as_array("abc", "E")
    with pytest.raises(TypeError, match=r"but got the text 'money bank grows money bank grows money '…\.$"):
        check.as_array("money bank grows " * 5, "E")


def test_matrix_reports_expected_and_actual_shape():
    with pytest.raises(ValueError, match=r"E should be 2-D with shape \(T, d\), but got shape \(4,\)"):
        check.matrix([1, 2, 3, 4], "E")


def test_too_many_axes_are_refused_like_too_few():
    with pytest.raises(ValueError, match=r"E should be 2-D with shape \(T, d\), but got shape \(2, 2, 2\) \(3-D\)"):
        check.matrix(np.ones((2, 2, 2)), "E")
    with pytest.raises(ValueError, match="should be 1-D"):
        check.vector([[1.0, 2.0]], "a")


def test_nan_is_reported_with_its_position():
    with pytest.raises(ValueError, match=r"S contains nan at position \(1, 0\)"):
        check.matrix([[1.0, 2.0], [np.nan, 1.0]], "S", "(T, T)")
    with pytest.raises(ValueError, match=r"S contains inf at position \(0, 1\)"):    # the first, in reading order
        check.matrix([[1.0, np.inf], [np.nan, 1.0]], "S", "(T, T)")


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0)])
def test_empty_is_refused(shape):
    with pytest.raises(ValueError, match=rf"a is empty \(shape \({shape[0]},"):
        (check.vector if len(shape) == 1 else check.matrix)(np.zeros(shape), "a")


def test_count_keeps_an_upper_bound_of_0():
    """A model of one head has heads 0 to 0: 1 is out of range, not unbounded."""
    assert check.count(0, "head", 0, 0) == 0
    with pytest.raises(ValueError, match="head should be a whole number from 0 to 0, but got 1"):
        check.count(1, "head", 0, 0)


@pytest.mark.parametrize("number", [1, 0, 1.0])
def test_flag_takes_true_or_false_and_no_number(number):
    assert check.flag(True, "causal") is True and check.flag(np.False_, "causal") is False
    with pytest.raises(TypeError, match="causal should be True or False"):
        check.flag(number, "causal")


@pytest.mark.parametrize("flag", [True, np.True_])
def test_count_refuses_true_as_a_number(flag):
    with pytest.raises(ValueError, match="n should be a whole number"):
        check.count(flag, "n")
