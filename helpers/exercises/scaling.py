"""Exercises of notebook 05: the divisor per head, predicting the variance, scaled weights."""
import math
from functools import partial

import numpy as np

from helpers.exercises import engine
from helpers.exercises.engine import Case, Exercise, Feedback, correct, one_number, rounded, solved_by, wrong
from helpers.scaling import sample_dot_products
from helpers.similarity import softmax

# ----------------------------------------------------------------------------- Exercise 1: the divisor per head
#: (d_model, n_heads), the course's 512 / 8 first; 128 / 2 catches "return n_heads", 384 / 4 (d_k = 96) a rounded √,
#: 256 / 16 (d_k = 16) a hard-coded 8 for many heads (512 / 8 and 768 / 12 both have d_k = 64).
DIVISOR_CASES = ((512, 8), (128, 2), (768, 12), (96, 6), (1024, 1), (384, 4), (256, 16))
_close = partial(math.isclose, rel_tol=1e-6, abs_tol=1e-9)
_SWAP = ("the division is the wrong way round (maybe the arguments are swapped: the checker calls "
         "divisor(d_model, n_heads))")
#: Slips, named when EVERY case follows the formula (one can mislead: at 512 / 8, √(d_model·n_heads) = 64 = d_k).
_DIVISOR_SLIPS = (
    (lambda m, h: math.sqrt(m), "that is √d_model, but d_k is the size of ONE head's keys."),
    (lambda m, h: m / h, "that is d_k = d_model / n_heads itself; the divisor is its square root."),
    (lambda m, h: h, "that is the number of heads, which happens to match only for 512 and 8 heads."),
    (lambda m, h: math.sqrt(h / m), f"that is √(n_heads / d_model) = 1/√d_k: {_SWAP}, or you returned the "
                                    "factor the scores are MULTIPLIED by."),
    (lambda m, h: h / m, f"that is n_heads / d_model: {_SWAP} and the square root is missing."),
    (lambda m, h: 0.0, f"0 every time: {_SWAP}."),
    (lambda m, h: math.sqrt(m) / h, "that is √d_model / n_heads; take the root of the per-head size."),
    (lambda m, h: math.sqrt(h), "that is √n_heads; the root belongs to the per-head size."),
    (lambda m, h: m * h, "that is d_model · n_heads: heads split d_model, they do not multiply it."),
    (lambda m, h: math.sqrt(m * h), "that is √(d_model · n_heads): heads split d_model, they do not multiply it."),
    (lambda m, h: math.floor(math.sqrt(m / h)), "the square root was rounded down (int() or //): return a float."),
    *((lambda m, h, k=k: round(math.sqrt(m / h), k), f"the square root was rounded to {k} decimal{'s' * (k > 1)}: "
       "return it as computed, unrounded (round only when you print it).") for k in range(4, 0, -1)),
    (lambda m, h: m / h / 2, "that is d_k / 2: in Python x**1/2 is (x**1)/2, so write x ** 0.5 or math.sqrt(x)."),
    (lambda m, h: 1.0, "1 every time, as if no head were scaled (x**(1//2) is x**0, since 1//2 is 0: write x ** 0.5)."),
    (lambda m, h: m, "that is d_model itself."))


def reference_divisor(d_model, n_heads):
    """The constant c that attention scores are divided by: √d_k, with d_k = d_model / n_heads per head."""
    d_k = d_model // n_heads          # each head gets an equal slice of d_model
    return math.sqrt(d_k)


def _draw_divisor_cases(rng) -> tuple[tuple[int, int], ...]:
    """(d_model, n_heads): 8, then 3 to 16 heads of 16 to 120 features (not 64, 96); 512 and 768 with 2 to 32 heads."""
    heads = (8, rng.integers(3, 17), *rng.choice([2, 4, 16, 32], size=2))
    d_k = (*rng.choice([16, 24, 40, 48, 56, 72, 80, 112, 120], size=2), 512 / heads[2], 768 / heads[3])
    return tuple((int(h * k), int(h)) for h, k in zip(heads, d_k))


@solved_by("the divisor for a model with several heads", reference_divisor,
           "Multi-head attention splits d_model into n_heads equal slices; each head's keys have d_k = d_model / "
           "n_heads components, and only those enter its dot products. So the variance to undo is d_k·σ⁴, and the "
           "divisor is √d_k.")
def check_divisor(divisor) -> Feedback:
    """Exercise 1: divisor(d_model, n_heads) -> c = √(d_model / n_heads), on the page's sizes and four drawn afresh."""
    if not callable(divisor):
        return engine.not_a_function(divisor, "divisor(d_model, n_heads) returning one number")
    if misfit := engine.refused(divisor, (512, 8), {}):
        return wrong(f"your function has the parameters {misfit}, but is called as divisor(d_model, n_heads).")
    cases, answers = DIVISOR_CASES + _draw_divisor_cases(np.random.default_rng()), []
    for d_model, n_heads in cases:
        try:
            got = divisor(d_model, n_heads)
        except (Exception, SystemExit) as error:  # the student sees what went wrong, the notebook goes on
            return wrong(f"divisor({d_model}, {n_heads}): " * (not engine.placeholder(error)) + engine.raised(error)
                         + "." * bool(hints := engine.code_hints(divisor, (d_model, n_heads), error)) + hints)
        got, problem = one_number(got, f"divisor({d_model}, {n_heads})", "the constant c", returned=True)
        if problem is not None:
            return problem
        answers.append(got)
    failed = [(case, c) for case, c in zip(cases, answers, strict=True) if not _close(c, reference_divisor(*case))]
    if not failed:
        return correct("c = √(d_model / n_heads): 8 for d_model = 512 with 8 heads (not √512 ≈ 22.6), and 8 again "
                       "for 768 with 12 heads: many real models use d_k = 64 per head."
                       + engine.nudge(divisor, "score_divisor"))
    (d_model, n_heads), _ = failed[0]
    calls = " and ".join(f"divisor({m}, {h}) returned {c:.4g}" for (m, h), c in failed[:2])
    for formula, message in _DIVISOR_SLIPS:
        if all(_close(c, formula(*case)) for case, c in zip(cases, answers, strict=True)):
            return wrong(f"{calls}: {message} Here d_k = {d_model} / {n_heads} = {d_model // n_heads}.")
    if len(set(answers)) == 1:
        return wrong(f"your function returned {answers[0]:.4g} for every input, divisor{cases[0]} to divisor"
                     f"{cases[-1]}: does it ignore its arguments, or read the notebook's d_k? Compute it from them.")
    if math.isclose(got := failed[0][1], right := reference_divisor(d_model, n_heads), rel_tol=1e-3):
        return wrong(f"divisor({d_model}, {n_heads}) returned {got:.9g}, near √({d_model} / {n_heads}) = {right:.9g} "
                     "but not equal to it: return the square root as it comes, unrounded.")
    return wrong(f"divisor({d_model}, {n_heads}) returned {got:.4g}, not the divisor of {n_heads} heads sharing "
                 f"d_model = {d_model}. Compute the per-head size d_k first, then take its square root."
                 + engine.notebook_data(divisor))   # the notebook's n_heads or d_k, read instead of an argument


# ----------------------------------------------------------------------------- Exercise 2: predict the variance
_NOT_GIVEN = object()   # check_variance_prediction's second argument, left out


@solved_by("Var(q·k) for d_k = 128 and σ = 0.5", """
    d_k, sigma = 128, 0.5
    predicted_var = d_k * sigma**4             # 128 products, each of variance σ²·σ² = 0.0625  -> 8.0
    predicted_var_scaled = predicted_var / d_k # Var(X / √d_k) = Var(X) / d_k = σ⁴               -> 0.0625
    """, "The scaled variance is σ⁴, not 1: dividing by √d_k removes the dependence on d_k and nothing else. In a "
         "real model σ is kept near 1 by initialisation and normalisation layers.")
def check_variance_prediction(predicted_var, predicted_var_scaled=_NOT_GIVEN) -> Feedback:
    """Exercise 2: Var(q·k) and Var(q·k / √d_k) for d_k = 128, components with σ = 0.5."""
    if predicted_var_scaled is _NOT_GIVEN:
        if isinstance(predicted_var, (tuple, list)) and len(predicted_var) == 2 or np.shape(predicted_var) == (2,):
            predicted_var, predicted_var_scaled = predicted_var  # check((a, b)) or an array of the two: check(a, b)
        else:
            return wrong("give both predictions: check_variance_prediction(predicted_var, predicted_var_scaled).")
    d, s = 128, 0.5   # the head size d_k, the standard deviation σ of each q and k component
    predictions = []
    for name, value in (("predicted_var", predicted_var), ("predicted_var_scaled", predicted_var_scaled)):
        value, problem = one_number(value, name, "your prediction (a number)")
        if problem is None and value < 0:
            problem = wrong(f"{name} = {value:.4g} is negative, but a variance is never below 0.")
        if problem is not None:
            return problem
        predictions.append(value)
    (raw, scaled), expected_raw, expected_scaled = predictions, d * s**4, s**4
    near = partial(math.isclose, rel_tol=1e-3)   # d_k ± 1 products (0.8 % off) is not the prediction
    if abs(raw - expected_scaled) <= 0.005 and near(scaled, expected_raw):   # 0.06 too: swapped, and rounded
        return wrong("the two answers are swapped: the raw dot product has the large variance, "
                     "the scaled one the small.")
    raw_is, scaled_is = f"predicted_var = {raw:.4g}", f"predicted_var_scaled = {scaled:.4g}"
    # (the values a slip gives, its diagnosis); the last entry, the answer itself, is the fallback
    raw_slips = (
        ((d * s**2,), f"{raw_is} = d·σ², but each product q_i·k_i has variance σ²·σ² = σ⁴ = {s**4:.4g}."),
        ((d,), f"{raw_is} = d: that holds for σ = 1; here each product has variance σ⁴ = {s**4:.4g}."),
        ((s**4,), f"{raw_is} = σ⁴, the variance of ONE product; the d = {d} products' variances add."),
        ((math.sqrt(d) * s**2, math.sqrt(d) * s**4), f"{raw_is} grows like √d, as the standard deviation does; "
         "the variance grows like d."),
        ((d * s,), f"{raw_is} = d·σ, but each product has variance σ⁴, so the total is d·σ⁴."),
        ((64 * s**4,), f"{raw_is} = 64·σ⁴: d_k = 64 is the page's 512 / 8 heads; this head has d_k = {d}."),
        ((raw,), f"{raw_is} is not it: q·k adds d independent products q_i·k_i, each of variance σ²·σ², and the "
                 "variances of independent terms add."))
    scaled_slips = (
        ((1.0,), f"predicted_var_scaled is 1, but scaling leaves σ⁴, which is 1 only when σ = 1; here σ = {s}."),
        ((expected_raw / math.sqrt(d),), f"{scaled_is} = Var / √d_k, but Var(X / c) = Var(X) / c² and c² = d_k."),
        ((expected_raw,), "predicted_var_scaled equals the unscaled variance; dividing by √d_k divides it by d_k."),
        ((expected_raw / 64,), f"{scaled_is} = Var / 64: d_k = 64 is the page's 512 / 8 heads; here c² = d_k = {d}."),
        ((round(s**4, 1), round(s**4, 2), round(s**4, 3), s**4 + 5e-4), f"{scaled_is}: rounded; keep 4 decimals."),
        ((scaled,), f"{scaled_is}. Use Var(X / c) = Var(X) / c² with c = √d_k, so c² = d_k = {d}."))
    for got, expected, slips in ((raw, expected_raw, raw_slips), (scaled, expected_scaled, scaled_slips)):
        if not near(got, expected):
            return wrong(next(message for values, message in slips if any(near(got, v) for v in values)))
    samples = sample_dot_products(d, 50_000, s, seed=2024)
    return correct(f"Var(q·k) = d·σ⁴ = {expected_raw:g} and Var(q·k / √d_k) = σ⁴ = {expected_scaled:g}. Measured on "
                   f"50,000 fresh pairs: {samples.var(ddof=1):.3f} and {(samples / math.sqrt(d)).var(ddof=1):.4f}.")


# ----------------------------------------------------------------------------- Exercise 3: scaled weights
LARGE_FACTOR = 30.0  #: the second test: Q, K 30 times longer, scores near 1,000: exp overflows without the row max
OTHER_D_K = 8  #: the third test's head size: Q and K cut to their first 8 columns, so a hard-coded √32 shows


def exercise_inputs() -> tuple[np.ndarray, np.ndarray]:
    """The Q (4, 32) and K (6, 32) the checker feeds to the student's function."""
    rng = np.random.default_rng(5)
    return rng.standard_normal((4, 32)), rng.standard_normal((6, 32))


def large_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Q (4, 32) and K (6, 32) whose scaled scores are in the thousands: every row's max is above 709.8."""
    return tuple(LARGE_FACTOR * X for X in exercise_inputs())


def reference_scaled_weights(Q, K):
    """softmax(Q Kᵀ / √d_k), each row over the keys: (T_q, d_k), (T_k, d_k) -> (T_q, T_k)."""
    d_k = Q.shape[-1]
    S_scaled = Q @ K.T / np.sqrt(d_k)                     # (T_q, T_k) the scores S, divided by √d_k
    Z = S_scaled - S_scaled.max(axis=-1, keepdims=True)   # stable: the largest exponent is 0
    return np.exp(Z) / np.exp(Z).sum(axis=-1, keepdims=True)


def _weights_cases():
    """The first test, then scaled scores around 1,000 (a naive exp overflows), then d_k = 8, not 32, then rows whose
    largest scores lie thousands apart (one max for the whole matrix sends a row to 0 / 0), one query, and scores all
    far below 0 (a shift only by a positive max sends the row to 0 / 0)."""
    cut = tuple(X[:, :OTHER_D_K] for X in exercise_inputs())
    return [Case(*exercise_inputs(), what="the first test", where="", reads="the weights", first=True),
            Case(*large_inputs(), what=f"Q and K {LARGE_FACTOR:g} times longer (scaled scores up to "
                                       f"{_largest_large_score():,.0f})"),
            Case(*cut, what=f"d_k = {OTHER_D_K} (Q (4, {OTHER_D_K}), K (6, {OTHER_D_K}))"),
            Case(np.array([[1.0, 0, 0], [0, 0, 60]]), np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 60], [1, 1, 1]]),
                 what="Q (2, 3) and K (4, 3) whose rows' scores lie thousands apart"),
            Case(exercise_inputs()[0][:1], exercise_inputs()[1], what="one query, Q (1, 32), K (6, 32)"),
            Case(np.array([[-40.0, 0, 0, 1]]), np.array([[40.0, 0, 0, 0], [40, 0, 0, 1], [40, 0, 0, 2]]),
                 what="Q (1, 4) and K (3, 4) whose scaled scores are −800, −799.5 and −799")]


def _draw_weights(rng, wide=False) -> Case:   # `wide`: d_k 33 to 128, wider than the page's 32
    T_q, T_k = rng.choice([3, 5, 7, 9], 2, replace=False).tolist()
    d_k = int(rng.integers(33, 129) if wide else rng.choice([5, 12, 20, 48]))
    Q, K = rng.standard_normal((T_q, d_k)), rng.standard_normal((T_k, d_k))
    r, j, Q[:, -1], K[:, -1] = rng.integers(T_q), rng.integers(T_k), 0.0, 0.0
    Q[r, -1], K[j, -1], k = 1000 * np.sqrt(d_k), 1.0, (j + 1) % T_k   # the last column: r's scaled score with j 1,000
    K[k, -1] = (Q[r] @ (K[j] - K[k]) / np.sqrt(d_k) - 1) / 1000        # and with key k 999: a near tie, two weights
    return Case(Q, K, what=f"Q ({T_q}, {d_k}) and K ({T_k}, {d_k}) drawn at random, query {r}'s scaled scores "
                           f"with keys {j} and {k} near 1,000 and 999")


def _judge_weights(case, W, expected):
    """The first test names the slip; the later ones say what changed since (a hard-coded d_k, an overflow)."""
    (Q, K), d_k, (t_q, t_k) = case.args, exercise_inputs()[0].shape[-1], expected.shape
    if not getattr(case, "first", False):
        first = f"right on the first test, but with {case.what}"
        if W.shape != expected.shape:
            return f"with {case.what} the weights have shape {W.shape}, but should have {expected.shape}, as before."
        if Q.shape[-1] != d_k and np.allclose(W, softmax(Q @ K.T / np.sqrt(d_k)), atol=1e-6, rtol=0):
            return (f"{first} your weights are softmax(Q Kᵀ / √{d_k}): the first test's d_k = {d_k}, hard-coded. "
                    f"Read it from the shapes: d_k = Q.shape[-1] (here {Q.shape[-1]}).")
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        if not np.all(np.isfinite(W[S.max(axis=-1) < S.max() - 745])):   # rows far below the matrix's max
            return (f"{first} a row of weights is NaN: one max for the whole matrix leaves it at exp(-745) = 0 or "
                    "less, and 0 / 0 = NaN. Subtract each row's own maximum: S - S.max(axis=-1, keepdims=True).")
        if not np.all(np.isfinite(W)):
            return (f"{first} the weights contain NaN or infinity: exp above about 709.8 overflows, and below about "
                    "−745 every exp falls to 0 (0 / 0). Subtract each row's maximum first, as notebook 02's stable "
                    "softmax does: S - S.max(axis=-1, keepdims=True) (or use softmax from helpers.similarity).")
        if W.shape == (first_W := reference_scaled_weights(*exercise_inputs())).shape and np.allclose(W, first_W):
            return (f"{first} your function returned the first test's weights again, though Q and K changed: does it "
                    "ignore its arguments, or read the notebook's Q and K?")
        return (f"{first} some weights are off. Read d_k = Q.shape[-1], subtract each row's maximum before "
                "exp, and do not clip or round the scores.")   # the engine has passed the right ones already
    if W.shape != expected.shape:
        swapped = " = (T_k, T_q): keys and queries are swapped" if W.shape == (t_k, t_q) else ""
        return (f"the weights have shape {W.shape}{swapped}. Q @ K.T gives (T_q, T_k) = ({t_q}, {t_k}): "
                "one row per query, one column per key.")
    if not np.all(np.isfinite(W)):
        return ("the weights contain NaN or infinity. Subtract each row's maximum before exp "
                "(or use softmax from helpers.similarity, which does).")
    S = Q @ K.T                                                     # (T_q, T_k) raw scores
    if message := engine.named_slip(W, (
        (S, f"these are the raw scores Q Kᵀ. Divide by √d_k = √{d_k}, then apply softmax to each row: exp, then "
            "divide by the row's sum."),
        (S / np.sqrt(d_k), "these are the scaled scores, before softmax: exp, then divide by the row's sum."))):
        return message
    if (decimals := rounded(W, expected)) is not None:
        return f"the weights are rounded to {decimals} decimal{'s' * (decimals > 1)}: return them unrounded."
    row_sums, column_sums = W.sum(axis=-1), W.sum(axis=0)           # huge entries: the sums may be inf
    if not np.allclose(row_sums, 1.0, atol=1e-6):
        if np.allclose(row_sums, 1 / np.sqrt(d_k), atol=1e-6):
            return f"each row sums to 1/√d_k = 1/√{d_k}: the scale came after softmax. Divide the scores, then softmax."
        if np.allclose(column_sums, 1.0, atol=1e-6):
            return ("each COLUMN sums to 1: softmax ran over the queries (axis 0). Each query's weights "
                    "over the keys must sum to 1: use axis=-1.")
        if (W < 0).any():
            return ("some weights are negative, so these are still scores, not weights. Apply softmax to "
                    "each row of Q Kᵀ / √d_k: exp, then divide by the row's sum.")
        return (f"row sums are {np.round(row_sums, 4).tolist()}, but each row of weights must sum to 1. "
                "If you took exp, divide each row by its own sum (axis=-1, keepdims=True).")
    for divisor, slip in ((math.isqrt(d_k), f"√d_k was rounded down to {math.isqrt(d_k)} (int(), math.isqrt or //)"),
                          (1.0, "the scores were not divided by √d_k"),
                          (d_k, f"the scores were divided by d_k = {d_k}, not by its square root (dividing Q "
                                "and K by √d_k each does that)"),
                          *[(c, f"the scores were divided by {n} = {c:g}: in Python d_k**1/2 is (d_k**1)/2, so write "
                                "d_k ** 0.5 or np.sqrt(d_k)") for c, n in ((d_k / 2, "d_k / 2"), (2 * d_k, "2·d_k"))],
                          (1 / np.sqrt(d_k), "the scores were multiplied by √d_k instead of divided"),
                          (np.sqrt(t_k), f"the scores were divided by √T_k = √{t_k}, the number of KEYS"),
                          (np.sqrt(t_q), f"the scores were divided by √T_q = √{t_q}, the number of QUERIES"
                           + " (or by notebook 03's 2, hard-coded)" * (t_q == 4))):
        if np.allclose(W, softmax(S / divisor), atol=1e-6, rtol=0):   # W has the shape of the weights: checked above
            return (f"{slip}. Divide by √d_k, with d_k = Q.shape[-1] = {d_k}, the dimension of each query and "
                    f"key. (Your rows' largest weight is {W.max(axis=-1).mean():.2f} on average; it should "
                    f"be {expected.max(axis=-1).mean():.2f}.)")
    with np.errstate(all="ignore"):   # W = softmax(S / c) for some c: log W is S / c, less each row's constant
        L, C = (X - X.mean(axis=-1, keepdims=True) for X in (np.log(W), S))
        c = (C * C).sum() / (C * L).sum()
    if 1e-3 < c < 1e3 and np.allclose(W, softmax(S / c), atol=1e-6, rtol=0):   # NaN, inf: uniform weights
        root = f" = √{round(c * c)}" * bool(abs(c * c - round(c * c)) < 1e-6 < c - 1)
        if base := next((b for b in (2, 10) if np.isclose(c * np.log(b), np.sqrt(d_k))), None):   # b^x = e^(x ln b)
            return f"the scale is right, but the exponential has base {base} ({base} ** x): softmax's is e, np.exp."
        return (f"your weights are softmax(Q Kᵀ / c) with c = {c:.4g}{root}, but c is √d_k = √{d_k} = "
                f"{np.sqrt(d_k):.4g}: read d_k from the shapes, d_k = Q.shape[-1].")
    bad = np.argwhere(~np.isclose(W, expected, atol=1e-6, rtol=0))
    i, j = (int(x) for x in bad[0])
    return (f"the rows sum to 1, but {len(bad)} of the {W.size} weights are off, the first at row {i}, "
            f"column {j} ({W[i, j]:.4g} is too {'large' if W[i, j] > expected[i, j] else 'small'}). "
            "Compute softmax(Q @ K.T / np.sqrt(d_k)) row by row, with d_k = Q.shape[-1].")


def _largest_large_score() -> float:
    Q, K = large_inputs()
    return float((Q @ K.T / np.sqrt(Q.shape[-1])).max())


def _weights_verdict(answer) -> str:
    (Q, K), W = exercise_inputs(), reference_scaled_weights(*exercise_inputs())
    return (f"softmax(Q Kᵀ / √d_k) with d_k = {Q.shape[1]}: rows sum to 1, and the largest weight is "
            f"{W.max(axis=-1).mean():.2f} on average (without the scale it would be "
            f"{softmax(Q @ K.T).max(axis=-1).mean():.2f}). It also stays exact with Q and K {LARGE_FACTOR:g} times "
            f"longer, where scaled scores up to {_largest_large_score():,.0f} would overflow a plain exp, with a "
            f"head size of d_k = {OTHER_D_K}, with scores all far below 0, and on three sizes drawn at random.")


check_scaled_weights = Exercise(reference_scaled_weights, title="softmax(Q Kᵀ / √d_k)", success=_weights_verdict,
    expects="scaled_weights(Q, K) returning a (T_q, T_k) array",   # atol32: float32 near a drawn tie: 4.4e-5 in 3,000
    cases=_weights_cases, draw=(_draw_weights, _draw_weights, partial(_draw_weights, wide=True)), judge=_judge_weights,
    atol32=1e-4, own="attention_weights or scaled_dot_product_attention or MultiheadAttention",
    hint="Q is (T_q, d_k), K is (T_k, d_k): the scores are Q @ K.T, (T_q, T_k) (NumPy's K.transpose(-2, -1) is K "
         "itself); a row-wise max or sum needs keepdims=True, shape (T_q, 1), to stretch across each row.",
    explanation="d_k is read from the shapes (the last axis of Q), so the same function works for any head size. "
                "Subtracting the row max (notebook 02) keeps it exact when the scores are large (the checker also "
                "tries scaled scores of about 1,000). helpers.attention_torch.attention_weights does the same in "
                "PyTorch.")
