"""helpers.playground.playground_data (notebook 03's widget function) and the widget shell."""
import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402
import re  # noqa: E402

import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from helpers.attention import self_attention_steps  # noqa: E402
from helpers.attention_plots import convex_hull, inside_hull  # noqa: E402
from helpers.playground import MAX_WORDS, PLAYGROUND_SENTENCES, playground_basis, playground_data  # noqa: E402
from helpers.running_example import SENTENCE_RIVER, embed, embedding_table  # noqa: E402
from helpers.widgets.common import html_heatmap  # noqa: E402
from helpers.widgets.playground import PlaygroundWidget  # noqa: E402


def test_money_sentence_scaled():
    data = playground_data("money bank grows")
    assert data["words"] == ["money", "bank", "grows"]
    assert data["divisor"] == 2.0
    np.testing.assert_allclose(data["S"], [[1.0, 0.5, 0.5], [0.5, 1.0, 0.5], [0.5, 0.5, 1.5]])
    np.testing.assert_allclose(data["W"][1], [0.2741, 0.4519, 0.2741], atol=5e-5)
    np.testing.assert_allclose(data["Y"][1], [0.7259, 0.7259, 0.5481, 0.2741], atol=5e-5)
    assert data["top"] == ["money", "bank", "grows"]


def test_toggle_scaling_changes_scores_and_hardens_weights():
    on, off = playground_data("money bank grows", True), playground_data("money bank grows", False)
    assert off["divisor"] == 1.0
    np.testing.assert_allclose(off["S"], 2 * on["S"])
    assert (np.diag(off["W"]) > np.diag(on["W"])).all()   # sharper: each keeps more of itself
    np.testing.assert_allclose(off["W"], self_attention_steps(embed("money bank grows"), scaled=False)["W"])


def test_river_sentence_river_attends_to_flows():
    data = playground_data("river bank flows")
    assert data["top"] == ["flows", "bank", "flows"]
    np.testing.assert_array_equal(data["E"][1], embed("money bank grows")[1])   # same start for bank
    assert not np.allclose(data["Y"][1], playground_data("money bank grows")["Y"][1])


def test_list_input_identical_words_and_one_word():
    data = playground_data(["Bank", "bank", "bank"])
    np.testing.assert_allclose(data["W"], np.full((3, 3), 1 / 3))
    np.testing.assert_allclose(data["Y"], data["E"])            # nothing moves
    single = playground_data("money")
    np.testing.assert_allclose(single["W"], [[1.0]])


def test_fixed_view_and_hull():
    basis = playground_basis()
    assert basis.shape == (4, 2)
    centred = embedding_table()[1] - embedding_table()[1].mean(axis=0)   # the vocabulary about its mean: the view
    s = np.linalg.svd(centred, compute_uv=False)                        # keeps its two widest directions
    assert np.linalg.norm(centred @ basis) ** 2 == pytest.approx((s[:2] ** 2).sum())
    data = playground_data("river bank flows money grows")
    np.testing.assert_allclose(data["P_before"], data["E"] @ basis)
    np.testing.assert_allclose(data["P_after"], data["Y"] @ basis)
    assert inside_hull(data["P_after"], convex_hull(data["P_before"])).all()


@pytest.mark.parametrize("sentence", PLAYGROUND_SENTENCES)
def test_every_menu_sentence_works(sentence):
    data = playground_data(sentence)
    np.testing.assert_allclose(data["W"].sum(axis=1), 1.0)
    assert data["Y"].shape == data["E"].shape


def test_bad_input_messages():
    with pytest.raises(ValueError, match=r"'cash' is not in the course vocabulary"):
        playground_data("money cash")
    with pytest.raises(ValueError, match=r"The sentence is empty"):
        playground_data("   ")
    with pytest.raises(ValueError, match=rf"keep it to {MAX_WORDS} words"):
        playground_data(" ".join(["bank"] * (MAX_WORDS + 1)))
    with pytest.raises(TypeError, match=r"A sentence should be a string"):
        playground_data(42)


def test_a_sentence_of_exactly_max_words_is_drawn():
    assert len(playground_data(" ".join(["bank"] * MAX_WORDS))["words"]) == MAX_WORDS


def test_html_heatmap_writes_values_and_labels():
    text = html_heatmap([[0.25, 0.75]], ["bank"], ["money", "grows"], title="W")
    assert "0.25" in text and "0.75" in text and "money" in text and ">W<" in text
    assert "<b>" not in html_heatmap([[1.0]], ["<b>"], ["x"])    # labels are escaped
    assert ">7<" in html_heatmap([[1.0]], [7], ["x"])              # numbers as labels become text


def test_widget_updates_when_controls_change():
    w = PlaygroundWidget()
    assert isinstance(w, PlaygroundWidget)
    first = w.result
    assert first["words"] == ["money", "bank", "grows"]
    assert w.children[3].children[1].value[:4] == b"\x89PNG"
    assert "0.45" in w.children[3].children[0].value            # W's diagonal, in the HTML heatmap

    w.children[0].value = "river bank flows"                     # the menu
    assert w.result["words"] == ["river", "bank", "flows"]
    assert "river → flows" in w.children[4].value

    w.children[2].value = False                                  # the √d toggle
    assert w.result["divisor"] == 1.0
    np.testing.assert_allclose(w.result["S"], playground_data("river bank flows", scaled=False)["S"])

    w.children[1].value = "bank money"                           # typed words win over the menu
    assert w.result["words"] == ["bank", "money"]
    w.children[0].value = "money bank grows"                     # until a sentence is picked again: it clears them
    assert w.result["words"] == ["money", "bank", "grows"] and w.children[1].value == ""
    w.children[1].value = "bank money"                           # typed words blank the menu ...
    assert w.menu.value is None and w.result["words"] == ["bank", "money"]
    w.children[0].value = "money bank grows"                     # ... so the sentence shown before can be picked again
    assert w.result["words"] == ["money", "bank", "grows"] and w.children[1].value == ""
    w.children[0].value = PLAYGROUND_SENTENCES[1]
    w.children[1].value = "river bank"
    w.children[1].value = ""                                     # typed words cleared: the menu's first sentence
    assert w.menu.value == PLAYGROUND_SENTENCES[0] and w.result["words"] == ["money", "bank", "grows"]
    assert w.last_update_ms > 0
    assert "update took" not in w.children[4].value and " ms" not in w.children[4].value   # measured, not shown


def test_widget_is_readable_and_shown_pixel_for_pixel():
    w = PlaygroundWidget()
    sizes = [t.get_fontsize() for t in w._vectors.figure.fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert sizes and min(sizes) >= 11
    width, height = Image.open(io.BytesIO(w.children[3].children[1].value)).size
    assert w.picture.layout.width == f"{width}px" and w.picture.layout.height == f"{height}px"
    pixels = [int(px) for px in re.findall(r"font-size:(\d+)px", w.children[3].children[0].value)]
    assert pixels and min(pixels) >= 14                           # the HTML heatmaps
    assert "font-size:15px" in w.children[4].value


def test_widget_grows_in_presenter_mode(presenting):
    normal, big = PlaygroundWidget(), presenting(PlaygroundWidget)
    assert int(big.picture.layout.width[:-2]) > int(normal.picture.layout.width[:-2])
    pixels = [int(px) for px in re.findall(r"font-size:(\d+)px", big.children[3].children[0].value)]
    assert min(pixels) >= 20


def test_widget_reports_bad_words_without_raising():
    w = PlaygroundWidget()
    w.children[1].value = "money cash"
    assert w.result is None
    assert "not in the course vocabulary" in w.children[4].value
    assert w.children[3].layout.display == "none"            # no arrows or matrices of the last sentence
    w.children[1].value = ""                                      # back to the menu sentence
    assert w.result["words"] == ["money", "bank", "grows"]


def test_widget_refuses_words_outside_the_vocabulary_up_front():
    with pytest.raises(ValueError, match=r"sentence 'cat dog': 'cat' is not in the course vocabulary "
                                         r"\(money, bank, grows, river, flows\)"):
        PlaygroundWidget("cat dog")
    with pytest.raises(TypeError, match=r"sentence should be text such as 'money bank grows'.*but got int"):
        PlaygroundWidget(3)


def test_widget_shows_your_own_sentence_in_the_typed_box():
    w = PlaygroundWidget("bank money")
    assert w.menu.value is None and w.typed.value == "bank money"
    assert w.result["words"] == ["bank", "money"]


def test_widget_reads_a_sentence_typed_with_punctuation():
    w = PlaygroundWidget()
    w.children[1].value = "River, bank... flows!"
    assert w.result["words"] == ["river", "bank", "flows"]
    assert w.result["W"] == pytest.approx(playground_data(SENTENCE_RIVER)["W"])
