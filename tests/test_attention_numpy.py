"""helpers.attention (NumPy attention, loop and matrix forms) and helpers.attention_plots."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from helpers.attention import (  # noqa: E402
    attend,
    attend_loops,
    attend_rows,
    self_attention,
    self_attention_steps,
)
from helpers.attention_plots import (  # noqa: E402
    convex_hull,
    gravity_plot,
    inside_hull,
    labelled_table,
    timing_plot,
)
from helpers.attention_torch import scaled_dot_product_attention  # noqa: E402
from helpers.running_example import embed  # noqa: E402

E_MONEY = embed("money bank grows")
E_RIVER = embed("river bank flows")


# --- the worked example of notebook 03: every number ------------------------------------------------

def test_worked_example_numbers():
    steps = self_attention_steps(E_MONEY)
    np.testing.assert_array_equal(steps["S"], [[2, 1, 1], [1, 2, 1], [1, 1, 3]])
    assert steps["scale"] == 0.5
    np.testing.assert_allclose(steps["S_scaled"], [[1.0, 0.5, 0.5], [0.5, 1.0, 0.5], [0.5, 0.5, 1.5]])
    np.testing.assert_allclose(steps["exp"][1], [1.6487, 2.7183, 1.6487], atol=5e-5)
    np.testing.assert_allclose(steps["exp_sum"][1], 6.0157, atol=5e-5)
    np.testing.assert_allclose(steps["W"], [[0.4519, 0.2741, 0.2741],
                                            [0.2741, 0.4519, 0.2741],
                                            [0.2119, 0.2119, 0.5761]], atol=5e-5)
    np.testing.assert_allclose(steps["Y"], [[0.7259, 0.5481, 0.7259, 0.2741],
                                            [0.7259, 0.7259, 0.5481, 0.2741],
                                            [0.4239, 0.7881, 0.7881, 0.5761]], atol=5e-5)


def test_cosine_bank_money_before_and_after():
    Y = self_attention(E_MONEY)
    cos = lambda a, b: a @ b / (np.linalg.norm(a) * np.linalg.norm(b))  # noqa: E731
    assert cos(E_MONEY[1], E_MONEY[0]) == pytest.approx(0.5)
    assert cos(Y[1], Y[0]) == pytest.approx(0.9779, abs=5e-5)


def test_river_sentence_same_bank_row_different_output():
    a, b = self_attention_steps(E_MONEY), self_attention_steps(E_RIVER)
    np.testing.assert_allclose(a["W"][1], b["W"][1])
    np.testing.assert_allclose(b["Y"][1], [0.4519, 1.0, 0.0, 0.8222], atol=5e-5)
    assert b["W"][0].argmax() == 2   # river attends most to flows, not itself


def test_unscaled_steps():
    steps = self_attention_steps(E_MONEY, scaled=False)
    assert steps["scale"] == 1.0
    np.testing.assert_allclose(steps["S_scaled"], steps["S"])
    np.testing.assert_allclose(steps["W"][2], np.exp([1, 1, 3]) / np.exp([1, 1, 3]).sum())


# --- loop form ≡ row form ≡ matrix form ≡ PyTorch ---------------------------------------------------

@pytest.mark.parametrize("shape_q, shape_k, d_v", [((3, 4), (3, 4), 4), ((5, 3), (7, 3), 2), ((1, 6), (4, 6), 6)])
@pytest.mark.parametrize("scale", [None, 1.0, 0.1])
def test_loop_row_matrix_forms_agree(shape_q, shape_k, d_v, scale):
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=shape_q), rng.normal(size=shape_k)
    V = rng.normal(size=(shape_k[0], d_v))
    Y = attend(Q, K, V, scale=scale)
    assert Y.shape == (shape_q[0], d_v)
    np.testing.assert_allclose(attend_loops(Q, K, V, scale=scale), Y, atol=1e-12)
    np.testing.assert_allclose(attend_rows(Q, K, V, scale=scale), Y, atol=1e-12)


def test_attend_rows_fills_every_row_with_its_hand_computed_mixture():
    """Scores [0, 0] weigh the values 1/2, 1/2; scores [ln 3, 0] weigh them 3/4, 1/4. Worked by hand, as np.empty
    may hand back a buffer that already holds the answer from an earlier call."""
    Q, K, V = [[0.0, 0.0], [math.log(3), 0.0]], np.eye(2), [[4.0, 0.0], [0.0, 8.0]]
    np.testing.assert_allclose(attend_rows(Q, K, V, scale=1.0), [[2.0, 4.0], [3.0, 2.0]], atol=1e-12)


def test_matrix_form_matches_torch_and_explicit_formula():
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
    torch_y = scaled_dot_product_attention(torch.tensor(Q), torch.tensor(K), torch.tensor(V)).numpy()
    np.testing.assert_allclose(attend(Q, K, V), torch_y, atol=1e-12)
    torch_f = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(Q), torch.tensor(K), torch.tensor(V), scale=0.3).numpy()
    np.testing.assert_allclose(attend(Q, K, V, scale=0.3), torch_f, atol=1e-12)
    S = Q @ K.T / math.sqrt(8)
    W = np.exp(S) / np.exp(S).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(attend(Q, K, V), W @ V, atol=1e-12)


def test_self_attention_is_attend_with_e_three_times():
    np.testing.assert_allclose(self_attention(E_MONEY), attend(E_MONEY, E_MONEY, E_MONEY))
    np.testing.assert_allclose(self_attention(E_MONEY, scaled=False), attend(E_MONEY, E_MONEY, E_MONEY, scale=1.0))


def test_scale_zero_gives_plain_average():
    np.testing.assert_allclose(attend(E_MONEY, E_MONEY, E_MONEY, scale=0.0), np.tile(E_MONEY.mean(0), (3, 1)))


def test_large_scores_do_not_overflow():
    E = 100.0 * E_MONEY       # scores up to 30,000
    for form in (attend, attend_rows, attend_loops):
        Y = form(E, E, E)
        assert np.isfinite(Y).all()
        np.testing.assert_allclose(Y, E, atol=1e-9)   # each token takes (almost) all of itself


def test_rows_sum_to_one_and_inputs_not_modified():
    rng = np.random.default_rng(2)
    Q = rng.normal(size=(5, 3))
    before = Q.copy()
    W = self_attention_steps(Q)["W"]
    np.testing.assert_allclose(W.sum(axis=1), 1.0)
    assert (W > 0).all()
    attend(Q, Q, Q)
    np.testing.assert_array_equal(Q, before)


def test_accepts_lists_and_torch_tensors():
    Y = attend(E_MONEY.tolist(), torch.tensor(E_MONEY), E_MONEY)
    np.testing.assert_allclose(Y, self_attention(E_MONEY))


# --- bad input gets a clear message ----------------------------------------------------------------

def test_d_k_mismatch():
    with pytest.raises(ValueError, match=r"Q has d_k=4 but K has d_k=3"):
        attend(np.ones((2, 4)), np.ones((2, 3)), np.ones((2, 3)))


def test_t_k_mismatch():
    with pytest.raises(ValueError, match=r"K has T_k=3 keys but V has 2 values"):
        attend(np.ones((2, 4)), np.ones((3, 4)), np.ones((2, 4)))


def test_wrong_ndim_and_nan():
    with pytest.raises(ValueError, match=r"Q should be 2-D with shape \(T_q, d_k\)"):
        attend(np.ones(4), np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"K contains nan"):
        attend(np.ones((2, 2)), np.array([[1.0, np.nan]]), np.ones((1, 2)))
    with pytest.raises(TypeError, match=r"V should be numbers"):
        attend(np.ones((2, 2)), np.ones((2, 2)), "values")


# --- geometry and pictures -------------------------------------------------------------------------

def test_convex_hull_of_a_square_with_inner_and_duplicate_points():
    P = [[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [1, 1], [0.5, 0]]
    hull = convex_hull(P)
    np.testing.assert_allclose(hull, [[0, 0], [1, 0], [1, 1], [0, 1]])   # counter-clockwise, no collinear points


def test_convex_hull_degenerate_cases():
    np.testing.assert_array_equal(convex_hull([[1, 2], [1, 2]]), [[1, 2]])
    np.testing.assert_array_equal(convex_hull([[0, 0], [1, 1], [2, 2]]), [[0, 0], [2, 2]])   # the two ends


def test_inside_hull():
    hull = convex_hull([[0, 0], [2, 0], [0, 2]])
    np.testing.assert_array_equal(inside_hull([[0.5, 0.5], [1, 1], [2, 2], [-0.1, 0]], hull),
                                  [True, True, False, False])


def test_outputs_inside_hull_of_inputs_in_any_projection():
    rng = np.random.default_rng(4)
    E = rng.normal(size=(5, 6))
    Y = self_attention(E)
    basis = np.linalg.qr(rng.normal(size=(6, 2)))[0]
    assert inside_hull(Y @ basis, convex_hull(E @ basis)).all()


def test_labelled_table():
    text = labelled_table([[2, 1], [1, 3]], ["money", "bank"], ["money", "bank"], fmt="{:.0f}")
    assert text.splitlines() == ["       money   bank", "money      2      1", "bank       1      3"]


def test_gravity_and_timing_plots_draw():
    steps = self_attention_steps(E_MONEY)
    ax = gravity_plot(steps["E"], steps["Y"], ["money", "bank", "grows"], title="t")
    assert len(ax.collections) >= 2 and ax.get_title() == "t"
    plane = np.linalg.qr((E_MONEY - E_MONEY.mean(0)).T)[0][:, :2]       # the plane of the triangle
    ax = gravity_plot(steps["E"], steps["Y"], ["money", "bank", "grows"], basis=plane, start_label=None)
    assert len(ax.patches) == 1                                          # the hull is filled
    assert ax.get_legend_handles_labels()[1] == ["contextual y"]        # start_label=None: left out
    pictured = steps["E"] @ plane                                        # (3, 2) the words' positions
    top, span = pictured[:, 1].max(), np.ptp(pictured[:, 1])
    assert ax.get_ylim()[1] >= top + 0.1 * span                          # room for the labels under the title
    words = [t for t in ax.texts if t.get_text()]                        # the arrows are annotations without text
    for label, (x, y) in zip(words, pictured):                           # above a point in the upper half, else below
        assert label.xy == (x, y) and label.get_va() == ("bottom" if y >= pictured[:, 1].mean() else "top")
        assert np.sign(label.xyann[1]) == (1 if label.get_va() == "bottom" else -1)
    gravity_plot(steps["E"], steps["Y"], ["money", "bank", "grows"], basis=plane, ax=ax)   # the same points again
    assert [t.get_text() for t in ax.texts if t.get_text()] == ["money", "bank", "grows"]   # labelled once
    gravity_plot(steps["E"], steps["Y"], ["money", "bank", "grows"], basis=plane, ax=ax, end_marker="s")
    diamond, square = (ax.collections[k].get_paths()[0].vertices for k in (1, -1))   # the ends: first, last call
    assert not np.array_equal(diamond, square)                                         # told apart by shape too
    ax = timing_plot({"matrix": ([16, 64], [1e-4, 1e-3]), "loops": ([16, 64], [1e-2, 1e-1])})
    assert ax.get_xscale() == "log" and [line.get_marker() for line in ax.lines] == ["o", "s"]   # not colour alone
    plt.close("all")


def test_attend_rows_gives_attends_float64_numbers():
    Q, K, V = np.random.default_rng(0).standard_normal((3, 5, 4))
    Y = attend_rows(Q, K, V)
    assert Y.dtype == np.float64
    np.testing.assert_allclose(Y, attend(Q, K, V), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("residual", [False, True])
def test_repeated_passes_close_the_tokens_in_relative_to_their_length(residual):
    """Notebook 03's experiment: without the residual the distances vanish; with it they stop shrinking while the
    lengths about double every pass, so distance over length still falls (the residual is only part of the cure)."""
    Z, spreads, lengths = embed("money bank grows"), [], []
    for _ in range(6):
        spreads.append(max(np.linalg.norm(a - b) for a in Z for b in Z))
        lengths.append(np.linalg.norm(Z, axis=1).mean())
        Z = Z + self_attention(Z) if residual else self_attention(Z)
    ratio = np.array(spreads) / np.array(lengths)
    assert (np.diff(ratio) < 0).all() and ratio[-1] < 0.15 * ratio[0]
    if residual:
        assert (np.diff(spreads) >= 0).all() and all(1.7 < b / a < 2.2 for a, b in zip(lengths[1:], lengths[2:]))
    else:
        assert spreads[-1] < 1e-4
