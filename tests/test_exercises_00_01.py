import numpy as np
import pytest

from helpers.exercises import start_here as ex00
from helpers.exercises import static_embeddings as ex01
from helpers.running_example import EMBEDDINGS, SENTENCE_MONEY, SENTENCE_RIVER, embed, static_vector


def test_T_and_d():
    assert ex00.check_T_and_d((3, 4)).passed
    assert ex00.check_T_and_d(embed(SENTENCE_MONEY).shape).passed


@pytest.mark.parametrize(
    "answer, message",
    [(None, "still None"), ("3, 4", "expected a tuple"), ((4, 3), "swapped"), ((2, 4), "Count the words"),
     ((3, 2), "T is right"), ((3.0, 4.0), "whole numbers"), ((3,), "expected a tuple")],
)
def test_T_and_d_feedback(answer, message):
    feedback = ex00.check_T_and_d(answer)
    assert not feedback.passed and message in feedback.message


@pytest.mark.parametrize(
    "answer, passed, message",
    [("W", True, "attention weights"), (" W ", True, "attention weights"), ("S", False, "raw scores"),
     ("Y", False, "(T, d)"), ("W_q", False, "projection"), (None, False, "still None"), (2, False, "expected a string"),
     ("Z", False, "not one of")],
)
def test_weights_symbol(answer, passed, message):
    feedback = ex00.check_weights_symbol(answer)
    assert feedback.passed is passed and message in feedback.message


def test_solutions_00_show_code():
    assert "E.shape" in repr(ex00.solution_T_and_d())
    assert 'answer = "W"' in repr(ex00.solution_weights_symbol())


def test_river_matrix():
    assert ex01.check_river_matrix(embed(SENTENCE_RIVER)).passed
    assert ex01.check_river_matrix(embed(SENTENCE_RIVER).tolist()).passed


@pytest.mark.parametrize(
    "answer, message",
    [(None, "forget to `return`"), ("river bank flows", "should be numbers"),
     (embed(SENTENCE_RIVER).T, "the words are columns"), (embed(SENTENCE_MONEY), "money bank grows"),
     (embed("flows bank river"), "row 0 should be the vector of 'river'"), (np.zeros((2, 4)), "shape (2, 4)")],
)
def test_river_matrix_feedback(answer, message):
    feedback = ex01.check_river_matrix(answer)
    assert not feedback.passed and message in feedback.message


def test_river_bank_mixture():
    river, bank, flows = embed(SENTENCE_RIVER)
    assert ex01.check_river_bank_mixture(0.2 * river + 0.7 * bank + 0.1 * flows).passed


@pytest.mark.parametrize(
    "answer, message",
    [(np.array([0.2, 0.7, 0.1]) @ embed(SENTENCE_MONEY), "money sentence"), (static_vector("bank"), "static vector"),
     (np.array([0.1, 0.7, 0.2]) @ embed(SENTENCE_RIVER), "reversed"), (embed(SENTENCE_RIVER).sum(0), "plain sum"),
     (embed(SENTENCE_RIVER), "shape (3, 4)"), ([0.0, 0.0, 0.0, 0.0], "wrong values"), (None, "forget")],
)
def test_river_bank_mixture_feedback(answer, message):
    feedback = ex01.check_river_bank_mixture(answer)
    assert not feedback.passed and message in feedback.message


def test_solutions_01_compute_what_they_show():
    namespace = {"np": np, "embed": embed, "EMBEDDINGS": EMBEDDINGS}
    exec(ex01.solution_river_matrix().code, namespace)
    exec(ex01.solution_river_bank_mixture().code, namespace)
    assert ex01.check_river_matrix(namespace["E_river"]).passed
    assert ex01.check_river_bank_mixture(namespace["y_bank"]).passed
