import numpy as np
import pytest

from helpers.running_example import embed
from helpers.similarity import cosine
from helpers.widgets.start_here import pull_slider
from helpers.widgets.static_embeddings import sentence_explorer

#: bank keeping 0.7 with 0.15 for each neighbour, in both sentences, computed independently of the widget.
EVEN_SPLIT_COSINE = cosine(np.array([0.15, 0.7, 0.15]) @ embed("money bank grows"),
                           np.array([0.15, 0.7, 0.15]) @ embed("river bank flows"))


def test_pull_slider_moves_bank_toward_money():
    w = pull_slider()
    assert w.result["cos_to_target"] == pytest.approx(0.5)
    w.children[0].value = 1.0
    assert w.result["cos_to_target"] == pytest.approx(1.0)


def test_sentence_explorer_shows_two_mixtures_of_one_static_bank():
    w = sentence_explorer()
    first = w.result
    assert first["cosine_static"] == pytest.approx(1.0)
    assert first["cosine_mixed"] == pytest.approx(EVEN_SPLIT_COSINE)      # 0.15 / 0.7 / 0.15 in each
    w.children[1].value = "money bank grows"                              # the same sentence twice
    assert w.result["cosine_mixed"] == pytest.approx(1.0)
    w.children[1].value = "river bank flows"
    w.children[2].value = 1.0                                             # bank keeps all of itself
    np.testing.assert_allclose(w.result["a"]["mixed"], w.result["static"])
    assert w.result["cosine_mixed"] == pytest.approx(1.0)


def test_sentence_explorer_survives_a_word_outside_the_vocabulary(capsys):
    w = sentence_explorer()
    w.children[0].value = "cash bank grows"
    assert w.result is None
