"""What each checker's draws and fixed cases promise, and the tolerances that tell a slip from rounding: drawn sizes
keep away from the page's, the fixed cases cover the edges their comments name (a single query, a key tile cut
short, the largest score second), and answers rounded by hand, or squeezed, or tailored to the page, are refused."""
import math

import numpy as np
import pytest
import torch
from verdicts import failing

from helpers.attention import attend
from helpers.exercises import flash as ex11
from helpers.exercises import heads_masks as ex09
from helpers.exercises import induction as ex10
from helpers.exercises import learned_qkv as ex04
from helpers.exercises import luong as ex06
from helpers.exercises import parameter_free as ex03
from helpers.exercises import positions as ex08
from helpers.exercises import pytorch_cost as ex07
from helpers.exercises import scaling as ex05
from helpers.exercises import similarity_softmax as ex02
from helpers.exercises import static_embeddings as ex01


# --- parameter_free (notebook 03) ---------------------------------------------------------------------------
def test_drawn_self_attention_inputs_never_have_the_pages_d_4():
    rng = np.random.default_rng(0)
    widths = {ex03._draw_embeddings(rng, pulled=p).args[0].shape[1] for _ in range(100) for p in (False, True)}
    assert 4 not in widths and len(widths) >= 3, widths


def test_the_missing_scale_message_names_d_not_t():
    # 'money bank grows' is (3, 4): √d = √4, while √T would be √3
    failing(ex03.check_self_attention(lambda E: attend(E, E, E, scale=1.0)),
            "on E of 'money bank grows' (3, 4) you forgot to divide the scores by √d (here √4).")


@pytest.mark.parametrize("decimals", [3, 4])
def test_self_attention_rounded_by_hand_is_named(decimals):
    failing(ex03.check_self_attention(lambda E: np.round(ex03.reference_self_attention(E), decimals)),
            f"is rounded to {decimals} decimals")


def test_a_shift_by_each_tokens_own_score_fails_on_a_fixed_case():
    def own_score_shift(E):
        E = np.asarray(E, float)
        S = E @ E.T / np.sqrt(E.shape[1])
        W = np.exp(S - np.diag(S)[:, None])
        return W / W.sum(-1, keepdims=True) @ E
    failing(ex03.check_self_attention(own_score_shift), "on E = [[1, 0], [2000, 0]]", "is not its largest")


# --- learned_qkv (notebook 04) ------------------------------------------------------------------------------
def test_drawn_parameter_counts_vary_both_sizes():
    rng = np.random.default_rng(0)
    d_models, d_ks = zip(*(ex04._draw_sizes(rng).args for _ in range(60)))
    assert len(set(d_models)) > 20 and len(set(d_ks)) > 20 and 64 not in d_ks


def test_drawn_module_cases_include_batches_of_several():
    rng = np.random.default_rng(0)
    batches = {ex04._draw_module(rng).args[0].shape[0] for _ in range(12)}
    assert batches >= {1, 2, 3}, batches


def test_a_lookup_shifted_by_the_first_score_fails_on_a_fixed_case():
    def first_shift(query, keys, values):
        s = keys @ query
        w = np.exp(s - s[0])
        return float(w / w.sum() @ values)
    failing(ex04.check_soft_lookup(first_shift), "on the query [0, 800, 790], the largest score second: you got nan")


# --- scaling (notebook 05) ----------------------------------------------------------------------------------
def test_drawn_head_sizes_are_never_the_pages_32():
    rng = np.random.default_rng(0)
    sizes = {ex05._draw_weights(rng).args[0].shape[1] for _ in range(60)}
    assert 32 not in sizes and len(sizes) >= 3, sizes


def test_weights_that_lost_precision_in_float16_are_refused():
    # float16's rounding (about 2.4e-4 on a weight near 0.5) is beyond what float32 explains (atol32 1e-4)
    failing(ex05.check_scaled_weights(
        lambda Q, K: ex05.reference_scaled_weights(Q, K).astype(np.float16).astype(np.float64)))


def test_drawn_divisor_cases_vary_the_number_of_heads():
    rng = np.random.default_rng(0)
    heads = {h for _ in range(30) for _, h in ex05._draw_divisor_cases(rng)[:2]}
    assert len(heads) > 5, heads


# --- luong (notebook 06) ------------------------------------------------------------------------------------
def test_drawn_luong_cases_are_not_all_the_storys_size():
    rng = np.random.default_rng(0)
    shapes = {tuple(ex06._draw_luong(rng).args[1].shape) for _ in range(30)}
    assert len(shapes) > 5 and shapes != {tuple(ex06.encoder_states().shape)}, shapes


def test_a_spiked_cross_attention_draw_is_judged_at_float32s_tolerance():
    rng = np.random.default_rng(0)
    for _ in range(10):
        case = ex06._draw_cross(rng, spiked=True)
        largest = ex06.reference_cross_attention(*case.args).abs().max().item()
        assert case.atol32 <= 1e-3 * largest + 1e-12


def test_a_scale_by_the_values_width_is_named_on_a_fixed_case():
    def by_d_v(X_dec, X_enc, W_q, W_k, W_v):
        Q, K, V = X_dec @ W_q, X_enc @ W_k, X_enc @ W_v
        return torch.softmax(Q @ K.T / math.sqrt(V.shape[1]), -1) @ V
    feedback = ex06.check_cross_attention(by_d_v)
    failing(feedback, "divided by √d_v")
    assert feedback.message.startswith("the scores were divided by √d_v = √2"), feedback.message   # not a drawn case


# --- pytorch_cost (notebook 07) -----------------------------------------------------------------------------
def test_an_answer_that_memorised_the_fixed_cases_and_fixes_d_k_at_128_fails_on_a_draw():
    fixed = {tuple(case) for case in ex07._TFLOP_CASES}
    def memorised(B, H, T, d_k, milliseconds, causal=False):
        if (B, H, T, d_k, milliseconds, causal) in fixed:
            return ex07.reference_achieved_tflops(B, H, T, d_k, milliseconds, causal)
        return ex07.reference_achieved_tflops(B, H, T, 128, milliseconds, causal)
    failing(ex07.check_achieved_tflops(memorised), "drawn at random")


# --- positions (notebook 08) --------------------------------------------------------------------------------
def test_no_drawn_order_is_its_own_inverse():
    rng = np.random.default_rng(0)
    for _ in range(150):   # T of 3 to 8: an involution comes up in about one draw in six without the guard
        order = ex08._draw_shuffle(rng).args[1]
        assert order != np.argsort(order).tolist(), order


def test_drawn_shuffles_are_not_all_the_pages_length():
    rng = np.random.default_rng(0)
    lengths = {len(ex08._draw_shuffle(rng).args[1]) for _ in range(20)}
    assert len(lengths) >= 3, lengths


# --- heads_masks (notebook 09) ------------------------------------------------------------------------------
def test_a_mask_squeezed_to_one_row_is_refused_for_a_single_query():
    failing(ex09.check_causal_mask(lambda T_q, T_k: ex09.reference_causal_mask(T_q, T_k).squeeze()),
            "the mask for T_q=1, T_k=6 has shape (6,), expected (1, 6)")


def test_a_view_without_the_transpose_is_named():
    failing(ex09.check_split_heads(lambda x, h: x.view(*x.shape[:2], h, -1)),
            "that is (B, T, H, d_k): the view is right; now swap tokens and heads, .transpose(1, 2)")


# --- induction (notebook 10) --------------------------------------------------------------------------------
def test_the_fixed_cases_include_a_perfect_previous_token_head_that_scores_0():
    cases = [case for case in ex10.check_induction_score.cases() if "previous-token head" in case.what]
    assert cases and all(float(ex10.reference_induction_score(*case.args)) == 0.0 for case in cases)


def test_drawn_models_sometimes_have_idle_layers_or_heads():
    rng = np.random.default_rng(0)
    sizes = {tuple(ex10._draw_model(rng).args[0].shape) for _ in range(8)}
    assert sizes - {(2, 2, 2)}, sizes


# --- flash (notebook 11) ------------------------------------------------------------------------------------
def test_drawn_tile_grids_are_not_all_square():
    rng = np.random.default_rng(0)
    for options in ({}, {"tall": True}):
        cases = [ex11._draw_tiles(rng, **options) for _ in range(30)]
        assert any(case.args[0] < case.args[1] for case in cases), options   # fewer queries than keys: bottom-right


def test_the_fixed_tile_grids_include_a_single_query_over_a_partial_last_key_tile():
    assert any(T_q == block_q == 1 and T_k % block_k for T_q, T_k, block_q, block_k in ex11.TILE_CASES)


def _running_then(change):
    def running(stream, d_v):
        m, l, o = ex11.reference_running_softmax(stream, d_v)
        return m, change(l), change(o)
    return running


def test_a_running_softmax_off_in_the_fourth_digit_is_not_called_right_to_5_digits():
    feedback = ex11.check_running_softmax(_running_then(lambda x: x.half().double()))
    failing(feedback, "has the right shape but the wrong values")
    assert "right to 5 digits" not in feedback.message


def test_a_running_softmax_rounded_to_8_decimals_is_refused():
    failing(ex11.check_running_softmax(_running_then(lambda x: torch.round(x, decimals=8))), "not to the 9 compared")


# --- similarity_softmax (notebook 02) -----------------------------------------------------------------------
def test_spiked_softmax_draws_keep_a_float32_sized_tolerance():
    rng = np.random.default_rng(0)
    for _ in range(20):
        case = ex02._draw_scores(rng, spiked=True)
        assert case.atol32 <= 1e-4   # float32 moves these weights by 1.6e-5 at most


# --- static_embeddings (notebook 01) ------------------------------------------------------------------------
def test_a_three_word_matrix_with_words_as_columns_is_named_as_three_words():
    failing(ex01.check_sentence_matrix(ex01.embed("river bank flows").T), "three words: the sentence has 5")
