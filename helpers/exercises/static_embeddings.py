"""Exercises of notebook 01: static embeddings and hand-made mixtures."""
from functools import partial

import numpy as np

from helpers.exercises.engine import Feedback, as_numbers, compare_numbers, correct, solved_by, wrong
from helpers.mixing import mix
from helpers.running_example import SENTENCE_MONEY, SENTENCE_RIVER, embed, static_vector
from helpers.similarity import cosine

HAND_WEIGHTS, EXERCISE_WEIGHTS = (0.2, 0.7, 0.1), (0.3, 0.5, 0.2)   # the worked example's; the exercise's, not printed
MATRIX_SENTENCE = "river bank flows money grows"


@solved_by("E for a five-word sentence", """
    E_mine = np.array([EMBEDDINGS[word] for word in "river bank flows money grows".split()])   # (5, 4)
    # or simply: E_mine = embed("river bank flows money grows")
    """, read=partial(as_numbers, name="your matrix"))
def check_sentence_matrix(E) -> Feedback:
    """Exercise 1: the (5, 4) static matrix of MATRIX_SENTENCE."""
    expected, words = embed(MATRIX_SENTENCE), MATRIX_SENTENCE.split()   # (5, 4): one row per word
    if E.shape == expected.T.shape and np.allclose(E, expected.T):
        return wrong(f"your matrix has shape {E.shape}: the words are columns. Stack them as rows.")
    if E.shape in {(3, 4), (4, 3)}:
        return wrong(f"your matrix has shape {E.shape}, three words: the sentence has {len(words)}.")
    if E.shape == expected.shape:
        for row, word in enumerate(words):   # a row that is another word's vector: the order
            if not np.allclose(E[row], expected[row]) and any(np.allclose(E[row], other) for other in expected):
                return wrong(f"row {row} should be the vector of {word!r}. Rows follow the word order.")
    if (message := compare_numbers(E, expected, "your matrix")) is not None:
        return wrong(message)
    return correct(f"your matrix is {expected.shape}. Its row 1 is the same bank vector as in the three-word "
                   "sentences: the table does not look at the neighbours.")


@solved_by("bank's mixture in river bank flows", """
    river, bank, flows = embed("river bank flows")      # three (4,) vectors
    y_bank_mine = 0.3 * river + 0.5 * bank + 0.2 * flows   # (4,)
    # the same as: np.array([0.3, 0.5, 0.2]) @ embed("river bank flows")
    print(f"cos with river: {cosine(y_bank_mine, river):.3f}, section 4's {cosine(y_bank_river, river):.3f}")
    # yours is closer: more of river and of flows (which points much like river), less of bank
    """, read=partial(as_numbers, name="your y_bank"))
def check_river_bank_mixture(y) -> Feedback:
    """Exercise 2: bank's hand-made mixture in "river bank flows"."""
    E = embed(SENTENCE_RIVER)
    expected = mix(E, EXERCISE_WEIGHTS)   # (4,): 0.3·river + 0.5·bank + 0.2·flows
    message = compare_numbers(y, expected, "your y_bank", hint="Compute 0.3·river + 0.5·bank + 0.2·flows.", slips=[
        (mix(embed(SENTENCE_MONEY), EXERCISE_WEIGHTS), "that is bank's mixture in the money sentence."),
        (static_vector("bank"), "that is bank's static vector. Mix it with its neighbours."),
        (mix(E, HAND_WEIGHTS), "that is the worked example's mixture (0.2, 0.7, 0.1). Use 0.3, 0.5, 0.2."),
        (mix(E, EXERCISE_WEIGHTS[::-1]), "the weights are reversed: 0.3 goes with river, 0.2 with flows."),
        (E.sum(axis=0), "that is the plain sum of the three vectors. Weight each first."),
        (expected / 3, "that is the MEAN of the weighted vectors: the weights already sum to 1, so add them (.sum).")])
    if message is not None:
        return wrong(message)
    (river, bank, flows), section_4 = E, mix(E, HAND_WEIGHTS)
    return correct(f"y_bank = {np.round(expected, 2).tolist()}. Cosine with river: {cosine(expected, river):.3f}, "
                   f"against {cosine(section_4, river):.3f} for section 4's mixture. Yours is closer because it "
                   f"takes more of river (0.3, not 0.2) and of flows (cosine {cosine(flows, river):.2f} with river), "
                   f"and less of bank (cosine {cosine(bank, river):.2f}).")
