"""Answers that used to slip through or crash a checker: each gets a verdict with a reason."""
import math
import types

import numpy as np
import pytest
import torch
from verdicts import student_module

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
from helpers.exercises import start_here as ex00
from helpers.exercises import static_embeddings as ex01
from helpers.exercises.engine import Exercise
from helpers.fast_attention import online_softmax_step, tile_is_future
from helpers.heads import split_heads
from helpers.induction import induction_score
from helpers.luong import luong_dot_attention
from helpers.positions import sinusoidal_positions
from helpers.running_example import tokenize
from helpers.validation import as_array


def not_yet(feedback, *fragments):
    assert not feedback.passed, feedback.message
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


def test_text_and_complex_answers_are_refused():
    E = ex01.embed(ex01.MATRIX_SENTENCE)
    not_yet(ex01.check_sentence_matrix(E.astype(str)), "holds text")
    not_yet(ex01.check_sentence_matrix(E + 1j), "complex")
    not_yet(ex01.check_river_bank_mixture(ex01.mix(ex01.embed("river bank flows"), (0.3, 0.5, 0.2)) + 1j), "complex")
    not_yet(ex02.check_longer_not_closer(["10", "50"]), "holds text")
    not_yet(ex03.check_flows_row([str(x) for x in ex03.reference_flows_row()]), "holds text")
    not_yet(ex05.check_scaled_weights(lambda Q, K: ex05.reference_scaled_weights(Q, K).astype(str)), "holds text")


def test_an_in_place_edit_of_a_weight_cannot_fool_the_cross_attention_checker():
    def scales_twice(X_dec, X_enc, W_q, W_k, W_v):
        W_q /= math.sqrt(W_q.shape[1])                      # scaled here, and again inside the attention
        return ex06.reference_cross_attention(X_dec, X_enc, W_q, W_k, W_v)

    not_yet(ex06.check_cross_attention(scales_twice))


def test_a_rounded_divisor_is_caught_and_explained():
    not_yet(ex05.check_divisor(lambda m, h: int(math.sqrt(m // h))), "rounded down", "d_k = 384 / 4 = 96")
    for decimals in (1, 2, 3):   # 9.798 to 9.8 or 9.80 was within the old tolerance of 1e-3
        not_yet(ex05.check_divisor(lambda m, h, k=decimals: round(math.sqrt(m / h), k)), "rounded to", "unrounded")
    assert ex05.check_divisor(ex05.reference_divisor).passed
    assert ex05.check_divisor(lambda m, h: np.sqrt(np.float32(m / h))).passed


def test_float32_results_rounded_within_the_float32_tolerance_are_refused():
    """float32 is compared within atol32 (its rounding of the inputs shows there); rounding to 4 decimals is not
    that, and is named, as it is in float64."""
    rounded_softmax = [lambda x: np.round(ex02.reference_softmax(x), 4).astype(np.float32),
                       lambda x: torch.round(torch.softmax(torch.tensor(x), -1), decimals=4).float()]
    for answer in rounded_softmax:
        not_yet(ex02.check_stable_softmax(answer), "rounded to 4 decimals")
    not_yet(ex04.check_attention_forward(lambda *a: torch.round(ex04.reference_attention_forward(*a), decimals=4)
                                         .float()), "rounded to 4 decimals")
    not_yet(ex08.check_sinusoidal(lambda T, d: torch.round(torch.as_tensor(ex08.reference_sinusoidal(T, d)),
                                                           decimals=4).float()), "rounded to 4 decimals")
    assert ex08.check_sinusoidal(lambda T, d: torch.as_tensor(ex08.reference_sinusoidal(T, d)).float()).passed
    assert ex02.check_stable_softmax(lambda x: ex02.reference_softmax(x).astype(np.float32)).passed


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

    def by_keywords(B, H, T, d, milliseconds, **options):   # causal arrives by name, or not at all
        return ex07.reference_achieved_tflops(B, H, T, d, milliseconds, options.get("causal", False))

    assert ex07.check_achieved_tflops(by_keywords).passed
    not_yet(ex07.check_achieved_tflops(lambda B, H, T, d, ms: 0.0), "called with 5 arguments and causal=… by name")


def test_cross_attention_scaled_by_the_values_width_is_named():
    def by_d_v(X_dec, X_enc, W_q, W_k, W_v):
        Q, K, V = X_dec @ W_q, X_enc @ W_k, X_enc @ W_v
        return torch.softmax(Q @ K.T / math.sqrt(V.shape[-1]), -1) @ V

    not_yet(ex06.check_cross_attention(by_d_v), "divided by √d_v", "the scale is √d_k")


def test_every_drawn_cross_attention_case_tells_each_width_apart():
    """A scale by √d (not d_k), or by √d_v, shows on every draw: copying the page's cases cannot hide it."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        X_dec, _, W_q, _, W_v = ex06._draw_cross(rng).args
        assert len({X_dec.shape[1], W_q.shape[1], W_v.shape[1]}) == 3 and X_dec.shape[1] != W_q.shape[1] ** 2


def test_every_drawn_causal_mask_case_has_a_query_that_a_mask_one_key_too_wide_lets_see_the_next():
    """With one query (the last token), every key is visible and a diagonal one too far right changes nothing."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        T_q, T_k = ex09._draw_causal(rng).args
        assert 2 <= T_q < T_k


def test_a_sum_a_hair_off_1_shows_enough_digits():
    def nearly(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / (e.sum(-1, keepdims=True) + 1e-4)

    feedback = ex02.check_stable_softmax(nearly)
    not_yet(feedback, "not 1")
    assert "[1.0]" not in feedback.message and "0.9999" in feedback.message


def test_a_vanishingly_short_v_gets_a_sensible_hint():
    not_yet(ex02.check_longer_not_closer([1e-320, 5e-320]), "so short")



def _memorised(check, naive):
    """An answer that knows the checker's fixed cases (their answers looked up) and runs a naive exp elsewhere."""
    table = [(case.args, check.reference(*case.args)) for case in check.cases()]

    def answer(*args):
        return next((out for given, out in table if all(np.array_equal(a, b) for a, b in zip(given, args))),
                    naive(*args))
    return answer


def _naive_softmax(S):
    return np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)


def test_an_answer_that_memorises_the_fixed_cases_meets_a_large_score_in_the_drawn_ones():
    def lookup(query, keys, values):
        return float(_naive_softmax(keys @ query) @ values)

    def self_attention(E):
        return _naive_softmax(E @ E.T / np.sqrt(E.shape[1])) @ E

    def scaled_weights(Q, K):
        return _naive_softmax(Q @ K.T / np.sqrt(Q.shape[1]))

    def forward(E, W_q, W_k, W_v):
        return torch.from_numpy(scaled_weights((E @ W_q).numpy(), (E @ W_k).numpy())) @ (E @ W_v)

    for check, naive, fragments in (
            (ex04.check_soft_lookup, lookup, ("score near 1,000, drawn for this check", "exp overflowed")),
            (ex04.check_attention_forward, forward, ("scores with itself and token", "near 1,000 and 1 less",
                                                     "exp that overflowed")),
            (ex03.check_self_attention, self_attention, ("scores with itself and", "near 1,000 and 999)",
                                                         "exp overflowed")),
            (ex05.check_scaled_weights, scaled_weights, ("scores with keys", "near 1,000 and 999", "overflows"))):
        for _ in range(5):   # the large score is in every call's draws, not in some
            not_yet(check(_memorised(check, naive)), *fragments)
        assert check(_memorised(check, check.reference)).passed   # the same lookup, stable elsewhere: right


def test_hard_attention_wherever_a_score_is_large_fails_every_time():
    """One-hot rows (the argmax alone) where a row's largest score tops 500 match softmax wherever one score leads by
    hundreds; each drawn large score has a rival 1 below it, where softmax blends two (0.73 and 0.27)."""
    above = math.inf                                 # no row is made hard: softmax itself, which passes

    def hard(S):                                     # (..., T_q, T_k): softmax, or one-hot where a row tops `above`
        one_hot = torch.nn.functional.one_hot(S.argmax(-1), S.shape[-1]).to(S.dtype)
        return torch.where(S.amax(-1, keepdim=True) > above, one_hot, torch.softmax(S, -1))

    def self_attention(E):
        E = torch.from_numpy(E)
        return hard(E @ E.T / math.sqrt(E.shape[1])) @ E

    def scaled_weights(Q, K):
        return hard(torch.from_numpy(Q @ K.T / np.sqrt(Q.shape[1])))

    def forward(E, W_q, W_k, W_v):
        return hard((E @ W_q) @ (E @ W_k).T / math.sqrt(W_q.shape[1])) @ (E @ W_v)

    def cross_attention(X_dec, X_enc, W_q, W_k, W_v):
        return hard((X_dec @ W_q) @ (X_enc @ W_k).T / math.sqrt(W_q.shape[1])) @ (X_enc @ W_v)

    Module = student_module(lambda Q, K, V: hard(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])) @ V)
    answers = ((ex03.check_self_attention, self_attention), (ex05.check_scaled_weights, scaled_weights),
               (ex04.check_attention_forward, forward), (ex04.check_self_attention_module, Module),
               (ex06.check_cross_attention, cross_attention))
    assert all(check(answer).passed for check, answer in answers)
    above = 500.0
    for check, answer in answers:
        for _ in range(8):
            not_yet(check(answer), "near 1,000")


def test_a_count_that_is_nan_infinite_or_huge_is_refused_not_crashed_on():
    for count in (math.nan, math.inf, np.float64("nan"), 10**400):
        not_yet(ex04.check_qkv_parameters(lambda d_model, d_k, c=count: c), "the count, a whole number such as 48")


def test_a_list_of_the_answers_rows_is_read_as_the_answer_even_with_two_rows():
    assert ex02.check_stable_softmax(lambda x: [ex02.reference_softmax(r) for r in x] if x.ndim == 2
                                     else ex02.reference_softmax(x)).passed
    assert ex03.check_self_attention(lambda E: list(ex03.reference_self_attention(E))).passed
    assert ex05.check_scaled_weights(lambda Q, K: list(ex05.reference_scaled_weights(Q, K))).passed
    assert ex08.check_add_positions(lambda E: list(ex08.reference_add_positions(E))).passed
    not_yet(ex06.check_luong_context(lambda s, H: ex06.luong_dot_attention(s, H)), "perhaps (output, weights)")


def test_the_module_in_float32_passes_and_a_dtype_clash_is_not_blamed_on_shapes():
    def in_float32(Q, K, V):
        return (torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V).float()
    Module, Cast = student_module(in_float32), student_module(in_float32, prepare=lambda x: x.float())

    for _ in range(5):
        assert ex04.check_self_attention_module(Module).passed
    not_yet(ex04.check_self_attention_module(Cast), "If its dtypes differ: keep x's float64")


def test_a_matrix_of_the_right_words_but_wrong_numbers_is_not_blamed_on_the_order():
    E = ex01.embed(ex01.MATRIX_SENTENCE)
    assert "word order" not in ex01.check_sentence_matrix(E * np.nan).message
    assert "word order" not in ex01.check_sentence_matrix(E + 0.3).message
    not_yet(ex01.check_sentence_matrix(E[[1, 0, 2, 3, 4]]), "Rows follow the word order")


def test_memorised_fixed_cases_with_a_shift_other_than_the_max_fail_on_the_drawn_ones():
    def shifted(x, by):
        e = np.exp(x - by(x))
        return e / e.sum(axis=-1, keepdims=True)

    for by in (lambda x: x.mean(axis=-1, keepdims=True), lambda x: x.min(axis=-1, keepdims=True),
               lambda x: x[..., :1]):
        for _ in range(5):
            softmax = _memorised(ex02.check_stable_softmax, lambda x, by=by: shifted(x, by))
            lookup = _memorised(ex04.check_soft_lookup, lambda q, K, v, by=by: float(shifted(K @ q, by) @ v))
            assert not ex02.check_stable_softmax(softmax).passed and not ex04.check_soft_lookup(lookup).passed


def test_memorised_fixed_cases_with_each_row_shifted_by_its_score_with_itself_fail_on_the_drawn_ones():
    def by_itself(E):   # exact wherever a token's score with itself is within 709 of its row's largest
        S = E @ E.T / np.sqrt(E.shape[1])
        e = np.exp(S - np.diag(S)[:, None])
        return e / e.sum(axis=-1, keepdims=True) @ E
    for _ in range(5):
        not_yet(ex03.check_self_attention(_memorised(ex03.check_self_attention, by_itself)),
                "some 800 above its score with itself", "exp overflows if you subtract it")


def test_a_lookup_that_ignores_square_keys_fails_every_time():
    def ignores_keys(query, keys, values):
        s = query if len(query) == len(values) else keys @ query
        return float(np.exp(s - s.max()) @ values / np.exp(s - s.max()).sum())
    for _ in range(10):
        not_yet(ex04.check_soft_lookup(ignores_keys))


def test_odd_answers_get_a_verdict_and_sensible_numbers():
    class Softmax:
        def __new__(cls, x):
            return ex02.reference_softmax(x)
    assert ex02.check_stable_softmax(Softmax).passed                          # a class: no crash on its source
    not_yet(ex02.check_stable_softmax(lambda x: np.full(np.shape(x), np.nan)), "[1.0, 1.2, 0.9]", "division by 0")
    assert "inf" not in ex02.check_longer_not_closer([1e-320, 5e-320]).message
    just_short = ex02.check_scale_for_confidence(ex02.reference_smallest_scale() - 1e-12).message
    assert "0.900000 <" not in just_short and "12.2714 " not in just_short
    exact = ex02.reference_smallest_scale()
    assert ex02.check_scale_for_confidence(exact).message.startswith(f"with scale = {exact!r} ")


def test_answers_in_bfloat16_or_half_precision_are_read_or_named_never_crashed_on():
    bf16 = torch.bfloat16
    assert ex07.check_scores_gb(torch.tensor(4.295, dtype=bf16)).passed              # a typed value: its number
    not_yet(ex07.check_achieved_tflops(lambda *args, **kw: torch.tensor(ex07.reference_achieved_tflops(*args, **kw),
                                                                         dtype=bf16)), "bfloat16")
    not_yet(ex10.check_induction_score(lambda W, n: ex10.reference_induction_score(W, n).half()), "float16")
    assert ex09.check_causal_mask(lambda T_q, T_k: torch.ones(T_q, T_k, dtype=bf16).tril(T_k - T_q)).passed
    not_yet(ex09.check_causal_mask(lambda T_q, T_k: torch.ones(T_q, T_k).tril(T_k - T_q) + 1j), "complex")
    not_yet(ex11.check_running_softmax(lambda stream, d_v: tuple(x.to(bf16) for x in ex11.reference_running_softmax(
        stream, d_v))), "bfloat16", "float64")


def test_a_head_or_a_shape_that_is_no_pair_of_whole_numbers_is_refused():
    for pair in ((0, math.inf), (0.7, 1.9), "10", (True, False), np.array([True, False])):
        not_yet(ex10.check_worst_head(lambda scores, p=pair: p, "b"), "pair of whole numbers")
    right = ex10.reference_worst_head
    not_yet(ex10.check_worst_head(lambda scores: (*right(scores), 0.94), "b"), "pair of whole numbers")
    not_yet(ex10.check_worst_head(right), "now the reason: reason is still None")   # reason left out
    not_yet(ex10.check_worst_head(lambda scores: (torch.tensor(True), 0), "b"), "pair of whole numbers")
    for shape in (np.array(5), torch.tensor(5), {5: 1, 64: 2}, {5, 64}):
        shapes = {**ex06.reference_cross_attention_shapes(), "Q": shape}
        not_yet(ex06.check_cross_attention_shapes(shapes), "is not a tuple")
    for Q, why in ((torch.zeros(5, 64), "Q is an array of shape (5, 64): give its shape"), ((10**400, 64), "Count")):
        not_yet(ex06.check_cross_attention_shapes({**ex06.reference_cross_attention_shapes(), "Q": Q}), why)


def test_a_skip_rule_that_returns_the_tiles_mask_is_told_to_return_one_truth_value():
    def whole_mask(q_start, q_stop, k_start, k_stop, T_q, T_k):
        return ~torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q)[q_start:q_stop, k_start:k_stop]
    not_yet(ex11.check_tile_is_future(whole_mask), "returned a Tensor of shape (2, 2)", "one truth value", ".all()")
    assert ex11.check_tile_is_future(lambda *tile: whole_mask(*tile).all()).passed


def test_an_induction_score_of_0_is_told_it_is_0_before_it_is_told_of_the_transposed_slip():
    def next_key(W, n):
        i = torch.arange(n, 2 * n - 1)
        return W[i, i + 1].mean()
    def whole(W, n):
        i = torch.arange(n, 2 * n)
        return float(W[i, i - n + 1].sum()) // n
    for answer in (lambda W, n: 0.0, next_key, whole):   # 0: a later key's weight, or a mean cut to a whole number
        not_yet(ex10.check_induction_score(answer), "you got 0. Did the mean become a whole number (// n",
                "rows and columns swapped: the weight on a LATER key")


def test_an_answer_that_hard_codes_the_pages_order_for_five_words_fails_every_time():
    def page_order(Y, order):
        return Y[[2, 0, 3, 4, 1]] if len(Y) == 5 else Y[order]
    for _ in range(20):   # before a draw of five words, 12 calls in 20 passed
        not_yet(ex08.check_shuffled_outputs(page_order), "drawn at random")


def test_a_function_result_is_named_as_returned():
    for result, said in (((4.29,), "returned a tuple of 1 item"), ((torch.tensor(4.0),) * 2, "returned a tuple of 2"),
                         ("343.6", "returned the text")):
        not_yet(ex07.check_achieved_tflops(lambda *sizes, r=result, **causal: r), said)
    not_yet(ex10.check_induction_score(lambda W, n: math.nan), "returned nan, which is not a finite number")


def test_split_heads_rebuilt_from_the_shape_alone_fails():
    not_yet(ex09.check_split_heads(lambda x, h: torch.arange(x.numel(), dtype=x.dtype).view(
        x.shape[0], x.shape[1], h, -1).transpose(1, 2)), "wrong values")


def test_split_heads_that_guesses_n_heads_from_the_shape_fails_every_time():
    def guesses(x, n_heads):   # right on both of the page's sizes, without reading n_heads
        return ex09.reference_split_heads(x, 3 if x.shape[-1] % 3 == 0 else 2)
    for _ in range(100):   # before the page-shaped draw, 6 % of calls passed it
        not_yet(ex09.check_split_heads(guesses), "drawn at random")


def test_split_heads_that_takes_the_number_of_tokens_for_n_heads_fails_every_time():
    def by_tokens(x, n_heads):   # right wherever T does not divide d_model, as on both of the page's sizes
        T, d_model = x.shape[1:]
        return ex09.reference_split_heads(x, T if d_model % T == 0 else n_heads)
    for _ in range(30):   # before the square draw, 59 % of calls passed it
        not_yet(ex09.check_split_heads(by_tokens), "drawn at random")


def test_a_flops_count_halved_without_a_causal_mask_is_told_so():
    def inverted(B, H, T, d_k, milliseconds, causal=False):
        return ex07.reference_achieved_tflops(B, H, T, d_k, milliseconds, not causal)
    not_yet(ex07.check_achieved_tflops(inverted), "only causal=True halves the FLOPs")


def test_a_number_too_large_for_a_float_gets_a_verdict():
    huge = 10**400
    not_yet(ex07.check_scores_gb(huge))
    not_yet(ex03.check_self_attention(lambda E: np.full(E.shape, huge, dtype=object)), "too large for a float64")
    not_yet(ex09.check_causal_mask(lambda T_q, T_k: [[huge] * T_k] * T_q), "too large for a float64")
    not_yet(ex10.check_worst_head(lambda scores: (huge, 0), "b"), "pair of whole numbers")
    not_yet(ex10.check_worst_head(lambda scores: ("1", "0"), "b"), "pair of whole numbers")
    not_yet(ex11.check_running_softmax(lambda stream, d_v: (huge, 1.0, [0.0] * d_v)), "should be numbers")


def test_a_complex_running_output_is_refused():
    not_yet(ex11.check_running_softmax(lambda stream, d_v: (lambda m, l, o: (m, l, o.numpy() + 7j))(
        *ex11.reference_running_softmax(stream, d_v))), "should be numbers")


def test_a_shift_by_each_rows_own_ends_is_told_it_overflows_not_one_max():
    def ends(x):
        e = np.exp(x - np.maximum(x[..., :1], x[..., -1:]))
        return e / e.sum(-1, keepdims=True)
    for _ in range(20):
        feedback = ex02.check_stable_softmax(ends)
        assert not feedback.passed and "one max for the whole matrix" not in feedback.message, feedback.message


def test_the_float32_tolerance_of_the_module_refuses_a_scale_off_by_a_ten_thousandth():
    not_yet(ex04.check_self_attention_module(student_module(lambda Q, K, V: (torch.softmax(
        Q @ K.transpose(-2, -1) / (1.0001 * math.sqrt(Q.shape[-1])), -1) @ V).float())))


def test_the_courses_own_function_passes_with_the_nudge_to_write_it():   # imported as the notebooks do
    def sinusoidal(T, d):
        return sinusoidal_positions(T, d, dtype=torch.float64)

    def context(s, H):
        return luong_dot_attention(s, H)[0]

    def future(q_start, q_stop, k_start, k_stop, T_q, T_k):
        return tile_is_future(q_start, q_stop, k_start, T_q, T_k)

    def running(stream, d_v):
        m, l, o = torch.tensor(-math.inf, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), torch.zeros(d_v)
        for s, v in stream:
            m, l, o = online_softmax_step(m, l, o, s.reshape(1), v.reshape(1, -1))
        return m, l, o

    for check, answer, own in ((ex09.check_split_heads, split_heads, "split_heads"),
                               (ex08.check_sinusoidal, sinusoidal, "sinusoidal_positions"),
                               (ex10.check_induction_score, induction_score, "induction_score"),
                               (ex06.check_luong_context, context, "luong_dot_attention"),
                               (ex11.check_tile_is_future, future, "tile_is_future"),
                               (ex11.check_running_softmax, running, "online_softmax_step")):
        feedback = check(answer)
        assert feedback.passed and feedback.message.endswith(f"It calls a ready-made {own}, though: write it "
                                                             "yourself."), feedback.message
        assert "though" not in check(check.reference).message


def test_a_row_max_or_sum_without_keepdims_is_named_where_the_square_scores_let_it_broadcast():
    def without(keepdims_max, keepdims_sum):
        def self_attention(E):
            S = E @ E.T / np.sqrt(E.shape[1])
            e = np.exp(S - S.max(axis=-1, keepdims=keepdims_max))
            return e / e.sum(axis=-1, keepdims=keepdims_sum) @ E
        return self_attention
    not_yet(ex03.check_self_attention(without(True, False)), "divided by the wrong sum", "keepdims=True")
    not_yet(ex03.check_self_attention(without(False, True)), "shifted by the wrong max", "keepdims=True")

    def column_max(E):   # S is symmetric: its column maxima are its row maxima, lined up with the columns
        S = E @ E.T / np.sqrt(E.shape[1])
        e = np.exp(S - S.max(axis=0, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True) @ E
    not_yet(ex03.check_self_attention(column_max), "shifted by the wrong max", "or the max over axis 0")

    def unshifted(E):   # exp(S) is symmetric: its sums without keepdims divide it as an axis-0 softmax would
        e = np.exp(E @ E.T / np.sqrt(E.shape[1]))
        return e / e.sum(axis=1) @ E
    not_yet(ex03.check_self_attention(unshifted), "axis 0", "a row sum without keepdims=True")


def test_a_runtime_error_that_is_no_product_gets_no_product_hint():
    def y_as_wide_as_the_queries(E, W_q, W_k, W_v):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        Y = torch.zeros(Q.shape, dtype=E.dtype)
        for i in range(len(Q)):
            Y[i] = torch.softmax(K @ Q[i] / math.sqrt(Q.shape[1]), 0) @ V
        return Y
    not_yet(ex04.check_attention_forward(y_as_wide_as_the_queries), "raised RuntimeError", "Y has V's width, d_v")

    def todo(E, W_q, W_k, W_v):
        raise NotImplementedError("todo")
    assert ex04.check_attention_forward(todo).message.endswith("your function raised NotImplementedError: todo")

    class Typo(torch.nn.Module):
        def __init__(self, d_model, d_k):
            super().__init__()
            self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))

        def foward(self, x):
            return x
    message = ex04.check_self_attention_module(Typo).message
    assert 'missing the required "forward" function' in message and "product" not in message, message


def test_softmax_weights_that_do_not_sum_to_1_are_told_why():
    def unshifted_sum(x):
        return np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x).sum(axis=-1, keepdims=True)

    def log_softmax(x):
        shifted = x - x.max(axis=-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    not_yet(ex02.check_stable_softmax(unshifted_sum), "divided the shifted exponentials by the sum of the unshifted")
    not_yet(ex02.check_stable_softmax(log_softmax), "some weights are negative", "log-softmax")
    not_yet(ex03.check_flows_row(100 * ex03.reference_flows_row()), "sum to 100.0000", "percentages")
    not_yet(ex03.check_flows_row(np.round(100 * ex03.reference_flows_row(), 1)), "percentages")


def test_notation_answers_typed_as_arrays_or_in_lower_case_get_a_verdict():
    E, S = np.zeros((3, 4)), torch.zeros(3, 3)
    not_yet(ex00.check_sizes((E, S)), "two whole numbers", "ndarray of shape (3, 4) is not a number")
    not_yet(ex00.check_weights_symbol("s"), "lower case", "And S holds the raw scores")
    not_yet(ex00.check_weights_symbol("w"), "lower case")
    not_yet(ex00.check_weights_symbol("Wq"), "Wq is a learned projection")
    not_yet(ex00.check_weights_symbol("y"), "names one row (y_i)", "And Y holds the outputs")


def test_a_name_the_answer_assigns_or_an_attribute_of_its_own_object_is_not_the_courses():
    def mask_named_causal_mask(T_q, T_k):
        i, j = torch.arange(T_q)[:, None], torch.arange(T_k)[None, :]
        causal_mask = j <= i + (T_k - T_q)
        return causal_mask

    def split_by_its_own_helper(x, n_heads):
        return own_helpers.split_heads(x, n_heads)

    own_helpers.split_heads = ex09.reference_split_heads
    for check, answer in ((ex09.check_causal_mask, mask_named_causal_mask),
                          (ex09.check_split_heads, split_by_its_own_helper)):
        feedback = check(answer)
        assert feedback.passed and "though" not in feedback.message, feedback.message


own_helpers = types.SimpleNamespace()   # an object of the student's own, holding functions


def _exercises_with_slips():
    for module in (ex03, ex04, ex06, ex08, ex09, ex10, ex11):
        for name, exercise in vars(module).items():
            if isinstance(exercise, Exercise) and exercise.slips is not None:
                yield f"{module.__name__.rsplit('.', 1)[-1]}.{name}", exercise


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # a slip without the max overflows, or gives 0 / 0: rightly
@pytest.mark.parametrize("exercise", [e for _, e in _exercises_with_slips()],
                         ids=[name for name, _ in _exercises_with_slips()])
def test_no_slip_hides_behind_the_fixed_cases(exercise):
    """Each slip is named on a fixed case; the cases one call draws must refuse it too, or an answer that copies the
    fixed cases and makes the slip elsewhere would pass. Over 30 calls' draws, every slip differs from the answer."""
    rng, hidden = np.random.default_rng(0), set()
    for _ in range(30):
        seen = set()
        for case in [draw(rng) for draw in exercise.draws]:
            expected = as_array(exercise.expected(case), "expected")
            for k, (value, _) in enumerate(exercise.slips(case)):
                try:
                    value = as_array(value() if callable(value) else value, "slip")
                except (RuntimeError, ValueError, IndexError):   # its shapes do not fit this case: the slip would raise
                    seen.add(k)
                    continue
                with np.errstate(all="ignore"):
                    if value.shape != expected.shape or not np.isclose(value, expected, atol=exercise.atol32).all():
                        seen.add(k)
        hidden |= {k for k, _ in enumerate(exercise.slips(case))} - seen
    assert hidden == set(), [exercise.slips(case)[k][1] for k in sorted(hidden)]


def test_an_answer_that_swaps_in_the_pages_inputs_at_the_pages_sizes_is_refused_every_time():
    """Each of these checkers also draws a case with the page's sizes and other numbers, so an answer that returns
    the page's result whenever the sizes are the page's cannot pass."""
    from helpers.attention_torch import causal_mask
    from helpers.heads import padding_mask
    from helpers.luong import encoder_states, projections
    P, H = projections(4, 4, seed=0), encoder_states()

    def cross(X_dec, X_enc, W_q, W_k, W_v):
        W_q, W_k, W_v = (P["W_q"], P["W_k"], P["W_v"]) if W_q.shape == (4, 4) else (W_q, W_k, W_v)
        return ex06.reference_cross_attention(X_dec, X_enc, W_q, W_k, W_v)

    def combined(lengths, T):
        lengths = torch.tensor([3, 5]) if T == 5 and len(lengths) == 2 else lengths
        return padding_mask(lengths, T) & causal_mask(T)

    def add_positions(E):                                        # 'money bank grows' whenever E is (3, 4)
        E = torch.tensor([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=E.dtype) if E.shape == (3, 4) else E
        return E + sinusoidal_positions(*E.shape, dtype=E.dtype)

    not_yet(ex06.check_cross_attention(cross))
    not_yet(ex06.check_luong_context(lambda s, H_: luong_dot_attention(s, H if H_.shape == H.shape else H_)[0]))
    not_yet(ex07.check_additive_mask(lambda m: torch.where((causal_mask(4) if m.shape == (4, 4) else m) == 0,
                                                             float("-inf"), 0.0)))
    not_yet(ex09.check_combined_mask(combined))
    not_yet(ex08.check_add_positions(add_positions))


def test_a_function_with_the_wrong_parameters_is_told_how_it_is_called_and_no_library_hint():
    for feedback, called in (
            (ex02.check_stable_softmax(lambda x, axis: x), "(x, axis), but it is called with 1 argument"),
            (ex06.check_luong_context(lambda s: s), "(s), but it is called with 2 arguments"),
            (ex04.check_attention_forward(lambda E, W_q, W_k: E), "(E, W_q, W_k), but it is called with 4")):
        not_yet(feedback, "your function has the parameters " + called)
        assert "NumPy's functions" not in feedback.message and "torch's functions" not in feedback.message
    inside = ex02.check_stable_softmax(lambda x: x + "a")   # the right parameters, a TypeError of its own
    assert "raised" in inside.message and "parameters" not in inside.message, inside.message


def test_numbers_typed_as_text_inside_an_array_are_refused_where_one_number_is_read():
    not_yet(ex02.check_scale_for_confidence(np.array(["20"])), "the text", "Remove the quotes")
    not_yet(ex05.check_divisor(lambda m, h: np.array([str(math.sqrt(m / h))])), "the text")
    not_yet(ex04.check_qkv_parameters(lambda m, k: np.array([str(3 * m * k)])), "the text")


def test_a_flows_row_that_rounds_to_another_hundredth_is_not_right_to_two_decimals():
    for row in ([0.075, 0.105, 0.82], [0.065, 0.115, 0.82]):   # 0.075 rounds up to 0.08, 0.115 to 0.12
        not_yet(ex03.check_flows_row(row), "not right to two decimals")
    assert ex03.check_flows_row([0.07, 0.11, 0.82]).passed


def test_a_module_that_learns_more_than_w_q_w_k_w_v_is_refused():
    class WithAScale(torch.nn.Module):
        def __init__(self, d_model, d_k):
            super().__init__()
            self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))
            self.scale = torch.nn.Parameter(torch.tensor(1.0))      # 1 at first: the outputs are right

        def forward(self, x):
            return ex04.SelfAttention.forward(self, x) * self.scale
    not_yet(ex04.check_self_attention_module(WithAScale), "learns 1 number beyond W_q, W_k and W_v")


def test_whole_number_outputs_of_split_heads_are_refused():
    not_yet(ex09.check_split_heads(lambda x, n_heads: split_heads(x, n_heads).long()),
            "the numbers lost their fractions (x holds 0.5, 1.5, …): a .long(), .int() or int() made them whole")


def test_a_running_softmax_that_fills_a_buffer_made_before_the_first_key_is_refused():
    def into_a_buffer(library):
        def answer(stream, d_v):
            scores, n = library.zeros(4096, dtype=library.float64), 0     # fixed size: it never grows
            m, o = -math.inf, torch.zeros(d_v, dtype=torch.float64)
            for s, v in stream:
                scores[n], n = s.item(), n + 1
                m_new = max(m, s.item())
                m, o = m_new, o * math.exp(m - m_new) + math.exp(s.item() - m_new) * v
            return m, float(library.exp(scores[:n] - m).sum()), o
        return answer
    for library in (np, torch):
        not_yet(ex11.check_running_softmax(into_a_buffer(library)), "held 4,096 entries in the variable scores")


def test_a_flops_count_with_d_k_fixed_at_the_pages_64_is_named():
    not_yet(ex07.check_achieved_tflops(lambda B, H, T, d_k, ms, causal=False: 4 * B * H * T**2 * 64 / (ms / 1e3) / 1e12
                                       / (1 + causal)), "is d_k fixed at 64")


def _mean_shift_clipped(x):   # "stable" by the row's mean, clipped: wrong where two scores lie far above the rest
    x = np.asarray(x, dtype=float)
    e = np.exp(np.clip(x - x.mean(-1, keepdims=True), -700, 700))
    return e / e.sum(-1, keepdims=True)


class _OneLayerTwice(torch.nn.Module):   # the keys made with W_q: a projection pasted twice
    def __init__(self, d_model, d_k):
        super().__init__()
        self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))

    def forward(self, x):
        Q, K, V = self.W_q(x), self.W_q(x), self.W_v(x)
        return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V


class _ValuesFromTheKeys(_OneLayerTwice):
    def forward(self, x):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_k(x)
        return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V


def _forward_reshaped(E, W_q, W_k, W_v):
    Q, K, V = E @ W_q, E @ W_k, E @ W_v
    return torch.softmax(Q @ K.reshape(K.shape[1], K.shape[0]) / math.sqrt(Q.shape[-1]), -1) @ V


def _shifted_by_the_unscaled_max(E):   # S's row max taken from S / √d: at large scores every exp falls to 0
    S = E @ E.T
    e = np.exp(S / np.sqrt(E.shape[1]) - S.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _scaled_after_softmax(Q, K):
    return ex05.reference_scaled_weights(Q * math.sqrt(Q.shape[-1]), K) / math.sqrt(Q.shape[-1])


@pytest.mark.parametrize("check, answer, fragment", [
    (ex02.check_stable_softmax, _mean_shift_clipped, "two scores far above the third, [1000, 990, -2000]"),
    (ex03.check_self_attention, lambda E: _mean_shift_clipped(E @ E.T / np.sqrt(E.shape[1])) @ E,
     "(two scores far above the rest)"),
    (ex04.check_soft_lookup, lambda q, k, v: float(_mean_shift_clipped(k @ q) @ v), "[1000, 990, -2000]"),
    (ex05.check_scaled_weights, _scaled_after_softmax, "each row sums to 1/√d_k = 1/√32: the scale came after softmax"),
    (ex04.check_attention_forward, _forward_reshaped, "K.reshape(…, d_k, T) is not K's transpose"),
    (ex04.check_attention_forward, lambda E, W_q, W_k, W_v: ex04.reference_attention_forward(E, W_q, W_q, W_v),
     "the keys were made with W_q"),
    (ex04.check_attention_forward, lambda E, W_q, W_k, W_v: ex04.reference_attention_forward(E, W_k, W_k, W_v),
     "the queries were made with W_k"),
    (ex04.check_self_attention_module, _OneLayerTwice, "the keys were made with W_q"),
    (ex04.check_attention_forward, lambda E, W_q, W_k, W_v: ex04.reference_attention_forward(
        E, W_q * math.sqrt(W_q.shape[1]), W_k, W_v) / math.sqrt(W_q.shape[1]),
     "you divided Y (or V, or the weights) by √d_k: divide the scores"),
    (ex04.check_attention_forward, lambda E, W_q, W_k, W_v: ex04.reference_attention_forward(
        E, W_q * math.sqrt(W_q.shape[1]), W_k, W_v) / math.sqrt(E.shape[1]), "you divided Y (or V, or the weights) by "
     "√d_model"),
    (ex04.check_attention_forward, lambda E, W_q, W_k, W_v: ex04.reference_attention_forward(
        E, W_q, W_k, W_v) / math.sqrt(W_q.shape[1]), "you divided both the scores and Y by √d_k"),
    (ex04.check_attention_forward, lambda E, W_q, W_k, W_v: ex04.reference_attention_forward(
        E, W_q * math.sqrt(W_q.shape[1]), W_k, W_v) / math.sqrt(W_v.shape[1]),
     "you divided Y (or V, or the weights) by √d_v"),
    (ex06.check_cross_attention, lambda X_dec, X_enc, W_q, W_k, W_v: ex06.reference_cross_attention(
        X_dec, X_enc, W_q * math.sqrt(W_q.shape[1]), W_k, W_v) / math.sqrt(W_q.shape[1]), "Y was divided by √d_k"),
    (ex04.check_self_attention_module, student_module(lambda Q, K, V: torch.softmax(
        Q @ K.transpose(-2, -1), -1) @ V / math.sqrt(Q.shape[-1])), "you divided Y (or V, or the weights)"),
    (ex04.check_self_attention_module, _ValuesFromTheKeys, "the values were made with W_k"),
    (ex06.check_cross_attention, lambda X_dec, X_enc, W_q, W_k, W_v: ex06.reference_cross_attention(
        X_dec, X_enc, W_q, W_q, W_v), "the keys were made with W_q: K = X_enc @ W_k"),
    (ex06.check_cross_attention, lambda X_dec, X_enc, W_q, W_k, W_v: ex06.reference_cross_attention(
        X_dec, X_enc, W_k, W_k, W_v), "the queries were made with W_k: Q = X_dec @ W_q"),
    (ex06.check_cross_attention, lambda X_dec, X_enc, W_q, W_k, W_v: ex06.reference_cross_attention(
        X_dec, X_enc, W_q, W_k, W_k), "the values were made with W_k: V = X_enc @ W_v"),
    (ex03.check_self_attention, lambda E: _shifted_by_the_unscaled_max(E) @ E,
     "max of the scores you exp, after the division by √d"),
])
def test_slips_the_page_never_showed_are_named(check, answer, fragment):
    not_yet(check(answer), fragment)


def test_answers_right_only_where_the_old_cases_looked_are_refused():
    def scaled_by_the_smaller_width(X_dec, X_enc, W_q, W_k, W_v):   # √d where d < d_k
        Q, K, V = X_dec @ W_q, X_enc @ W_k, X_enc @ W_v
        return torch.softmax(Q @ K.T / math.sqrt(min(W_q.shape)), -1) @ V

    def shuffled_by_a_square_permutation(Y, order):   # d_k read as T
        return torch.eye(Y.shape[1], dtype=Y.dtype)[order] @ Y

    def capped_at_400(T, d):   # the page says "T below 400"; the long draw is 401 or more
        return sinusoidal_positions(400, d, dtype=torch.float64)[:T]
    for _ in range(5):
        not_yet(ex06.check_cross_attention(scaled_by_the_smaller_width))
        not_yet(ex08.check_shuffled_outputs(shuffled_by_a_square_permutation))
        not_yet(ex08.check_sinusoidal(capped_at_400))


def test_a_square_root_written_as_a_power_of_one_half_or_of_one_floor_half_is_named():
    """x**1/2 is (x**1)/2, and x**(1//2) is x**0 = 1: both pass where d = 4 (4 / 2 = √4) or fail as a mystery."""
    def weights(Q, K, root):
        S = Q @ K.T / root(Q.shape[-1])
        e = np.exp(S - S.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    halved = lambda x: x**1 / 2   # noqa: E731  what x**1/2 computes
    not_yet(ex05.check_divisor(lambda m, h: (m / h)**1 / 2), "that is d_k / 2: in Python x**1/2 is (x**1)/2")
    not_yet(ex05.check_divisor(lambda m, h: (m / h)**(1 // 2)), "as if no head were scaled (x**(1//2) is x**0")
    not_yet(ex05.check_scaled_weights(lambda Q, K: weights(Q, K, halved)), "divided by d_k / 2 = 16")
    not_yet(ex03.check_self_attention(lambda E: weights(E, E, halved) @ E), "divided by d / 2 = 1.5: in Python d**1/2")
    def forward(E, W_q, W_k, W_v):
        return torch.softmax((E @ W_q) @ (E @ W_k).T / halved(W_q.shape[1]), dim=-1) @ (E @ W_v)
    not_yet(ex04.check_attention_forward(forward), "divided by d_k / 2 = 4.5: in Python d_k**1/2 is (d_k**1)/2")


def test_a_caret_written_for_a_power_is_named_xor_when_it_raises():
    def sinusoid(T, d):                          # the formula as maths writes it: a float tensor ^ a float tensor
        p, m = torch.arange(T, dtype=torch.float64)[:, None], torch.arange(d // 2)[None, :]
        angle = p / 10000 ^ (2 * m / d)
        return torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(T, d)
    not_yet(ex08.check_sinusoidal(sinusoid), "raised", "^ is XOR, not a power: write x ** 2")
    not_yet(ex07.check_achieved_tflops(lambda B, H, T, d_k, milliseconds, causal=False:
                                       4 * B * H * T ^ 2 * d_k / (milliseconds / 1e3) / 1e12), "^ is XOR")
    message = ex08.check_sinusoidal(lambda T, d: 1 / 0).message   # no ^ in the code: no such note
    assert "ZeroDivisionError" in message and "XOR" not in message


def _numpy_style_softmax(S):                       # a helper of the student's, NumPy's spelling on torch's tensors
    e = torch.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(-1, keepdim=True)


def test_the_library_hint_follows_the_code_that_ran_not_only_the_answers_own_lines():
    def forward(E, W_q, W_k, W_v):                 # the slip is in the helper it calls
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        return _numpy_style_softmax(Q @ K.T / math.sqrt(Q.shape[-1])) @ V
    not_yet(ex04.check_attention_forward(forward), "raised TypeError", "The inputs are torch tensors", "S.amax(dim=-1")
    not_yet(ex02.check_stable_softmax(torch.softmax), "The inputs are NumPy arrays: torch's functions need")

    def torch_max_read_right(s, H):                # torch used right (max(...).values); the slip: torch.sqrt of an int
        S = H @ s
        return torch.softmax((S - S.max(dim=-1, keepdim=True).values) / torch.sqrt(H.shape[1]), 0) @ H
    message = ex06.check_luong_context(torch_max_read_right).message
    assert "raised TypeError" in message and "The inputs are" not in message

    def xor_in_place(x):
        y = np.asarray(x, dtype=float)
        y ^= 2
        return y
    not_yet(ex02.check_stable_softmax(xor_in_place), "^ is XOR")


def test_a_softmax_over_the_whole_matrix_is_named():
    def whole_numpy(E):
        S = E @ E.T / np.sqrt(E.shape[1])
        e = np.exp(S - S.max())
        return e / e.sum() @ E
    not_yet(ex03.check_self_attention(whole_numpy), "the softmax ran over the whole matrix", "one softmax per row")

    def whole_torch(E, W_q, W_k, W_v):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        return torch.softmax((Q @ K.T / math.sqrt(Q.shape[-1])).flatten(), 0).reshape(len(E), len(E)) @ V
    not_yet(ex04.check_attention_forward(whole_torch), "the softmax ran over the whole matrix", "dim=-1")


def test_a_tensor_of_its_own_in_the_other_float_width_is_named_not_blamed_on_shapes():
    def float32_scores(s, H):                      # torch.tensor of Python floats: float32, whatever the inputs are
        return torch.softmax(torch.tensor([float(h @ s) for h in H]), 0) @ H
    not_yet(ex06.check_luong_context(float32_scores), "it is right on float32 copies of these float64 inputs",
            "torch.tensor of Python floats is float32", "x.dtype")
    assert "it was given" not in ex06.check_luong_context(float32_scores).message

    def float64_scores(s, H):                      # only H made float64: a clash on the float32 cases
        return torch.softmax(H.double() @ s, 0) @ H
    not_yet(ex06.check_luong_context(float64_scores), "it is right on float64 copies of these float32 inputs",
            ".float() and .double() convert")

    def wrong_shapes(s, H):                        # fails in either width: the shapes are named, not the widths
        return torch.softmax(H.T @ s, 0) @ H
    message = ex06.check_luong_context(wrong_shapes).message
    assert "it was given" in message and "copies" not in message

    def wrong_in_float32_too(s, H):                # runs in float32, but wrong there: the widths are not the cause
        return torch.softmax(torch.tensor([float(h @ s) for h in H]), 0) @ H * 2
    assert "copies" not in ex06.check_luong_context(wrong_in_float32_too).message

    def exits_in_float32(s, H):                    # the second run, in the other width, exits: a verdict all the same
        if s.dtype == torch.float32:
            raise SystemExit("float64 only")
        return torch.softmax(torch.tensor([float(h @ s) for h in H]), 0) @ H
    assert not ex06.check_luong_context(exits_in_float32).passed


def test_the_additive_mask_takes_torchs_default_dtype_as_the_notebook_does():
    before = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)     # a notebook that sets it: its queries, and so its masks, are float64
        assert ex07.check_additive_mask(ex07.reference_additive_mask).passed
        not_yet(ex07.check_additive_mask(lambda m: ex07.reference_additive_mask(m).float()), "torch.float64")
    finally:
        torch.set_default_dtype(before)
    not_yet(ex07.check_additive_mask(lambda m: ex07.reference_additive_mask(m).double()),
            "torch.float32 (torch's default)")


def test_answers_that_recognise_the_pages_sizes_fail_every_time():
    """Each answer is right except where it recognises a size the page prints, and there gives the page's number
    (or the page's shift, width, or keys): the drawn cases keep that size with the rest drawn afresh."""
    def page_count(d_model, d_k):                   # the page's 3 · 512 · 64, or its d_k, for d_model = 512
        return 3 * d_model * 64 if d_model >= 512 else 3 * d_model * d_k

    def page_divisor(d_model, n_heads):             # the page's 8 wherever d_model is 512 or 768
        return 8.0 if d_model in (512, 768) else math.sqrt(d_model / n_heads)

    def page_root(Q, K):                            # the page's √32 for any d_k of 32 or more
        S = Q @ K.T / math.sqrt(32 if Q.shape[1] >= 32 else Q.shape[1])
        e = np.exp(S - S.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def page_keys(query, keys, values):             # the page's one-hot keys wherever there are 3 keys of 3
        return ex04.reference_soft_lookup(query, np.eye(3) if np.shape(keys) == (3, 3) else keys, values)

    def page_shift(x):                              # the page's ±1000 instead of each row's max
        x = np.asarray(x, dtype=float)
        e = np.exp(x - np.where(np.abs(m := x.max(-1, keepdims=True)) >= 500, np.sign(m) * 1000, 0))
        return e / e.sum(-1, keepdims=True)

    def page_width(x):                              # rows of the page's 3 scores wherever the size allows
        x = np.asarray(x, dtype=float)
        rows = x.reshape(-1, 3) if x.size % 3 == 0 else x
        return ex02.reference_softmax(rows).reshape(x.shape)

    cheats = [(ex04.check_qkv_parameters, page_count), (ex05.check_divisor, page_divisor),
              (ex05.check_scaled_weights, page_root), (ex04.check_soft_lookup, page_keys),
              (ex02.check_stable_softmax, page_shift), (ex02.check_stable_softmax, page_width)]
    with np.errstate(all="ignore"):
        for check, cheat in cheats:
            assert not any(check(cheat).passed for _ in range(8)), cheat.__name__


def _scaled_softmax(divisor, Q, K):   # NumPy: softmax(Q Kᵀ / divisor(d_k)), each row, stable
    S = Q @ K.T / divisor(Q.shape[-1])
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_the_scaled_weights_computed_in_float32_pass_every_time():
    """Right in float32: near a drawn tie its weights are off by up to 4.4e-5, which 1e-6 refused 9 calls in 10."""
    answer = lambda Q, K: _scaled_softmax(math.sqrt, Q.astype(np.float32), K.astype(np.float32))  # noqa: E731
    for _ in range(10):
        assert ex05.check_scaled_weights(answer).passed
    not_yet(ex05.check_scaled_weights(lambda Q, K: np.round(ex05.reference_scaled_weights(Q, K), 5)), "rounded")


def test_a_square_root_rounded_down_or_a_power_without_brackets_is_named():
    """int(√d_k) and S / d_k**1/2 (that is S / (2 d_k)) were named as other slips, or as a divisor fitted to √4096;
    in notebook 04, int(√d_k) was "forgot to divide" or "divided by 2 = √4" where a drawn d_k rounds to 1 or 2."""
    for divisor, fragment in ((math.isqrt, "rounded down to 5 (int(), math.isqrt or //)"),
                              (lambda d: d**1 * 2, "divided by 2·d_k = 64: in Python d_k**1/2 is")):
        not_yet(ex05.check_scaled_weights(lambda Q, K, c=divisor: _scaled_softmax(c, Q, K)), fragment)

    def forward(divide):
        return lambda E, W_q, W_k, W_v: torch.softmax(divide(E @ W_q @ (E @ W_k).T, W_q.shape[1]), -1) @ (E @ W_v)
    for _ in range(5):   # the fixed cases' d_k are 4 and 9: int(√d_k) is only wrong on a drawn d_k
        message = ex04.check_attention_forward(forward(lambda S, d_k: S / int(math.sqrt(d_k)))).message
        assert "you rounded √" in message and "forgot" not in message and "= √4" not in message, message


def test_values_made_with_the_query_or_key_weights_are_named_by_their_width():
    for W in ("W_q", "W_k"):
        answer = lambda E, W_q, W_k, W_v, W=W: ex04.scaled_dot_product_attention(  # noqa: E731
            E @ W_q, E @ W_k, E @ {"W_q": W_q, "W_k": W_k}[W])
        not_yet(ex04.check_attention_forward(answer), "Y has d_k = 4 columns, not d_v = 3", "made with W_q or W_k")


def test_a_softmax_whose_overflow_is_replaced_by_zeros_is_not_called_unshifted():
    def nan_to_zero(x):
        e = np.exp(x)
        return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))
    message = ex02.check_stable_softmax(nan_to_zero).message
    assert "exp overflowed to inf, so the row came out 0" in message and "unshifted" not in message, message


def test_the_log_sum_exp_returned_as_m_is_named():
    def lse_as_m(stream, d_v):
        m, l, o = ex11.reference_running_softmax(stream, d_v)
        return m + torch.log(l), l, o
    not_yet(ex11.check_running_softmax(lse_as_m), "is m + log l, the log-sum-exp")


def test_cross_attention_shaped_like_the_weights_is_not_told_its_queries_are_the_encoders():
    def weights_along_the_queries(X_dec, X_enc, W_q, W_k, W_v):   # (T_k, T_q)
        Q, K = X_dec @ W_q, X_enc @ W_k
        return torch.softmax(K @ Q.T / math.sqrt(Q.shape[1]), dim=-1)
    message = ex06.check_cross_attention(weights_along_the_queries).message
    assert not ex06.check_cross_attention(weights_along_the_queries).passed
    assert "one per encoder token" not in message, message


def test_the_pages_shuffle_order_and_the_pages_head_count_are_named():
    for _ in range(3):
        not_yet(ex08.check_shuffled_outputs(lambda Y, order: Y[[2, 0, 3, 4, 1]]), "the page's order [2, 0, 3, 4, 1]",
                "use the argument, order = [")
        not_yet(ex09.check_split_heads(lambda x, n_heads: x.view(*x.shape[:2], 3, -1).transpose(1, 2)),
                "View as (B, T, n_heads, d_model // n_heads), each size read from x and n_heads")
    message = ex08.check_add_positions(lambda E: E - sinusoidal_positions(*E.shape, dtype=E.dtype)).message
    assert "E + sinusoidal_positions(T, d)" in message and "in that order" not in message, message


def test_no_drawn_order_makes_the_pages_order_look_like_another_slip():
    """A drawn order whose inverse is the page's would make Y[ORDER] read as 'the inverse shuffle' (1 draw in 93)."""
    rng = np.random.default_rng(0)
    drawn = {tuple(ex08._draw_shuffle(rng, T=5).args[1]) for _ in range(600)}
    assert len(drawn) > 80 and tuple(np.argsort(ex08.ORDER)) not in drawn and tuple(ex08.ORDER) not in drawn


def test_following_a_message_word_for_word_gives_a_right_answer():
    """Where a message says how to fix the slip, doing exactly that passes (or the message names the missing part)."""
    from helpers.attention_torch import causal_mask
    pad_queries = lambda n, T: (torch.arange(T) < n[:, None])[:, None, :, None] & causal_mask(T)  # noqa: E731
    not_yet(ex09.check_combined_mask(pad_queries), "the key mask (B, T) as [:, None, None, :], (B, 1, 1, T)")
    assert ex09.check_combined_mask(lambda n, T: (torch.arange(T) < n[:, None])[:, None, None, :] & causal_mask(T)
                                    ).passed
    slice_of_keys = lambda W, n: W[n:, :n].diagonal(1).mean()   # noqa: E731   keys 1 … n − 1: query 2n − 1 dropped
    not_yet(ex10.check_induction_score(slice_of_keys), "queries i = n … 2n − 1, keys i − n + 1 = 1 … n")
    assert ex10.check_induction_score(lambda W, n: W[n:2 * n, 1:n + 1].diagonal().mean()).passed
    message = ex11.check_running_softmax(_running_from(torch.tensor(0.0, dtype=torch.float64))).message
    assert "torch.tensor(-math.inf, dtype=torch.float64)" in message, message
    assert ex11.check_running_softmax(_running_from(torch.tensor(-math.inf, dtype=torch.float64))).passed
    not_yet(ex04.check_attention_forward(lambda E, W_q, W_k, W_v: torch.softmax(
        E @ W_q @ (E @ W_k).T / W_q.shape[1]**1 / 2, -1) @ (E @ W_v)), "divided by 2·d_k = 8: in Python d_k**1/2 is")
    not_yet(ex03.check_self_attention(lambda E: ex03.attend(E, E, E, scale=1 / E.shape[1]**1 / 2)),
            "divided by 2·d = 8: in Python d**1/2 is")


def _running_from(start):
    """A running softmax over (score, value) pairs, m starting at `start`."""
    def running(stream, d_v):
        m, l, o = start, torch.tensor(0.0, dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64)
        for s, v in stream:
            m_new = torch.maximum(m, torch.as_tensor(s, dtype=torch.float64))
            l, o = l * torch.exp(m - m_new) + torch.exp(s - m_new), o * torch.exp(m - m_new) + torch.exp(s - m_new) * v
            m = m_new
        return m, l, o
    return running


def _sinusoid_by_loop(angle):
    """A student's loop over positions p and pairs m, with the angle written as angle(p, m, d)."""
    def sinusoidal(T, d):
        PE = torch.zeros(T, d, dtype=torch.float64)
        for p in range(T):
            for m in range(d // 2):
                PE[p, 2 * m], PE[p, 2 * m + 1] = math.sin(angle(p, m, d)), math.cos(angle(p, m, d))
        return PE
    return sinusoidal


def _running_by_the_old_max(stream, d_v):
    """The running softmax with each new key weighted by exp(s − m_old); the first key starts the sums itself."""
    m = None
    for s, v in stream:
        if m is None:
            m, l, o = s, torch.tensor(1.0, dtype=torch.float64), v.clone()
            continue
        p, m_new = torch.exp(s - m), torch.maximum(m, s)
        l, o, m = torch.exp(m - m_new) * l + p, torch.exp(m - m_new) * o + p * v, m_new
    return m, l, o


def _running_corrected_inside(stream, d_v):
    """The running softmax with exp(m_old − m_new) applied to the new term too: l = c · (l + p)."""
    m, l, o = torch.tensor(-math.inf, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), torch.zeros(d_v)
    for s, v in stream:
        m_new = torch.maximum(m, s)
        c, p = torch.exp(m - m_new), torch.exp(s - m_new)
        m, l, o = m_new, c * (l + p), c * (o + p * v)
    return m, l, o


def _induction_sum_over(n_queries):
    def score(W, n):   # a loop one query short, its sum divided by n
        return sum(W[i, i - n + 1] for i in range(n, n + n_queries(n))) / n
    return score


@pytest.mark.parametrize("check, answer, fragment", [
    (ex02.check_stable_softmax, lambda x: (e := np.exp(x - x.max(axis=-1, keepdims=True))) // e.sum(
        axis=-1, keepdims=True), "every weight came out 0: // floors each weight"),
    (ex03.check_self_attention, lambda E: ex03.softmax(E * E / np.sqrt(E.shape[1])) * E, "* multiplies entries"),
    (ex04.check_soft_lookup, lambda q, K, v: (ex03.softmax(K @ q) * v).mean(), "the MEAN of the weighted values"),
    (ex06.check_luong_context, lambda s, H: (torch.softmax((H @ s)[None], dim=0) @ H)[0], "an axis of size 1"),
    (ex06.check_luong_context, lambda s, H: (torch.softmax(H @ s, 0)[:, None] * H).mean(0), "the MEAN of the weighted"),
    (ex08.check_sinusoidal, _sinusoid_by_loop(lambda p, m, d: p / 10000 ** 2 * m / d), "is (p / 10000²)·m/d"),
    (ex08.check_sinusoidal, _sinusoid_by_loop(lambda p, m, d: p / 10000 ** (2 * m // d)), "every pair got the angle p"),
    (ex10.check_induction_score, _induction_sum_over(lambda n: n - 1), "the last query, i = 2n − 1, is left out"),
    (ex05.check_divisor, lambda d_model, n_heads: (d_model / n_heads) ^ 0.5, "write x ** 2 (x ** 0.5 for a root)"),
    (ex02.check_stable_softmax, lambda x: (e := np.exp(x - x.max(axis=0, keepdims=True))) / e.sum(
        axis=-1, keepdims=True), "each COLUMN's max was subtracted (axis=0)"),
    (ex11.check_running_softmax, _running_by_the_old_max, "weighted against the OLD maximum"),
    (ex11.check_running_softmax, _running_corrected_inside, "multiplied the new key's term too"),
    (ex09.check_combined_mask, lambda lengths, T: (torch.arange(T)[None] >= T - torch.as_tensor(lengths)[:, None])[
        :, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril(), "the <pad>s are at the END"),
    (ex09.check_combined_mask, lambda lengths, T: ex09.reference_combined_mask(lengths, max(lengths)),
     "T is the argument, not max(lengths)"),
])
def test_an_honest_slip_is_named(check, answer, fragment):
    not_yet(check(answer), fragment)


def test_floor_division_and_a_mean_are_named_in_the_answers_that_are_values():
    E = ex03.embed("money bank flows")
    not_yet(ex03.check_flows_row(ex03.softmax(E[2] @ E.T // 2)), "// is floor division")
    weighted = np.array([0.3, 0.5, 0.2])[:, None] * ex01.embed("river bank flows")
    not_yet(ex01.check_river_bank_mixture(weighted.mean(axis=0)), "the MEAN of the weighted vectors")


def test_a_size_read_from_the_notebook_is_named_in_a_function_and_in_a_module():
    """The notebook's d_k is 3: an answer that reads it is told so (on the first case √3 is also √d_v)."""
    namespace = {"torch": torch, "math": math, "d_k": 3, "OTHER": 3}
    exec("def forward(E, W_q, W_k, W_v):\n    Q, K, V = E @ W_q, E @ W_k, E @ W_v\n"
         "    return torch.softmax(Q @ K.T / math.sqrt(d_k), dim=-1) @ V\n"
         "class Module(torch.nn.Module):\n    def __init__(self, d_model, d_k):\n        super().__init__()\n"
         "        self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))\n"
         "    def forward(self, x):\n        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)\n"
         "        return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), -1) @ V\n", namespace)
    not_yet(ex04.check_attention_forward(namespace["forward"]), "Your function reads the notebook's d_k: use the")
    not_yet(ex04.check_self_attention_module(namespace["Module"]), "Your function reads the notebook's d_k: use the")
    constant = namespace["forward"].__code__.replace(co_names=tuple(   # a CONSTANT in capitals is not a notebook size
        "OTHER" if n == "d_k" else n for n in namespace["forward"].__code__.co_names))
    not_yet(ex04.check_attention_forward(types.FunctionType(constant, namespace)))
    assert "reads the notebook" not in ex04.check_attention_forward(types.FunctionType(constant, namespace)).message


def test_a_new_note_appears_only_where_its_cause_is():
    """A mask that cannot broadcast though T was right is not told about max(lengths); a notebook constant that is
    no size is not blamed; a list of words is not told about punctuation."""
    head_axis_first = ex09.check_combined_mask(lambda lengths, T: ex09.reference_combined_mask(lengths, T)[:, 0][None])
    not_yet(head_axis_first, "does not broadcast")
    assert "max(lengths)" not in head_axis_first.message
    namespace = {"torch": torch, "math": math, "base": 10000}
    exec("def sinusoidal(T, d):\n    p = torch.arange(T, dtype=torch.float64)[:, None]\n"
         "    a = p / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
         "    return torch.stack([torch.cos(a), torch.sin(a)], -1).reshape(T, d)\n", namespace)
    swapped = ex08.check_sinusoidal(namespace["sinusoidal"])
    not_yet(swapped, "sin and cos are swapped")
    assert "reads the notebook" not in swapped.message
    with pytest.raises(ValueError) as raised:
        tokenize(["hello"])
    assert "punctuation" not in str(raised.value)


def test_a_result_for_the_pages_sizes_returned_again_is_an_ignored_argument_whatever_its_shape():
    """Right on T = 6, d = 4, then the same (6, 4) on T = 50, d = 16: the arguments were ignored, not the formula."""
    not_yet(ex08.check_sinusoidal(lambda T, d: sinusoidal_positions(6, 4)), "on T = 50, d = 16: your function "
            "returned what it returned on T = 6, d = 4, though the inputs differ: does it ignore an argument",
            "It has shape (6, 4), not (50, 16).")


def test_split_heads_slips_name_their_input_and_a_pair_of_results_is_two_items():
    not_yet(ex09.check_split_heads(lambda x, h: x.view(x.shape[0], h, x.shape[1], -1)),
            "on x of shape (2, 5, 12) with n_heads=3: a view straight to (B, H, T, d_k)", ".transpose(1, 2).")

    def mean_and_every_weight(weights, n):
        per_query = torch.stack([weights[i, i - n + 1] for i in range(n, 2 * n)])
        return per_query.mean(), per_query
    not_yet(ex10.check_induction_score(mean_and_every_weight), "returned a tuple of 2 items: it should be one number")


def test_a_rule_or_divisor_with_the_wrong_parameters_is_told_how_it_is_called():
    def without_k_stop(q_start, q_stop, k_start, T_q, T_k):            # the course's tile_is_future has no k_stop
        return k_start > q_stop - 1 + T_k - T_q
    not_yet(ex11.check_tile_is_future(without_k_stop), "your function has the parameters (q_start, q_stop, k_start, "
            "T_q, T_k), but is called as future(q_start, q_stop, k_start, k_stop, T_q, T_k)")
    not_yet(ex05.check_divisor(lambda d_model: 8.0), "has the parameters (d_model), but is called as divisor(d_model, "
            "n_heads).")


def test_a_float32_scale_is_shown_as_typed():
    feedback = ex02.check_scale_for_confidence(np.float32(12.28))
    assert feedback.passed and "with scale = 12.28 the top weight" in feedback.message, feedback.message


def test_answers_built_on_a_fixed_buffer_fail_on_the_longer_drawn_sizes():
    """Right up to a size the page never passes, wrong past it: each checker draws one case past it on every call."""
    table = {d: sinusoidal_positions(12, d, dtype=torch.float64) for d in range(2, 13, 2)}   # 12 positions, d <= 12

    def ten_pairs(T, d):                                     # at most 10 frequencies: wrong for d >= 22
        angles = torch.arange(T, dtype=torch.float64)[:, None] / 10000 ** (torch.arange(10.0)[:d // 2] * 2 / d)
        return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)

    def combined_on_8(lengths, T):                           # an 8 x 8 buffer, cut to T
        keys = torch.arange(8)[None, :] < lengths[:, None]
        return (keys[:, None, None, :] & torch.ones(8, 8, dtype=torch.bool).tril())[..., :T, :T]

    def self_when_as_long(X_dec, X_enc, W_q, W_k, W_v):      # X_enc ignored whenever it is as long as X_dec
        return ex06.reference_cross_attention(X_dec, X_dec if X_dec.shape == X_enc.shape else X_enc, W_q, W_k, W_v)

    for _ in range(3):
        not_yet(ex08.check_sinusoidal(ten_pairs), "(drawn at random)")
        not_yet(ex08.check_add_positions(lambda E: E + table[E.shape[1]][:E.shape[0]]), "(drawn at random)")
        not_yet(ex09.check_causal_mask(lambda T_q, T_k: torch.ones(9, 9).tril()[T_k - T_q:T_k, :T_k].bool()),
                "(drawn at random)")
        not_yet(ex09.check_combined_mask(combined_on_8), "(drawn at random)")
        not_yet(ex10.check_induction_score(lambda W, n: W[torch.arange(n, n + min(n, 12)), torch.arange(1, 1 + min(
            n, 12))].mean()), "n = ")                       # the first 12 queries only
        not_yet(ex06.check_cross_attention(self_when_as_long), "K and V come from X_enc")


def test_a_threshold_of_one_half_on_the_previous_token_score_does_not_find_the_head():
    """The flattened copy's previous-token head scores 0.44: "the head above 0.5" finds none, "the highest" finds it."""
    def above_half(scores):
        return next((l, h) for l in range(scores.size(1)) for h in range(scores.size(2)) if scores[0, l, h] > 0.5)
    not_yet(ex10.check_worst_head(above_half, "b"), "flattened")


def test_a_size_made_with_a_true_division_is_named():
    """d_model / n_heads is a float in Python 3: view and reshape refuse it, and the checker says why."""
    def divided(x, n_heads):
        B, T, d_model = x.shape
        return x.view(B, T, n_heads, d_model / n_heads).transpose(1, 2)
    not_yet(ex09.check_split_heads(divided), "raised TypeError", "/ always gives a float", "d_model // n_heads")


def test_writing_into_what_float_or_asarray_gave_back_is_explained():
    """.float() of a float32 mask and np.asarray of a float array are the argument itself: the message says so."""
    def filled(mask):
        out = mask.float()
        out[mask == 0] = float("-inf")
        out[mask != 0] = 0.0
        return out

    def shifted(x):
        x = np.asarray(x, dtype=float)
        x -= x.max(axis=-1, keepdims=True)
        return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    not_yet(ex07.check_additive_mask(filled), "changed its argument mask in place", ".float(), .to() and np.asarray "
            "give back mask itself")
    not_yet(ex02.check_stable_softmax(shifted), "changed its argument x in place", "give back x itself")


def test_ready_made_attention_is_named_in_every_attention_exercise():
    """PyTorch's fused attention or nn.MultiheadAttention (identity projections) passes, but is told to write it."""
    def identity(mha):   # one head whose projections are all the identity: plain attention on its inputs
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.eye(mha.embed_dim).repeat(3, 1))
            mha.out_proj.weight.copy_(torch.eye(mha.embed_dim))
        return mha

    def mha_03(E):
        x = torch.as_tensor(E, dtype=torch.float64)[None]
        mha = identity(torch.nn.MultiheadAttention(x.shape[-1], 1, bias=False, batch_first=True).double())
        return mha(x, x, x, need_weights=False)[0][0].detach().numpy()

    def mha_05(Q, K):
        Q, K = torch.as_tensor(Q)[None], torch.as_tensor(K)[None]
        mha = identity(torch.nn.MultiheadAttention(Q.shape[-1], 1, bias=False, batch_first=True).double())
        return mha(Q, K, K)[1][0].detach()

    def sdpa_05(Q, K):
        Q, K = torch.as_tensor(Q), torch.as_tensor(K)
        return torch.nn.functional.scaled_dot_product_attention(Q, K, torch.eye(K.shape[0], dtype=Q.dtype))
    for check, answer, word in ((ex03.check_self_attention, mha_03, "MultiheadAttention"),
                                (ex05.check_scaled_weights, mha_05, "MultiheadAttention"),
                                (ex05.check_scaled_weights, sdpa_05, "scaled_dot_product_attention")):
        feedback = check(answer)
        assert feedback.passed and f"It calls a ready-made {word}, though" in feedback.message, feedback


def test_a_position_table_of_64_rows_fails_on_the_long_drawn_sentence():
    """E + PE[:T] from a table of 64 positions is right only up to T = 64; one draw is always longer."""
    table = {d: sinusoidal_positions(64, d, dtype=torch.float64) for d in (2, 4, 6, 8, 10, 12, 22, 66)}
    for _ in range(3):
        not_yet(ex08.check_add_positions(lambda E: E + table[E.shape[1]][:E.shape[0]]), "(drawn at random)")


def test_a_lower_case_key_is_named_alone_and_the_lookup_hint_gives_the_scores_order():
    """One lower-case key: only it is quoted. Scores as query @ keys fail on the non-square draw, hint keys @ query."""
    shapes = {"q": (2, 3), "K": (3, 3), "V": (3, 4), "W": (2, 3), "Y": (2, 4)}
    not_yet(ex06.check_cross_attention_shapes(shapes), "(not 'q').")

    def query_first(query, keys, values):
        scores = query @ keys
        weights = np.exp(scores - scores.max())
        return float(weights / weights.sum() @ values)
    not_yet(ex04.check_soft_lookup(query_first), "keys @ query, one score per key")
