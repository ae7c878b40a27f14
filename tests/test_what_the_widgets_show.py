"""What the widgets and figures show: each picture, reading, label and colour follows the control or data it
claims to (every test here failed a bug planted in the code it names, which the rest of the suite let through)."""
import re

import matplotlib

matplotlib.use("Agg")
import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402


@pytest.fixture(scope="module")
def model():
    from helpers.induction import load_trained_model
    return load_trained_model()


# ---------------------------------------------------------------- helpers.widgets.common

def _cells(table):
    return re.findall(r"<td style='[^']*background:(rgb\([^)]*\));color:(\w+)'>", table)


def test_html_heatmap_colours_on_the_given_vmin_vmax_scale():
    from helpers.widgets.common import html_heatmap, viridis_css
    cells = _cells(html_heatmap([[0.5, 0.75]], ["a"], ["x", "y"], vmin=0.0, vmax=1.0))
    assert [c[0] for c in cells] == [viridis_css(0.5), viridis_css(0.75)]     # not stretched to 0 … 1 of M's own range


def test_html_heatmap_escapes_its_title():
    from helpers.widgets.common import html_heatmap
    table = html_heatmap([[1.0]], ["a"], ["x"], title="W <b>bold</b> & more")
    assert "<b>" not in table and "&lt;b&gt;" in table


def test_html_heatmap_of_a_constant_matrix_is_the_dark_end_with_white_text():
    from helpers.widgets.common import html_heatmap
    with np.errstate(all="raise"):
        cells = _cells(html_heatmap([[2.0, 2.0], [2.0, 2.0]], ["a", "b"], ["x", "y"]))
    assert cells == [("rgb(68,1,84)", "white")] * 4


def _pixels(png):
    import io

    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)))


def test_fast_figure_redraws_its_background_after_set_dynamic():
    from helpers.widgets.common import FastFigure

    def draw(first_static_render):
        f = FastFigure((2, 2))
        ax = f.fig.add_subplot()
        ax.set(xlim=(0, 1), ylim=(0, 1))
        (line,) = ax.plot([0, 1], [0, 1], lw=4)
        if first_static_render:
            f.png()                     # the line drawn as part of the background
        f.set_dynamic([line])           # now it moves: the background must be drawn again without it
        line.set_ydata([1, 0])
        return _pixels(f.png())
    assert np.array_equal(draw(True), draw(False))


def test_live_widget_fits_images_nested_in_a_vbox_too():
    from helpers.widgets.common import LiveWidget

    class Demo(LiveWidget):
        def __init__(self):
            self.slider, self.image = widgets.IntSlider(value=1), widgets.Image(format="png")
            super().__init__([self.slider], [widgets.VBox([widgets.HTML("caption"), self.image])])

        def compute(self):
            return self.slider.value

        def show(self, data):
            pass
    w = Demo()
    assert w.image.layout.max_width == "100%" and w.image.layout.height == "auto"


# ---------------------------------------------------------------- helpers.widgets.flash

def test_flash_widget_counts_a_last_partial_tile():
    from helpers.widgets.flash import FlashTilesWidget
    w = FlashTilesWidget(T=6, block=4, tiles_done=2, query=5)       # 6 keys: a full tile and one of 2
    assert w.tiles_done.max == 2 and w.result["gap"] < 1e-12


def test_flash_widget_l_axis_starts_at_zero_and_m_axis_fits_m():
    from helpers.widgets.flash import FlashTilesWidget
    w = FlashTilesWidget()
    assert w._picture.ax_l.get_ylim()[0] == 0
    assert w._picture.ax_ml.get_ylim()[0] != 0


def test_flash_widget_map_darkens_exactly_the_tiles_done():
    from helpers.widgets.flash import FlashTilesWidget
    w = FlashTilesWidget(tiles_done=2, query=21)                 # not causal: row 5, tiles 0 and 1 done
    assert np.asarray(w._picture.image.get_array())[5].tolist() == [4, 4, 3, 3, 3, 3, 3, 3]


def test_flash_widget_m_curve_has_a_point_per_tile_done():
    from helpers.widgets.flash import FlashTilesWidget
    w = FlashTilesWidget(tiles_done=5, query=21)
    x, y = w._picture.m_line.get_data()
    assert list(x) == [1, 2, 3, 4, 5] and np.allclose(y, w.result["m"][1:6])


def test_flash_widget_reading_gives_m_after_the_tiles_done():
    from helpers.widgets.flash import FlashTilesWidget
    w = FlashTilesWidget(tiles_done=1, query=21)
    m = w.result["m"]
    assert f"{m[1]:.3f}" != f"{m[-1]:.3f}"                        # the test means something
    assert f"m = <b>{m[1]:.3f}</b>" in w.reading.value


def test_flash_widget_refuses_a_query_past_the_last():
    from helpers.widgets.flash import FlashTilesWidget
    with pytest.raises(ValueError, match="query should be a whole number from 0 to 31, but got 32"):
        FlashTilesWidget(query=32)


# ---------------------------------------------------------------- helpers.widgets.induction

def test_weights_table_dashes_the_letter_after_the_earlier_copy():
    from helpers.widgets.induction import weights_table
    data = {"letters": "abcab", "position": 3, "earlier": 0, "weights": np.full((1, 5), 0.2)}
    tds = re.findall(r"<td style='([^']*)'", weights_table(data, ["head 0.0"], [False]))
    assert ["dashed" in s for s in tds] == [False, True, False, False, False]
    assert "solid" in tds[3]


def test_bars_colour_and_hatch_the_letter_copying_predicts():
    from helpers.induction import LETTERS
    from helpers.plotting import COLORS
    from helpers.widgets.induction import _Bars
    bars = _Bars()
    bars.png({"earlier": 0, "letters": "abcab", "probabilities": np.full(len(LETTERS), 1 / len(LETTERS)),
              "prediction": "b"})
    orange = [k for k, bar in enumerate(bars.bars) if bar.get_facecolor() == to_rgba(COLORS["contextual"])]
    hatched = [k for k, bar in enumerate(bars.bars) if bar.get_hatch()]          # not by its colour alone
    assert orange == hatched == [LETTERS.index("b")]


def test_induction_slider_at_the_end_follows_a_longer_text(model):
    from helpers.widgets.induction import InductionWidget
    w = InductionWidget("abcdabcd", model=model)
    assert w.position.value == 7
    w.text.value = "abcdabcdabcd"
    assert w.position.max == 11 and w.position.value == 11 and w.result["position"] == 11


def test_weights_table_marks_only_the_heads_switched_off():
    from helpers.widgets.induction import weights_table
    data = {"letters": "abcab", "position": 3, "earlier": 0, "weights": np.full((2, 5), 0.2)}
    table = weights_table(data, ["head 0.0", "head 0.1"], [False, True])
    assert "head 0.1 (off)" in table and "head 0.0 (off)" not in table


def test_weights_table_colours_the_query_letter():
    from helpers.plotting import INK
    from helpers.widgets.induction import weights_table
    data = {"letters": "abcab", "position": 3, "earlier": 0, "weights": np.full((1, 5), 0.2)}
    heads = re.findall(r"<th style='([^']*)'>[a-t]</th>", weights_table(data, ["head 0.0"], [False]))
    assert [INK["key"] in s for s in heads] == [False, False, False, True, False]   # text: the darker ink


def test_induction_reading_gives_each_heads_weight_on_the_letter_after_the_copy(model):
    from helpers.widgets.induction import InductionWidget
    w = InductionWidget("abcdabcd", position=5, model=model)       # 'b' came at 1, followed by 'c' at 2
    e, weights = w.result["earlier"], w.result["weights"]
    assert e == 1 and any(f"{v[e]:.2f}" != f"{v[e + 1]:.2f}" for v in weights)
    expected = ", ".join(f"{layer}.{h}: {v[e + 1]:.2f}" for (layer, h), v in zip(w.heads, weights))
    assert expected in w.reading.value


# ---------------------------------------------------------------- helpers.widgets.positions

@pytest.fixture(scope="module")
def positions_widget():
    from helpers.widgets.positions import PositionsWidget
    return PositionsWidget(p=10, d=16)


def test_positions_heatmap_puts_row_p_where_its_outline_is(positions_widget):
    w = positions_widget
    left, right, bottom, top = w._picture.image.get_extent()
    assert (left, right, bottom, top) == (-0.5, 15.5, 47.5, -0.5)     # row 0 at y = 0, row p at y = p (the outline)
    assert list(w._picture.row.get_ydata()) == [10, 10]


def test_positions_reading_counts_pairs_and_names_the_last_columns(positions_widget):
    text = positions_widget.reading.value
    assert "each of the 8 (sin, cos) pairs" in text and "(columns 14, 15)" in text


def test_positions_reading_names_every_nearest_position(positions_widget):
    assert positions_widget.result["nearest"] == [9, 11]              # the two neighbours tie
    assert "Closest other positions: <b>9 and 11</b>" in positions_widget.reading.value


def test_positions_marker_sits_on_the_peak_and_the_peak_is_in_view(positions_widget):
    w = positions_widget
    x, y = w._picture.marker.get_data()
    assert list(x) == [10] and list(y) == [w.result["self"]] == [8.0]
    low, high = w._picture.ax_sim.get_ylim()
    assert high > w.result["similarity"].max() and low < w.result["similarity"].min()   # padded both ways


# ---------------------------------------------------------------- helpers.widgets.playground

@pytest.fixture
def playground():
    from helpers.widgets.playground import PlaygroundWidget
    return PlaygroundWidget()


def test_playground_weights_are_coloured_on_a_fixed_0_to_1_scale(playground):
    from helpers.widgets.common import viridis_css
    w = playground
    w_table = w.matrices.value.split("<table")[2]                       # S first, then W
    backgrounds = re.findall(r"background:(rgb\([^)]*\))", w_table)
    assert backgrounds == [viridis_css(v) for v in w.result["W"].ravel()]


def test_playground_shows_one_arrow_per_word_and_hides_the_hull_of_two_points(playground):
    w = playground
    w.typed.value = "money bank"
    arrows = w._vectors.arrows
    assert sum(a.get_visible() for a in arrows) == 2 and all(a.get_visible() for a in arrows[:2])
    assert not w._vectors.hull.get_visible()


def test_playground_ends_are_the_contextual_vectors_and_the_hull_is_the_static_ones(playground):
    from helpers.attention_plots import convex_hull
    w = playground
    w.typed.value = "money bank grows river flows"
    np.testing.assert_allclose(w._vectors.ends.get_offsets(), w.result["P_after"])
    np.testing.assert_allclose(w._vectors.starts.get_offsets(), w.result["P_before"])
    hull = {tuple(np.round(c, 9)) for c in w._vectors.hull.get_xy()}
    assert hull == {tuple(np.round(c, 9)) for c in convex_hull(w.result["P_before"])}


def test_playground_reading_gives_each_words_top_weight(playground):
    w = playground
    for word, top, row in zip(w.result["words"], w.result["top"], w.result["W"]):
        assert f"{word} → {top} ({row.max():.2f})" in w.reading.value


# ---------------------------------------------------------------- helpers.widgets.scaling

@pytest.fixture(scope="module")
def scaling_widget():
    from helpers.widgets.scaling import ScalingWidget
    return ScalingWidget(d_k=16, scaled=True, T=4, n_queries=16)


def test_scaling_bars_take_the_colour_of_the_mode(scaling_widget):
    from helpers.plotting import COLORS
    w = scaling_widget
    try:
        w.scaled.value = False
        assert {b.get_facecolor() for b in w._picture.bars} == {to_rgba(COLORS["key"])}
        w.scaled.value = True
        assert {b.get_facecolor() for b in w._picture.bars} == {to_rgba(COLORS["query"])}
    finally:
        w.scaled.value = True


def test_scaling_curves_are_labelled_with_their_own_mode(scaling_widget):
    from helpers.scaling import saturation_table
    w = scaling_widget
    table = saturation_table(T=4, n_queries=16, seed=0)
    lines = {line.get_label(): line.get_ydata() for line in w._picture.ax_g.lines}
    np.testing.assert_allclose(lines["divide by √d_k"], table["scaled"]["grad_median"])
    np.testing.assert_allclose(lines["no scaling"], table["unscaled"]["grad_median"])


def test_scaling_toggle_labels_match_what_they_do(scaling_widget):
    w = scaling_widget
    try:
        w.scaled.label = "no scaling"
        assert w.result["scaled"] is False and w.result["divisor"] == 1
        w.scaled.label = "divide by √d_k"
        assert w.result["scaled"] is True and w.result["divisor"] == 4
    finally:
        w.scaled.value = True


def test_scaling_reading_marker_and_title_use_the_right_numbers(scaling_widget):
    w = scaling_widget
    data = w.result
    assert "(uniform: 2;" in w.reading.value                                # log2 of 4 keys
    x, y = w._picture.marker.get_data()
    assert list(x) == [16] and list(y) == [data["grad_median"]]
    assert f"≈ {data['effective_keys']:.1f} keys" in w._picture.title_w.get_text()


def test_scaling_widget_uses_its_seed():
    from helpers.scaling import attention_snapshot
    from helpers.widgets.scaling import ScalingWidget
    w = ScalingWidget(d_k=4, T=4, n_queries=16, seed=3)
    assert w.result["grad_median"] == attention_snapshot(4, True, T=4, n_queries=16, seed=3)["grad_median"]
    assert w.result["grad_median"] != attention_snapshot(4, True, T=4, n_queries=16, seed=0)["grad_median"]


# ---------------------------------------------------------------- helpers.plotting

def test_heatmap_of_a_constant_matrix_writes_white_on_its_dark_cells():
    from helpers.plotting import heatmap
    with np.errstate(all="raise"):
        ax = heatmap(np.full((2, 2), 3.0))
    assert [t.get_color() for t in ax.texts] == ["white"] * 4


def test_heatmap_refuses_labels_for_the_transposed_shape():
    from helpers.plotting import heatmap
    with pytest.raises(ValueError, match="M has shape"):
        heatmap(np.zeros((2, 3)), ["a", "b", "c"], ["x", "y"])


def test_use_course_style_without_an_argument_keeps_presenter_mode():
    from helpers import plotting
    plotting.presenter_mode(True)
    try:
        plotting.use_course_style()
        assert plotting.is_presenter_mode()
    finally:
        plotting.presenter_mode(False)


def test_arrows_keep_the_origin_in_view():
    from helpers.plotting import arrows
    ax = arrows(np.array([[2.0, 1.0], [3.0, 2.0]]), ["a", "b"])
    assert ax.get_xlim()[0] < 0 < ax.get_xlim()[1] and ax.get_ylim()[0] < 0 < ax.get_ylim()[1]


# ---------------------------------------------------------------- helpers.attention_plots

def test_gravity_plot_refuses_y_with_a_row_too_few():
    from helpers.attention_plots import gravity_plot
    with pytest.raises(ValueError, match="one row per token"):
        gravity_plot(np.eye(3)[:, :2], np.eye(3)[:2, :2], ["a", "b", "c"])


def test_gravity_plot_outlines_the_hull_of_the_static_points():
    from helpers.attention_plots import convex_hull, gravity_plot
    E = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    Y = np.full((3, 2), 0.5)                                              # every token moved to one point
    ax = gravity_plot(E, Y, ["a", "b", "c"])
    outline = ax.lines[0].get_xydata()
    assert {tuple(p) for p in outline} == {tuple(p) for p in convex_hull(E)}


def test_timing_plot_draws_milliseconds():
    from helpers.attention_plots import timing_plot
    ax = timing_plot({"loop": ([10, 100], [0.002, 0.05])})
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [2.0, 50.0])


# ---------------------------------------------------------------- helpers.temperature

def test_top_is_not_a_tie_for_nearly_equal_scores():
    from helpers.temperature import softmax_at_scale
    assert softmax_at_scale([0.0, 1e-6])["top"] == [1]


def test_naive_why_is_empty_when_only_some_exps_underflow():
    from helpers.temperature import softmax_at_scale
    data = softmax_at_scale([0.0, -1000.0])
    assert np.all(np.isfinite(data["naive"])) and data["naive_why"] == ""


def test_label_y_stays_gap_above_a_bar_that_already_clears_the_line():
    from helpers.temperature import label_y
    assert label_y(0.24, 0.25, 0.02) == pytest.approx(0.26)


def test_weights_bars_draw_each_panels_own_uniform_line_and_name_every_n():
    from helpers.temperature import weights_bars
    fig, axes = weights_bars([[0.5, 0.5], [0.2, 0.3, 0.5]], ["two", "three"])
    for ax, n in zip(axes, (2, 3)):
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert len(dashed) == 1 and dashed[0].get_ydata()[0] == pytest.approx(1 / n)
    assert "1/2/3" in fig.legends[0].get_texts()[0].get_text()


# ---------------------------------------------------------------- helpers.widgets.common.offered

def test_a_slider_is_not_offered_true_for_a_number():
    """True is 1 to Python: PositionsWidget(p=True) would quietly open at p = 1."""
    from helpers.widgets.positions import PositionsWidget
    with pytest.raises(ValueError, match="p should be a whole number from 0 to 47, but got True"):
        PositionsWidget(p=True)


# ---------------------------------------------------------------- wording that was true at the default only

def test_playground_names_every_word_of_a_tie():
    """In 'river bank flows money grows' grows·grows = grows·flows = 3: two equal top weights, both named."""
    from helpers.playground import playground_data
    data = playground_data("river bank flows money grows")
    assert data["top"][4] == "flows and grows" and data["top"][0] != "river and river"
    assert playground_data("money bank money")["top"][0] == "money"       # a word twice is named once


def test_readings_write_numbers_as_numbers_and_agree_in_number():
    from helpers.cost import cost_table
    from helpers.learning import run_experiment
    from helpers.widgets.flash import FlashTilesWidget
    from helpers.widgets.learning import TrainingWidget
    from helpers.widgets.scaling import ScalingWidget
    from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget
    assert "scale λ = 1,000:" in SoftmaxTemperatureWidget(scale=1000)._bars.title.get_text()
    variance = ScalingWidget(d_k=1024, scaled=False, T=4, n_queries=16).reading.value
    assert re.search(r"variance <b>[\d,]+\.\d\d</b>", variance), variance          # not 1.02e+03, nor 812
    reading = TrainingWidget(run_experiment(steps=10)).reading.value
    assert re.search(r"parameter-free \d+\.\d%, learned \d+\.\d%", reading), reading   # 99.6% is not 100%
    assert "sees key 0: it skips 7 of its 8 tiles" in FlashTilesWidget(query=0, causal=True).reading.value
    assert "it skips 1 of its 8 tiles" in FlashTilesWidget(query=27, causal=True).reading.value
    formulas = {row["quantity"]: row["formula"] for row in cost_table(8, 4, 4, dtype="float8")}
    assert formulas["memory (T, T) scores"] == "T² · 1 byte"


def test_naive_why_says_when_underflow_made_the_naive_weights_wrong():
    from helpers.temperature import softmax_at_scale
    data = softmax_at_scale([-745.0, -746.0])           # exp(-746) is 0, exp(-745) a subnormal: naive [1, 0]
    assert np.allclose(data["weights"], [0.731, 0.269], atol=1e-3) and data["naive"][1] == 0
    assert data["naive_why"].startswith("wrong: exp(-746) underflowed")


def test_softmax_reading_tells_scores_apart_that_differ_after_the_fourth_digit():
    from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget
    w = SoftmaxTemperatureWidget("1001.0, 1001.2, 1000.9")
    assert "[1001, 1001.2, 1000.9]" in w.reading.value


def test_flash_widget_names_only_the_tiles_its_map_draws():
    from helpers.widgets.flash import FlashTilesWidget
    w = FlashTilesWidget()
    w.causal.value = False
    assert "orange" not in w.reading.value and "mid blue, this query's tiles to come" in w.reading.value
    w.causal.value = True
    assert "orange, on the diagonal" in w.reading.value and "×, skipped" in w.reading.value


def test_induction_reading_gives_no_weight_to_a_head_switched_off(model):
    from helpers.widgets.induction import InductionWidget
    w = InductionWidget("abcdabcd", position=5, model=model)
    w.switches[2].value = False                                     # head 1.0
    assert "1.0: off" in w.reading.value and "0.0: off" not in w.reading.value


def test_cost_legend_names_the_devices_left_to_right_without_percentages():
    from helpers.widgets.cost import memory_bar_html
    page = memory_bar_html([("scores", 4e9)], {"H200 (141 GB)": 141e9, "laptop (16 GB)": 16e9})
    assert "left to right: laptop (16 GB) · H200 (141 GB)" in page and "%<" not in page and " at " not in page


def test_heatmap_turns_column_labels_only_when_they_would_overlap():
    import matplotlib.pyplot as plt

    from helpers.plotting import heatmaps
    many = [f"t{i}" for i in range(16)]
    _, (ax, _) = heatmaps([np.eye(16), np.eye(16)], ["a", "b"], many, many)   # nb 07's mask figure at T = 16
    assert ax.get_xticklabels()[0].get_rotation() == 90
    _, (ax,) = heatmaps([np.eye(3)], ["money bank grows"], *[["money", "bank", "grows"]] * 2)
    assert ax.get_xticklabels()[0].get_rotation() == 0
    plt.close("all")


def test_sentence_explorer_legend_stays_inside_the_picture_for_the_longest_sentence():
    from helpers.widgets.static_embeddings import SentenceExplorer
    w = SentenceExplorer()
    w.boxes[0].value = " ".join(["money"] * 9 + ["bank"])              # 10 words, the most a box takes
    fig = w.figure.fig
    fig.canvas.draw()
    assert w.legend.get_texts()[1].get_window_extent(fig.canvas.get_renderer()).x1 <= fig.bbox.width


def test_naive_why_is_empty_when_the_naive_weights_print_the_same():
    from helpers.temperature import softmax_at_scale
    assert softmax_at_scale([-740.5, -741.0])["naive_why"] == ""      # exp underflows a little: 0.622, 0.378 both


def test_heatmap_shrinks_row_labels_that_would_crowd_and_keeps_roomy_ones():
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties

    from helpers.plotting import heatmap
    letters = list("abcdefghijklmnopabcdefghijklmnop")                      # notebook 10's n = 16: 32 rows
    fig, (crowded, roomy) = plt.subplots(1, 2, figsize=(8.8, 3.5))
    heatmap(np.eye(32), letters, letters, ax=crowded)
    heatmap(np.eye(3), list("abc"), list("abc"), ax=roomy)
    size = FontProperties(size=plt.rcParams["ytick.labelsize"]).get_size_in_points()   # as the course style sets it
    assert crowded.get_yticklabels()[0].get_fontsize() < 0.7 * size          # 32 rows in about 2.7 inches
    assert roomy.get_yticklabels()[0].get_fontsize() == roomy.get_xticklabels()[0].get_fontsize() == size
    plt.close(fig)


def test_scaling_titles_clear_the_weight_panels_top_tick_label():
    from helpers.widgets.scaling import ScalingWidget
    picture = ScalingWidget(scaled=False)._picture
    renderer = picture.figure.fig.canvas.get_renderer()
    top_tick = max(label.get_window_extent(renderer).y1 for label in picture.ax_w.get_yticklabels())
    title = picture.title_w.get_window_extent(renderer)
    assert title.y0 - top_tick >= 4 and title.y1 <= picture.figure.fig.bbox.height     # "1.0" and the title apart
