"""Answers that used to slip through or crash a checker: each gets a verdict with a reason."""
import math

import numpy as np
import torch

from helpers.exercises import learned_qkv as ex04
from helpers.exercises import luong as ex06
from helpers.exercises import parameter_free as ex03
from helpers.exercises import pytorch_cost as ex07
from helpers.exercises import scaling as ex05
from helpers.exercises import similarity_softmax as ex02
from helpers.exercises import static_embeddings as ex01


def not_yet(feedback, *fragments):
    assert not feedback.passed, feedback.message
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


def test_text_and_complex_answers_are_refused():
    E = ex01.reference_sentence_matrix()
    not_yet(ex01.check_sentence_matrix(E.astype(str)), "holds text")
    not_yet(ex01.check_sentence_matrix(E + 1j), "complex")
    not_yet(ex01.check_river_bank_mixture(ex01.reference_river_bank_mixture() + 1j), "complex")
    not_yet(ex02.check_longer_not_closer(["10", "50"]), "holds text")
    not_yet(ex03.check_flows_row([str(x) for x in ex03.reference_flows_row()]), "holds text")
    not_yet(ex05.check_scaled_weights(lambda Q, K: ex05.reference_scaled_weights(Q, K).astype(str)), "holds text")


def test_an_in_place_edit_of_a_weight_cannot_fool_the_cross_attention_checker():
    def scales_twice(X_dec, X_enc, W_q, W_k, W_v):
        W_q /= math.sqrt(W_q.shape[1])                      # scaled here, and again inside the attention
        return ex06.reference_cross_attention(X_dec, X_enc, W_q, W_k, W_v)

    not_yet(ex06.check_cross_attention(scales_twice))


def test_a_rounded_divisor_is_caught_and_explained():
    not_yet(ex05.check_divisor(lambda m, h: int(math.sqrt(m // h))), "rounded down", "√96")
    assert ex05.check_divisor(ex05.reference_divisor).passed


def test_a_soft_lookup_without_the_max_trick_overflows_and_is_told_so():
    def naive(query, keys, values):
        weights = np.exp(keys @ query)
        return float(weights / weights.sum() @ values)

    not_yet(ex04.check_soft_lookup(naive), "[800, 790, 0]", "subtract the largest score")
    assert ex04.check_soft_lookup(ex04.reference_soft_lookup).passed


def test_tensors_that_require_grad_are_read_not_crashed_on():
    def with_grad(s, H):
        return list(ex06.reference_luong_context(s, H).clone().requires_grad_())

    assert ex06.check_luong_context(with_grad).passed


def test_half_precision_context_is_named():
    not_yet(ex06.check_luong_context(lambda s, H: ex06.reference_luong_context(s, H).half()), "float16")


def test_a_float32_forward_pass_is_right():
    def in_float32(E, W_q, W_k, W_v):
        return ex04.reference_attention_forward(E.float(), W_q.float(), W_k.float(), W_v.float())

    assert ex04.check_attention_forward(in_float32).passed


def test_variance_prediction_given_as_one_pair():
    assert ex05.check_variance_prediction((8, 0.0625)).passed
    not_yet(ex05.check_variance_prediction(8), "give both predictions")


def test_shapes_given_as_tensors_are_read():
    shapes = {name: torch.tensor(shape) for name, shape in ex06.reference_cross_attention_shapes().items()}
    assert ex06.check_cross_attention_shapes(shapes).passed


def test_a_keyword_only_causal_flag_is_fine():
    def keyword_only(B, H, T, d, milliseconds, *, causal=False):
        return ex07.reference_achieved_tflops(B, H, T, d, milliseconds, causal)

    assert ex07.check_achieved_tflops(keyword_only).passed


def test_a_vanishingly_short_v_gets_a_sensible_hint():
    not_yet(ex02.check_longer_not_closer([1e-320, 5e-320]), "so short")
