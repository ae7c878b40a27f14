"""Checkers of notebooks 06 and 07: the reference passes, each typical mistake gets its own message."""
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from verdicts import failing

from helpers import cost
from helpers.attention_torch import attention_weights, causal_mask
from helpers.attention_torch import scaled_dot_product_attention as sdpa
from helpers.exercises import luong as ex06
from helpers.exercises import pytorch_cost as ex07
from helpers.exercises.engine import Case, Feedback, Solution


def verdict(feedback, passed, *fragments):
    assert isinstance(feedback, Feedback)
    assert feedback.passed is passed, repr(feedback)
    for fragment in fragments:
        assert fragment in feedback.message, repr(feedback)


# ---------------------------------------------------------------- 06 · exercise 1: Luong's context

def test_luong_context_reference_and_numpy_answers_pass():
    verdict(ex06.check_luong_context(ex06.reference_luong_context), True, "Luong's three steps")

    def numpy_version(s, H):
        s, H = s.numpy(), H.numpy()
        e = np.exp(H @ s - (H @ s).max())
        return (e / e.sum()) @ H

    verdict(ex06.check_luong_context(numpy_version), True)

    def without_the_max(s, H):                                    # notebook 02's overflow: refused on a drawn case
        e = torch.exp(H @ s)
        return (e / e.sum()) @ H
    verdict(ex06.check_luong_context(without_the_max), False, "scores near 1,000 and 997", "NaN or infinity")

    def shifted_only_past_float64s_limit(s, H):                   # exp(700) is finite in float64, not in float32
        scores = H @ s
        e = torch.exp(scores - scores.max() if scores.max() > 700 else scores)
        return (e / e.sum()) @ H
    for _ in range(5):
        verdict(ex06.check_luong_context(shifted_only_past_float64s_limit), False, "float32, drawn at random",
                "NaN or infinity")


@pytest.mark.parametrize("answer, fragment", [
    (lambda s, H: torch.softmax(H @ s, 0), "returned the attention weights"),
    (lambda s, H: H @ s, "returned the scores"),
    (lambda s, H: (H @ s) @ H, "forgot the softmax"),
    (lambda s, H: ((H @ s) / (H @ s).sum()) @ H, "divided the scores by their sum"),
    (lambda s, H: torch.softmax(H @ s / math.sqrt(H.shape[1]), 0) @ H, "Transformer's addition"),
    (lambda s, H: H.mean(0), "plain average"),
    (lambda s, H: H[(H @ s).argmax()], "a single h_j"),
    (lambda s, H: torch.softmax(H @ s, 0)[:, None] * H, "expected ("),
    (lambda s, H: torch.softmax(H @ s, 0) @ H + 1, "wrong values"),
    (lambda s, H: None, "None"),
])
def test_luong_context_mistakes(answer, fragment):
    verdict(ex06.check_luong_context(answer), False, fragment)


@pytest.mark.parametrize("answer, right, shape", [
    (lambda s, H: torch.softmax(s[None] @ H.T, dim=-1) @ H, True, "(1, 4)"),   # s as a (1, d) row
    (lambda s, H: (torch.softmax(H @ s, 0) @ H)[:, None], True, "(4, 1)"),
    (lambda s, H: torch.softmax(s[None] @ H.T, -1) @ H * 2, False, "(1, 4)"),
])
def test_luong_context_an_extra_axis_is_named(answer, right, shape):
    feedback = ex06.check_luong_context(answer)
    verdict(feedback, False, f"shape {shape}", "extra axis of size 1", "shape (4,)")
    assert "context = weights @ H" not in feedback.message                    # not a hint about the order of @
    assert ("the numbers are right" in feedback.message) is right


def test_luong_context_an_ignored_argument_names_both_cases():
    first = ex06.reference_luong_context(*ex06._luong_cases()[0].args)   # the 'paisa' step's context, every time
    assert ex06.check_luong_context(lambda s, H: first).message.startswith(
        "on the story's 'badhta' step: your function returned what it returned on the story's 'paisa' step")


def test_luong_context_wrong_type_and_unsolved():
    verdict(ex06.check_luong_context(ex06.reference_luong_context(*ex06._luong_cases()[0].args)),
            False, "expected a function")

    def unsolved(s, H):
        raise NotImplementedError

    verdict(ex06.check_luong_context(unsolved), False, "NotImplementedError")
    verdict(ex06.check_luong_context(lambda s, H: "context"), False, "should be numbers")


# ---------------------------------------------------------------- 06 · exercise 2: shapes

def test_shapes_reference_passes():
    verdict(ex06.check_cross_attention_shapes(ex06.reference_cross_attention_shapes()), True, "W (5, 7)")
    as_lists = {k: list(v) for k, v in ex06.reference_cross_attention_shapes().items()}
    verdict(ex06.check_cross_attention_shapes(as_lists), True)


@pytest.mark.parametrize("change, fragment", [
    ({"W": (7, 5)}, "axes swapped"),
    ({"K": (5, 64)}, "come from the encoder"),
    ({"V": (5, 64)}, "come from the encoder"),
    ({"Q": (7, 64)}, "belong to the decoder"),
    ({"Y": (7, 64)}, "belong to the decoder"),
    ({"Q": (5, 512)}, "d_k = 64, not d_model = 512"),
    ({"V": (7, 512)}, "d_v = 64, not d_model = 512"),
    ({"W": (512, 64)}, "one row per query and one column per key"),
    ({"W": (5, 5)}, "that would be self-attention"),
    ({"W": (7, 7)}, "that would be self-attention"),
    ({"Y": (5, 7)}, "that is the shape of the weights W"),
    ({"Y": (5, 32)}, "Count again"),
    ({"K": (3, 64)}, "one key per token of the sequence being looked at"),
    ({"Q": "5 by 64"}, "tuple of two whole numbers"),
    ({"Q": (5.7, 64)}, "5.7 is not a whole number"),
    ({"Q": (5, 64, 1)}, "it has 3 numbers"),
    ({"Q": (True, 64)}, "truth value"),
    ({"Q": 5}, "is not a tuple"),
])
def test_shapes_mistakes(change, fragment):
    answer = {**ex06.reference_cross_attention_shapes(), **change}
    verdict(ex06.check_cross_attention_shapes(answer), False, fragment)


@pytest.mark.parametrize("change", [{"Q": (5, 32)}, {"K": (3, 64)}, {"V": (7, 16)}, {"W": (2, 7)}, {"Y": (5, 32)},
                                    {"W": (7, 5)}, {"Q": (64, 5)}])
def test_shapes_feedback_does_not_give_the_answer_away(change):
    answer = {**ex06.reference_cross_attention_shapes(), **change}
    feedback = ex06.check_cross_attention_shapes(answer)
    name = next(iter(change))
    expected = ex06.reference_cross_attention_shapes()[name]
    assert not feedback.passed
    a, b = expected                                               # (5, 64), [5, 64], 5×64, 5 by 64: any spelling
    assert not re.search(rf"\b{a}\D{{1,6}}{b}\b", feedback.message), feedback.message


def test_shapes_accept_whole_numbers_of_any_kind():
    answer = {"Q": torch.Size([5, 64]), "K": (np.int64(7), 64), "V": (7.0, 64), "W": [5, 7], "Y": np.array([5, 64])}
    verdict(ex06.check_cross_attention_shapes(answer), True)


def test_shapes_wrong_type_and_missing_keys():
    verdict(ex06.check_cross_attention_shapes(None), False, "shapes is None")
    verdict(ex06.check_cross_attention_shapes([(5, 64)]), False, "expected a dict")
    verdict(ex06.check_cross_attention_shapes({"Q": (5, 64)}), False, "missing K, V, W, Y")
    lower = {k.lower(): v for k, v in ex06.reference_cross_attention_shapes().items()}
    verdict(ex06.check_cross_attention_shapes(lower), False, "upper case", "not 'q', 'k'")


# ---------------------------------------------------------------- 06 · exercise 3: cross-attention

def test_cross_attention_reference_passes():
    verdict(ex06.check_cross_attention(ex06.reference_cross_attention), True, "one function")


@pytest.mark.parametrize("answer, fragment", [
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xe @ Wq, Xd @ Wk, Xd @ Wv), "one per encoder token"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd @ Wq, Xd @ Wk, Xd @ Wv), "self-attention over the decoder"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd @ Wq, Xe @ Wv, Xe @ Wk), "W_k and W_v are swapped"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd, Xe, Xe), "no projections were applied"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd @ Wq, Xe @ Wk, Xe), "values are the raw encoder states"),
    (lambda Xd, Xe, Wq, Wk, Wv: torch.softmax((Xd @ Wq) @ (Xe @ Wk).T, -1) @ (Xe @ Wv), "1/√d_k scale is missing"),
    (lambda Xd, Xe, Wq, Wk, Wv: torch.softmax((Xd @ Wq) @ (Xe @ Wk).T / Wq.shape[1], -1) @ (Xe @ Wv),
     "divided by d_k"),
    (lambda Xd, Xe, Wq, Wk, Wv: torch.softmax((Xd @ Wq) @ (Xe @ Wk).T * math.sqrt(Wq.shape[1]), -1) @ (Xe @ Wv),
     "multiplied by √d_k"),
    (lambda Xd, Xe, Wq, Wk, Wv: torch.softmax((Xd @ Wq) @ (Xe @ Wk).T / math.sqrt(Xd.shape[1]), -1) @ (Xe @ Wv),
     "square root of the input width"),
    (lambda Xd, Xe, Wq, Wk, Wv: torch.softmax((Xd @ Wq) @ (Xe @ Wk).T / math.sqrt(Wq.shape[1]), 0) @ (Xe @ Wv),
     "wrong axis"),
    (lambda Xd, Xe, Wq, Wk, Wv: ((Xd @ Wq) @ (Xe @ Wk).T / math.sqrt(Wq.shape[1])) @ (Xe @ Wv),
     "softmax is missing"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd @ Wq.T, Xe @ Wk.T, Xe @ Wv.T), "projections were transposed"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd @ Wq.T, Xe @ Wk, Xe @ Wv), "W_q was transposed"),
    (lambda Xd, Xe, Wq, Wk, Wv: sdpa(Xd @ Wq, Xe @ Wk, Xe @ Wv) + 0.5, "wrong values"),
    (lambda Xd, Xe, Wq, Wk, Wv: (Xd @ Wq)[:, :2], "has shape"),
    (lambda Xd, Xe, Wq, Wk, Wv: torch.softmax((Xd @ Wq) @ (Xe @ Wk).T / math.sqrt(Wq.shape[1]), -1),
     "you returned the weights W, (2, 3): one column per encoder token. Finish with Y = W @ V"),
])
def test_cross_attention_mistakes(answer, fragment):
    verdict(ex06.check_cross_attention(answer), False, fragment)


def test_cross_attention_other_matrices_of_the_weights_shape_are_not_called_w():
    for answer in (lambda Xd, Xe, Wq, Wk, Wv: (Xd @ Wq) @ (Xe @ Wk).T,   # the raw scores, (T_q, T_k)
                   lambda Xd, Xe, Wq, Wk, Wv: torch.zeros(len(Xd), len(Xe))):
        feedback = ex06.check_cross_attention(answer)
        verdict(feedback, False, "has shape")
        assert "the weights W" not in feedback.message, feedback


def test_cross_attention_in_float32_passes_on_every_spiked_draw():
    def in_float32(*args):   # right, with every input rounded to float32: scores near 1,000 round by up to 6e-5
        return ex06.reference_cross_attention(*(x.float() for x in args))
    rng = np.random.default_rng(0)
    for _ in range(500):   # with the tolerance of float64, 1e-4, 15 of these 500 were refused
        case = ex06._draw_cross(rng, spiked=True)
        assert ex06.check_cross_attention.judge_case(in_float32, case, []) is None, case.what


def test_cross_attention_wrong_type_and_crash():
    verdict(ex06.check_cross_attention("cross"), False, "expected a function")
    verdict(ex06.check_cross_attention(lambda Xd, Xe, Wq, Wk, Wv: Xd @ Xe), False, "raised RuntimeError")


# ---------------------------------------------------------------- 07 · exercise 1: additive mask

def test_additive_mask_reference_and_alternatives_pass():
    verdict(ex07.check_additive_mask(ex07.reference_additive_mask), True, "exp(-inf) = 0")
    verdict(ex07.check_additive_mask(lambda m: torch.where(m == 0, float("-inf"), 0.0)), True)
    verdict(ex07.check_additive_mask(lambda m: torch.full(m.shape, float("-inf")).masked_fill(m != 0, 0.0)), True)


@pytest.mark.parametrize("answer, fragment", [
    (lambda m: np.where(m.numpy() == 0, -np.inf, 0.0), "a NumPy array"),
    (lambda m: np.where(m.numpy() == 0, -np.inf, 0.0).tolist(), "a list"),
    (lambda m: torch.zeros(m.shape, dtype=torch.float64).masked_fill(m == 0, float("-inf")), "torch.float64"),
    (lambda m: torch.zeros(m.shape, dtype=torch.float16).masked_fill(m == 0, float("-inf")), "torch.float16"),
    (lambda m: torch.zeros(m.shape, dtype=torch.bfloat16).masked_fill(m == 0, float("-inf")), "torch.bfloat16"),
])
def test_an_additive_mask_sdpa_would_refuse_is_told_so(answer, fragment):
    """The right values in a NumPy array or in another dtype than the queries' float32: SDPA raises on both."""
    verdict(ex07.check_additive_mask(answer), False, "the values are right", fragment)
    Q, mask = torch.randn(1, 4, 8), ex07.reference_additive_mask(causal_mask(4))
    with pytest.raises((TypeError, RuntimeError)):
        F.scaled_dot_product_attention(Q, Q, Q, attn_mask=answer(causal_mask(4)))
    F.scaled_dot_product_attention(Q, Q, Q, attn_mask=mask)      # float32 is taken


def test_a_wrong_mask_in_another_dtype_is_told_its_slip_first():
    verdict(ex07.check_additive_mask(
        lambda m: torch.zeros(m.shape, dtype=torch.float16).masked_fill(m != 0, float("-inf"))), False, "polarity")
    verdict(ex07.check_additive_mask(lambda m: np.where(m.numpy() != 0, -np.inf, 0.0)), False, "polarity")


def test_every_drawn_mask_lets_each_query_see_a_key_and_hides_a_pair_and_holds_a_value_other_than_1():
    rng = np.random.default_rng(0)
    for _ in range(200):
        for kind, other in (("int", 2), ("float", 0.5)):
            mask = ex07._draw_mask(rng, kind).args[0].double()
            assert (mask != 0).any(-1).all() and (mask == 0).any() and (mask == other).any() and (mask == -1).any()
            assert kind == "int" or ((mask > 0) & (mask < 1e-6)).any()   # a threshold near 0 is no test for 0


def test_an_answer_right_on_the_pages_masks_and_wrong_on_other_values_fails_every_time():
    page = ex07._mask_cases()

    def memorised(slip):
        def answer(m):
            if any(m.shape == p.shape and torch.equal(m.double(), p.double()) for p in page):
                return ex07.reference_additive_mask(m)
            return torch.zeros(m.shape).masked_fill(slip(m.double()), float("-inf"))
        return answer
    for _ in range(20):
        for slip in (lambda m: m != 1, lambda m: m < 1, lambda m: m <= 0, lambda m: m.abs() < 0.1,
                     lambda m: m.abs() < 1e-6):
            verdict(ex07.check_additive_mask(memorised(slip)), False, "drawn at random", "Test mask == 0")


@pytest.mark.parametrize("answer, fragment", [
    (lambda m: torch.where(m == 0, 0.0, float("-inf")), "polarity is flipped"),
    (lambda m: m.float(), "values are 0 and 1"),
    (lambda m: (m == 0), "boolean mask with True = hidden (or zeros_like(mask) kept the bool dtype"),
    (lambda m: m != 0, "your result is a boolean mask. SDPA takes one (True = may attend), but"),
    (lambda m: torch.zeros_like(m).masked_fill(m == 0, float("-inf")), "stored -inf as True"),
    (lambda m: (1 - m.float()) * float("-inf"), "0 · (-inf) is NaN"),
    (lambda m: (1 - m) * float("-inf"), "not defined on booleans"),
    (lambda m: torch.where(m == 0, -1.0, 0.0), "not pushed to -inf"),
    (lambda m: torch.where(m == 0, float("-inf"), 0.5), "nonzero value"),
    (lambda m: np.where(m.numpy() == 0, -np.inf, 1e-9), "exactly 0.0"),   # within a tolerance is not 0
    (lambda m: torch.where(m == 0, float("nan"), 0.0), "NaN"),
    (lambda m: torch.zeros(3, 3), "shape"),
    (lambda m: None, "returned None"),
])
def test_additive_mask_mistakes(answer, fragment):
    verdict(ex07.check_additive_mask(answer), False, fragment)


def test_additive_mask_refuses_a_large_finite_number_and_says_why_minus_inf():
    # -1e9 works in float32, but it is not what the exercise asks for; the reply explains what -inf gives
    for big in (-1e9, -1e4, torch.finfo(torch.float32).min):
        verdict(ex07.check_additive_mask(lambda m, big=big: torch.where(m == 0, big, 0.0)), False,
                "not -inf", "exp(-inf) = 0 in every dtype", "float16", "ALL hidden", "float('-inf')")
    verdict(ex07.check_additive_mask(lambda m: (1 - m.float()) * -1e9), False, "hidden pairs get -1e+09")
    # the facts the message states
    assert torch.tensor(-1e9).half().item() == float("-inf")
    all_hidden = torch.softmax(torch.randn(5) - 1e9, dim=-1)
    torch.testing.assert_close(all_hidden, torch.full((5,), 0.2))
    assert torch.exp(torch.tensor(float("-inf"), dtype=torch.float16)).item() == 0.0


def test_additive_mask_any_nonzero_value_means_may_attend():
    # torch.log is exact on 0/1 masks, but the course's convention lets any nonzero value mean "may attend"
    verdict(ex07.check_additive_mask(lambda m: torch.log(m.float())), False, "log 2", "any nonzero value")
    verdict(ex07.check_additive_mask(lambda m: torch.zeros(m.shape).masked_fill(m != 1, float("-inf"))), False,
            "where the mask is 2 are hidden", "not mask == 1")
    verdict(ex07.check_additive_mask(lambda m: torch.where(m == 1, 0.0, float("-inf"))), False, "mask is 2")
    verdict(ex07.check_additive_mask(lambda m: torch.where(m > 0, 0.0, float("-inf"))), False, "mask is -1", "mask > 0")
    verdict(ex07.check_additive_mask(lambda m: m.float().log()), False, "log 2", "NaN where it is -1")
    verdict(ex07.check_additive_mask(lambda m: m.float().clamp(max=1).log()), False, "NaN where the mask is -1")
    verdict(ex07.check_additive_mask(lambda m: torch.where(m.bool(), 0.0, float("-inf"))), True)
    verdict(ex07.check_additive_mask(lambda m: torch.zeros(m.shape).masked_fill(~m.bool(), float("-inf"))), True)
    assert any(not m.dtype.is_floating_point and m.dtype != torch.bool and (m == 2).any()
               for m in ex07._mask_cases())


def test_the_mask_itself_as_a_condition_is_told_to_compare():
    """torch.where(mask, …) passes on a bool mask; on an int or float one torch raises, and the hint says compare."""
    verdict(ex07.check_additive_mask(lambda m: torch.where(m, 0.0, float("-inf"))), False, "is torch.", "mask == 0")
    verdict(ex07.check_additive_mask(lambda m: torch.full(m.shape, float("-inf")).masked_fill(m, 0.0)), False,
            "compare first")


def test_additive_mask_wrong_type():
    verdict(ex07.check_additive_mask(torch.zeros(4, 4)), False, "expected a function")
    verdict(ex07.check_additive_mask(lambda m: "mask"), False, "should be numbers")


# ---------------------------------------------------------------- 07 · exercise 2: GB of scores

def test_scores_gb_reference_passes():
    assert ex07.check_scores_gb(4.294967296).passed
    verdict(ex07.check_scores_gb(4.29), True, "4.29 GB")
    verdict(ex07.check_scores_gb(np.float64(4.295)), True)


@pytest.mark.parametrize("answer, fragment", [
    (4.294967296e9, "number of bytes"),
    (4.0, "or GB rounded off"),   # GiB, or 4.29 rounded to a whole number
    (3.99, "the size in GiB"),
    (4.294967296 / 32, "for one head"),
    (8.59, "4 bytes per number"),
    (2.147, "1 byte per number"),
    (32 * 8192 * 2 / 1e9, "not T²"),
    (17.0, "is not it"),
    (4.26, "4.26 GB is not it"),   # 0.8 % off
    (4294.97, "that is MB"),
    (34.36, "16 bytes per number"),
])
def test_scores_gb_mistakes(answer, fragment):
    verdict(ex07.check_scores_gb(answer), False, fragment)


def test_scores_gb_wrong_type():
    verdict(ex07.check_scores_gb(None), False, "is still None")
    verdict(ex07.check_scores_gb("4.29 GB"), False, "not a number")
    verdict(ex07.check_scores_gb("4.29"), False, "not a number")
    verdict(ex07.check_scores_gb(True), False, "truth value")
    verdict(ex07.check_scores_gb(torch.tensor([4.29, 1.0])), False, "one number")
    verdict(ex07.check_scores_gb(float("nan")), False, "finite")


@pytest.mark.parametrize("answer", [torch.tensor(4.29), np.float32(4.29), np.array(4.295), 4.3, torch.tensor(4.29,
                                    dtype=torch.float64)])
def test_scores_gb_accepts_any_scalar(answer):
    verdict(ex07.check_scores_gb(answer), True)


# ---------------------------------------------------------------- 07 · exercise 3: TFLOP/s

def test_tflops_that_halve_only_the_fixed_causal_cases_fail_every_time():
    def halves_the_fixed(B, H, T, d, ms, causal=False):
        fixed = (B, H, T, d, ms, True) in ex07._TFLOP_CASES
        return ex07.reference_achieved_tflops(B, H, T, d, ms, causal=fixed)
    for _ in range(20):
        verdict(ex07.check_achieved_tflops(halves_the_fixed), False, "drawn at random", "causal mask")


def test_tflops_rounded_to_three_decimals_fail_every_time():
    def rounded(B, H, T, d, ms, causal=False):   # right on every case above 0.05 TFLOP/s, within the 1 %
        return round(ex07.reference_achieved_tflops(B, H, T, d, ms, causal), 3)
    for _ in range(20):
        verdict(ex07.check_achieved_tflops(rounded), False, "0.008: rounded to 3 decimals")


def test_tflops_reference_passes():
    verdict(ex07.check_achieved_tflops(ex07.reference_achieved_tflops), True, "989")
    assert ex07.reference_achieved_tflops(4, 16, 4096, 128, 1.2) == pytest.approx(458.1, abs=0.1)


@pytest.mark.parametrize("answer, fragment", [
    (lambda B, H, T, d, ms, causal=False: 4 * B * H * T**2 * d / (ms / 1e3) / 1e12, "causal mask"),
    (lambda B, H, T, d, ms, causal=False: 2 * B * H * T**2 * d / (ms / 1e3) / 1e12, "two matrix products"),
    (lambda B, H, T, d, ms, causal=False: ex07.reference_achieved_tflops(B, H, T, d, ms, causal) * 1000,
     "GFLOP/s"),
    (lambda B, H, T, d, ms, causal=False: ex07.reference_achieved_tflops(B, H, T, d, ms, causal) / 1000,
     "milliseconds are ÷ 1000 seconds"),
    (lambda B, H, T, d, ms, causal=False: ex07.reference_achieved_tflops(B, H, T, d, ms, causal) * 1e12,
     "not TFLOP/s"),
    (lambda B, H, T, d, ms, causal=False: ex07.reference_achieved_tflops(B, H, T, d, ms, causal) / T,
     "T times too small"),
    (lambda B, H, T, d, ms, causal=False: 3.0, "which is not it"),
    (lambda B, H, T, d, ms, causal=False: [1.0, 2.0], "one number"),
    (lambda B, H, T, d, ms, causal=False: float("inf"), "division by zero"),
    (lambda B, H, T, d, ms, causal=False: 4 * H * T**2 * d / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "forget the batch size B"),
    (lambda B, H, T, d, ms, causal=False: 4 * B * T**2 * d / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "forget the number of heads"),
    (lambda B, H, T, d, ms, causal=False: 4 * T**2 * d / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "forgot both the batch size and the number of heads"),
    (lambda B, H, T, d, ms, causal=False: B * H * T**2 * d / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "factor 4 is missing"),
    (lambda B, H, T, d, ms, causal=False: 4 * B * H * T * d / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "you used T where the formula has T²"),
    (lambda B, H, T, d, ms, causal=False: (4 * B * H * T ^ 2 * d) / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "a*T^2*b is (a*T) XOR (2*b)"),
    (lambda B, H, T, d, ms, causal=False: (4 * B * H * d * T ^ 2) / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "or wrote T^2 last"),
    (lambda B, H, T, d, ms, causal=False: 4 * B * H * T**2 * d / (ms * 1e3) / 1e12 / (2 if causal else 1),
     "not × 1e3"),
    (lambda B, H, T, d, ms, causal=False: 4 * B * H * T**2 * d / (ms / 1e3) / 10e12 / (2 if causal else 1),
     "10e12 is 10¹³"),
    (lambda B, H, T, d, ms, causal=False: 4 * B * H * T**2 / (ms / 1e3) / 1e12 / (2 if causal else 1),
     "d_k = 128 times too small"),
    (lambda B, H, T, d, ms, causal=False: ex07.reference_achieved_tflops(B, H, T, d, ms, causal) / (2 if causal else 1),
     "not twice"),
    (lambda B, H, T, d, ms, causal=False: "12", "not a number"),
    (lambda B, H, T, d, ms, causal=False: None, "returned None"),
    (lambda B, H, T, d, ms, is_causal=False: 1.0, "parameters (B, H, T, d, ms, is_causal=False), but it is called with "
                                                  "5 arguments and causal=… by name"),
    (lambda *sizes: 1.0, "parameters (*sizes)"),
])
def test_tflops_mistakes(answer, fragment):
    verdict(ex07.check_achieved_tflops(answer), False, fragment)


@pytest.mark.parametrize("answer", [
    lambda B, H, T, d, ms, causal=False: 3.0,
    lambda B, H, T, d, ms, causal=False: 4 * H * T**2 * d / (ms / 1e3) / 1e12,
    lambda B, H, T, d, ms, causal=False: B * H * T**2 * d / (ms / 1e3) / 1e12,
])
def test_tflops_feedback_does_not_give_the_answer_away(answer):
    feedback = ex07.check_achieved_tflops(answer)
    assert not feedback.passed
    assert "expected" not in feedback.message
    numbers = [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", feedback.message)]
    answers = [ex07.reference_achieved_tflops(*case) for case in ex07._TFLOP_CASES]   # in any format or rounding
    assert not any(math.isclose(n, a, rel_tol=0.01) for n in numbers for a in answers), feedback.message


def test_tflops_accepts_tensor_and_numpy_results():
    verdict(ex07.check_achieved_tflops(lambda *a, **k: torch.tensor(ex07.reference_achieved_tflops(*a, **k))), True)
    verdict(ex07.check_achieved_tflops(lambda *a, **k: np.float64(ex07.reference_achieved_tflops(*a, **k))), True)


def test_tflops_names_the_head_size_d_k():
    # the notebook writes 4·B·H·T²·d_k, and so do the checker's messages
    feedback = ex07.check_achieved_tflops(lambda B, H, T, d_k, ms, causal=False: 3.0)
    verdict(feedback, False, "d_k=128", "4·B·H·T²·d_k")
    verdict(ex07.check_achieved_tflops(ex07.reference_achieved_tflops), True, "4·B·H·T²·d_k")
    assert "d_k" in ex07.check_achieved_tflops.solution().code


def test_tflops_wrong_type():
    verdict(ex07.check_achieved_tflops(458.1), False, "expected a function")
    verdict(ex07.check_achieved_tflops(lambda B, H, T, d, ms: 1.0), False, "parameters (B, H, T, d, ms), but")


# ---------------------------------------------------------------- solutions

@pytest.mark.parametrize("solution", [
    ex06.check_luong_context.solution, ex06.check_cross_attention_shapes.solution, ex06.check_cross_attention.solution,
    ex07.check_additive_mask.solution, ex07.check_scores_gb.solution, ex07.check_achieved_tflops.solution,
])
def test_solutions_show_code(solution):
    shown = solution()
    assert isinstance(shown, Solution)
    assert shown.code and "<details>" in shown._repr_html_()


@pytest.mark.parametrize("answer", [lambda m: torch.where(m >= 1, 0.0, float("-inf")),
                                    lambda m: torch.where(m == 1, 0.0, float("-inf")),
                                    lambda m: torch.where(m.float().abs() >= 0.25, 0.0, float("-inf")),   # 0.1
                                    lambda m: torch.where(m.float().ceil() != 0, 0.0, float("-inf"))])    # -0.5
def test_additive_mask_refuses_a_rule_that_only_works_on_whole_numbers(answer):
    verdict(ex07.check_additive_mask(answer), False, "any nonzero value means 'may attend'")
    verdict(ex07.check_additive_mask(lambda m: m.float().clamp(max=1).log()), False, "nonzero value")


def test_a_pair_of_output_and_weights_is_told_to_return_the_output_only():
    verdict(ex06.check_luong_context(lambda s, H: ex06.luong_dot_attention(s, H)), False, "perhaps (output, weights)",
            "Return only the context")

    def cross_with_weights(X_dec, X_enc, W_q, W_k, W_v):
        W = torch.softmax((X_dec @ W_q) @ (X_enc @ W_k).T / math.sqrt(W_q.shape[1]), -1)
        return W @ (X_enc @ W_v), W
    verdict(ex06.check_cross_attention(cross_with_weights), False, "perhaps (output, weights)")
    got, message = ex06.check_luong_context.numbers([torch.tensor(1.0), torch.tensor(2.0)], Case(what="d = 2"))
    assert message is None and got.tolist() == [1.0, 2.0]                          # a context of d = 2, as numbers


def test_a_scale_by_the_value_width_fails_every_time():
    def by_d_v(X_dec, X_enc, W_q, W_k, W_v):
        Q, K, V = X_dec @ W_q, X_enc @ W_k, X_enc @ W_v
        return torch.softmax(Q @ K.T / math.sqrt(W_v.shape[1]), -1) @ V
    assert not any(ex06.check_cross_attention(by_d_v).passed for _ in range(40))


def test_rounded_tflops_and_twice_the_scores_are_named():
    def rounded_tflops(B, H, T, d_k, milliseconds, causal=False):
        return round(ex07.reference_achieved_tflops(B, H, T, d_k, milliseconds, causal), 2)
    verdict(ex07.check_achieved_tflops(rounded_tflops), False, "rounded to 2 decimals", "unrounded")
    verdict(ex07.check_scores_gb(2 * 4.294967296), False, "twice", "softmax weights", "scores alone")


def test_cross_attention_with_a_plain_exp_overflows_on_the_drawn_spike():
    def plain_exp(X_dec, X_enc, W_q, W_k, W_v):
        Q, K, V = X_dec @ W_q, X_enc @ W_k, X_enc @ W_v
        E = torch.exp(Q @ K.T / math.sqrt(Q.shape[-1]))
        return E / E.sum(-1, keepdim=True) @ V
    verdict(ex06.check_cross_attention(plain_exp), False, "scaled scores with keys", "near 1,000", "NaN or infinity")


@pytest.mark.parametrize("shift", [lambda S: S.mean(-1, keepdim=True), lambda S: S[..., :1], lambda S: S[..., -1:],
                                   lambda S: S.median(-1, keepdim=True).values,
                                   lambda S: S.amax(-1, keepdim=True).clamp(min=0)])
def test_a_softmax_shifted_by_anything_but_the_largest_score_is_refused_every_time(shift):
    """The mean, the first, the last or the median score, or the largest only above 0: the fixed spike,
    [-3999.5, -2000, -2003, -3999.5, -4000.5], overflows or falls to 0."""
    def luong(s, H):
        e = torch.exp(H @ s - shift(H @ s))
        return (e / e.sum()) @ H

    def cross(X_dec, X_enc, W_q, W_k, W_v):
        S = (X_dec @ W_q) @ (X_enc @ W_k).T / math.sqrt(W_q.shape[1])
        e = torch.exp(S - shift(S))
        return e / e.sum(-1, keepdim=True) @ (X_enc @ W_v)
    for _ in range(3):   # the drawn spike alone let about half of these through
        verdict(ex06.check_luong_context(luong), False, "NaN or infinity")
        verdict(ex06.check_cross_attention(cross), False, "NaN or infinity")
    verdict(ex06.check_luong_context(lambda s, H: torch.softmax(H @ s, 0) @ H), True)


def test_counts_in_messages_agree_in_number():
    verdict(ex06.check_cross_attention_shapes({**ex06.reference_cross_attention_shapes(), "Q": (5,)}), False,
            "it has 1 number.")
    verdict(ex07.check_additive_mask(lambda mask: torch.zeros(mask.shape)), False, "the values are 0 only")
    verdict(ex07.check_achieved_tflops(lambda *a, **k: round(ex07.reference_achieved_tflops(*a, **k), 1)), False,
            "rounded to 1 decimal.")


def test_cross_attention_weights_returned_transposed_are_named():
    def transposed_weights(X_dec, X_enc, W_q, W_k, W_v):
        return attention_weights(X_dec @ W_q, X_enc @ W_k).T                    # (T_k, T_q)
    verdict(ex06.check_cross_attention(transposed_weights), False, "the weights transposed, W.T")


def test_luong_and_cross_attention_rounded_to_four_decimals_are_told_so():
    """float32 inputs set the tolerance 1e-4 only for answers not rounded by hand: 4 decimals fit inside it."""
    verdict(ex06.check_luong_context(lambda s, H: ex06.reference_luong_context(s, H).round(decimals=4)), False,
            "rounded to 4 decimals", "unrounded")
    verdict(ex06.check_cross_attention(lambda *a: ex06.reference_cross_attention(*a).round(decimals=4)), False,
            "rounded to 4 decimals")


def test_an_inverted_float_mask_and_a_size_in_mib_are_named():
    verdict(ex07.check_additive_mask(lambda mask: torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))), False,
            "raised TypeError", "~ inverts only bools and integers", "compare first, mask == 0")
    verdict(ex07.check_scores_gb(4096), False, "MiB")


def tflops_from_the_course(B, H, T, d_k, milliseconds, causal=False):   # notebook 07 shows cost.attention_flops
    return cost.attention_flops(T, d_k, batch=B, heads=H, causal=causal)["total"] / (milliseconds / 1e3) / 1e12


def test_the_courses_own_flop_count_is_named():
    verdict(ex07.check_achieved_tflops(tflops_from_the_course), True,
            "It calls a ready-made attention_flops, though: write it yourself.")


def test_the_fixed_cases_are_named_and_a_transposed_y_is_told_so():
    def wrong_on_the_random_one(s, H):                # right on the story's two steps, 1 % off on the random (3,) s
        return ex06.reference_luong_context(s, H) * (1.01 if len(s) == 3 else 1.0)
    verdict(ex06.check_luong_context(wrong_on_the_random_one), False, "the context on a random s of 3 numbers and H "
            "of 5 has the right shape but the wrong values")
    verdict(ex06.check_cross_attention(lambda *a: ex06.reference_cross_attention(*a).T), False,
            "Y on the story with 4 × 4 projections has shape (4, 2), expected (2, 4): the numbers are right, "
            "transposed")


def test_minus_infinity_in_an_integer_tensor_is_among_the_causes_named():
    def from_long(mask):                     # torch: "value cannot be converted to type int64_t without overflow"
        return torch.zeros_like(mask.long()).masked_fill(mask == 0, float("-inf"))
    verdict(ex07.check_additive_mask(from_long), False, "raised RuntimeError", "and an integer tensor cannot hold -inf",
            "fill a float tensor such as torch.zeros(mask.shape)")

    def of_the_masks_dtype(mask):            # bool masks made float; an int mask's own dtype cannot hold -inf
        return torch.zeros_like(mask.float() if mask.dtype == torch.bool else mask).masked_fill(mask == 0, -math.inf)
    verdict(ex07.check_additive_mask(of_the_masks_dtype), False, "this mask is torch.int64",
            "an integer tensor, such as zeros_like(mask), cannot hold -inf.")


def test_a_type_error_of_its_own_gets_no_library_hint_and_a_mask_sized_as_square_is_told_its_shape():
    def sqrt_of_a_size(s, H):                                   # torch.sqrt of an int: a TypeError, torch used right
        return torch.softmax(H @ s / torch.sqrt(H.shape[1]), 0) @ H
    message = failing(ex06.check_luong_context(sqrt_of_a_size), "raised TypeError")
    assert "The inputs are" not in message and "amax" not in message
    message = failing(ex07.check_additive_mask(lambda m: torch.zeros(m.shape[0], m.shape[0]).masked_fill(
        m == 0, float("-inf"))), "raised RuntimeError")
    assert "If sizes clash: this mask is (5, 6), not square." in message
