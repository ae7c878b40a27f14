"""Notebook 00's and 01's widgets: the plain functions behind them, and pictures that follow the controls."""
import numpy as np
import pytest

from helpers.mixing import pull_toward, two_mixtures
from helpers.running_example import embed, tokenize
from helpers.similarity import cosine
from helpers.widgets.start_here import PullSliderWidget
from helpers.widgets.static_embeddings import SentenceExplorer

#: bank keeping 0.7 with 0.15 for each neighbour, in both sentences, computed independently of the widget.
EVEN_SPLIT_COSINE = cosine(np.array([0.15, 0.7, 0.15]) @ embed("money bank grows"),
                           np.array([0.15, 0.7, 0.15]) @ embed("river bank flows"))


def test_pull_toward_is_the_data_behind_notebook_00s_slider():
    data = pull_toward("bank", "money", 0.5)
    np.testing.assert_allclose(data["vector"], [1.0, 0.5, 0.5, 0.0])
    assert pull_toward("bank", "money", 1.0)["cos_to_target"] == pytest.approx(1.0)


def test_pull_slider_moves_bank_toward_money_and_redraws():
    w = PullSliderWidget()
    assert [type(c).__name__ for c in w.children] == ["FloatSlider", "Image", "HTML"]
    assert w.result["cos_to_target"] == pytest.approx(0.5)
    before = w.picture.value
    w.children[0].value = 1.0
    assert w.result["cos_to_target"] == pytest.approx(1.0)
    assert w.picture.value != before and bytes(w.picture.value)[:4] == b"\x89PNG"
    assert [bar.get_height() for bar in w.bars] == pytest.approx(list(pull_toward("bank", "money", 1.0)["vector"]))
    assert "1.000" in w.reading.value


def test_two_mixtures_is_the_data_behind_notebook_01s_widget():
    data = two_mixtures("money bank grows", "river bank flows", "bank", 0.7)
    assert data["cosine_static"] == pytest.approx(1.0)
    assert data["cosine_mixed"] == pytest.approx(EVEN_SPLIT_COSINE)


def test_sentence_explorer_shows_two_mixtures_of_one_static_bank():
    w = SentenceExplorer()
    assert [type(c).__name__ for c in w.children] == ["Combobox", "Combobox", "FloatSlider", "Image", "HTML"]
    first = w.result
    assert first["cosine_static"] == pytest.approx(1.0)
    assert first["cosine_mixed"] == pytest.approx(EVEN_SPLIT_COSINE)      # 0.15 / 0.7 / 0.15 in each
    before = w.picture.value
    w.children[1].value = "money bank grows"                              # the same sentence twice
    assert w.result["cosine_mixed"] == pytest.approx(1.0)
    assert w.picture.value != before
    assert "money bank grows" in w.legend.get_texts()[2].get_text()
    w.children[1].value = "river bank flows"
    before = w.picture.value
    w.children[2].value = 1.0                                             # bank keeps all of itself
    np.testing.assert_allclose(w.result["a"]["mixed"], w.result["static"])
    assert w.result["cosine_mixed"] == pytest.approx(1.0)
    assert w.picture.value != before


def test_sentence_explorer_shows_a_value_of_2_and_keeps_its_legend_off_the_bars():
    w = SentenceExplorer()
    w.children[1].value = "flows bank"
    w.children[2].value = 0.0                                             # bank is all flows: [0, 1, 0, 2]
    assert max(bar.get_height() for bar in w.mixed[1]) == pytest.approx(2.0)
    ax = w.mixed[0][0].axes
    assert ax.get_ylim()[1] > 2.0
    renderer = w.figure.canvas.get_renderer()
    assert w.legend.get_window_extent(renderer).y0 >= ax.get_window_extent(renderer).y1


def test_sentence_explorer_reads_punctuation_and_names_unknown_words():
    assert tokenize("money, bank grows!") == ["money", "bank", "grows"]
    w = SentenceExplorer()
    w.children[0].value = "Money, bank... grows!"
    assert w.result["a"]["tokens"] == ["money", "bank", "grows"]
    w.children[0].value = "cash bank grows"
    assert w.result is None
    assert "cash" in w.reading.value and "money, bank, grows, river, flows" in w.reading.value


def test_sentence_explorer_asks_for_two_to_ten_words():
    """One word has nothing to mix in (the slider would do nothing); past ten the legend leaves the figure."""
    w = SentenceExplorer()
    for sentence, count in (("bank", "1 word"), (" ".join(["money bank"] * 6), "12 words")):
        w.children[0].value = sentence
        assert w.result is None and count in w.reading.value and "give 2 to 10 words" in w.reading.value
        assert w.picture.layout.display == "none"
    w.children[0].value = "bank grows"
    assert w.result["a"]["weights"].tolist() == [0.7, pytest.approx(0.3)] and w.picture.layout.display is None
    w.children[0].value = " ".join(["river bank flows money grows"] * 2)   # ten words: the legend still fits
    renderer = w.figure.canvas.get_renderer()
    assert w.result is not None and w.legend.get_window_extent(renderer).x1 <= w.figure.canvas.get_width_height()[0]
