"""helpers.scaling (notebook 05's measurements) and its widget, helpers.widgets.scaling."""
import io
import math

import numpy as np
import pytest
import torch
from PIL import Image

from helpers import scaling
from helpers.scaling import (
    attention_snapshot,
    constant_comparison,
    fit_variance_line,
    gradient_measurements,
    per_head_dim,
    sample_dot_products,
    saturation_table,
    score_divisor,
    softmax_gradient,
    variance_table,
)
from helpers.similarity import entropy_bits, softmax
from helpers.widgets.scaling import ScalingWidget

# ----------------------------------------------------------------------------- sampling q·k

def test_sample_dot_products_are_the_dot_products_of_the_seeded_draws():
    got = sample_dot_products(8, n_pairs=5, seed=3)
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((5, 8)), rng.standard_normal((5, 8))
    assert got.shape == (5,)
    np.testing.assert_allclose(got, (q * k).sum(axis=1))
    np.testing.assert_array_equal(got, sample_dot_products(8, n_pairs=5, seed=3))         # reproducible
    assert not np.allclose(got, sample_dot_products(8, n_pairs=5, seed=4))                # seed-dependent


def test_sigma_multiplies_each_dot_product_by_sigma_squared():
    np.testing.assert_allclose(sample_dot_products(16, 500, sigma=2.0, seed=4),
                               4.0 * sample_dot_products(16, 500, sigma=1.0, seed=4))


def test_variance_table_reads_each_seeded_walk_at_every_d():
    """Row d is q·k over the first d components of the same pairs, in chunks of 5,000 that continue one stream."""
    table = variance_table([1, 3, 8], n_pairs=5_002, sigma=2.0, seed=5)
    q, k = 2.0 * torch.randn(2, 5_000, 8, generator=torch.Generator().manual_seed(5)).double()
    for column, d in enumerate((1, 3, 8)):
        np.testing.assert_allclose(table["samples"][:5_000, column], (q[:, :d] * k[:, :d]).sum(-1), atol=1e-5)
    assert table["samples"].shape == (5_002, 3) and not np.allclose(table["samples"][-2:], table["samples"][:2])


def test_variance_table_matches_d_sigma4_and_the_scaling_rule():
    table = variance_table([1, 16, 256], n_pairs=20_000, sigma=1.5, seed=0)
    np.testing.assert_array_equal(table["d"], [1, 16, 256])
    np.testing.assert_allclose(table["predicted"], np.array([1, 16, 256]) * 1.5**4)
    np.testing.assert_allclose(table["ratio"], 1.0, atol=0.05)
    np.testing.assert_allclose(table["var_scaled"], table["var"] / table["d"], rtol=1e-9)
    np.testing.assert_allclose(table["var_scaled"], 1.5**4, rtol=0.05)
    # a single product of two unit Gaussians has kurtosis 9: relative noise sqrt(8 / n)
    assert table["noise"][0] == pytest.approx(math.sqrt(8 / 20_000), rel=0.25)
    assert table["noise"][2] == pytest.approx(math.sqrt(2 / 20_000), rel=0.25)    # nearly Gaussian
    assert table["samples"].shape == (20_000, 3)


# ----------------------------------------------------------------------------- fitting

def test_fit_variance_line_recovers_an_exact_line():
    d = np.array([1.0, 2, 4, 8, 16])
    fit = fit_variance_line(d, 3.0 * d)
    assert fit["slope"] == pytest.approx(3.0)
    assert fit["exponent"] == pytest.approx(1.0)
    assert fit_variance_line(d, d**2)["exponent"] == pytest.approx(2.0)


def test_fit_variance_line_slope_is_the_least_squares_line_through_the_origin():
    d, var = np.array([1.0, 2, 4, 8, 16]), np.array([3.0, 5, 13, 20, 50])   # not proportional to d
    (slope,), *_ = np.linalg.lstsq(d[:, None], var, rcond=None)
    assert fit_variance_line(d, var)["slope"] == pytest.approx(slope)


# ----------------------------------------------------------------------------- softmax and its gradient

def test_softmax_gradient_known_values_and_one_hot():
    np.testing.assert_allclose(softmax_gradient(np.array([0.5, 0.5]), np.array([1.0, 0.0])), [0.25, -0.25])
    one_hot = softmax_gradient(np.array([0.0, 1.0, 0.0]), np.array([3.0, -1.0, 2.0]))
    np.testing.assert_array_equal(one_hot, [0.0, 0.0, 0.0])


def test_softmax_gradient_equals_autograd():
    rng = np.random.default_rng(0)
    z = torch.tensor(rng.standard_normal((5, 7)) * 3, requires_grad=True)
    G = torch.tensor(rng.standard_normal((5, 7)))
    W = torch.softmax(z, dim=-1)
    (W * G).sum().backward()
    np.testing.assert_allclose(softmax_gradient(W.detach().numpy(), G.numpy()), z.grad.numpy(), atol=1e-12)


def test_entropy_bits():
    np.testing.assert_allclose(entropy_bits([[0.25] * 4, [1.0, 0, 0, 0], [0.5, 0.5, 0, 0]]), [2.0, 0.0, 1.0])
    assert not np.signbit(entropy_bits([0.0, 1.0, 0.0]))          # one-hot: 0, never printed as -0.00


# ----------------------------------------------------------------------------- snapshots (the widget's data)

def test_attention_snapshot_scaled_scores_have_unit_variance_and_unscaled_do_not():
    scaled = attention_snapshot(256, True)
    raw = attention_snapshot(256, False)
    assert scaled["divisor"] == 16.0 and raw["divisor"] == 1.0
    assert scaled["score_var"] == pytest.approx(1.0, rel=0.1)
    assert raw["score_var"] == pytest.approx(256.0, rel=0.1)
    assert raw["max_weight"] > 0.85 and scaled["max_weight"] < 0.3
    assert raw["grad_median"] < 0.05 * scaled["grad_median"]
    assert raw["top2_share"] > 0.85
    for snap in (scaled, raw):
        assert snap["weights"].shape == (512, 16)
        np.testing.assert_allclose(snap["weights"].sum(axis=1), 1.0)
        assert snap["mean_sorted_weights"].sum() == pytest.approx(1.0)
        assert np.all(np.diff(snap["mean_sorted_weights"]) <= 0)
        assert snap["example_weights"].sum() == pytest.approx(1.0)


def test_attention_snapshot_gradient_is_the_softmax_gradient_of_its_weights():
    snap = attention_snapshot(16, True, T=8, n_queries=64, seed=3)
    _, G = scaling._scores_and_upstream(16, 8, 64, 3)
    np.testing.assert_allclose(snap["grad_per_query"],
                               np.linalg.norm(softmax_gradient(snap["weights"], G), axis=1))
    assert snap["grad_p10"] <= snap["grad_median"] <= snap["grad_p90"]
    ranked = np.sort(snap["grad_per_query"])                              # 64 queries: the 10th and 90th percentiles
    assert ranked[5] <= snap["grad_p10"] <= ranked[7] and ranked[56] <= snap["grad_p90"] <= ranked[58]


def test_attention_snapshot_at_d_1_scaling_changes_nothing():
    a, b = attention_snapshot(1, True), attention_snapshot(1, False)
    np.testing.assert_array_equal(a["weights"], b["weights"])


def test_saturation_table_unscaled_hardens_and_scaled_stays_put():
    sat = saturation_table([1, 16, 1024], T=16, n_queries=256)
    un, sc = sat["unscaled"], sat["scaled"]
    assert sat["max_entropy_bits"] == pytest.approx(4.0)
    assert np.all(np.diff(un["max_weight"]) > 0) and un["max_weight"][-1] > 0.9
    assert np.all(np.diff(un["entropy_bits"]) < 0)
    np.testing.assert_allclose(sc["score_std"][1:], 1.0, atol=0.1)
    np.testing.assert_allclose(un["score_std"], np.sqrt([1, 16, 1024]), rtol=0.1)
    assert np.ptp(sc["entropy_bits"][1:]) < 0.2


# ----------------------------------------------------------------------------- autograd measurements

def test_gradient_measurements_scaled_is_flat_and_unscaled_vanishes():
    threads = torch.get_num_threads()
    un = gradient_measurements([1, 64, 1024], False)
    sc = gradient_measurements([1, 64, 1024], True)
    assert torch.get_num_threads() == threads                          # restored afterwards
    for key in ("scores_median", "wq_median", "wq_total"):             # at d_k = 1 the two runs coincide
        assert un[key][0] == pytest.approx(sc[key][0])
    assert sc["scores_median"].max() / sc["scores_median"].min() < 1.2
    assert un["scores_median"][-1] < 1e-3 * sc["scores_median"][-1]
    assert un["scores_p10"][-1] < 1e-10
    assert un["top2_share"][-1] > 0.9 and sc["top2_share"][-1] < 0.5
    assert un["wq_top10_share"][-1] > 0.7 and sc["wq_top10_share"][-1] < 0.3
    assert un["max_weight"][-1] > 0.9
    for data in (un, sc):
        assert np.all(data["scores_p10"] <= data["scores_median"])
        assert np.all(data["scores_median"] <= data["scores_p90"])


def test_gradient_measurements_are_reproducible():
    a = gradient_measurements([8, 32], True, n_seq=4)
    b = gradient_measurements([8, 32], True, n_seq=4)
    for key in ("scores_median", "wq_median", "wq_total"):
        np.testing.assert_array_equal(a[key], b[key])


def test_gradient_measurements_scaled_weights_are_as_peaked_as_a_softmax_of_unit_gaussian_scores():
    """Divided by √d_k, the scores of d_k = 1024 have variance about 1: the largest of 16 weights is as large as
    for 16 standard normal scores (about 0.25; 1/16 if the scores shrank to nothing)."""
    e = np.exp(np.random.default_rng(0).standard_normal((20_000, 16)))
    unit_gaussian = (e.max(axis=1) / e.sum(axis=1)).mean()
    assert gradient_measurements([1024], True, n_seq=8)["max_weight"][0] == pytest.approx(unit_gaussian, abs=0.05)


# ----------------------------------------------------------------------------- per head

def test_per_head_dim_and_score_divisor():
    assert per_head_dim(512, 8) == 64
    assert per_head_dim(768, 12) == 64
    assert score_divisor(512, 8) == 8.0
    assert score_divisor(96, 6) == 4.0


def test_effective_keys_average_two_to_the_entropy_of_each_query():
    """The widget's 'spread over ≈ n keys': the mean over queries of 2^H, not 2 to the mean H."""
    snap = attention_snapshot(4, scaled=False)
    per_query = 2.0 ** entropy_bits(snap["weights"])                      # (n_queries,)
    assert snap["effective_keys"] == pytest.approx(per_query.mean())
    assert abs(per_query.mean() - 2.0 ** np.log2(per_query).mean()) > 0.1   # the two averages differ here


def test_constant_comparison_right_wrong_and_none():
    cmp = constant_comparison(512, 8)
    none, right, wrong = cmp["rows"]
    assert cmp["d_k"] == 64
    assert [r["c"] for r in cmp["rows"]] == pytest.approx([1.0, 8.0, math.sqrt(512)])
    assert right["score_var"] == pytest.approx(1.0, rel=0.1)
    assert wrong["score_var"] == pytest.approx(64 / 512, rel=0.1)
    assert none["score_var"] == pytest.approx(64.0, rel=0.1)
    assert none["effective_keys"] < right["effective_keys"] < wrong["effective_keys"] <= 16
    assert none["max_weight"] > right["max_weight"] > wrong["max_weight"]
    S, _ = scaling._scores_and_upstream(64, 16, 512, 0)
    for row in cmp["rows"]:                                             # query 0's weights under each divisor
        np.testing.assert_allclose(row["example_weights"], softmax(S[0] / row["c"]))
    np.testing.assert_array_equal(cmp["example_scores"], S[0])
    order = np.argsort(-cmp["example_scores"])                          # ranking by score = ranking by weight
    for row in cmp["rows"][1:]:
        assert np.all(np.diff(row["example_weights"][order]) <= 0)


# ----------------------------------------------------------------------------- the widget

def test_widget_follows_its_controls():
    w = ScalingWidget(d_k=64, scaled=True)
    assert isinstance(w, ScalingWidget)
    assert w.result["d_k"] == 64 and w.result["scaled"] is True
    assert w.picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    flat = w.result["max_weight"]
    w.children[1].value = False                                        # switch scaling off
    assert w.result["scaled"] is False and w.result["max_weight"] > flat + 0.4
    w.children[0].value = 1024                                         # and grow d_k
    assert w.result["d_k"] == 1024 and w.result["max_weight"] > 0.9
    assert w.result["grad_median"] < 1e-3
    assert "1024" in w.children[3].value
    assert "took" not in w.children[3].value                           # timing is measured, never shown
    assert math.isfinite(w.last_update_ms)


def test_widget_picture_grows_in_presenter_mode(presenting):
    normal, large = ScalingWidget().picture.value, presenting(ScalingWidget).picture.value
    size = [Image.open(io.BytesIO(png)).size for png in (normal, large)]
    assert size[1][0] > 1.3 * size[0][0] and size[1][1] > 1.3 * size[0][1]


def test_noise_is_the_relative_standard_error_of_the_variance():
    """q·k at d = 256 is nearly Gaussian (kurtosis 3 + 6/d): SE(var)/var = √((kurtosis − 1)/n) ≈ √(2/n), not √(3/n)."""
    table = variance_table(d_values=[256], n_pairs=20_000)
    assert table["noise"][0] == pytest.approx(math.sqrt(2.02 / 20_000), rel=0.05)


def test_the_upstream_gradient_is_the_same_for_every_d_k():
    np.testing.assert_array_equal(scaling._scores_and_upstream(4, 16, 8, 0)[1],
                                  scaling._scores_and_upstream(64, 16, 8, 0)[1])


def test_a_head_too_large_for_one_draw_is_drawn_a_query_at_a_time():
    assert attention_snapshot(1024, T=2048, n_queries=2)["weights"].shape == (2, 2048)   # T · d_k = 2²¹ > 2²⁰
