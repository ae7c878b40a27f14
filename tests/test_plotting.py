import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plotting


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


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
    from helpers.widgets.fast_png import FastFigure

    plotting.presenter_mode(False)
    normal = FastFigure((4, 3)).fig.dpi
    plotting.presenter_mode(True)
    try:
        assert FastFigure((4, 3)).fig.dpi > normal
    finally:
        plotting.presenter_mode(False)
