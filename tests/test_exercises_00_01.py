import contextlib
import io
import re

import numpy as np
import pytest

from helpers.exercises import start_here as ex00
from helpers.exercises import static_embeddings as ex01
from helpers.mixing import mix
from helpers.running_example import EMBEDDINGS, SENTENCE_MONEY, SENTENCE_RIVER, embed, static_vector
from helpers.similarity import cosine


def test_sizes():
    assert ex00.check_sizes((28, 49)).passed
    assert ex00.check_sizes([28, 49]).passed
    assert ex00.check_sizes(np.array([28, 49])).passed                 # the numbers inside an array count
    assert ex00.check_sizes((np.int64(28), np.int64(49))).passed
    assert ex00.check_sizes((28.0, 49.0)).passed                       # whole numbers written as floats
    assert "49 numbers" in ex00.check_sizes((28, 49)).message


@pytest.mark.parametrize(
    "answer, message",
    [(None, "still None"), ("28, 49", "expected a tuple"), ((49, 28), "swapped"), ((7, 4), "not one of its sizes"),
     ((28, 7), "not one of its sizes"), ((28.5, 49.0), "whole numbers"), ((28,), "expected a tuple"),
     ((21, 49), "E = 21 is not right"), ((28, 28), "per PAIR of tokens"), ((28, 14), "W = 14 is not")],
)
def test_sizes_feedback(answer, message):
    feedback = ex00.check_sizes(answer)
    assert not feedback.passed and message in feedback.message


@pytest.mark.parametrize(
    "answer, passed, message",
    [("W", True, "attention weights"), (" W ", True, "attention weights"), ("S", False, "raw scores"),
     ("Y", False, "(T, d)"), ("W_q", False, "projection"), (None, False, "still None"),
     (2, False, "should be one of the strings"), ("Z", False, "not one of"), ("w", False, "lower case"),
     ("$W$", True, "attention weights"), ("'W'.", True, "attention weights"), ("𝑊", True, "attention weights"),
     ("Ｗ", True, "attention weights"), ("$S$", False, "raw scores")],
)
def test_weights_symbol(answer, passed, message):
    feedback = ex00.check_weights_symbol(answer)
    assert feedback.passed is passed and message in feedback.message


def test_solutions_00_show_code():
    namespace = {}
    exec(ex00.check_sizes.solution().code, namespace)
    assert ex00.check_sizes(namespace["answer"]).passed
    assert 'answer = "W"' in repr(ex00.check_weights_symbol.solution())


SENTENCE = ex01.MATRIX_SENTENCE


def test_sentence_matrix():
    assert ex01.check_sentence_matrix(embed(SENTENCE)).passed
    assert ex01.check_sentence_matrix(embed(SENTENCE).tolist()).passed


@pytest.mark.parametrize(
    "answer, message",
    [(None, "forget to `return`"), (SENTENCE, "should be numbers"),
     (embed(SENTENCE).T, "the words are columns"), (embed(SENTENCE_MONEY), "three words"),
     (embed(SENTENCE_RIVER), "three words"),
     (embed("flows bank river money grows"), "row 0 should be the vector of 'river'"),
     (np.zeros((2, 4)), "shape (2, 4)")],
)
def test_sentence_matrix_feedback(answer, message):
    feedback = ex01.check_sentence_matrix(answer)
    assert not feedback.passed and message in feedback.message


def test_river_bank_mixture():
    river, bank, flows = embed(SENTENCE_RIVER)
    feedback = ex01.check_river_bank_mixture(0.3 * river + 0.5 * bank + 0.2 * flows)
    assert feedback.passed and "Cosine with river: 0.911, against 0.771" in feedback.message   # the why


@pytest.mark.parametrize(
    "answer, message",
    [(np.array([0.3, 0.5, 0.2]) @ embed(SENTENCE_MONEY), "money sentence"), (static_vector("bank"), "static vector"),
     (np.array([0.2, 0.7, 0.1]) @ embed(SENTENCE_RIVER), "worked example"),
     (np.array([0.2, 0.5, 0.3]) @ embed(SENTENCE_RIVER), "reversed"), (embed(SENTENCE_RIVER).sum(0), "plain sum"),
     (embed(SENTENCE_RIVER), "shape (3, 4)"), ([0.0, 0.0, 0.0, 0.0], "wrong values"), (None, "forget"),
     (np.array([[0.3, 0.5, 0.2]]) @ embed(SENTENCE_RIVER), "has shape (1, 4), expected (4,): the numbers are right")],
)
def test_river_bank_mixture_feedback(answer, message):
    feedback = ex01.check_river_bank_mixture(answer)
    assert not feedback.passed and message in feedback.message


def test_solutions_01_compute_what_they_show():
    namespace = {"np": np, "embed": embed, "EMBEDDINGS": EMBEDDINGS, "cosine": cosine,
                 "y_bank_river": mix(embed(SENTENCE_RIVER), ex01.HAND_WEIGHTS)}   # as notebook 01 has them
    exec(ex01.check_sentence_matrix.solution().code, namespace)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(ex01.check_river_bank_mixture.solution().code, namespace)
    assert ex01.check_sentence_matrix(namespace["E_mine"]).passed
    assert (feedback := ex01.check_river_bank_mixture(namespace["y_bank_mine"])).passed
    mine, theirs = re.search(r"river: (0\.\d+), against (0\.\d+) for section 4", feedback.message).groups()
    assert printed.getvalue() == f"cos with river: {mine}, section 4's {theirs}\n"   # the answer to "which is closer?"
