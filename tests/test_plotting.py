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


def test_heatmap_label_count_must_match():
    with pytest.raises(ValueError, match="row labels has 3 labels but the matrix has 2 rows"):
        plotting.heatmap(np.eye(2), ["a", "b", "c"], ["x", "y"])


def test_heatmaps_share_scale_and_check_titles():
    fig, axes = plotting.heatmaps([np.eye(2), 2 * np.eye(2)], ["one", "two"], shared_scale=True)
    assert len(axes) == 2
    assert axes[0].images[0].get_clim() == axes[1].images[0].get_clim() == (0.0, 2.0)
    with pytest.raises(ValueError, match="2 matrices but 1 titles"):
        plotting.heatmaps([np.eye(2), np.eye(2)], ["only one"])


def test_projection_basis_is_orthonormal_and_deterministic():
    X = np.array([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]])
    B = plotting.projection_basis(X)
    assert B.shape == (4, 2)
    np.testing.assert_allclose(B.T @ B, np.eye(2), atol=1e-12)
    np.testing.assert_array_equal(B, plotting.projection_basis(X))
    np.testing.assert_array_equal(plotting.projection_basis(np.ones((3, 2))), np.eye(2))
    assert plotting.projection_basis(np.array([[1.0, 2.0, 3.0]])).shape == (3, 2)


def test_arrows_draws_one_labelled_arrow_per_vector():
    ax = plotting.arrows(np.array([[1.0, 0.0], [0.0, 2.0]]), ["a", "b"])
    assert sorted(t.get_text() for t in ax.texts if t.get_text()) == ["a", "b"]
    assert sum(1 for t in ax.texts if not t.get_text()) == 2  # the arrows (annotations without text)
    assert ax.get_ylim()[1] > 2.0
    with pytest.raises(ValueError, match="2 vectors but 1 labels"):
        plotting.arrows(np.eye(2), ["a"])
    with pytest.raises(ValueError, match=r"basis should have shape \(3, 2\)"):
        plotting.arrows(np.eye(3), ["a", "b", "c"], basis=np.eye(2))


def test_function_box_draws_every_token():
    ax = plotting.function_box(["e1", "e2"], ["y1", "y2"], label="?")
    assert {"e1", "e2", "y1", "y2", "?"} <= {t.get_text() for t in ax.texts}
    with pytest.raises(ValueError, match="as many outputs as inputs"):
        plotting.function_box(["e1"], ["y1", "y2"])


def test_presenter_mode_enlarges_fonts_and_switches_back():
    plotting.use_course_style(presenter=False)
    normal = plt.rcParams["font.size"]
    plotting.presenter_mode(True)
    assert plotting.is_presenter_mode()
    assert plt.rcParams["font.size"] > normal
    assert plt.rcParams["figure.figsize"][0] > 7
    plotting.presenter_mode(False)
    assert plt.rcParams["font.size"] == normal


def test_widget_pictures_grow_in_presenter_mode():
    from helpers.widgets.common import FastFigure

    plotting.presenter_mode(False)
    normal = FastFigure((4, 3)).fig.dpi
    plotting.presenter_mode(True)
    try:
        assert FastFigure((4, 3)).fig.dpi > normal
    finally:
        plotting.presenter_mode(False)


# ----------------------------------------------------------------------------- bad input, said clearly

@pytest.mark.parametrize("call, name", [(lambda: plotting.use_course_style("no"), "presenter"),
                                        (lambda: plotting.presenter_mode(on="yes"), "on"),
                                        (lambda: plotting.presenter_mode(1), "on")])
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


def test_function_box_refuses_missing_token_lists():
    with pytest.raises(TypeError, match=r"inputs should be a list such as \['e1', 'e2', 'e3'\], but got NoneType"):
        plotting.function_box(None, None)
    with pytest.raises(TypeError, match=r"outputs should be a list .* but got str"):
        plotting.function_box(["e1"], "y1")


def test_heatmaps_refuse_no_matrices_and_accept_no_titles():
    with pytest.raises(ValueError, match=r"matrices is empty: give at least one \(rows, cols\) matrix"):
        plotting.heatmaps([], [])
    with pytest.raises(TypeError, match=r"matrices should be a list .* but got NoneType"):
        plotting.heatmaps(None, None)
    with pytest.raises(TypeError, match=r"titles should be a list .* but got str"):
        plotting.heatmaps([np.eye(2)], "one")
    with pytest.raises(TypeError, match=r"shared_scale should be True or False, but got str"):
        plotting.heatmaps([np.eye(2)], ["one"], shared_scale="yes")
    _, axes = plotting.heatmaps([np.eye(2), np.eye(2)], None)
    assert [ax.get_title() for ax in axes] == ["", ""]


def test_heatmap_refuses_text_limits_and_switches():
    with pytest.raises(TypeError, match=r"vmin should be a number \(or None .*\), but got str \('0'\)"):
        plotting.heatmap(np.eye(2), vmin="0")
    with pytest.raises(TypeError, match=r"vmax should be a number"):
        plotting.heatmap(np.eye(2), vmax=[1])
    with pytest.raises(ValueError, match=r"vmin \(2\) is above vmax \(1\)"):
        plotting.heatmap(np.eye(2), vmin=2, vmax=1)
    with pytest.raises(TypeError, match=r"show_values should be True or False, but got str"):
        plotting.heatmap(np.eye(2), show_values="no")
    with pytest.raises(TypeError, match=r"colorbar should be True or False, but got int"):
        plotting.heatmap(np.eye(2), colorbar=1)
    with pytest.raises(TypeError, match=r"row labels should be a list .* but got int"):
        plotting.heatmap(np.eye(2), 5)
    assert plotting.heatmap(np.eye(2), vmin=0, vmax=1).images[0].get_clim() == (0, 1)


def test_arrows_refuse_missing_labels():
    with pytest.raises(TypeError, match=r"labels should be a list such as \['money', 'bank'\], but got NoneType"):
        plotting.arrows(np.eye(2), None)


# ----------------------------------------------------------------------------- helpers.attention_plots

def test_timing_plot_says_what_each_entry_must_be():
    from helpers.attention_plots import timing_plot

    with pytest.raises(ValueError, match=r"results\['a'\] should be a pair \(Ts, seconds\) of equal length.*"
                                         r"but got list of length 3"):
        timing_plot({"a": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"should be a pair \(Ts, seconds\).*but got float"):
        timing_plot({"a": 0.5})


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


def test_attention_plots_refuse_missing_labels_and_text_switches():
    from helpers.attention_plots import gravity_plot, labelled_table

    with pytest.raises(TypeError, match=r"row_labels should be a list .* but got NoneType"):
        labelled_table(np.eye(2), None, ["x", "y"])
    with pytest.raises(TypeError, match=r"labels should be a list .* but got NoneType"):
        gravity_plot(np.eye(2), np.eye(2), None)
    with pytest.raises(TypeError, match=r"hull should be True or False, but got str \('no'\)"):
        gravity_plot(np.eye(2), np.eye(2), ["a", "b"], hull="no")
    with pytest.raises(TypeError, match=r"show_labels should be True or False, but got int"):
        gravity_plot(np.eye(2), np.eye(2), ["a", "b"], show_labels=0)
