"""Exercises of notebook 02: dot product vs cosine, a stable softmax, and the scale that hardens it."""
import math
from functools import partial

import numpy as np

from helpers.exercises import engine
from helpers.exercises.engine import Case, Exercise, Feedback, correct, named_slip, one_number, raised, solved_by, wrong
from helpers.similarity import cosine, softmax

A, B = np.array([4.0, 2.0]), np.array([6.0, 1.0])
SCORES, TARGET_TOP_WEIGHT = np.array([1.0, 1.2, 0.9]), 0.9
COSINE_TOLERANCE = 1e-9  #: float rounding: the computed cos(a, 10 b) comes out a hair below cos(a, b)


# --- Exercise 1: longer, not closer -------------------------------------------------------------
def reference_longer_not_closer() -> np.ndarray:
    """A vector v with a bigger dot product with a than b has, but a smaller cosine: (2,)."""
    c = np.array([1.0, 5.0])   # c points away from a (cos 0.61 against b's 0.96) ...
    return 10 * c              # ... so stretch it: a · (10 c) = 140 > 26, the angle is unchanged


@solved_by("longer, not closer", reference_longer_not_closer,
           "Any v that points further from a than b does (a smaller cosine), but still toward a (a positive "
           "cosine), wins on the dot product once it is long enough, because a · v = |a| |v| cos θ grows with |v|. "
           "A v at 90° or more from a has cos θ <= 0, and no length helps.")
def check_longer_not_closer(v) -> Feedback:
    """Exercise 1: a · v > a · b = 26 but cos(a, v) < cos(a, b)."""
    if v is None:
        return wrong("v is still None. Replace None with a 2-D vector, e.g. v = np.array([2.0, 1.0]).")
    got, problem = engine.as_numbers(v, "v")
    if problem is not None:
        return problem
    if got.shape != (2,):
        return wrong(f"v should be a vector of 2 numbers, shape (2,), such as [2.0, 1.0], but has shape {got.shape}.")
    with np.errstate(over="ignore", invalid="ignore"):
        dot_v = float(A @ got)
    if not np.isfinite(dot_v):
        return wrong("v contains NaN or infinity, or a · v overflows a float64. Use ordinary sizes.")
    if not np.any(got):
        return wrong("v is [0, 0]: it has no direction, so no cosine. Pick a vector that points somewhere.")
    dot_b, cos_b, cos_v = float(A @ B), cosine(A, B), cosine(A, got)
    longer, turned = dot_v > dot_b, cos_v < cos_b - COSINE_TOLERANCE   # turned: strictly, not by rounding
    if longer and turned:   # 8 digits, and as many decimals as tell a v at the edge from b (4 at least)
        k = next(k for k in range(4, 11) if round(cos_v, k) < round(cos_b, k))
        return correct(f"a · v = {dot_v:.8g} > {dot_b:.0f}, yet cos(a, v) = {cos_v:.{k}f} < cos(a, b) = {cos_b:.{k}f}. "
                       "The dot product rewards length as well as direction: a long vector gets a loud vote.")
    if longer:
        same = " v points exactly the way b does: stretching never changes its angle." * (
            abs(cos_v - cos_b) <= COSINE_TOLERANCE)
        side = "upward" if A[0] * got[1] > A[1] * got[0] else "downward"   # v above a's line, or below it
        return wrong(f"a · v = {dot_v:.8g} beats {dot_b:.0f}, but cos(a, v) = {cos_v:.4f} is not below "
                     f"cos(a, b) = {cos_b:.4f}.{same} Try: turn v further from a (more {side}), then make it long.")
    if cos_v <= 0:
        return wrong(f"v points {'across' if cos_v == 0 else 'away from'} a (cos(a, v) = {cos_v:.3f}): No length "
                     f"helps a · v exceed {dot_b:.0f}. Try: turn v toward a, like c = [1, 5], and make it long.")
    if turned:
        short = " v is so short that a · v is practically 0." if dot_v < 1e-90 else ""
        return wrong(f"the angle is fine, but a · v = {dot_v:.4g} is not above a · b = {dot_b:.0f}.{short} "
                     + (f"Try: multiply v by a number larger than {dot_b / dot_v:.3g}." if dot_b / dot_v < math.inf
                        else "Try: make v far longer."))
    return wrong(f"a · v = {dot_v:.4g} is not above a · b = {dot_b:.0f}, and cos(a, v) = {cos_v:.3f} is not "
                 f"below cos(a, b) = {cos_b:.3f}. Try: point v further from a than b, then make it long.")


# --- Exercise 2: a stable softmax ---------------------------------------------------------------
def reference_softmax(x):
    """Stable softmax over the last axis: (..., n) -> (..., n), each row positive and summing to 1."""
    x = np.asarray(x, dtype=float)
    exps = np.exp(x - x.max(axis=-1, keepdims=True))   # the largest exponent is 0: no overflow
    return exps / exps.sum(axis=-1, keepdims=True)


def _softmax_cases():
    return [Case(x, what=what) for x, what in (
        (np.array([1.0, 1.2, 0.9]), "the scores [1.0, 1.2, 0.9]"),
        (np.array([1000.0, 1001.0, 1002.0]), "large scores [1000, 1001, 1002]"),
        (np.array([-1000.0, 0.0, 1000.0]), "widely spread scores [-1000, 0, 1000]"),
        (np.array([1000.0, 0.0, -1000.0]), "the same scores, largest first, [1000, 0, -1000]"),
        (np.array([-1000.0, -1001.0, -1002.0]), "scores far below zero [-1000, -1001, -1002]"),
        (np.array([1000.0, 990.0, -2000.0]), "two scores far above the third, [1000, 990, -2000]"),
        (np.array([[1.0, 1.2, 0.9], [10.0, 12.0, 9.0]]), "a 2-row matrix (one softmax per row)"),
        (np.array([[0.0, 1.0], [1000.0, 1001.0]]), "a matrix whose rows are far apart, [[0, 1], [1000, 1001]]"),
        (np.array([0.5, -1.0, 2.0, 0.0, 1.5]), "five scores [0.5, -1, 2, 0, 1.5]"),   # wider than the page's 3
        (np.array([[2.0, -1.0, 0.5, 3.0]]), "a matrix of one row, [[2, -1, 0.5, 3]]"))]   # its shape (1, 4) kept


def _draw_scores(rng, spiked=False) -> Case:
    """Rows near -1000, 0 or 1000; `spiked`: 3 rows, one near each, each with a score (not at an end) 1,000 higher."""
    rows, n = 3 if spiked else rng.integers(2, 6), rng.integers(4, 9)   # wider than the page's 3 scores
    around = rng.permutation([-1000.0, 0.0, 1000.0]) if spiked else rng.choice([-1000.0, 0.0, 1000.0], size=rows)
    x = rng.normal(size=(rows, n)) * rng.choice([1.0, 10.0]) + around[:, None]
    x[np.arange(rows), rng.integers(1, n - 1, size=rows)] += 1000.0 * spiked   # neither the first nor the last
    return Case(x, what=f"scores of shape ({rows}, {n}) drawn at random, rows around {x.mean(-1).round().tolist()}"
                        + ", one score in each 1,000 above the rest" * spiked,
                atol32=5e-5)   # float32 rounds a score near 1,000 by up to 3e-5: the weights move by 1.6e-5 at most


def _softmax_error(case, error):
    x, = case.args
    if x.ndim == 1 and isinstance(error, IndexError):   # NumPy's AxisError: axis=1 of one row of scores
        return (f"on {case.what} {raised(error).rstrip('. ')}. These scores are one row, with axis 0 only: "
                "axis=-1, the last axis, is a row's axis for one row and for a matrix alike.")
    if x.ndim == 2 and isinstance(error, (ValueError, RuntimeError)):   # NumPy's or torch's broadcasting error, or
        return (f"on {case.what} {raised(error).rstrip('. ')}. Two usual causes on a matrix: a row-wise max or sum "
                f"without keepdims, shape ({len(x)},), cannot broadcast against it (use keepdims=True, in torch "
                f"keepdim=True: shape ({len(x)}, 1) stretches across each row); or Python's built-in max or sum, "
                "which compare and add whole rows (use x.max(axis=-1, keepdims=True)).")   # Python's max of rows


def _judge_softmax(case, got, expected):
    """The usual mistakes on one input by name, before the engine compares got with softmax(x)."""
    x, what = case.args[0], case.what
    if got.shape != x.shape:
        return f"on {what} the result has shape {got.shape}: softmax keeps the shape of its input."
    if message := named_slip(got, [   # overflows and 0 / 0 are silent here: the engine judges inside np.errstate
        (np.exp(x), f"on {what} you returned exp(x) itself. Divide it by its sum."),
        (x / x.sum(), f"on {what} you divided the scores by their sum, without exp. Exponentiate first."),
        (np.floor(expected) if abs(x).max() < 700 else np.nan, f"on {what} every weight came out 0: // floors each "
         "weight (divide with /), or nothing was written into the result"),
        ((c := np.exp(x - x.max(axis=0))) / c.sum(axis=-1, keepdims=True), f"on {what} each COLUMN's max was "
         "subtracted (axis=0); softmax stays the same only if a whole row is shifted by ONE number: axis=-1.")]):
        return message
    if not np.all(np.isfinite(got)):
        one_max = np.exp(x - x.max()) / np.exp(x - x.max()).sum(axis=-1, keepdims=True)   # the slip, NaN and all
        if x.ndim == 2 and np.allclose(got, one_max, atol=1e-6, equal_nan=True):
            return (f"on {what} a row came out NaN: one max for the whole matrix leaves the low row at "
                    "exp(-1000) = 0, and 0 / 0 = NaN. Subtract each row's own max: x.max(axis=-1, keepdims=True).")
        if np.ptp(x) > 1500:
            return (f"on {what} you got NaN or inf: a shift by anything below the largest score (the min, the mean, "
                    "the last score) overflows. Subtract the MAX.")
        if x.max() < -700:
            return (f"on {what} you got NaN: every exp underflows to 0 (exp({x.max():.0f}), or of anything lower), "
                    "and 0 / 0 = NaN. Subtract the largest score itself, sign and all: then the largest exponent is "
                    "exp(0) = 1.")
        if np.abs(x).max() < 700:   # no exp can overflow here
            return f"on {what} you got NaN or inf, though exp of these scores is finite: look for a division by 0."
        return f"on {what} you got NaN or inf: exp(1000) overflows float64. Subtract the largest score in each row."
    sums = got.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        if x.ndim == 2 and (np.allclose(got.sum(axis=0), 1.0) or np.isclose(got.sum(), 1.0)):
            return (f"on {what} the rows sum to {np.round(sums, 3).tolist()}: you summed over the wrong axis "
                    "(columns, or the whole matrix). Take each row's own max and sum: axis=-1, keepdims=True.")
        if (got < 0).any():
            return (f"on {what} some weights are negative ({got.min():.4g}), but exp is never negative: these are "
                    "not softmax weights (log-softmax, perhaps). Return exp(x − max) divided by its sum.")
        unshifted = np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x).sum(axis=-1, keepdims=True)   # sum: inf
        if np.allclose(got, unshifted, atol=1e-9):   # where exp overflows, the slip's row is 0, as inf / inf replaced
            why = ("you divided the shifted exponentials by the sum of the unshifted ones" if got.any(axis=-1).all()
                   else "exp overflowed to inf, so the row came out 0 (inf / inf, or a NaN replaced by 0)")
            return (f"on {what} the weights sum to {np.round(sums, 8).tolist()}: {why}. Shift both by the same max: "
                    "exp(x − m) / Σ exp(x − m).")
        return f"on {what} the weights sum to {np.round(sums, 8).tolist()}, not 1. Divide by the sum."
    return None


check_stable_softmax = Exercise(reference_softmax, title="a stable softmax",
    expects="softmax(x) for a 1-D or 2-D array x",
    cases=_softmax_cases, draw=(_draw_scores, _draw_scores, partial(_draw_scores, spiked=True)),
    errors=_softmax_error, judge=_judge_softmax, own="softmax", hint="Compare with exp(x - max) / sum(exp(x - max)).",
    success="your softmax matches the stable one on small, huge, very negative, widely spread and 2-D scores.",
    explanation="exp(x - m) / Σ exp(x - m) = exp(x) / Σ exp(x) for any m (the factor exp(-m) cancels). With m the "
                "row max, the largest exponent is exp(0) = 1 and the sum is at least 1, so there is neither overflow "
                "nor 0/0.")


# --- Exercise 3: the scale that makes softmax confident -----------------------------------------
def top_weight(scale: float) -> float:
    """The largest weight of softmax(scale · [1.0, 1.2, 0.9]), on the gaps scale · (s - max s): finite up to 1e308."""
    return float(softmax(scale * (SCORES - SCORES.max())).max())


def reference_smallest_scale() -> float:
    """The smallest scale at which softmax(scale · [1.0, 1.2, 0.9]) puts 0.9 on its top score (bisection)."""
    lo, hi = 0.0, 100.0                  # top_weight(100) is 0.99999...: the answer lies between
    for _ in range(60):                  # halve the bracket: top_weight grows with the scale
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if top_weight(mid) < TARGET_TOP_WEIGHT else (lo, mid)
    return hi


def quoted_scales() -> tuple[float, float]:
    """The smallest scale rounded UP to 4 decimals and to 2: a student who types a quoted scale reaches 0.9."""
    return tuple(math.ceil(reference_smallest_scale() * 10**k) / 10**k for k in (4, 2))


def _scale_solution() -> str:
    tops, (up4, up2) = ", ".join(f"{top_weight(c):.3f}" for c in (1, 2, 5, 10, 20)), quoted_scales()
    return f"""
        scores = np.array([1.0, 1.2, 0.9])
        for scale in [1, 2, 5, 10, 20]:
            print(scale, softmax(scale * scores).max().round(3))   # {tops}
        scale = 20.0                                                # any scale >= {up4} works, e.g. {up2}
        """


@solved_by("the scale that reaches 0.9", _scale_solution(),
           "The gap between the top score and the others is multiplied by the scale; exp turns a fixed gap into a "
           "fixed ratio, so the top weight climbs toward 1 as the scale grows. Bisection gives the smallest scale: "
           f"{reference_smallest_scale():.5f}… (rounded up: {quoted_scales()[0]}).",
           read=partial(one_number, name="scale", what="a number such as scale = 5.0"))
def check_scale_for_confidence(scale) -> Feedback:
    """Exercise 3: a scale at which softmax(scale · [1.0, 1.2, 0.9]) puts >= 0.9 on one token."""
    smallest = reference_smallest_scale()
    if scale == 0:
        return wrong("with scale = 0 softmax gives the uniform [1/3, 1/3, 1/3]. Try a scale above 1.")
    if scale < 0:
        return wrong("a negative scale favours the LOWEST score (0.9). Use a positive scale.")
    with np.errstate(over="ignore"):   # as typed: float32's own digits for a float32 (1e300 has none), 5 for 5.0
        typed = (str(np.float32(scale)) if float(np.float32(scale)) == scale else repr(scale)).removesuffix(".0")
    weight = top_weight(scale)
    if weight < TARGET_TOP_WEIGHT - 1e-15:   # a weight computed another way may differ in its last digit
        shown = next(f"{weight:.{k}f}" for k in (3, 6, 17) if round(weight, k) < TARGET_TOP_WEIGHT)  # not 0.900 < 0.9
        hint = (f"Just short: the smallest scale is {smallest:.5f}…, so use {quoted_scales()[0]} or more."
                if scale > 0.99 * smallest else "Try a larger scale.")
        return wrong(f"with scale = {typed} the top weight is {shown} < {TARGET_TOP_WEIGHT}. {hint}")
    return correct(f"with scale = {typed} the top weight is {weight:.3f}. The smallest scale that reaches "
                   f"{TARGET_TOP_WEIGHT} is {smallest:.5f}… (any scale from {quoted_scales()[0]} up, e.g. "
                   f"{quoted_scales()[1]}): a larger scale alone makes softmax nearly one-hot.")
