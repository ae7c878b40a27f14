"""Exercises of notebook 00: reading the notation."""
from functools import partial

from helpers.exercises.engine import Feedback, correct, solved_by, text_answer, whole_numbers, wrong


@solved_by("the numbers in E and in W", """
    T, d = 7, 4
    answer = (T * d, T * T)   # E is (T, d): 28 numbers; W is (T, T): 49, one per pair of tokens
    """)
def check_sizes(answer) -> Feedback:
    """Exercise 1: (numbers in E, numbers in W) for a sentence of T = 7 tokens with d = 4."""
    T, d = 7, 4   # no sentence of the notebook has this shape
    if answer is None:
        return wrong("answer is still None. Replace None with a tuple of two whole numbers: (numbers in E, "
                     "numbers in W).")
    sizes, problem = whole_numbers(answer)   # an array, a tensor, np.int64(28) and 28.0 are read as numbers
    if problem is not None or len(sizes) != 2:
        return wrong("expected a tuple of two whole numbers (numbers in E, numbers in W), but "
                     f"{problem or f'got {len(sizes)} number' + 's' * (len(sizes) != 1)}.")
    in_E, in_W = sizes
    if (in_E, in_W) == (T * d, T * T):
        return correct(f"E is (T, d) = ({T}, {d}): {T * d} numbers. W is (T, T) = ({T}, {T}): {T * T} numbers, "
                       "one weight for every pair of tokens, so it grows with the square of the sentence's length.")
    if (in_E, in_W) == (T * T, T * d):
        return wrong("you swapped them: E has one row of d entries per token, W one weight per pair of tokens.")
    if in_E in (T, d) or in_W in (T, d):
        return wrong(f"count the numbers each matrix holds (rows × columns), not one of its sizes: T = {T}, d = {d}.")
    if in_E != T * d:
        return wrong(f"E = {in_E} is not right: E has one row per token, and each row has d = {d} entries.")
    if in_W == T * d:
        return wrong("W has one entry per PAIR of tokens (query i, key j), not per token and dimension: (T, T).")
    return wrong(f"E is right, but W = {in_W} is not: W has one row and one column per token.")


@solved_by("the weights' symbol", 'answer = "W"   # S: scores (T, T), W: weights (T, T), Y: outputs (T, d)',
           read=partial(text_answer, what='one of the strings "S", "W" or "Y"'))
def check_weights_symbol(symbol) -> Feedback:
    """Exercise 2: which symbol names the (T, T) matrix of attention weights."""
    if symbol == "W":
        return correct("W holds the attention weights: row i says how much token i takes from each token j.")
    not_the_weights = {"S": "S holds the raw scores; the weights come after softmax.",
                       "Y": "Y holds the outputs: it is (T, d), not (T, T).",
                       **{n: f"{n} is a learned projection, not the weights." for n in "W_q W_k W_v Wq Wk Wv".split()}}
    if symbol in ("s", "w", "y"):
        also = "" if symbol == "w" else f" And {not_the_weights[symbol.upper()]}"
        one = "one row (y_i)" if symbol == "y" else "one entry (s_ij or w_ij)"
        return wrong(f"{symbol!r} is lower case, which names {one}; the matrices are capitals.{also}")
    return wrong(not_the_weights.get(symbol, f'{symbol!r} is not one of "S", "W", "Y". Look at the notation table.'))
