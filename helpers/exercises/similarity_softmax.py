"""Exercises of notebook 02: dot product vs cosine, a stable softmax, and the scale that hardens it."""
from __future__ import annotations

import numbers

import numpy as np

from helpers.exercises.feedback import (
    Feedback,
    Solution,
    as_numbers,
    call_student,
    compare_numbers,
    correct,
    require_callable,
    wrong,
)
from helpers.similarity import cosine, softmax

A = np.array([4.0, 2.0])
B = np.array([6.0, 1.0])
C = np.array([1.0, 5.0])
SCORES = np.array([1.0, 1.2, 0.9])
TARGET_TOP_WEIGHT = 0.9


# --- Exercise 1: longer, not closer -------------------------------------------------------------

def reference_longer_not_closer() -> np.ndarray:
    """A vector d with a bigger dot product with a than b has, but a smaller cosine: (2,)."""
    c = np.array([1.0, 5.0])   # c points away from a (cos 0.61 against b's 0.96) ...
    return 10 * c              # ... so stretch it: a · (10 c) = 140 > 26, the angle is unchanged


def check_longer_not_closer(d) -> Feedback:
    """Exercise 1: a · d > a · b = 26 but cos(a, d) < cos(a, b)."""
    if d is None:
        return wrong("d is still None. Replace None with a 2-D vector, e.g. d = np.array([3.0, 7.0]).")
    got, problem = as_numbers(d, "d")
    if problem is not None:
        return problem
    if got.shape != (2,):
        return wrong(f"d should be a 2-D vector, two numbers such as [3.0, 7.0], but has shape {got.shape}.")
    if not np.all(np.isfinite(got)):
        return wrong("d contains NaN or infinity. Use ordinary numbers.")
    if not np.any(got):
        return wrong("d is [0, 0]: it has no direction, so no cosine. Pick a vector that points somewhere.")
    dot_d, dot_b = float(A @ got), float(A @ B)
    cos_d, cos_b = cosine(A, got), cosine(A, B)
    if dot_d <= dot_b and cos_d >= cos_b:
        return wrong(f"a · d = {dot_d:.4g} is not above a · b = {dot_b:.0f}, and cos(a, d) = {cos_d:.3f} is not "
                     f"below cos(a, b) = {cos_b:.3f}. Try: point d away from a (e.g. mostly upward), "
                     "then make it long.")
    if dot_d <= dot_b:
        return wrong(f"the angle is fine (cos(a, d) = {cos_d:.3f} < {cos_b:.3f}), but a · d = {dot_d:.4g} is not "
                     f"above a · b = {dot_b:.0f}. Try: multiply d by a bigger number; its direction (and so its "
                     "cosine) stays the same while the dot product grows.")
    if cos_d >= cos_b:
        return wrong(f"a · d = {dot_d:.4g} beats {dot_b:.0f}, but cos(a, d) = {cos_d:.3f} is not below "
                     f"cos(a, b) = {cos_b:.3f}: d points as much toward a as b does. Try: turn d away from a "
                     "(more upward), then make it long enough.")
    return correct(f"a · d = {dot_d:.4g} > {dot_b:.0f}, yet cos(a, d) = {cos_d:.3f} < cos(a, b) = {cos_b:.3f}. "
                   "The dot product rewards length as well as direction. Attention uses the raw dot product, "
                   "so a long vector gets a loud vote (you will meet one in notebook 03).")


def solution_longer_not_closer() -> Solution:
    return Solution.from_function(
        "longer, not closer", reference_longer_not_closer,
        "Any d that points further from a than b does (a smaller cosine) wins on the dot product once it "
        "is long enough, because a · d = |a| |d| cos θ grows with |d|.")


# --- Exercise 2: a stable softmax ---------------------------------------------------------------

def reference_softmax(x):
    """Stable softmax over the last axis: (..., n) -> (..., n), each row positive and summing to 1."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=-1, keepdims=True))   # biggest exponent is exp(0) = 1: no overflow
    return e / e.sum(axis=-1, keepdims=True)


_SOFTMAX_CASES = (
    # (input, what it tests)
    (np.array([1.0, 1.2, 0.9]), "the scores [1.0, 1.2, 0.9]"),
    (np.array([1000.0, 1001.0, 1002.0]), "large scores [1000, 1001, 1002]"),
    (np.array([-1000.0, 0.0, 1000.0]), "widely spread scores [-1000, 0, 1000]"),
    (np.array([[1.0, 1.2, 0.9], [10.0, 12.0, 9.0]]), "a 2-row matrix (one softmax per row)"),
    (np.array([[0.0, 1.0], [1000.0, 1001.0]]), "a matrix whose rows are far apart, [[0, 1], [1000, 1001]]"),
)


def _diagnose_softmax(x: np.ndarray, got: np.ndarray, what: str) -> Feedback | None:
    """Name the usual mistakes for one input; None if nothing specific was recognised."""
    with np.errstate(all="ignore"):
        if np.allclose(got, np.exp(x), equal_nan=False):
            return wrong(f"on {what} you returned exp(x) itself. Divide by the sum of the exponentials so the "
                         "weights sum to 1.")
        if x.ndim == 1 and np.allclose(got, x / x.sum()):
            return wrong(f"on {what} you divided the scores by their sum, without exp. With a negative score that "
                         "gives a negative weight. Exponentiate first: exp makes every value positive.")
    if not np.all(np.isfinite(got)):
        bad = np.argwhere(~np.isfinite(got))[0]
        if x.ndim == 2 and np.isfinite(x).all() and np.ptp(x.max(axis=-1)) > 500:
            return wrong(f"on {what}, row {bad[0]} came out NaN. One max for the whole matrix leaves the low row at "
                         "exp(-1000) = 0, and 0 / 0 = NaN. Subtract each row's own max: "
                         "x - x.max(axis=-1, keepdims=True).")
        if np.ptp(x) > 1500:
            return wrong(f"on {what} you got NaN or inf. Subtracting the min (or the mean) is not enough: "
                         "exp(2000) still overflows. Subtract the MAX, so the biggest exponent is exp(0) = 1.")
        return wrong(f"on {what} you got NaN or inf: exp(1000) overflows a float64 (its limit is about exp(709.8)). "
                     "Subtract the largest score before exp; softmax does not change, since the factor cancels.")
    if x.ndim == 2 and got.shape == x.shape:
        sums = got.sum(axis=-1)
        if np.allclose(got.sum(axis=0), 1.0) and not np.allclose(sums, 1.0):
            return wrong(f"on {what} the columns sum to 1 but the rows sum to {np.round(sums, 3).tolist()}: the sum "
                         "ran down axis 0. Sum each row: e.sum(axis=-1, keepdims=True).")
        if np.isclose(got.sum(), 1.0) and not np.allclose(sums, 1.0):
            return wrong(f"on {what} the whole matrix sums to 1, the rows to {np.round(sums, 3).tolist()}: you "
                         "divided by one grand total. Each row is its own softmax: e.sum(axis=-1, keepdims=True).")
    if got.shape == x.shape and not np.allclose(got.sum(axis=-1), 1.0, atol=1e-6):
        return wrong(f"on {what} the weights sum to {np.round(got.sum(axis=-1), 4).tolist()}, not 1. "
                     "Divide the exponentials by their sum.")
    return None


def check_stable_softmax(student_softmax) -> Feedback:
    """Exercise 2: a softmax that survives large scores and works row by row on a matrix."""
    problem = require_callable(student_softmax, "softmax(x) for a 1-D or 2-D array x")
    if problem is not None:
        return problem
    for x, what in _SOFTMAX_CASES:
        with np.errstate(all="ignore"):   # the verdict below says what overflowed, not a warning
            result, problem = call_student(student_softmax, x.copy())
        if problem is not None:
            return wrong(f"on {what}: {problem.message}")
        got, problem = as_numbers(result, "the result")
        if problem is not None:
            return wrong(f"on {what}: {problem.message}")
        if got.shape != x.shape:
            return wrong(f"on {what} the result has shape {got.shape}, but softmax keeps the shape of its input, "
                         f"{x.shape}. Keep the sum's axis with keepdims=True so it broadcasts back.")
        problem = _diagnose_softmax(x, got, what)
        if problem is not None:
            return problem
        problem = compare_numbers(got, reference_softmax(x), f"the result on {what}", atol=1e-6,
                                  hint="Compare with exp(x - max) / sum(exp(x - max)).")
        if problem is not None:
            return problem
    return correct("your softmax matches the stable one on small, huge, widely spread and 2-D scores: "
                   "subtracting the row max keeps every exponent at most 0, so nothing overflows.")


def solution_stable_softmax() -> Solution:
    return Solution.from_function(
        "a stable softmax", reference_softmax,
        "exp(x - m) / Σ exp(x - m) = exp(x) / Σ exp(x) for any m (the factor exp(-m) cancels). With m the row "
        "max, the largest exponent is exp(0) = 1 and the sum is at least 1, so there is neither overflow nor 0/0.")


# --- Exercise 3: the scale that makes softmax confident -----------------------------------------

def top_weight(scale: float) -> float:
    """The largest weight of softmax(scale · [1.0, 1.2, 0.9])."""
    return float(softmax(scale * SCORES).max())


def reference_smallest_scale(target: float = TARGET_TOP_WEIGHT) -> float:
    """The smallest scale c at which softmax(c · [1.0, 1.2, 0.9]) puts `target` on its top score (bisection)."""
    lo, hi = 0.0, 1.0
    while top_weight(hi) < target:       # grow the bracket until it holds the answer
        hi *= 2
    for _ in range(60):                  # halve it: top_weight grows with the scale
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if top_weight(mid) < target else (lo, mid)
    return hi


def check_scale_for_confidence(c) -> Feedback:
    """Exercise 3: a scale c at which softmax(c · [1.0, 1.2, 0.9]) puts >= 0.9 on one token."""
    if c is None:
        return wrong("c is still None. Replace None with one number, e.g. c = 5.0.")
    if isinstance(c, bool) or not isinstance(c, numbers.Real):
        return wrong(f"c should be one number such as 5.0, but got {type(c).__name__} {c!r:.40}.")
    if not np.isfinite(c):
        return wrong(f"c = {c} is not a finite number. Try a number like 20.")
    smallest = reference_smallest_scale()
    if c == 0:
        return wrong("with c = 0 every score becomes 0 and softmax gives the uniform [1/3, 1/3, 1/3]. "
                     "Try a scale above 1: bigger scores, sharper weights.")
    if c < 0:
        weights = softmax(c * SCORES)
        return wrong(f"a negative scale turns the order around: softmax({c:g} · scores) = "
                     f"{np.round(weights, 3).tolist()} favours the LOWEST score (0.9). Use a positive c.")
    weight = top_weight(c)
    if weight < TARGET_TOP_WEIGHT:
        return wrong(f"with c = {c:g} the top weight is {weight:.3f}, still below {TARGET_TOP_WEIGHT}. "
                     "Try a larger c (watch the widget above: the bars harden as c grows).")
    return correct(f"with c = {c:g} the top weight is {weight:.3f}. The smallest scale that reaches "
                   f"{TARGET_TOP_WEIGHT} is about {smallest:.2f}: same scores, same order, and a larger scale alone "
                   "makes softmax nearly one-hot. Notebook 05 shows how dividing by √d_k keeps attention scores "
                   "out of this regime.")


def solution_scale_for_confidence() -> Solution:
    smallest = reference_smallest_scale()
    tops = ", ".join(f"{top_weight(c):.3f}" for c in (1, 2, 5, 10, 20))
    return Solution(
        "the scale that reaches 0.9",
        f"""
        scores = np.array([1.0, 1.2, 0.9])
        for c in [1, 2, 5, 10, 20]:
            print(c, softmax(c * scores).max().round(3))   # {tops}
        c = 20.0                                            # any c >= {smallest:.2f} works
        """,
        "The gap between the top score and the others is multiplied by c; exp turns a fixed gap into a fixed "
        f"ratio, so the top weight climbs toward 1 as c grows. Bisection gives the smallest c: {smallest:.4f}.")
