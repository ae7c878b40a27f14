import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.widgets.start_here import pull_slider
from helpers.widgets.static_embeddings import sentence_explorer


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_pull_slider_moves_bank_toward_money():
    w = pull_slider()
    assert w.result["cos_to_target"] == pytest.approx(0.5)
    w.children[0].value = 1.0
    assert w.result["cos_to_target"] == pytest.approx(1.0)


def test_sentence_explorer_follows_the_sentence_and_keeps_static_bank():
    w = sentence_explorer()
    first = w.result
    w.children[0].value = "river bank flows"
    second = w.result
    np.testing.assert_array_equal(first["static"], second["static"])
    assert not np.allclose(first["mixed"], second["mixed"])
    w.children[1].value = 1.0
    np.testing.assert_allclose(w.result["mixed"], w.result["static"])


def test_sentence_explorer_survives_a_word_outside_the_vocabulary(capsys):
    w = sentence_explorer()
    w.children[0].value = "cash bank grows"
    assert w.result is None


def test_pull_slider_refuses_a_bad_word_when_built():
    with pytest.raises(TypeError, match=r"word should be one word from the course vocabulary .* but got int \(3\)"):
        pull_slider(3)
    with pytest.raises(ValueError, match=r"'cash' is not in the course vocabulary"):
        pull_slider("bank", "cash")
