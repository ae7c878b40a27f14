import numpy as np
import pytest

from helpers.similarity import cosine, cosine_matrix, softmax, softmax_naive


def test_cosine_values():
    assert cosine([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.5)
    assert cosine([1, 0], [-2, 0]) == pytest.approx(-1.0)
    C = cosine_matrix([[1, 0], [0, 3], [1, 1]])
    np.testing.assert_allclose(C, [[1, 0, 2**-0.5], [0, 1, 2**-0.5], [2**-0.5, 2**-0.5, 1]])


def test_cosine_matrix_keeps_negative_cosines():
    """Opposite and obtuse rows: cosines run from -1 to 1, not from 0."""
    C = cosine_matrix([[1, 0], [-3, 0], [-1, 1]])
    np.testing.assert_allclose(C, [[1, -1, -(2**-0.5)], [-1, 1, 2**-0.5], [-(2**-0.5), 2**-0.5, 1]])


def test_similarity_bad_input():
    with pytest.raises(ValueError, match="a has 2 entries but b has 3: the cosine compares entries one by one"):
        cosine([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="all zeros"):
        cosine([0, 0], [1, 0])
    with pytest.raises(ValueError, match="Row 1 of X is all zeros"):
        cosine_matrix([[1, 0], [0, 0]])
    with pytest.raises(TypeError, match="a should be numbers"):
        cosine("ab", [1, 2])


def test_softmax_module_text_numbers():
    np.testing.assert_allclose(softmax([1.0, 1.2, 0.9]), [0.320, 0.391, 0.289], atol=5e-4)
    np.testing.assert_allclose(softmax([10.0, 12.0, 9.0]), [0.114, 0.844, 0.042], atol=5e-4)


def test_softmax_rows_sum_to_one_and_survive_huge_scores():
    x = np.array([[1000.0, 1001.0, 999.0], [-5.0, 0.0, 5.0]])
    w = softmax(x)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    assert np.isfinite(w).all()
    assert np.isnan(softmax_naive(x)[0]).any()  # the naive form overflows: inf / inf


def test_softmax_shift_invariance():
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(softmax(x), softmax(x + 123.0))


def test_cosine_survives_huge_and_tiny_vectors():
    assert cosine([1e200, 1e200], [1e200, 1e200]) == pytest.approx(1.0)
    assert cosine([1e-200, 0.0], [3e-200, 0.0]) == pytest.approx(1.0)
    C = cosine_matrix([[1e200, 1e200], [1.0, 2.0]])
    assert np.allclose(np.diag(C), 1.0) and C[0, 1] == pytest.approx(3 / np.sqrt(10))


@pytest.mark.parametrize("bad", [["1", "2"], [1 + 1j, 2.0], [None, 1.0]])
def test_text_complex_and_none_are_not_numbers(bad):
    with pytest.raises(TypeError, match="should hold real numbers"):
        cosine(bad, [1.0, 2.0])


def test_a_cosine_never_exceeds_one():
    """Rounding can make x·x / (|x| |x|) 1.0000000000000002, and arccos of that is NaN: clipped."""
    assert cosine([-0.92, -0.46, 0.22], [-0.92, -0.46, 0.22]) <= 1.0
    assert cosine_matrix([[1.3, 0.8, 0.3], [-0.3, 1.5, 2.0], [1.8, 1.3, 0.4], [-1.2, -0.0, 0.7]]).max() <= 1.0


@pytest.mark.parametrize("f", [softmax, softmax_naive])
def test_softmax_along_axis_0_normalises_columns(f):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(x, axis=0), np.exp(x) / np.exp(x).sum(axis=0))
