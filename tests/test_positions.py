"""Notebook 08: positions (helpers.positions), its checkers (helpers.exercises.positions) and its widget."""
import math

import numpy as np
import pytest
import torch
from stored_notebooks import printed, prose
from verdicts import failing, verdict

from helpers.attention_torch import SelfAttention
from helpers.exercises import positions as ex
from helpers.positions import (
    LearnedPositions,
    four_terms,
    frequencies,
    position_snapshot,
    shift_matrix,
    sinusoidal_positions,
)
from helpers.running_example import SENTENCE_MONEY, embed
from helpers.widgets.positions import PositionsWidget, _Picture

# ----------------------------------------------------------------------------- the encoding


def test_encoding_matches_the_formula_entry_by_entry():
    T, d = 9, 6
    PE = sinusoidal_positions(T, d)
    assert PE.shape == (T, d) and PE.dtype == torch.float32
    for p in range(T):
        for i in range(d // 2):
            angle = p / 10000 ** (2 * i / d)
            assert math.isclose(PE[p, 2 * i], math.sin(angle), abs_tol=1e-6)
            assert math.isclose(PE[p, 2 * i + 1], math.cos(angle), abs_tol=1e-6)


def test_wavelengths_run_from_two_pi_toward_ten_thousand_two_pi():
    waves = position_snapshot(3, 512)["wavelengths"]                    # what the widget shows
    assert math.isclose(waves[0], 2 * math.pi)
    assert 2 * math.pi * 9000 < waves[-1] < 2 * math.pi * 10000
    assert np.all(waves[1:] > waves[:-1])
    w = frequencies(512).numpy()
    np.testing.assert_allclose(np.cos(w * waves), 1, atol=1e-9)        # a pair is back where it started after one
    np.testing.assert_allclose(np.cos(w * waves / 2), -1, atol=1e-9)   # wavelength, and not after half of one


def test_a_shift_is_one_rotation_for_every_position():
    PE = sinusoidal_positions(70, 16, dtype=torch.float64)
    for k in (1, 5, 17):
        R = shift_matrix(k, 16)
        torch.testing.assert_close(PE[:-k] @ R, PE[k:], atol=1e-12, rtol=0)
        torch.testing.assert_close(R @ R.T, torch.eye(16, dtype=torch.float64))   # a rotation


@pytest.mark.parametrize("T, d, fragment",
                         [(4, 5, "odd"), (0, 4, "the number of positions"), (3, 2.5, "the embedding dimension")])
def test_bad_sizes_are_named(T, d, fragment):
    with pytest.raises(ValueError, match=fragment):
        sinusoidal_positions(T, d)


def test_learned_positions_stop_at_t_max():
    torch.manual_seed(0)
    table = LearnedPositions(T_max=8, d=4)
    assert table(8).shape == (8, 4)
    assert sum(p.numel() for p in table.parameters()) == 8 * 4
    with pytest.raises(ValueError, match="position 9"):
        table(10)
    for bad in (0, -1, 3.0):
        with pytest.raises(ValueError, match="T .the number of positions. should be a whole number"):
            table(bad)


def test_the_four_terms_sum_to_the_whole():
    E = torch.tensor(embed("money bank grows"))
    P = sinusoidal_positions(3, 4, dtype=torch.float64)
    terms = four_terms(E, P)
    torch.testing.assert_close(sum(terms.values()), (E + P) @ (E + P).T)
    torch.testing.assert_close(terms["content-position"], terms["position-content"].T)
    assert terms["content-position"][0, 2] == E[0] @ P[2]                # word 0 against position 2, by its name

# ----------------------------------------------------------------------------- word order


def test_without_positions_a_shuffle_only_reorders_the_outputs():
    torch.manual_seed(1)
    attention = SelfAttention(4, 4).double()
    E = torch.tensor(embed("money bank grows"))
    order = [2, 1, 0]                                         # grows bank money
    with torch.no_grad():
        Y, Y_shuffled = attention(E[None])[0], attention(E[order][None])[0]
        torch.testing.assert_close(Y_shuffled, Y[order], atol=1e-12, rtol=0)
        P = sinusoidal_positions(3, 4, dtype=torch.float64)
        Z, Z_shuffled = attention((E + P)[None])[0], attention((E[order] + P)[None])[0]
    assert torch.linalg.vector_norm(Z[1] - Z_shuffled[1]) > 1e-3   # bank tells the orders apart


# ----------------------------------------------------------------------------- the widget's data


def test_position_snapshot_peaks_at_p_and_depends_on_the_offset_only():
    a, b = position_snapshot(10, 16), position_snapshot(20, 16)
    assert a["PE"].shape == (48, 16) and a["similarity"].shape == (48,)
    assert a["self"] == pytest.approx(8.0) and int(np.argmax(a["similarity"])) == 10
    assert a["nearest"] == [9, 11]
    np.testing.assert_allclose(a["similarity"][5:30], b["similarity"][15:40], atol=1e-12)
    low, high = a["range"]
    assert low <= a["similarity"].min() and high == pytest.approx(8.0)


def test_widget_follows_its_sliders():
    w = PositionsWidget(p=3, d=8)
    assert w.result["p"] == 3 and w.result["d"] == 8
    w.p.value = 30
    w.d.value = 64
    assert w.result["p"] == 30 and w.result["PE"].shape == (48, 64)
    assert "30" in w.reading.value and w.picture.value[:4] == b"\x89PNG"


def test_the_picture_after_moving_d_back_and_forth_is_the_one_drawn_afresh():
    """One background is kept per d: returning to a d blits over that d's background, not the last one drawn."""
    w = PositionsWidget(p=5, d=16)
    for d, p in ((64, 7), (4, 2), (16, 9), (64, 30)):
        w.d.value, w.p.value = d, p
        drawn_once = _Picture(48).png(position_snapshot(p, d))   # a new figure: its first picture is drawn whole
        assert w.picture.value == drawn_once, (d, p)


# ----------------------------------------------------------------------------- the checkers


def _pe(T, d, *, swap=False, exponent=lambda i, d: 2 * i / d, p0=0, numpy=False):
    p = np.arange(p0, p0 + T)[:, None]
    i = np.arange(d // 2)
    angle = p / 10000 ** exponent(i, d)
    PE = np.zeros((T, d))
    PE[:, 0::2], PE[:, 1::2] = (np.cos(angle), np.sin(angle)) if swap else (np.sin(angle), np.cos(angle))
    return PE


def _pe_by_column(T, d, factor=2):
    """Slips of a loop over the columns j: 10000^(2j/d) (j used as i) or 10000^(j/d) (sin and cos apart)."""
    PE = np.zeros((T, d))
    for p in range(T):
        for j in range(d):
            angle = p / 10000 ** (factor * j / d)
            PE[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return PE


def test_sinusoidal_checker_passes_right_answers_in_numpy_and_torch():
    assert verdict(ex.check_sinusoidal(ex.reference_sinusoidal))[0]
    assert verdict(ex.check_sinusoidal(_pe))[0]
    assert verdict(ex.check_sinusoidal(lambda T, d: sinusoidal_positions(T, d)))[0]   # float32 is fine


def test_sinusoidal_checker_names_the_slips():
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d, swap=True)), "swapped")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d, exponent=lambda i, d: i / d)), "m instead of 2m")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d, p0=1)), "start at 1")
    failing(ex.check_sinusoidal(_pe_by_column), "column index c")
    failing(ex.check_sinusoidal(lambda T, d: _pe_by_column(T, d, factor=1)), "share one frequency")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d, exponent=lambda i, d: -2 * i / d)), "multiplied p")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d, exponent=lambda i, d: 4 * i / d)), "range(0, d, 2) gives i = 2m")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d).T), "transpose")
    failing(ex.check_sinusoidal(lambda d, T: _pe(T, d)), "parameters in the order (d, T)? The call is sinusoidal(T, d)")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d)[:, ::2]), "one column per pair")
    failing(ex.check_sinusoidal(lambda T, d: np.concatenate([_pe(T, d)[:, 0::2], _pe(T, d)[:, 1::2]], 1)),
            "all the sines come first")
    failing(ex.check_sinusoidal(lambda T, d: _pe(T, d) + 0.1), "wrong values")
    failing(ex.check_sinusoidal(lambda T, d: None), "None")
    failing(ex.check_sinusoidal(_pe(6, 4)), "expected a function")


def _pe_without_the_column(T, d):   # positions (T,) against frequencies (d / 2,): NumPy cannot broadcast them
    return _pe(T, d, exponent=lambda i, d: 2 * i[:, None] / d)


@pytest.mark.parametrize("answer", [_pe_without_the_column,   # and d angles, np.arange(d), for the d / 2 columns:
                                    lambda T, d: _pe(T, d, exponent=lambda i, d: 2 * np.arange(d) / d)])
def test_a_broadcast_error_from_an_answer_given_only_sizes_gets_the_shapes_to_build(answer):
    failing(ex.check_sinusoidal(answer), "raised ValueError", "as a column (T, 1)", "(T, d / 2) angles")


def test_shuffled_outputs_checker():
    assert verdict(ex.check_shuffled_outputs(ex.reference_shuffled_outputs))[0]
    assert verdict(ex.check_shuffled_outputs(lambda Y, order: Y.numpy()[order]))[0]
    failing(ex.check_shuffled_outputs(lambda Y, order: Y), "unchanged")
    failing(ex.check_shuffled_outputs(lambda Y, order: Y[torch.argsort(torch.tensor(order))]), "inverse shuffle")
    failing(ex.check_shuffled_outputs(lambda Y, order: Y[:, order]), "columns")
    failing(ex.check_shuffled_outputs(lambda Y, order: Y[order][:, :2]), "shape")

    def sorts_the_callers_order(Y, order):
        rows = Y[list(order)]
        order.sort()
        return rows
    failing(ex.check_shuffled_outputs(sorts_the_callers_order), "changed its argument order in place", "sorted(order)")


def test_add_positions_checker():
    assert verdict(ex.check_add_positions(ex.reference_add_positions))[0]
    failing(ex.check_add_positions(lambda E: E), "not added")
    failing(ex.check_add_positions(lambda E: torch.cat([E, sinusoidal_positions(*E.shape).double()], 1)),
            "concatenated")
    failing(ex.check_add_positions(lambda E: sinusoidal_positions(*E.shape)), "words are gone")
    failing(ex.check_add_positions(lambda E: E * sinusoidal_positions(*E.shape).double()), "multiplied")
    failing(ex.check_add_positions(lambda E: E + sinusoidal_positions(*E.shape).double()[0]), "position 0")
    failing(ex.check_add_positions(lambda E: E * math.sqrt(E.shape[1]) + sinusoidal_positions(*E.shape).double()),
            "scaled E by √d")
    failing(ex.check_add_positions(lambda E: E + sinusoidal_positions(len(E) + 1, E.shape[1]).double()[1:]),
            "start at 1")
    message = verdict(ex.check_add_positions(lambda E: E + sinusoidal_positions(E.shape[1], len(E)).double()))[1]
    assert "(it was given E (" in message and "sinusoidal_positions(T, d), with E's own T (its rows" in message
    failing(ex.check_add_positions(lambda E: E + 1), "wrong values")
    failing(ex.check_add_positions(lambda E: E + sinusoidal_positions(E.shape[1], E.shape[0]).double()),
            "sinusoidal_positions(T, d), with E's own T (its rows")


def test_an_answer_that_hard_codes_the_pages_order_fails_on_a_drawn_order():
    feedback = ex.check_shuffled_outputs(lambda Y, order: Y[[2, 0, 3, 4, 1]])
    assert not feedback.passed and "drawn at random" in feedback.message
    assert "order = [2, 0, 3, 4, 1]" not in feedback.message    # the page's own order passes; a drawn one does not


@pytest.mark.parametrize("d", [16, 32, 64, 128])
def test_from_d_16_on_the_nearest_positions_are_the_neighbours_then_the_curve_wiggles(d):
    """What notebook 08 says of its widget, for every d ≥ 16 the widget offers (T = 48)."""
    for p in range(1, 47):
        assert position_snapshot(p, d)["nearest"] == [p - 1, p + 1]
    s = position_snapshot(0, d)["similarity"]                             # similarity at offsets 0 … 47
    assert np.all(np.diff(s[:4]) < 0)                                      # it falls over the first offsets ...
    assert np.any(np.diff(s) > 0)                                          # ... and not all the way: it wiggles


def test_below_d_16_the_neighbours_are_not_the_nearest():
    assert position_snapshot(10, 8)["nearest"] == [4, 16]                 # six apart: 2π ≈ 6.3
    assert min(abs(q - 10) for q in position_snapshot(10, 4)["nearest"]) > 10   # a far position


def test_a_table_capped_at_a_printed_length_is_refused():
    def capped(T, d, max_len=64):
        return sinusoidal_positions(max_len, d)[:T]
    failing(ex.check_sinusoidal(capped), "T = 100, d = 8", "shape (64, 8)")


def test_the_right_rows_in_float32_are_right():
    def shuffled_outputs(Y, order):
        out = torch.zeros(Y.shape)                              # float32, Y is float64
        for i, j in enumerate(order):
            out[i] = Y[j]
        return out
    assert verdict(ex.check_shuffled_outputs(shuffled_outputs))[0]


def test_the_encoding_in_float32_passes_every_time():
    def in_float32(T, d, dtype=torch.float32):
        angles = torch.arange(T)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)   # float32, torch's default
        PE = torch.zeros(T, d, dtype=dtype)
        PE[:, 0::2], PE[:, 1::2] = torch.sin(angles), torch.cos(angles)
        return PE
    for _ in range(30):
        assert verdict(ex.check_sinusoidal(in_float32))[0]
        assert verdict(ex.check_sinusoidal(lambda T, d: in_float32(T, d, torch.float64)))[0]   # float32's numbers


def test_float32_angles_with_float64_sines_pass_at_the_longest_drawn_length():
    """Angles rounded to float32, sines taken in float64: off by 1.1e-5 at T = 400, as all in float32, and right."""
    def mixed(T, d):
        angles = (torch.arange(T)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)).double()
        PE = torch.zeros(T, d, dtype=torch.float64)
        PE[:, 0::2], PE[:, 1::2] = torch.sin(angles), torch.cos(angles)
        return PE
    worst = max((mixed(400, d) - ex.reference_sinusoidal(400, d)).abs().max().item() for d in (2, 6, 8, 12, 20))
    assert ex.check_sinusoidal.atol < worst < ex.check_sinusoidal.atol32
    for _ in range(10):
        assert verdict(ex.check_sinusoidal(mixed))[0]


def test_a_table_cut_at_the_longest_printed_length_fails_every_time():
    def capped(T, d, longest=100):
        return ex.reference_sinusoidal(min(T, longest), d)
    for _ in range(10):
        failing(ex.check_sinusoidal(capped), "T = 300, d = 10", "(100, 10)")
        failing(ex.check_sinusoidal(lambda T, d: capped(T, d, longest=300)), "(drawn at random)", "shape (300, ")


def test_learned_positions_refuse_exactly_one_position_too_many():
    """T = T_max + 1 gets the named error, not nn.Embedding's IndexError."""
    with pytest.raises(ValueError, match="position 8"):
        LearnedPositions(T_max=8, d=4)(9)


def test_position_snapshot_nearest_value_is_the_nearest_other_position_not_p_itself():
    for p, d in ((10, 16), (10, 8), (30, 64)):
        a = position_snapshot(p, d)
        assert a["nearest_value"] == pytest.approx(a["similarity"][a["nearest"][0]]) and a["nearest_value"] < a["self"]


def test_notebook_08_quotes_how_far_the_seed_moves_bank():
    """Section 5: bank's two outputs, with positions, in "money bank grows" and "grows bank money", one untrained
    SelfAttention(4, 4) per seed as section 1 makes it; seed 0 is the page's own run."""
    E, order, P = torch.tensor(embed(SENTENCE_MONEY)), [2, 1, 0], sinusoidal_positions(3, 4, dtype=torch.float64)
    distances = []
    for seed in range(20):
        torch.manual_seed(seed)
        attention = SelfAttention(d_model=4, d_k=4).double()
        with torch.no_grad():
            Z, Z_shuffled = attention((E + P)[None])[0], attention((E[order] + P)[None])[0]
        distances.append(torch.linalg.vector_norm(Z[1] - Z_shuffled[1]).item())
    assert f"distance between the two y_bank: {distances[0]:.4f}" in printed("08")
    assert f"seeds 0 to 19 give distances from {min(distances):.3f} to {max(distances):.2f}" in prose("08")
    assert f"seeds 0 to 19: distances from {min(distances):.3f} (seed" in printed("08")   # the cell below it
