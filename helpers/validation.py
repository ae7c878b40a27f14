"""Input checks that speak to a student.

Every public helper runs its arguments through these functions first, so a
wrong shape or a NaN is reported where it enters, with what was expected and
what came, instead of surfacing later as a broadcast error or a silent NaN.
"""
from __future__ import annotations

import numbers

import numpy as np


def describe(value) -> str:
    """A short description of a value for error messages: type and shape."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__} of shape {tuple(shape)}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__


def as_array(value, name: str) -> np.ndarray:
    """Convert lists, NumPy arrays and torch tensors to a float64 array of the same shape.

    Raises TypeError (naming `name`) for anything that is not numbers.
    """
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise TypeError(f"{name} should be numbers (a list or an array), but got {describe(value)}.")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{name} should be numbers arranged as a list or an array, but got {describe(value)} "
            f"that NumPy cannot turn into numbers ({error})."
        ) from None
    return array


def require_ndim(array: np.ndarray, ndim: int, name: str, layout: str) -> np.ndarray:
    """Check that `array` has `ndim` axes; `layout` names them, e.g. "(T, d)"."""
    if array.ndim != ndim:
        raise ValueError(
            f"{name} should be {ndim}-D with shape {layout}, but got shape {tuple(array.shape)} "
            f"({array.ndim}-D)."
        )
    return array


def require_finite(array: np.ndarray, name: str) -> np.ndarray:
    """Check that `array` holds no NaN or infinity; name the first bad position."""
    bad = ~np.isfinite(array)
    if bad.any():
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        value = array[position] if position else array
        raise ValueError(
            f"{name} contains {value} at position {position}: every entry must be a finite number."
        )
    return array


def require_nonempty(array: np.ndarray, name: str) -> np.ndarray:
    """Check that `array` has at least one element."""
    if array.size == 0:
        raise ValueError(f"{name} is empty (shape {tuple(array.shape)}): it needs at least one entry.")
    return array


def vector(value, name: str) -> np.ndarray:
    """A finite, non-empty 1-D float array: shape (d,)."""
    array = require_ndim(as_array(value, name), 1, name, "(d,)")
    return require_finite(require_nonempty(array, name), name)


def matrix(value, name: str, layout: str = "(T, d)") -> np.ndarray:
    """A finite, non-empty 2-D float array: shape (rows, columns)."""
    array = require_ndim(as_array(value, name), 2, name, layout)
    return require_finite(require_nonempty(array, name), name)


def require_same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str, why: str) -> None:
    """Check that the last axes of `a` and `b` match; `why` says why they must."""
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{name_a} has length {a.shape[-1]} but {name_b} has length {b.shape[-1]}: {why}"
        )


def positive_int(value, name: str) -> int:
    """A whole number >= 1 (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} should be a whole number, but got {describe(value)} ({value!r}).")
    if value < 1:
        raise ValueError(f"{name} should be at least 1, but got {value}.")
    return int(value)


def positive_number(value, name: str) -> float:
    """A finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} should be a number, but got {describe(value)} ({value!r}).")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} should be a finite number greater than 0, but got {value}.")
    return float(value)
