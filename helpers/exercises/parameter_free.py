"""Exercises of notebook 03: one row of W by hand, a prediction, and self-attention in matrix form."""
from __future__ import annotations

import math

import numpy as np

from helpers.attention import attend, self_attention, self_attention_steps
from helpers.exercises.feedback import (
    Feedback,
    Solution,
    as_numbers,
    compare_numbers,
    correct,
    numbers_from,
    require_callable,
    wrong,
)
from helpers.running_example import SENTENCE_MONEY, SENTENCE_RIVER, embed
from helpers.similarity import softmax

# --- Exercise 1: the grows row of W -------------------------------------------------------------

#: Answers rounded to 2 decimals (what the heatmaps show, e.g. [0.21, 0.21, 0.58]) are accepted.
ROUNDING_TOLERANCE = 5e-3
#: Three numbers each rounded to 2 decimals may sum to 1 ± 0.015.
SUM_TOLERANCE = 1.5e-2

def reference_grows_row() -> np.ndarray:
    """Row 'grows' of W for "money bank grows": softmax of its scaled scores. (3,)"""
    E = embed("money bank grows")            # (3, 4)
    s = E[2] @ E.T / math.sqrt(E.shape[1])   # (3,) scores of grows, divided by √4 = 2
    e = np.exp(s - s.max())
    return e / e.sum()


def check_grows_row(w) -> Feedback:
    """Exercise 1: the three weights grows gives to money, bank, grows."""
    steps = self_attention_steps(embed(SENTENCE_MONEY))
    S, W = steps["S"], steps["W"]
    got, problem = as_numbers(w, "w_grows")
    if problem is not None:
        return problem
    if got.shape != (3,):
        return wrong(f"w_grows should be 3 numbers (one weight per token: money, bank, grows), but has shape "
                     f"{got.shape}." + (" That is all of W; give only its last row." if got.shape == (3, 3) else ""))
    known = {
        "the raw scores e_grows · e_j, [1, 1, 3]": S[2],
        "the scaled scores [0.5, 0.5, 1.5]": steps["S_scaled"][2],
        "the exponentials exp([0.5, 0.5, 1.5]); divide them by their sum": steps["exp"][2],
    }
    for what, value in known.items():
        if np.allclose(got, value, atol=1e-3):
            return wrong(f"those are {what}. The weights come out of softmax: exp each scaled score, "
                         "then divide by the sum of the three.")
    if np.allclose(got, softmax(S[2]), atol=1e-3):
        return wrong("that is the softmax of the UNscaled scores [1, 1, 3]. Divide the scores by √d = √4 = 2 first.")
    if np.allclose(got, W[:, 2], atol=1e-3):
        return wrong("that is the grows COLUMN of W (what each token gives to grows). The row is what grows gives "
                     "to each token: the softmax of grows's own scores.")
    for row, word in ((0, "money"), (1, "bank")):
        if np.allclose(got, W[row], atol=1e-3):
            return wrong(f"that is the {word} row. grows is the third token: use e_grows · e_j.")
    if not np.isclose(got.sum(), 1.0, atol=SUM_TOLERANCE):
        return wrong(f"your weights sum to {got.sum():.4f}, not 1. Divide each exponential by the sum of all three.")
    problem = compare_numbers(got, W[2], "w_grows", atol=ROUNDING_TOLERANCE,
                              hint="Scores [1, 1, 3] / 2 = [0.5, 0.5, 1.5]; exp; divide by the sum.")
    if problem is not None:
        return problem
    exact = np.round(W[2], 4).tolist()
    if np.allclose(got, W[2], atol=5e-5):
        verdict = f"w_grows = {exact}."
    else:
        verdict = (f"your {got.tolist()} is correct to the precision you gave; to four decimals the row is "
                   f"{exact}.")
    return correct(f"{verdict} grows keeps the most of itself, 0.5761: its dot product with itself (3) is the "
                   "largest score in the sentence.")


def solution_grows_row() -> Solution:
    steps = self_attention_steps(embed(SENTENCE_MONEY))

    def show(x, digits=4):
        return "[" + ", ".join(f"{v:.{digits}f}" for v in x) + "]"

    return Solution.from_function(
        "the grows row of W", reference_grows_row,
        f"By hand: scores {show(steps['S'][2], 0)}; divided by 2: {show(steps['S_scaled'][2], 1)}; "
        f"exp: {show(steps['exp'][2])}, sum {steps['exp_sum'][2]:.4f}; divided by the sum: {show(steps['W'][2])}.")


# --- Exercise 2: predict whom river attends to --------------------------------------------------

RIVER_WORDS = tuple(SENTENCE_RIVER.split())


def reference_river_prediction() -> str:
    """The token river attends to most in "river bank flows" (the argmax of its row of W)."""
    W = self_attention_steps(embed(SENTENCE_RIVER))["W"]   # (3, 3)
    return RIVER_WORDS[int(np.argmax(W[0]))]


def check_river_prediction(answer) -> Feedback:
    """Exercise 2: which token river attends to most in "river bank flows"."""
    if answer is None:
        return wrong("answer is still None. Replace it with one word as a string: 'river', 'bank' or 'flows'.")
    if not isinstance(answer, str):
        return wrong(f"answer should be one word as a string, such as 'bank', but got {type(answer).__name__} "
                     f"{answer!r:.40}.")
    word = answer.strip().lower()
    if word not in RIVER_WORDS:
        return wrong(f"{answer!r} is not a token of 'river bank flows'. Choose 'river', 'bank' or 'flows'.")
    steps = self_attention_steps(embed(SENTENCE_RIVER))
    s, w = steps["S"][0], steps["W"][0]
    table = ", ".join(f"{t} {weight:.3f}" for t, weight in zip(RIVER_WORDS, w))
    if word == reference_river_prediction():
        return correct(f"river's weights: {table}. river gives more to flows than to itself, because "
                       f"e_river · e_flows = {s[2]:.0f} > e_river · e_river = {s[0]:.0f}: flows is a longer vector "
                       "pointing roughly the same way, and the dot product rewards length. 'Each token attends "
                       "most to itself' held for money bank grows, not in general (cosine would pick river itself).")
    if word == "river":
        return wrong(f"tempting, since in money bank grows every token attended most to itself. Compute river's "
                     f"scores: e_river · e_j = {s.astype(int).tolist()} for {list(RIVER_WORDS)}. Which is largest?")
    return wrong(f"e_river · e_bank = {s[1]:.0f} is river's smallest score. Compute e_river · e_flows and "
                 "e_river · e_river, and compare.")


def solution_river_prediction() -> Solution:
    steps = self_attention_steps(embed(SENTENCE_RIVER))
    scores = ", ".join(f"{v:.0f}" for v in steps["S"][0])
    weights = ", ".join(f"{v:.3f}" for v in steps["W"][0])
    return Solution(
        "whom river attends to",
        f"""
        E = embed("river bank flows")        # (3, 4)
        S = E @ E.T                          # river's row: [{scores}]
        W = softmax(S / 2)                   # river's row: [{weights}]
        answer = RIVER_WORDS[W[0].argmax()]  # "{reference_river_prediction()}"
        """,
        "A vector is most similar to itself by cosine, but the dot product also grows with length: "
        "|flows| = √5 is longer than |river| = √2, so river · flows = 3 beats river · river = 2.",
    )


# --- Exercise 3: self-attention in matrix form --------------------------------------------------

def reference_self_attention(E):
    """Parameter-free self-attention: (T, d) -> (T, d): two matrix products and a row-wise softmax."""
    E = np.asarray(E, dtype=float)
    d = E.shape[1]
    S = E @ E.T / np.sqrt(d)                          # (T, T) scaled scores
    S = S - S.max(axis=-1, keepdims=True)             # stable softmax, row by row
    W = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)
    return W @ E                                      # (T, d)


def _cases():
    rng = np.random.default_rng(3)
    return (
        (embed(SENTENCE_MONEY), "E of 'money bank grows' (3, 4)"),
        (embed(SENTENCE_RIVER), "E of 'river bank flows' (3, 4)"),
        (rng.normal(size=(5, 3)), "a random E of shape (5, 3)"),
        (30.0 * embed(SENTENCE_MONEY), "30 × E of 'money bank grows' (large scores)"),
    )


def _diagnose_attention(E: np.ndarray, got: np.ndarray, what: str) -> Feedback | None:
    T, d = E.shape
    S = E @ E.T
    if got.shape == (T, T) and got.shape != (T, d):
        return wrong(f"on {what} you returned a ({T}, {T}) matrix: that looks like W. Finish the recipe: Y = W @ E.")
    if got.shape != (T, d):
        return wrong(f"on {what} the result has shape {got.shape}, but Y has one d-vector per token: ({T}, {d}).")
    if not np.all(np.isfinite(got)):
        return wrong(f"on {what} you got NaN or inf: exp of a large score overflowed. Subtract each row's max "
                     "before exp (or call helpers.similarity.softmax).")
    candidates = {
        f"you forgot to divide the scores by √d (here √{d})": attend(E, E, E, scale=1.0),
        f"you divided by √T (number of tokens, {T}) instead of √d (length of each vector, {d}). "
        "d = E.shape[1]": attend(E, E, E, scale=1 / math.sqrt(T)),
        f"you divided by d = {d} instead of √d": attend(E, E, E, scale=1 / d),
        f"you divided by 2, the √4 of the worked example, but here d = {d}. Read d from the input, "
        "d = E.shape[1], and divide by np.sqrt(d); do not hard-code √4 = 2": attend(E, E, E, scale=0.5),
        "the softmax ran down the columns (axis 0), or you multiplied W.T @ E. Each ROW of W must sum to 1: "
        "softmax along axis=-1, then W @ E": softmax(S / math.sqrt(d), axis=0) @ E,
    }
    for message, value in candidates.items():
        if value.shape == got.shape and np.allclose(got, value, atol=1e-6) and not np.allclose(
                value, self_attention(E), atol=1e-6):
            return wrong(f"on {what} {message}.")
    return None


def check_self_attention(student_function) -> Feedback:
    """Exercise 3: self_attention(E) -> Y in matrix form, checked on four inputs."""
    problem = require_callable(student_function, "self_attention(E) taking a (T, d) array and returning (T, d)")
    if problem is not None:
        return problem
    for E, what in _cases():
        got, problem = numbers_from(student_function, E.copy(), on=what)
        if problem is not None:
            return problem
        problem = _diagnose_attention(E, got, what)
        if problem is not None:
            return problem
        problem = compare_numbers(got, self_attention(E), f"Y on {what}", atol=1e-6,
                                  hint="Recipe: S = E @ E.T / √d; W = softmax of each row; Y = W @ E.")
        if problem is not None:
            return problem
    return correct("your self_attention matches helpers.attention.self_attention on both sentences, a random "
                   "(5, 3) input and large scores. Two matrix products and a row-wise softmax, zero parameters.")


def solution_self_attention() -> Solution:
    return Solution.from_function("self-attention in three steps: two products and a row-wise softmax",
                                  reference_self_attention)
