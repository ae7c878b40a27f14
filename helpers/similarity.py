"""Similarity between vectors, and softmax (notebook 02).

    cosine(a, b)         (d,), (d,) -> the cosine of their angle, in [-1, 1]
    cosine_matrix(X)     (T, d) -> (T, T) the cosine between every pair of rows
    softmax_naive(x)     exp(x) / Σ exp(x) as written: overflows for scores above ~709
    softmax(x, axis=-1)  the stable softmax: subtract the max first
    entropy_bits(W)      (..., T) -> (...) -Σ w log2 w: how spread the weights are, 0 for one-hot"""
import numpy as np

from helpers import validation as check


def _safe_rows(X: np.ndarray) -> np.ndarray:
    """X, or each row divided by its largest |entry| when squaring would overflow or underflow (only then)."""
    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(X, axis=-1)
    peak = np.abs(X).max(axis=-1)
    if np.all(np.isfinite(norms)) and not np.any((norms == 0) & (peak > 0)):
        return X
    return X / np.where(peak > 0, peak, 1.0)[..., None]


def cosine(a, b) -> float:
    """Cosine of the angle between two vectors: (d,), (d,) -> scalar in [-1, 1]."""
    a, b = check.vector(a, "a"), check.vector(b, "b")
    if a.size != b.size:
        raise ValueError(f"a has {a.size} entries but b has {b.size}: the cosine compares entries one by one.")
    a, b = _safe_rows(a), _safe_rows(b)
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    if norms == 0:
        raise ValueError("One of the vectors is all zeros: it has no direction, so no cosine.")
    return float(np.clip(a @ b / norms, -1.0, 1.0))


def cosine_matrix(X) -> np.ndarray:
    """Cosine between every pair of rows: (T, d) -> (T, T)."""
    X = _safe_rows(check.matrix(X, "X"))
    norms = np.linalg.norm(X, axis=1)          # (T,)
    if (norms == 0).any():
        raise ValueError(f"Row {int(np.argmin(norms))} of X is all zeros: it has no direction, so no cosine.")
    unit = X / norms[:, None]                  # (T, d) each row of length 1
    return np.clip(unit @ unit.T, -1.0, 1.0)   # (T, T)


def softmax_naive(x, axis: int = -1) -> np.ndarray:
    """exp(x) / sum(exp(x)) exactly as written: overflows for scores above ~709 (kept to show the problem)."""
    x = check.as_array(x, "x")
    with np.errstate(over="ignore", invalid="ignore"):
        exps = np.exp(x)
        return exps / exps.sum(axis=axis, keepdims=True)


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along `axis`: (..., n) -> (..., n), rows sum to 1.

    Subtracting the row maximum first leaves the result unchanged (it cancels
    in the ratio) but keeps every exponent <= 0, so exp never overflows."""
    x = check.as_array(x, "x")
    if x.size == 0 or not np.isfinite(top := x.max(axis=axis)).all():   # a NaN makes its row's max NaN
        held = "no score" if x.size == 0 else "NaN" if np.isnan(top).any() else "+inf (typed, or a number that " \
            "overflowed: its inputs grew too large)" if (top == np.inf).any() else "only -inf (every score hidden)"
        raise ValueError(f"softmax needs a finite largest score in each row of x (axis {axis}), but a row has {held}.")
    shifted = x - x.max(axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / exps.sum(axis=axis, keepdims=True)


def entropy_bits(W) -> np.ndarray:
    """-Σ w log2 w along the last axis: (..., T) -> (...). 0 for one-hot, log2(T) for uniform."""
    W = np.asarray(W)
    logs = np.log2(np.where(W > 0, W, 1.0))  # a weight of 0 adds 0 (w log w -> 0)
    return np.maximum(-(W * logs).sum(axis=-1), 0.0)   # one-hot: 0, not -0
