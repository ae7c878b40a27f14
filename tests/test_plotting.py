import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plotting


def test_heatmap_writes_every_value_and_labels_axes():
    M = np.array([[2.0, 1.0, 1.0], [1.0, 2.0, 1.0]])
    ax = plotting.heatmap(M, ["a", "b"], ["x", "y", "z"], title="t", fmt="{:.0f}")
    assert [t.get_text() for t in ax.texts] == ["2", "1", "1", "1", "2", "1"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.get_title() == "t"


def test_heatmap_writes_white_on_the_dark_cells_and_black_on_the_light_ones():
    ax = plotting.heatmap(np.array([[0.0, 1.0]]))
    luminance = [np.dot(ax.images[0].to_rgba(v)[:3], [0.2126, 0.7152, 0.0722]) for v in (0.0, 1.0)]
    assert luminance[0] < 0.2 < 0.6 < luminance[1]                          # viridis: dark purple to yellow
    assert [t.get_color() for t in ax.texts] == ["white", "black"]
    plt.close("all")


def test_heatmap_writes_values_up_to_144_cells_and_none_beyond():
    assert len(plotting.heatmap(np.zeros((12, 12))).texts) == 144
    assert len(plotting.heatmap(np.zeros((13, 12))).texts) == 0
    plt.close("all")


@pytest.mark.parametrize("M, said", [
    (np.ones((1, 3, 3)), "(W[0] of a batch; M[None] for a row), but got shape (1, 3, 3)"),
    (np.ones(3), "got shape (3,) (1-D)"), (np.ones((0, 3)), "is empty")])
def test_heatmap_names_what_is_not_one_matrix(M, said):
    with pytest.raises(ValueError, match=re.escape(said)):
        plotting.heatmap(M)
    with pytest.raises(ValueError, match=r"matrices\[1\] should be 2-D|matrices\[1\] is empty"):
        plotting.heatmaps([np.eye(2), M], ["one", "two"])
    plt.close("all")


def test_heatmaps_fit_a_projector():
    fig, _ = plotting.heatmaps([np.eye(5)] * 3, ["a", "b", "c"])
    assert fig.get_size_inches()[0] <= plotting.MAX_FIGURE_WIDTH
    fig, _ = plotting.heatmaps([np.eye(2)], ["small"])
    assert fig.get_size_inches()[0] == pytest.approx(3.6)          # small ones keep their size
    _, axes = plotting.heatmaps([np.eye(5)] * 2, ["a title far too long to fit above one panel of the two", "ok"])
    assert "\n" in axes[0].get_title() and axes[1].get_title() == "ok"   # long titles wrap, short ones stay


def test_heatmaps_share_scale_and_check_titles():
    fig, axes = plotting.heatmaps([np.eye(2), 2 * np.eye(2)], ["one", "two"], shared_scale=True)
    assert len(axes) == 2
    assert axes[0].images[0].get_clim() == axes[1].images[0].get_clim() == (0.0, 2.0)
    _, axes = plotting.heatmaps([np.eye(2), np.eye(2)], None)
    assert [ax.get_title() for ax in axes] == ["", ""]
    assert plotting.heatmap(np.eye(2), vmin=0, vmax=1).images[0].get_clim() == (0, 1)


def test_heatmaps_write_each_panel_in_its_own_format_or_one_for_all():
    M = np.array([[2.0, 1.0]])
    _, axes = plotting.heatmaps([M, M / 3], ["S", "W"], fmt=["{:.0f}", "{:.2f}"])
    assert [[t.get_text() for t in ax.texts] for ax in axes] == [["2", "1"], ["0.67", "0.33"]]
    _, axes = plotting.heatmaps([M, M / 3], ["S", "W"], fmt="{:.1f}")
    assert [[t.get_text() for t in ax.texts] for ax in axes] == [["2.0", "1.0"], ["0.7", "0.3"]]
    plt.close("all")


def test_projection_basis_is_orthonormal_and_deterministic():
    X = np.array([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]])
    B = plotting.projection_basis(X)
    assert B.shape == (4, 2)
    np.testing.assert_allclose(B.T @ B, np.eye(2), atol=1e-12)
    np.testing.assert_array_equal(B, plotting.projection_basis(X))
    np.testing.assert_array_equal(plotting.projection_basis(np.ones((3, 2))), np.eye(2))
    assert plotting.projection_basis(np.array([[1.0, 2.0, 3.0]])).shape == (3, 2)
    s = np.linalg.svd(X, compute_uv=False)                                # the view keeps the two largest directions
    assert np.linalg.norm(X @ B) ** 2 == pytest.approx((s[:2] ** 2).sum())   # of X: no other plane keeps as much


def test_projection_basis_signs_are_fixed_so_x_and_minus_x_share_one_view():
    X = np.array([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]])
    for A in (X, -X):
        B = plotting.projection_basis(A)
        assert np.all(B[np.abs(B).argmax(axis=0), [0, 1]] > 0)              # each column's largest entry positive
    np.testing.assert_allclose(plotting.projection_basis(-X), plotting.projection_basis(X), atol=1e-12)


def test_arrows_draws_one_labelled_arrow_per_vector():
    ax = plotting.arrows(np.array([[1.0, 0.0], [0.0, 2.0]]), ["a", "b"])
    assert sorted(t.get_text() for t in ax.texts if t.get_text()) == ["a", "b"]
    assert sum(1 for t in ax.texts if not t.get_text()) == 2  # the arrows (annotations without text)
    assert ax.get_ylim()[1] > 2.0


def test_function_box_draws_every_token():
    ax = plotting.function_box(["e1", "e2"], ["y1", "y2"], label="?")
    assert {"e1", "e2", "y1", "y2", "?"} <= {t.get_text() for t in ax.texts}


def test_presenter_mode_enlarges_fonts_and_switches_back():
    plotting.use_course_style(presenter=False)
    normal = plt.rcParams["font.size"]
    plotting.presenter_mode(True)
    assert plotting.is_presenter_mode()
    assert plt.rcParams["font.size"] > normal
    assert plt.rcParams["figure.figsize"][0] > 7
    plotting.presenter_mode(False)
    assert plt.rcParams["font.size"] == normal


def test_widget_pictures_grow_in_presenter_mode(presenting):
    from helpers.widgets.common import FastFigure

    plotting.presenter_mode(False)
    assert presenting(lambda: FastFigure((4, 3))).fig.dpi > FastFigure((4, 3)).fig.dpi


def test_presenter_widget_pictures_are_larger_but_never_wider_than_their_cell(presenting):
    from helpers.widgets.start_here import PullSliderWidget

    plotting.presenter_mode(False)
    normal, big = PullSliderWidget().picture.layout, presenting(PullSliderWidget).picture.layout
    assert int(big.width[:-2]) > int(normal.width[:-2])
    assert big.max_width == "100%" and big.height == "auto"     # a 1024 px projector: shrinks, aspect kept


# ----------------------------------------------------------------------------- bad input, said clearly

@pytest.mark.parametrize("call, name", [(lambda: plotting.use_course_style("no"), "presenter"),
                                        (lambda: plotting.presenter_mode(on="yes"), "presenter"),
                                        (lambda: plotting.presenter_mode(1), "presenter")])
def test_presenter_switches_take_only_true_or_false(call, name):
    plotting.use_course_style(presenter=False)
    try:
        with pytest.raises(TypeError, match=rf"{name} should be True or False, but got"):
            call()
        assert not plotting.is_presenter_mode()      # "no" did not switch presenter mode on
        plotting.use_course_style()                  # None keeps the setting
        assert not plotting.is_presenter_mode()
    finally:
        plotting.use_course_style(presenter=False)


# ----------------------------------------------------------------------------- helpers.attention_plots

def test_inside_hull_works_in_either_orientation():
    from helpers.attention_plots import convex_hull, inside_hull

    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])   # counter-clockwise
    points = [[0.5, 0.5], [1.0, 0.5], [1.5, 0.5], [-0.1, 0.2]]             # inside, on an edge, outside twice
    expected = [True, True, False, False]
    np.testing.assert_array_equal(inside_hull(points, square), expected)
    np.testing.assert_array_equal(inside_hull(points, square[::-1]), expected)          # clockwise
    np.testing.assert_array_equal(inside_hull(points, convex_hull(square)[::-1]), expected)
    triangle_cw = [[0.0, 0.0], [0.0, 2.0], [2.0, 0.0]]
    np.testing.assert_array_equal(inside_hull([[0.5, 0.5], [1.5, 1.5]], triangle_cw), [True, False])


def test_heatmaps_wrap_each_line_of_a_title_on_its_own():
    fig, axes = plotting.heatmaps([np.ones((5, 5))] * 2, ["flipped: only the future\n(last row 0/0: drawn as 0)",
                                                          "a title far too long to sit above one narrow panel"])
    assert axes[0].get_title().split("\n") == ["flipped: only the future", "(last row 0/0: drawn as 0)"]
    assert len(axes[1].get_title().split("\n")) > 1                     # wrapped to the panel's width
    plt.close(fig)


def _lab(hex_colour: str, simulate=None) -> np.ndarray:
    """CIELAB of an sRGB colour, optionally as a colour-blind eye sees it (Machado et al. 2009, severity 1)."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    linear = np.clip(linear if simulate is None else simulate @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    t = xyz / [0.95047, 1.0, 1.08883]
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_the_roles_colours_stay_apart_for_the_red_green_colour_blind():
    """The course's role colours (key and query share plots: scaled vs unscaled, naive vs sdpa) differ by a CIELAB
    distance of at least 15 for normal, deuteranopic and protanopic vision; the old seaborn pair was 9.6 apart."""
    deutan = np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.01182, 0.04294, 0.968881]])
    protan = np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                       [-0.003882, -0.048116, 1.051998]])
    pairs = [(a, b) for i, a in enumerate(plotting.COLORS) for b in list(plotting.COLORS)[i + 1:]]
    for simulate in (None, deutan, protan):
        distance = {(a, b): np.linalg.norm(_lab(plotting.COLORS[a], simulate) - _lab(plotting.COLORS[b], simulate))
                    for a, b in pairs}
        assert min(distance.values()) >= 15, min(distance, key=distance.get)
    assert np.linalg.norm(_lab("#c44e52", deutan) - _lab("#55a868", deutan)) < 15   # the check can fail


@pytest.mark.parametrize("titles, fmt", [(["a", "b"], "{:.2f}"), ("abc", "{:.2f}"), (["a", "b", "c"], ["{:.1f}"])])
def test_heatmaps_name_a_title_or_format_missing_for_a_panel(titles, fmt):   # that panel would stay blank
    with pytest.raises(ValueError, match=r"one panel per matrix: give 3 titles \(or titles=None\) and 3 fmts \(or one "
                                         r"for all\), but got titles"):
        plotting.heatmaps([np.eye(2)] * 3, titles, fmt=fmt)
    _, axes = plotting.heatmaps([np.eye(2)], "one title")   # one matrix: its title as a string too
    assert [ax.get_title() for ax in axes] == ["one title"]
    plt.close("all")


def test_heatmaps_take_their_titles_as_an_array_too():
    fig, axes = plotting.heatmaps([np.ones((2, 2))] * 2, np.array(["left", "right"]))
    assert [ax.get_title() for ax in axes] == ["left", "right"]
    plt.close(fig)


def _contrast(a, b) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21; 4.5 is the floor for body text)."""
    def luminance(colour):
        c = np.array(plt.matplotlib.colors.to_rgb(colour))
        return np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4) @ [0.2126, 0.7152, 0.0722]
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _contrast_on_white(colour) -> float:
    return _contrast(colour, "white")


def test_text_in_a_role_colour_reads_on_white():
    """Words drawn in a role's colour (function_box, arrows' labels, notebook 03's bold labels) use the ink: 4.5:1 or
    more against white, where the orange itself is 2.2:1."""
    assert _contrast_on_white(plotting.COLORS["contextual"]) < 2.3                     # the check can fail
    assert min(_contrast_on_white(c) for c in plotting.INK.values()) >= 4.5
    ax = plotting.function_box(["e1"], ["y1"], input_note="static", output_note="contextual")
    ax2 = plotting.arrows(np.eye(len(plotting.PALETTE)), [str(k) for k in range(len(plotting.PALETTE))])
    words = [t for a in (ax, ax2) for t in a.texts if t.get_text() and t.get_text() != "?"]
    assert len(words) == 4 + len(plotting.PALETTE)
    assert min(_contrast_on_white(t.get_color()) for t in words) >= 4.5
    plt.close("all")


def test_the_numbers_in_a_heatmap_read_on_every_cell_colour():
    """White or black, whichever the cell's viridis colour needs: 4.5:1 at least on every colour of the scale, in the
    matplotlib heatmap and the widgets' HTML one (white up to 0.55 of the scale gave 3.4:1 on the mid greens)."""
    from helpers.widgets.common import html_heatmap
    values = np.linspace(0, 1, 101)[None, :]
    ax = plotting.heatmap(values, fmt=".2f")
    assert min(_contrast(t.get_color(), ax.images[0].to_rgba(v)) for t, v in zip(ax.texts, values[0])) >= 4.5
    plt.close("all")
    cells = re.findall(r"background:rgb\((\d+),(\d+),(\d+)\);color:(\w+)", html_heatmap(values, ["r"], range(101)))
    assert len(cells) == 101
    assert min(_contrast(np.array(rgb, dtype=float) / 255, colour) for *rgb, colour in cells) >= 4.5


def test_exercise_feedback_brings_its_own_light_box_so_it_reads_in_a_dark_theme_too():
    """The verdict's coloured label and its text sit on the box's own background, 4.5:1 at least (on a dark theme's
    #111111 the red label alone would be 2.9:1)."""
    from helpers.exercises.engine import Feedback
    for passed in (True, False):
        style, label = re.search(r'<div style="([^"]*)"><b style="color:([^"]*)">', Feedback(passed, "m")._repr_html_()
                                 ).groups()
        box = dict(part.split(":", 1) for part in style.split(";"))
        assert _contrast(label, box["background"]) >= 4.5 and _contrast(box["color"], box["background"]) >= 4.5
