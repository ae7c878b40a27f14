"""Input checks that speak to a student.

Used where a person types: exercise answers, widget text boxes, and the public functions a student calls with their own
arrays. A wrong shape or a NaN is reported where it enters, with what was expected and what came, instead of surfacing
later as a broadcast error or a silent NaN."""
import numbers

import numpy as np


def describe(value) -> str:
    """A short description of a value for error messages: type and shape."""
    if isinstance(value, type):
        return f"the type {value.__name__} itself"
    if (shape := getattr(value, "shape", None)) is not None:
        return f"{type(value).__name__} of shape {tuple(shape)}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__


def plain(value):
    """Torch tensors, also inside lists and tuples, as NumPy arrays detached from autograd."""
    if hasattr(value, "detach"):   # a torch tensor
        value = value.detach().cpu().to_dense()   # a sparse tensor as its numbers
        return (value.double() if value.is_floating_point() else value).numpy()   # bfloat16 has no NumPy type
    if isinstance(value, (list, tuple)) and any(hasattr(v, "detach") or isinstance(v, (list, tuple)) for v in value):
        return [plain(v) for v in value]
    return value


def as_array(value, name: str) -> np.ndarray:
    """Convert lists, NumPy arrays and torch tensors to a float64 array of the same shape. TypeError (naming `name`)
    for anything that is not real numbers: None, text (even "1.5"), complex numbers, ragged nesting."""
    value = plain(value)
    if value is None or isinstance(value, (str, bytes, dict, set)):
        got = f"the text {value[:40]!r}{'…' * (len(value) > 40)}" if isinstance(value, (str, bytes)) else None
        raise TypeError(f"{name} should be numbers (a list or an array), but got {got or describe(value)}.")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} should be numbers arranged as a list or an array, but got {describe(value)} "
                        f"that NumPy cannot turn into numbers ({error}).") from None
    if raw.dtype.kind in "USO" or raw.dtype.kind == "c":
        # as objects, so that text in a list of numbers is found where it is (NumPy made every entry text)
        items = np.asarray(value, dtype=object) if raw.dtype.kind in "US" and not isinstance(value, np.ndarray) else raw
        bad = next(((i, x) for i, x in np.ndenumerate(items) if not isinstance(x, (numbers.Real, np.bool_))
                    or isinstance(x, (str, bytes, complex, np.complexfloating))), None)   # not a real number
        if bad is not None:
            position, x = bad
            x = x.item() if isinstance(x, np.generic) else x
            what = "None" if x is None else "text" if isinstance(x, (str, bytes)) else "a complex number" if isinstance(
                x, (complex, np.complexfloating)) else describe(x)
            at = f" at position {position}" if position else ""
            raise TypeError(f"{name} should hold real numbers, but holds {what}{at}: {x!r:.40}.")
    try:
        return raw.astype(np.float64, copy=False)
    except OverflowError:   # a Python int beyond float64's range
        raise TypeError(f"{name} holds a number too large for a float64 (above 1.8e308).") from None


def _checked(value, name: str, ndim: int, layout: str, finite: bool = True) -> np.ndarray:
    """A non-empty float array with `ndim` axes, finite unless `finite` is False; `layout` names them, e.g. "(T, d)"."""
    array = as_array(value, name)
    if array.ndim != ndim:
        raise ValueError(f"{name} should be {ndim}-D with shape {layout}, but got shape {tuple(array.shape)} "
                         f"({array.ndim}-D).")
    if array.size == 0:
        raise ValueError(f"{name} is empty (shape {tuple(array.shape)}): it needs at least one entry.")
    if finite and (bad := ~np.isfinite(array)).any():
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        why = " (inf itself, or a number beyond ±1.8e308 such as 1e309)" * bool(np.isinf(array[position]))
        where = position[0] if ndim == 1 else position   # entry 2 of a row, (0, 2) of a matrix
        raise ValueError(f"{name} contains {array[position]} at position {where}{why}: every entry must be finite.")
    return array


def vector(value, name: str) -> np.ndarray:
    """A finite, non-empty 1-D float array: shape (d,)."""
    return _checked(value, name, 1, "(d,)")


def matrix(value, name: str, layout: str = "(T, d)", finite: bool = True) -> np.ndarray:
    """A non-empty 2-D float array, finite unless `finite` is False: shape (rows, columns)."""
    return _checked(value, name, 2, layout, finite)


def count(value, name: str, low: int = 1, high: int | None = None) -> int:
    """A whole number from `low` to `high` (no bound if None): a size, a length, a position, a block."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):   # a NumPy or torch scalar: the number in it
        value = value.item()
    whole = isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not whole or value < low or (high is not None and value > high):
        span = f"of at least {low}" if high is None else f"from {low} to {high}"
        got = describe(value) if hasattr(value, "shape") else repr(value)   # a tensor by its shape, not its numbers
        raise ValueError(f"{name} should be a whole number {span}, but got {got}.")
    return int(value)


def head_pairs(heads, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """One (layer, head) pair or a collection of them -> [(layer, head), ...], each inside the model's sizes."""
    try:
        items = list(heads)   # a generator read once
        pairs = [items] if len(items) == 2 and np.ndim(items[0]) == 0 else [tuple(p) for p in items]
    except TypeError:   # a number, or numbers that are not pairs
        pairs = [()]
    if any(len(pair) != 2 for pair in pairs):
        raise TypeError(f"heads should be one (layer, head) pair or a list of them, such as [(1, 0)], but got "
                        f"{heads!r:.60}.")
    return [(count(l, "layer", 0, n_layers - 1), count(h, "head", 0, n_heads - 1)) for l, h in pairs]


def fraction(value, name: str, *, one: bool = True) -> float:
    """A real number from 0 to 1 (`one=False`: below 1): a weight, a probability."""
    if not isinstance(value, (numbers.Real, np.floating, np.integer)) or isinstance(value, (bool, np.bool_)) or not (
            0 <= value <= 1 if one else 0 <= value < 1):
        span = "from 0 to 1" if one else "at least 0 and below 1"
        raise ValueError(f"{name} should be a number {span}, but got {value!r}.")
    return float(value)


def floating(dtype):
    """A floating-point torch dtype (an integer one would truncate sin and cos to 0 and 1)."""
    if not getattr(dtype, "is_floating_point", False):
        raise TypeError(f"dtype should be a floating-point torch dtype such as torch.float32, but got {dtype!r}.")
    return dtype


def flag(value, name: str) -> bool:
    """True or False, nothing else (so that "no" cannot mean yes)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} should be True or False, but got {describe(value)} ({value!r:.40}).")
    return bool(value)
