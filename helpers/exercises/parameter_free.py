"""Exercises of notebook 03: one row of W by hand, a prediction, and self-attention in matrix form."""
import math
from functools import partial
from itertools import permutations

import numpy as np

from helpers.attention import attend, self_attention, self_attention_steps
from helpers.exercises import engine
from helpers.exercises.engine import Case, Exercise, Feedback, compare_numbers, correct, named_slip, solved_by, wrong
from helpers.running_example import SENTENCE_MONEY, SENTENCE_RIVER, embed
from helpers.similarity import softmax

# --- Exercise 1: one row of W for a sentence the notebook has not computed ----------------------
ROUNDING_TOLERANCE, SUM_TOLERANCE = 5e-3, 1.5e-2   # 2-decimal answers (the heatmaps') pass; three such sum to 1 ± 0.015
ROW_SENTENCE = "money bank flows"
_ROW_WORDS = ROW_SENTENCE.split()
_ROW = _ROW_WORDS.index("flows")   # the token whose row exercise 1 asks for


def _fmt_row(x, digits: int = 4) -> str:
    return "[" + ", ".join(f"{v:.{digits}f}" for v in x) + "]"


def reference_flows_row() -> np.ndarray:
    """Row 'flows' of W for "money bank flows": softmax of its scaled scores. (3,)"""
    E = embed("money bank flows")               # (3, 4) one row per token; flows is row 2
    s = E[2] @ E.T / np.sqrt(E.shape[1])        # (3,) scores of flows, divided by √4 = 2
    exps = np.exp(s - s.max())
    return exps / exps.sum()                    # w_flows = reference_flows_row()


def _flows_by_hand() -> str:
    steps = self_attention_steps(embed(ROW_SENTENCE))
    return (f"By hand: scores {_fmt_row(steps['S'][_ROW], 0)}; divided by 2: {_fmt_row(steps['S_scaled'][_ROW], 1)}; "
            f"exp: {_fmt_row(steps['exp'][_ROW])}, sum {steps['exp_sum'][_ROW]:.4f}; divided by the sum: "
            f"{_fmt_row(steps['W'][_ROW])}.")


@solved_by("the flows row of W in money bank flows", reference_flows_row, _flows_by_hand(),
           read=partial(engine.as_numbers, name="w_flows"))
def check_flows_row(w) -> Feedback:
    """Exercise 1: the three weights flows gives to money, bank, flows in "money bank flows"."""
    steps = self_attention_steps(embed(ROW_SENTENCE))
    S, S_scaled, W = steps["S"], steps["S_scaled"], steps["W"]
    if w.shape != (3,):
        return wrong(f"w_flows has shape {w.shape}, but should have shape (3,), a weight per token: a row, W[2].")
    scaled, not_yet = _fmt_row(S_scaled[_ROW], 1), "The weights come out of softmax: exp, then divide by the sum."
    if (message := named_slip(w, [
        (S[_ROW], f"those are the raw scores e_flows · e_j, {_fmt_row(S[_ROW], 0)}. {not_yet}"),
        (S_scaled[_ROW], f"those are the scaled scores {scaled}. {not_yet}"),
        (steps["exp"][_ROW], f"those are the exponentials exp({scaled}); divide them by their sum."),
        (softmax(S[_ROW]), "that is the softmax of the UNscaled scores. Divide them by √d = 2 first."),
        (softmax(S[_ROW] // 2), "// is floor division: it cut the scaled scores to whole numbers. Divide with /."),
        (softmax(S[_ROW] / math.sqrt(len(S))), f"you divided the scores by √T = √{len(S)} (the number of tokens); "
                                               "divide by √d = √4 = 2, d the dimension of each vector."),
        (softmax(S[_ROW] / 4), "you divided the scores by d = 4; divide by its square root, √d = 2."),
        (W[:, _ROW], "that is the flows COLUMN of W (what each token gives to flows). Take the row."),
        *((W[row], f"that is the {word} row. flows is the third token: use e_flows · e_j.")
          for row, word in enumerate(_ROW_WORDS) if row != _ROW),
        *((W[_ROW, list(order)], "the right weights in the wrong order: entry j is the weight on word j, so the "
           f"order is {', '.join(_ROW_WORDS)}.") for order in permutations(range(3))),   # the right one is no slip
    ], atol=ROUNDING_TOLERANCE, right=W[_ROW])) is not None:   # a slip rounded to two decimals is still named
        return wrong(message)
    if not np.isclose(w.sum(), 1.0, atol=SUM_TOLERANCE):
        fix = "Those are percentages: give the fractions." if np.isclose(w.sum(), 100.0, atol=1.5) else (
            "Divide each exponential by their sum." if np.isfinite(w).all() else "A weight is a number from 0 to 1.")
        return wrong(f"your weights sum to {w.sum():.4f}, not 1. {fix}")
    # right to two decimals: each entry, rounded half up to hundredths, is W's entry rounded
    hundredths = np.array_equal(np.floor(w * 100 + 0.5 + 1e-9), np.round(W[_ROW] * 100))
    if not hundredths and np.allclose(w, W[_ROW], atol=0.05):
        if np.allclose(w, np.floor(W[_ROW] * 100) / 100, atol=1e-9):
            return wrong("close: those are the weights cut off after two decimals. Round each to the nearest "
                         "hundredth instead.")
        if np.allclose(w, np.round(w, 1), atol=1e-9):
            return wrong("close: right to one decimal, but too coarse. Give two decimals.")
        return wrong("close, but not right to two decimals. Keep more digits in the steps by hand (the scores / 2, "
                     "the exponentials, their sum) and round only at the end.")
    if (message := compare_numbers(w, W[_ROW], "w_flows", atol=0.05, hint=f"Scores / 2 = {scaled}.")) is not None:
        return wrong(message)   # 0.05 and more off
    exact, yours = np.round(W[_ROW], 4).tolist(), np.round(w, 6).tolist()   # float32's noise left out
    given = next((k for k in (2, 3) if np.allclose(w, np.round(w, k), atol=1e-9)), 4)   # decimals given
    verdict = (f"w_flows = {exact}." if np.allclose(w, W[_ROW], atol=5e-5) else
               f"your {yours} is correct to the precision you gave; to four decimals the row is {exact}."
               if np.allclose(w, W[_ROW], atol=0.5 * 10.0**-given + 1e-9) else
               f"your {yours} is right to two decimals, as asked; to four decimals the row is {exact}.")
    return correct(f"{verdict} flows keeps {W[_ROW, _ROW]:.4f} of itself: e_flows · e_flows is its largest score.")


# --- Exercise 2: predict whom bank attends to when grows is longer ---------------------------------
LONG_GROWS = (0.0, 3.0, 3.0, 3.0)  #: exercise 2: e_grows three times as long (the same direction)
PREDICT_WORDS = tuple(SENTENCE_MONEY.split())


def long_grows_matrix() -> np.ndarray:
    """E for "money bank grows" with e_grows replaced by LONG_GROWS. (3, 4)"""
    E = embed(SENTENCE_MONEY)
    E[2] = LONG_GROWS
    return E


def reference_long_grows_prediction() -> str:
    """The token bank attends to most when grows is three times as long (the argmax of its row of W)."""
    W = self_attention_steps(long_grows_matrix())["W"]   # (3, 3)
    return PREDICT_WORDS[int(np.argmax(W[1]))]


def _long_grows_solution() -> str:
    steps = self_attention_steps(long_grows_matrix())
    scores, weights = ", ".join(f"{v:.0f}" for v in steps["S"][1]), ", ".join(f"{v:.3f}" for v in steps["W"][1])
    return f"""
        E = embed("money bank grows")        # (3, 4)
        E[2] = [0, 3, 3, 3]                  # grows, three times as long
        S = E @ E.T                          # bank's row: [{scores}]
        W = softmax(S / 2)                   # bank's row: [{weights}]
        answer = ["money", "bank", "grows"][W[1].argmax()]   # "{reference_long_grows_prediction()}"
        """


@solved_by("whom bank attends to when grows is longer", _long_grows_solution(),
           "Cosine ignores length, so by cosine nothing changed: bank would still be closest to itself. "
           "The dot product is |a| |b| cos θ, and tripling |e_grows| triples bank's score with grows.",
           read=partial(engine.text_answer, what="one word as a string: 'money', 'bank' or 'grows'"))
def check_long_grows_prediction(answer) -> Feedback:
    """Exercise 2: whom bank attends to most once e_grows is three times as long."""
    if (word := answer.lower()) not in PREDICT_WORDS:
        return wrong(f"{answer!r} is not a token of 'money bank grows'. Choose 'money', 'bank' or 'grows'.")
    steps = self_attention_steps(long_grows_matrix())
    s, w, before = steps["S"][1], steps["W"][1], self_attention_steps(embed(SENTENCE_MONEY))["W"][1]
    table = ", ".join(f"{t} {weight:.3f}" for t, weight in zip(PREDICT_WORDS, w))
    if word == reference_long_grows_prediction():
        return correct(f"bank's weights become: {table} (before: bank kept {before[1]:.3f} of itself). "
                       f"e_bank · e_grows = {s[2]:.0f} now beats e_bank · e_bank = {s[1]:.0f}: the dot product "
                       "rewards length (cosine would not change at all).")
    if word == "bank":
        return wrong("tempting: with the original vectors bank attended most to itself. But tripling e_grows "
                     "triples bank's score with grows: compare e_bank · e_grows with e_bank · e_bank.")
    return wrong(f"e_bank · e_money = {s[0]:.0f} is bank's smallest score. Compare e_bank · e_grows with the new "
                 "e_grows = [0, 3, 3, 3] against e_bank · e_bank.")


# --- Exercise 3: self-attention in matrix form --------------------------------------------------
def reference_self_attention(E):
    """Parameter-free self-attention: (T, d) -> (T, d): two matrix products and a row-wise softmax."""
    E = np.asarray(E, dtype=float)
    d = E.shape[1]
    S_scaled = E @ E.T / np.sqrt(d)                   # (T, T) the scores S, divided by √d
    Z = S_scaled - S_scaled.max(axis=-1, keepdims=True)   # stable softmax, row by row
    W = np.exp(Z) / np.exp(Z).sum(axis=-1, keepdims=True)
    return W @ E                                      # (T, d)


def _cases():
    return (
        (embed(SENTENCE_MONEY), "E of 'money bank grows' (3, 4)"),
        (embed(SENTENCE_RIVER), "E of 'river bank flows' (3, 4)"),
        (np.random.default_rng(3).normal(size=(5, 3)), "a random E of shape (5, 3)"),
        (np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 40.0]]), "E = [[1, 0], [0, 1], [0, 40]] (rows' scores far apart)"),
        (30.0 * embed(SENTENCE_MONEY), "30 × E of 'money bank grows' (large scores)"),
        (np.array([[1.0, 0.0], [2000.0, 0.0]]), "E = [[1, 0], [2000, 0]] (a long token: row 0's largest score is not "
                                                "its score with itself)"),
        (np.array([[0.0, 40.0], [0.0, 1.0]]), "E = [[0, 40], [0, 1]] (row 0's largest score comes first)"),
        (np.array([[1.0, 0.0], [-2000.0, 0.0]]), "E = [[1, 0], [-2000, 0]] (row 0's scores reach −1,414)"),
        (np.array([[40.0, 0], [39, 0], *[[0, 1]] * 4]), "E = [[40, 0], [39, 0], [0, 1] four times] (two scores far "
                                                        "above the rest)"))


def _draw_embeddings(rng, pulled=False) -> Case:
    """Tokens j and k = j + 1 alone in the last column: j's scores with itself and k 1,000 and 999, a near tie.
    `pulled`: k half as far as j: its score with j some 800 above its own, so subtracting that overflows."""
    T, d = rng.choice([(T, d) for T in range(2, 8) for d in (2, 3, 5, 6) if T != d], axis=0)   # d ≠ 4: not √4 = 2
    E, j, a = np.zeros((T, d)), int(rng.integers(T)), math.sqrt(1000 * math.sqrt(d))
    E[:, :-1], k = rng.normal(size=(T, d - 1)) * rng.uniform(0.5, 3), (j + 1) % T
    E[[j, k]], E[j, -1], E[k, -1] = 0.0, a, a - math.sqrt(d) / a   # scaled: a² / √d = 1,000, a (a − √d / a) / √d = 999
    what = f"tokens {j} and {k} long (token {j}'s scores with itself and {k} near 1,000 and 999)"
    if pulled:
        half = math.ceil(math.sqrt(800 * math.sqrt(d)))
        E[k, -1], E[j, -1] = half, 2 * half
        what = f"token {j} long (token {k}'s score with it some 800 above its score with itself)"
    return Case(E, what=f"an E of shape ({T}, {d}) drawn at random, {what}")


def _judge_attention(case, got, expected):
    """The slips that show in the shape or in NaNs, before the engine compares got with self_attention(E)."""
    (E,), what, (T, d) = case.args, case.what, case.args[0].shape
    if got.shape == (T, T) and T != d:
        return f"on {what} you returned a ({T}, {T}) matrix: that looks like W. Finish with Y = W @ E."
    if got.shape != (T, d):
        return f"on {what} the result has shape {got.shape}, but Y is ({T}, {d})."
    S = E @ E.T / math.sqrt(d)                        # (T, T)
    low = S.max(axis=-1) < S.max() - 745              # rows that one max for the whole matrix sends to exp(-745) = 0
    if low.any() and (not np.all(np.isfinite(got[low])) or not np.any(got[low])):
        bad = low & ~np.isfinite(got).all(axis=-1)   # the first NaN row, or else the first row at 0
        row = int(np.argmax(bad if bad.any() else low))
        first = (f"its score with itself is not its largest (another token's is {S[row].max() - S[row, row]:.0f} "
                 "more), so exp overflows if you subtract it; or " if S[row].max() - S[row, row] > 700 else "")
        by_abs = S[row].max() - np.abs(S[row]).max()   # what a shift by the row's largest |score| leaves
        return (f"on {what} row {row} came out NaN or 0: {first}a shift far above the row's own max sends every exp "
                f"to 0 (one max for the whole matrix: exp({S[row].max() - S.max():.0f})"
                + f"; its largest |score|: exp({by_abs:.0f})" * bool(by_abs < -700)
                + "), and 0 / 0 = NaN. Subtract each row's own max: S.max(axis=-1, keepdims=True).")
    if not np.all(np.isfinite(got)):
        return (f"on {what} you got NaN or inf: exp overflowed (or every exp fell to 0: 0 / 0). Subtract each row's "
                "max of the scores you exp, after the division by √d.")
    return None


def _attention_slips(case):
    (E,), what, (T, d) = case.args, case.what, case.args[0].shape
    S = E @ E.T / math.sqrt(d)                                   # (T, T): square, so a (T,) row max or sum broadcasts
    e, flat = np.exp(S - S.max(axis=-1, keepdims=True)), "has shape (T,) and lines up with the COLUMNS: keepdims=True"
    cut = f" (Or did int() or // round √{d} down to {math.isqrt(d)}? Keep it a float.)" * (math.isqrt(d) ** 2 != d)
    return [
        ((e / e.sum(axis=-1)) @ E, f"on {what} each row was divided by the wrong sum: e.sum(axis=-1) {flat}."),
        ((g := np.exp(S - S.max())) / g.sum() @ E, f"on {what} the softmax ran over the whole matrix (one sum for "
                                                   "every entry): one softmax per row, axis=-1, keepdims=True."),
        (softmax(S - S.max(axis=-1), axis=-1) @ E, f"on {what} each row was shifted by the wrong max, one that lines "
         "up with the COLUMNS: S.max(axis=-1) without keepdims, or the max over axis 0. Use S.max(axis=-1, "
         "keepdims=True)."),
        (((f := np.exp(S - S.max(axis=-1))) / f.sum(axis=-1)) @ E,
         f"on {what} the row max and the row sum both miss keepdims: each {flat}."),
        (attend(E, E, E, scale=1.0), f"on {what} you forgot to divide the scores by √d (here √{d})." + cut * (d < 4)),
        (softmax(S * math.sqrt(d), axis=-1) / math.sqrt(d) @ E, f"on {what} the weights were divided by √d after "
         f"softmax, so each row sums to 1/√{d}: divide the scores, before the softmax."),
        (attend(E, E, E, scale=1 / math.sqrt(T)), f"on {what} you divided by √T (tokens) instead of √d = √{d}."),
        (attend(E, E, E, scale=1 / d), f"on {what} you divided by d = {d} instead of √d."),
        *[(attend(E, E, E, scale=1 / c), f"on {what} you divided by {n} = {c:g}: in Python d**1/2 is (d**1)/2, so "
           "write d ** 0.5 or np.sqrt(d).") for c, n in ((d / 2, "d / 2"), (2 * d, "2·d"))],
        (attend(E, E, E, scale=0.5), f"on {what} you hard-coded 2 = √4, but here d = {d}: use np.sqrt(E.shape[1])."
         + cut * (4 < d < 9)),
        (lambda: self_attention_steps(embed(SENTENCE_MONEY))["W"] @ E, f"on {what} you mixed its rows with the weights "
         "of 'money bank grows' (the notebook's W?): make W from this E's own scores."),
        (softmax(E * E / math.sqrt(d), axis=-1) * E, f"on {what} * multiplies entries: scores E @ E.T, Y = W @ E."),
        (softmax(S, axis=0) @ E, f"on {what} the softmax ran down the columns (axis 0), or you used W.T, or a row sum "
         "without keepdims=True lined up with the columns. Each ROW of W must sum to 1: axis=-1.")]


check_self_attention = Exercise(
    reference_self_attention, title="self-attention in three steps: two products and a row-wise softmax",
    expects="self_attention(E) taking a (T, d) array and returning (T, d)",
    cases=lambda: [Case(E, what=what) for E, what in _cases()], judge=_judge_attention,
    draw=(_draw_embeddings, _draw_embeddings, partial(_draw_embeddings, pulled=True)),
    expected=lambda case: self_attention(*case.args), slips=_attention_slips, name="Y on {what}", reads="Y",
    atol=1e-5, atol32=1e-4,   # float32 is right too: in torch its error reached 3.3e-5 over 20,000 drawn cases
    own="self_attention or attend or attention_weights or scaled_dot_product_attention or ParameterFreeAttention "
        "or flash_attention or tiled_attention or lean_attention or MultiheadAttention",
    hint="Recipe: every pair's score, divided by √d; a softmax along each row; each output a weighted sum of E's rows.",
    success=f"your self_attention matches helpers.attention.self_attention on all {len(_cases())} fixed inputs and on "
            "three drawn at random.")
