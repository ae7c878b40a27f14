"""Exercises of notebook 01: static embeddings and hand-made mixtures."""
from __future__ import annotations

import numpy as np

from helpers.exercises.feedback import Feedback, Solution, as_numbers, compare_numbers, correct, wrong
from helpers.mixing import mix
from helpers.running_example import SENTENCE_MONEY, SENTENCE_RIVER, embed, static_vector

HAND_WEIGHTS = (0.2, 0.7, 0.1)


def reference_river_matrix() -> np.ndarray:
    """E for "river bank flows": one row per word, looked up in the table. (3, 4)"""
    return embed(SENTENCE_RIVER)


def reference_river_bank_mixture() -> np.ndarray:
    """bank in "river bank flows" as 0.2·river + 0.7·bank + 0.1·flows. (4,)"""
    return mix(embed(SENTENCE_RIVER), HAND_WEIGHTS)


def check_river_matrix(E) -> Feedback:
    """Exercise 1: the (3, 4) static matrix of "river bank flows"."""
    expected = reference_river_matrix()
    got, problem = as_numbers(E, "your matrix")
    if problem is not None:
        return problem
    if got.shape == expected.T.shape and np.allclose(got, expected.T):
        return wrong("your matrix has shape (4, 3): the words are columns. Stack them as rows: "
                     "one row per token, shape (T, d) = (3, 4).")
    if got.shape == expected.shape and np.allclose(got, embed(SENTENCE_MONEY)):
        return wrong('that is E for "money bank grows". Look up river, bank, flows.')
    if got.shape == expected.shape and not np.allclose(got, expected):
        for row, word in enumerate(SENTENCE_RIVER.split()):
            if not np.allclose(got[row], expected[row]):
                return wrong(f"row {row} should be the vector of {word!r}, {expected[row].tolist()}, "
                             f"but is {got[row].tolist()}. Rows follow the word order.")
    problem = compare_numbers(got, expected, "your matrix")
    if problem is not None:
        return problem
    return correct("your matrix is (3, 4), and its middle row is the same bank vector as in the money sentence.")


def check_river_bank_mixture(y) -> Feedback:
    """Exercise 2: bank's hand-made mixture in "river bank flows"."""
    expected = reference_river_bank_mixture()
    got, problem = as_numbers(y, "your y_bank")
    if problem is not None:
        return problem
    if got.shape != expected.shape:
        return wrong(f"your y_bank has shape {got.shape}, but a mixture of 4-D vectors is one 4-D vector: shape (4,).")
    if np.allclose(got, mix(embed(SENTENCE_MONEY), HAND_WEIGHTS)):
        return wrong("that is bank's mixture in the money sentence. Mix river, bank and flows instead.")
    if np.allclose(got, static_vector("bank")):
        return wrong("that is bank's static vector. Mix it with its neighbours: 0.2·river + 0.7·bank + 0.1·flows.")
    if np.allclose(got, mix(embed(SENTENCE_RIVER), HAND_WEIGHTS[::-1])):
        return wrong("the weights are reversed: 0.2 goes with river (first word) and 0.1 with flows (last).")
    if np.allclose(got, embed(SENTENCE_RIVER).sum(axis=0)):
        return wrong("that is the plain sum of the three vectors. Multiply each by its weight first.")
    problem = compare_numbers(got, expected, "your y_bank", hint="Compute 0.2·river + 0.7·bank + 0.1·flows.")
    if problem is not None:
        return problem
    return correct(f"y_bank = {np.round(expected, 2).tolist()}: the same static bank, a different mixture.")


def solution_river_matrix() -> Solution:
    return Solution(
        "E for river bank flows",
        """
        E_river = np.array([EMBEDDINGS[word] for word in "river bank flows".split()])   # (3, 4)
        # or simply: E_river = embed("river bank flows")
        """,
    )


def solution_river_bank_mixture() -> Solution:
    return Solution(
        "bank's mixture in river bank flows",
        """
        river, bank, flows = embed("river bank flows")      # three (4,) vectors
        y_bank = 0.2 * river + 0.7 * bank + 0.1 * flows     # (4,)
        # the same as: np.array([0.2, 0.7, 0.1]) @ embed("river bank flows")
        """,
    )
