"""Exercises of notebook 02: dot product vs cosine, a stable softmax, and the scale that hardens it."""
from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np

from helpers.exercises.feedback import (
    Feedback,
    Solution,
    as_numbers,
    compare_numbers,
    correct,
    numbers_from,
    one_number,
    require_callable,
    wrong,
)
from helpers.similarity import cosine, softmax

A = np.array([4.0, 2.0])
B = np.array([6.0, 1.0])
SCORES = np.array([1.0, 1.2, 0.9])
TARGET_TOP_WEIGHT = 0.9


# --- Exercise 1: longer, not closer -------------------------------------------------------------

#: cos(a, v) must be below cos(a, b) by more than float rounding: 10 · b has b's angle exactly,
#: yet its computed cosine can come out a hair smaller (0.9557790087219499 < 0.95577900872195).
COSINE_TOLERANCE = 1e-9


def reference_longer_not_closer() -> np.ndarray:
    """A vector v with a bigger dot product with a than b has, but a smaller cosine: (2,)."""
    c = np.array([1.0, 5.0])   # c points away from a (cos 0.61 against b's 0.96) ...
    return 10 * c              # ... so stretch it: a · (10 c) = 140 > 26, the angle is unchanged


def check_longer_not_closer(v) -> Feedback:
    """Exercise 1: a · v > a · b = 26 but cos(a, v) < cos(a, b)."""
    if v is None:
        return wrong("v is still None. Replace None with a 2-D vector, e.g. v = np.array([3.0, 7.0]).")
    got, problem = as_numbers(v, "v")
    if problem is not None:
        return problem
    if got.shape != (2,):
        return wrong(f"v should be a 2-D vector, two numbers such as [3.0, 7.0], but has shape {got.shape}.")
    if not np.all(np.isfinite(got)):
        return wrong("v contains NaN or infinity. Use ordinary numbers.")
    if not np.any(got):
        return wrong("v is [0, 0]: it has no direction, so no cosine. Pick a vector that points somewhere.")
    with np.errstate(over="ignore", invalid="ignore"):
        dot_v = float(A @ got)
    if not np.isfinite(dot_v):
        return wrong(f"v = {got.tolist()} is so long that a · v overflows a float64 (it comes out as {dot_v}), "
                     "so nothing can be compared. Try: ordinary sizes; a length of a few tens is plenty.")
    dot_b, cos_b = float(A @ B), cosine(A, B)
    cos_v = cosine(A, got)
    longer = dot_v > dot_b
    closer_ok = cos_v < cos_b - COSINE_TOLERANCE   # strictly smaller angle-wise, not by rounding
    if longer and closer_ok:
        return correct(f"a · v = {dot_v:.4g} > {dot_b:.0f}, yet cos(a, v) = {cos_v:.3f} < cos(a, b) = {cos_b:.3f}. "
                       "The dot product rewards length as well as direction. Attention scores with the dot "
                       "product (divided by a constant), not the cosine, so a long vector gets a loud vote "
                       "(you will meet one in notebook 03).")
    if longer:
        if abs(cos_v - cos_b) <= COSINE_TOLERANCE:
            return wrong(f"a · v = {dot_v:.4g} beats {dot_b:.0f}, but v points exactly the way b does: "
                         f"cos(a, v) = cos(a, b) = {cos_b:.3f}. Stretching a vector changes its length, never its "
                         "angle. Try: turn v further from a than b is (more upward, like c = [1, 5]), then make "
                         "it long enough.")
        return wrong(f"a · v = {dot_v:.4g} beats {dot_b:.0f}, but cos(a, v) = {cos_v:.3f} is not below "
                     f"cos(a, b) = {cos_b:.3f}: v points at a at least as closely as b does. Try: turn v away "
                     "from a (more upward), then make it long enough.")
    if cos_v <= 0:
        if cos_v == 0:
            where = "v points across a, at 90° (cos(a, v) = 0), so a · v = 0 for every length of v"
        else:
            where = (f"v points away from a (cos(a, v) = {cos_v:.3f}), so a · v = {dot_v:.4g} is negative, "
                     "and a longer v only makes it more negative")
        return wrong(f"{where}. No length helps: a · v can never exceed {dot_b:.0f}. Try: turn v toward a, "
                     f"to an angle whose cosine lies between 0 and {cos_b:.3f} (e.g. mostly upward, like "
                     "c = [1, 5]), then make it long.")
    if closer_ok:
        factor = dot_b / dot_v
        if not np.isfinite(factor) or factor > 1e100:
            return wrong(f"v = {got.tolist()} is so short that a · v = {dot_v:.3g} is practically 0. "
                         "Use ordinary sizes: a length of a few tens is plenty.")
        return wrong(f"the angle is fine (cos(a, v) = {cos_v:.3f} < {cos_b:.3f}), but a · v = {dot_v:.4g} is not "
                     f"above a · b = {dot_b:.0f}. Try: multiply v by a number larger than {factor:.3g}; its "
                     "direction (and so its cosine) stays the same while the dot product grows.")
    return wrong(f"a · v = {dot_v:.4g} is not above a · b = {dot_b:.0f}, and cos(a, v) = {cos_v:.3f} is not "
                 f"below cos(a, b) = {cos_b:.3f}. Try: point v away from a more than b does (e.g. mostly "
                 "upward), then make it long.")


def solution_longer_not_closer() -> Solution:
    return Solution.from_function(
        "longer, not closer", reference_longer_not_closer,
        "Any v that points further from a than b does (a smaller cosine), but still toward a (a positive "
        "cosine), wins on the dot product once it is long enough, because a · v = |a| |v| cos θ grows with |v|. "
        "A v at 90° or more from a has cos θ <= 0, and no length helps.")


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


_KEEPDIMS = ("on {what} NumPy could not line up the shapes (a broadcast error). A row-wise max or sum without "
             "keepdims has shape ({rows},), one number per row, and a {shape} matrix cannot be combined with it. "
             "Try: keep the reduced axis, x.max(axis=-1, keepdims=True) and e.sum(axis=-1, keepdims=True) have "
             "shape ({rows}, 1), which stretches across each row.")


def check_stable_softmax(student_softmax) -> Feedback:
    """Exercise 2: a softmax that survives large scores and works row by row on a matrix."""
    problem = require_callable(student_softmax, "softmax(x) for a 1-D or 2-D array x")
    if problem is not None:
        return problem
    for x, what in _SOFTMAX_CASES:
        raised = []

        def recording(scores, raised=raised):
            try:
                return student_softmax(scores)
            except Exception as error:   # remembered for the diagnosis, then reported by call_student
                raised.append(error)
                raise

        got, problem = numbers_from(recording, x.copy(), on=what)
        if problem is not None:
            if x.ndim == 2 and raised and isinstance(raised[0], ValueError) and "broadcast" in str(raised[0]):
                return wrong(_KEEPDIMS.format(what=what, rows=x.shape[0], shape=x.shape))
            return problem
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
    verdict = ("your softmax matches the stable one on small, huge, widely spread and 2-D scores: "
               "subtracting the row max keeps every exponent at most 0, so nothing overflows.")
    if _calls_a_library_softmax(student_softmax):
        verdict += (" It calls a library softmax, though, which already does this. For the exercise, write it "
                    "yourself with np.exp, .max and .sum, and run the checker again.")
    return correct(verdict)


def _calls_a_library_softmax(function) -> bool:
    """Whether the function's own code calls a ready-made softmax: torch's, scipy's or the course's.

    Comments don't count, and neither does a helper the student wrote (defined in the notebook).
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):   # no source to read (a builtin, a lambda inside an expression)
        return False
    names = getattr(function, "__globals__", {})
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and "softmax" in node.func.attr:
            return True                      # torch.softmax, F.softmax, special.softmax, x.softmax(...)
        if isinstance(node.func, ast.Name) and "softmax" in node.func.id:
            module = getattr(names.get(node.func.id), "__module__", "") or ""
            if module.split(".")[0] in {"torch", "scipy", "helpers"}:
                return True                  # e.g. `from helpers.similarity import softmax`
    return False


def solution_stable_softmax() -> Solution:
    return Solution.from_function(
        "a stable softmax", reference_softmax,
        "exp(x - m) / Σ exp(x - m) = exp(x) / Σ exp(x) for any m (the factor exp(-m) cancels). With m the row "
        "max, the largest exponent is exp(0) = 1 and the sum is at least 1, so there is neither overflow nor 0/0.")


# --- Exercise 3: the scale that makes softmax confident -----------------------------------------

def top_weight(scale: float) -> float:
    """The largest weight of softmax(scale · [1.0, 1.2, 0.9]).

    Computed on the score gaps (scale · (s - max s)), which stay finite for any
    finite scale, so even scale = 1e308 gets an answer.
    """
    gaps = SCORES - SCORES.max()                    # <= 0: scale * gaps cannot overflow upward
    with np.errstate(over="ignore"):
        shifted = np.maximum(scale * gaps, -1e300)  # a huge scale gives -inf: keep it a finite number
    return float(softmax(shifted).max())


def reference_smallest_scale(target: float = TARGET_TOP_WEIGHT) -> float:
    """The smallest scale at which softmax(scale · [1.0, 1.2, 0.9]) puts `target` on its top score (bisection)."""
    lo, hi = 0.0, 1.0
    while top_weight(hi) < target:       # grow the bracket until it holds the answer
        hi *= 2
    for _ in range(60):                  # halve it: top_weight grows with the scale
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if top_weight(mid) < target else (lo, mid)
    return hi


def check_scale_for_confidence(scale) -> Feedback:
    """Exercise 3: a scale at which softmax(scale · [1.0, 1.2, 0.9]) puts >= 0.9 on one token."""
    scale, problem = one_number(scale, "scale", "one number such as scale = 5.0")
    if problem is not None:
        return problem
    smallest = reference_smallest_scale()
    if scale == 0:
        return wrong("with scale = 0 every score becomes 0 and softmax gives the uniform [1/3, 1/3, 1/3]. "
                     "Try a scale above 1: bigger scores, sharper weights.")
    if scale < 0:
        weights = softmax(scale * SCORES)
        return wrong(f"a negative scale turns the order around: softmax({scale:g} · scores) = "
                     f"{np.round(weights, 3).tolist()} favours the LOWEST score (0.9). Use a positive scale.")
    weight = top_weight(scale)
    if weight < TARGET_TOP_WEIGHT:
        shown = f"{weight:.3f}" if round(weight, 3) < TARGET_TOP_WEIGHT else f"{weight:.6f}"  # never "0.900 < 0.9"
        return wrong(f"with scale = {scale:g} the top weight is {shown}, still below {TARGET_TOP_WEIGHT}. "
                     "Try a larger scale (watch the widget above: the bars harden as the scale grows).")
    return correct(f"with scale = {scale:g} the top weight is {weight:.3f}. The smallest scale that reaches "
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
        for scale in [1, 2, 5, 10, 20]:
            print(scale, softmax(scale * scores).max().round(3))   # {tops}
        scale = 20.0                                                # any scale >= {smallest:.2f} works
        """,
        "The gap between the top score and the others is multiplied by the scale; exp turns a fixed gap into a "
        "fixed ratio, so the top weight climbs toward 1 as the scale grows. Bisection gives the smallest scale: "
        f"{smallest:.4f}.")
