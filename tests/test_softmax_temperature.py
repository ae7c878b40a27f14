"""helpers.temperature (notebook 02's widget function) and the softmax temperature widget."""

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from helpers.temperature import parse_scores, softmax_at_scale, weights_bars  # noqa: E402
from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget  # noqa: E402


def test_module_text_numbers():
    soft = softmax_at_scale([1.0, 1.2, 0.9], 1.0)
    hard = softmax_at_scale([1.0, 1.2, 0.9], 10.0)
    np.testing.assert_allclose(soft["weights"], [0.320, 0.391, 0.289], atol=5e-4)
    np.testing.assert_allclose(hard["weights"], [0.114, 0.844, 0.042], atol=5e-4)
    np.testing.assert_allclose(hard["scaled"], [10.0, 12.0, 9.0])
    assert soft["top"] == hard["top"] == [1]
    assert softmax_at_scale([5.0, 5.0, 1.0])["top"] == [0, 1]          # ties share the top
    assert hard["top_weight"] == pytest.approx(0.8438, abs=5e-5)
    assert hard["effective_choices"] < soft["effective_choices"] < 3


def test_scale_zero_is_uniform_and_entropy_is_log2_n():
    data = softmax_at_scale([3.0, -1.0, 0.5, 2.0], 0.0)
    np.testing.assert_allclose(data["weights"], 0.25)
    assert data["entropy_bits"] == pytest.approx(2.0)
    assert data["effective_choices"] == pytest.approx(4.0)


def test_large_scale_naive_overflows_but_stable_does_not():
    data = softmax_at_scale([1.0, 1.2, 0.9], 1000.0)
    assert data["naive_overflows"] is True
    assert np.isnan(data["naive"]).all()
    np.testing.assert_allclose(data["weights"], [0.0, 1.0, 0.0], atol=1e-12)
    assert data["effective_choices"] == pytest.approx(1.0)
    ok = softmax_at_scale([1.0, 1.2, 0.9], 500.0)               # 600 < 709.78: still fits
    assert ok["naive_overflows"] is False
    np.testing.assert_allclose(ok["naive"], ok["weights"])


def test_every_nan_on_the_naive_line_is_explained():
    hot = softmax_at_scale([1.0, 1.2, 0.9], 1000.0)                 # exp(1200) = inf, inf / inf = NaN
    assert "exp(1200) overflowed to inf" in hot["naive_why"] and "inf / inf = NaN" in hot["naive_why"]
    cold = softmax_at_scale([-1.0, -1.2, -0.9], 1000.0)             # exp(-900) = 0 everywhere, 0 / 0 = NaN
    assert np.isnan(cold["naive"]).all() and not cold["naive_overflows"]
    assert "underflowed to 0" in cold["naive_why"] and "0 / 0 = NaN" in cold["naive_why"]
    np.testing.assert_allclose(cold["weights"], [0.0, 0.0, 1.0], atol=1e-12)
    assert softmax_at_scale([1.0, 1.2, 0.9], 500.0)["naive_why"] == ""   # no NaN, nothing to explain


def test_scores_times_scale_beyond_float64_name_what_was_typed(recwarn):
    with pytest.raises(ValueError, match=r"the scores × scale λ overflow: 1e\+306 × 1000") as error:
        softmax_at_scale([1e306, 1.0], 1000.0)
    assert "x contains" not in str(error.value)
    edge = softmax_at_scale([1e308, -1e308], 1.0)                   # the stable shift reaches -inf: exp(-inf) = 0
    np.testing.assert_allclose(edge["weights"], [1.0, 0.0])
    w = SoftmaxTemperatureWidget("1e306, 1", 1000.0)
    assert w.result is None and "the scores × scale λ overflow" in w.children[3].value
    w.children[1].value = 1.0                                       # the same scores at scale 1: fine, and explained
    assert w.result["top_weight"] == 1.0 and "exp(1e+306) overflowed to inf" in w.children[3].value
    assert not [warning for warning in recwarn if issubclass(warning.category, RuntimeWarning)]


def test_order_never_changes_with_positive_scale():
    scores = np.array([0.3, -2.0, 1.7, 1.1])
    for c in (0.01, 0.5, 3.0, 40.0):
        assert list(np.argsort(softmax_at_scale(scores, c)["weights"])) == list(np.argsort(scores))


def test_parse_scores():
    np.testing.assert_allclose(parse_scores("1.0, 1.2, 0.9"), [1.0, 1.2, 0.9])
    np.testing.assert_allclose(parse_scores(" -3,  0,2, "), [-3.0, 0.0, 2.0])
    np.testing.assert_allclose(parse_scores(" -3  0 2 "), [-3.0, 0.0, 2.0])           # spaces alone separate too
    for text, part in (("1, x", "x"), ("1 000, 2", "1 000"), ("0,5 1,2", "5 1")):   # a thousands or decimal comma
        with pytest.raises(ValueError, match=f"'{part}' is not one number"):
            parse_scores(text)
    with pytest.raises(ValueError, match=r"between 2 and 8 scores"):
        parse_scores("1")
    with pytest.raises(ValueError, match=r"inf at position 1 .*: every entry must be finite"):
        parse_scores("1, inf")
    with pytest.raises(ValueError, match=r"inf at position 0 \(inf itself, or a number beyond ±1.8e308"):
        parse_scores("1e309, 0")                                       # typed, no inf: why it is one


def test_weights_bars():
    fig, axes = weights_bars([[0.2, 0.8], [0.5, 0.5]], ["a", "b"], suptitle="s")
    assert len(axes) == 2 and len(axes[0].patches) == 2
    assert axes[0].patches[1].get_height() == pytest.approx(0.8)
    plt.close("all")
    fig, axes = weights_bars([[0.320, 0.391, 0.289]], ["soft"])
    assert "uniform weight 1/3" in fig.legends[0].get_texts()[0].get_text()   # the dashed line is explained
    label_320 = [t for t in axes[0].texts if t.get_text() == "0.320"][0]
    assert label_320.get_position()[1] > 1 / 3                              # lifted off the dashed line
    label_391 = [t for t in axes[0].texts if t.get_text() == "0.391"][0]
    assert label_391.get_position()[1] == pytest.approx(0.391 + 0.02)       # far from it: right on its bar
    plt.close("all")


def test_weights_bars_take_one_row_and_its_title_and_name_a_missing_title():
    fig, axes = weights_bars(np.array([0.2, 0.8]), "one row")          # not a list of rows, not a list of titles
    assert len(axes) == 1 and axes[0].get_title() == "one row" and len(axes[0].patches) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match=r"2 rows of weights need 2 titles, but got 1: \['x'\]"):
        weights_bars([[0.2, 0.8], [0.5, 0.5]], ["x"])                   # the second panel would have stayed blank
    with pytest.raises(ValueError, match=r"need 2 titles, but got 1: 'x'\.$"):
        weights_bars([[0.2, 0.8], [0.5, 0.5]], "x")


def test_a_value_label_the_dashed_line_would_cross_is_lifted_above_the_line():
    """A label is 0.1 tall: 0.170's label, from 0.19 to 0.29, would be crossed by the line at 1/4."""
    _, axes = weights_bars([[0.17, 0.33, 0.25, 0.25]], ["a"])
    label = next(t for t in axes[0].texts if t.get_text() == "0.170")
    assert label.get_position()[1] == pytest.approx(0.25 + 0.02)
    plt.close("all")


def test_widget_updates_when_slider_moves():
    w = SoftmaxTemperatureWidget()
    assert isinstance(w, SoftmaxTemperatureWidget)
    np.testing.assert_allclose(w.result["weights"], [0.320, 0.391, 0.289], atol=5e-4)
    assert w.children[2].value[:4] == b"\x89PNG"

    w.children[1].value = 10.0                                     # the scale slider
    np.testing.assert_allclose(w.result["weights"], [0.114, 0.844, 0.042], atol=5e-4)
    assert "0.844" in w.children[3].value

    w.children[1].value = 1000.0
    assert w.result["naive_overflows"] and "overflowed to inf" in w.children[3].value
    w.children[0].value = "-1, -1.2, -0.9"                         # every exp underflows: 0 / 0 = NaN, explained too
    assert "underflowed to 0" in w.children[3].value and "0 / 0 = NaN" in w.children[3].value

    w.children[0].value = "5, 5, 1"                                # the scores box; scale stays 1000
    np.testing.assert_allclose(w.result["weights"], [0.5, 0.5, 0.0], atol=1e-12)

    w.children[0].value = "5, 5, 1, 0"                             # a different number of bars
    assert len(w.result["weights"]) == 4 and w.last_update_ms > 0
    assert list(w._bars.uniform.get_ydata()) == [0.25, 0.25] and w._bars.uniform_text.get_text().endswith("1/4")
    assert "update took" not in w.children[3].value and " ms" not in w.children[3].value   # measured, not shown


def _font_sizes(figure):
    return [t.get_fontsize() for t in figure.findobj(matplotlib.text.Text) if t.get_text()]


@pytest.mark.parametrize("scores", ["1.0, 1.2, 0.9", "1, 2, 3, 4, 5, 6, 7, 8"])
def test_widget_picture_is_readable_and_shown_pixel_for_pixel(scores):
    w = SoftmaxTemperatureWidget(scores)
    sizes = _font_sizes(w._bars.figure.fig)
    assert sizes and min(sizes) >= 11                             # readable from the back of a room
    width, height = Image.open(io.BytesIO(w.children[2].value)).size
    assert w.children[2].layout.width == f"{width}px" and w.children[2].layout.height == f"{height}px"
    assert "font-size:15px" in w.children[3].value


def test_widget_grows_in_presenter_mode(presenting):
    normal, big = SoftmaxTemperatureWidget(), presenting(SoftmaxTemperatureWidget)
    assert int(big.children[2].layout.width[:-2]) > int(normal.children[2].layout.width[:-2])
    assert _font_sizes(big._bars.figure.fig) == _font_sizes(normal._bars.figure.fig)   # same layout, more dpi
    assert "font-size:21px" in big.children[3].value


def test_widget_reports_bad_scores_without_raising():
    w = SoftmaxTemperatureWidget()
    w.children[0].value = "1, two"
    assert w.result is None
    assert "not one number" in w.children[3].value
    assert w.children[2].layout.display == "none"            # the bars of the last good scores are not shown
    w.children[0].value = "1, 2"
    assert w.result is not None and w.children[2].layout.display is None


def test_widget_title_counts_tokens_as_two_to_the_entropy():
    w = SoftmaxTemperatureWidget()
    w.children[1].value = 10.0
    spread, bits = w.result["effective_choices"], w.result["entropy_bits"]
    assert spread == pytest.approx(2 ** bits) and f"{spread:.2f}" != f"{bits:.2f}"
    assert w._bars.title.get_text().endswith(f"spread over ≈ {spread:.2f} tokens")
