"""Exercises of notebook 00: reading the notation."""
from __future__ import annotations

import numbers

from helpers.exercises.feedback import Feedback, Solution, correct, text_answer, wrong
from helpers.running_example import embed

SHAPE_SENTENCE = "river bank flows money grows"


def check_T_and_d(answer) -> Feedback:
    """Exercise 1: (T, d) for the five-word sentence SHAPE_SENTENCE."""
    T, d = embed(SHAPE_SENTENCE).shape
    if answer is None:
        return wrong("answer is still None. Replace None with a tuple of two whole numbers: (T, d).")
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return wrong(f"expected a tuple of two whole numbers (T, d), but got {answer!r}. Write it like (5, 2).")
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in answer):
        return wrong(f"both entries should be whole numbers, but got {answer!r}.")
    got_T, got_d = answer
    if (got_T, got_d) == (T, d):
        return correct(f"T = {T} tokens, each a vector of d = {d} numbers, so E has shape ({T}, {d}).")
    if (got_T, got_d) == (d, T):
        return wrong("you swapped them: T counts the tokens, d the entries of each vector.")
    if got_T != T:
        return wrong(f"T = {got_T} is not the number of tokens. Count the words of {SHAPE_SENTENCE!r}.")
    return wrong(f"T is right, but d = {got_d} is not the number of entries in one embedding vector.")


_NOT_THE_WEIGHTS = {"S": "S holds the raw scores; the weights come after softmax.",
                    "Y": "Y holds the outputs: it is (T, d), not (T, T).",
                    **{n: f"{n} is a learned projection, not the weights." for n in ("W_q", "W_k", "W_v")}}


def check_weights_symbol(answer) -> Feedback:
    """Exercise 2: which symbol names the (T, T) matrix of attention weights."""
    symbol, problem = text_answer(answer, 'one of the strings "S", "W" or "Y"')
    if problem is not None:
        return problem
    if symbol == "W":
        return correct("W holds the attention weights: row i says how much token i takes from each token j.")
    return wrong(_NOT_THE_WEIGHTS.get(symbol, f'{answer!r} is not one of "S", "W", "Y". Look at the notation table.'))


def solution_T_and_d() -> Solution:
    return Solution(
        "T and d",
        """
        E = embed("river bank flows money grows")
        answer = E.shape        # (5, 4): T = 5 tokens, d = 4 numbers each
        """,
    )


def solution_weights_symbol() -> Solution:
    return Solution("the weights' symbol", 'answer = "W"   # S: scores (T, T), W: weights (T, T), Y: outputs (T, d)')
