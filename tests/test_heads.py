"""helpers.heads, its checkers and its widget: equal to PyTorch, masks that mean what they say, a cache that
changes nothing, and slips that are named."""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from verdicts import failing, verdict

from helpers import cost, heads
from helpers.attention_torch import causal_mask, count_parameters
from helpers.exercises import heads_masks as ex
from helpers.exercises.engine import Solution
from helpers.heads import MultiHeadAttention, merge_heads, padding_mask, split_heads


def x_batch(B=2, T=6, d_model=12, seed=0):
    return torch.randn(B, T, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def torch_copy(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """nn.MultiheadAttention holding the same weights (its in_proj stacks W_q, W_k, W_v as nn.Linear weights)."""
    bias = mha.W_q.bias is not None
    ref = nn.MultiheadAttention(mha.d_model, mha.n_heads, bias=bias, batch_first=True).double()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]))
        ref.out_proj.weight.copy_(mha.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
            ref.out_proj.bias.copy_(mha.W_o.bias)
    return ref


# ---------------------------------------------------------------- multi-head attention

@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_torch_multihead_attention_with_copied_weights(bias, causal):
    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3, bias=bias).double()
    if bias:
        with torch.no_grad():
            for layer in (mha.W_q, mha.W_k, mha.W_v, mha.W_o):
                layer.bias.normal_()
    x = x_batch()
    ours = mha(x, causal_mask(6) if causal else None)
    # nn.MultiheadAttention's boolean mask has the opposite polarity: True = may NOT attend.
    theirs, _ = torch_copy(mha)(x, x, x, attn_mask=~causal_mask(6) if causal else None, need_weights=False)
    assert (ours - theirs).abs().max() < 1e-12


def test_separate_heads_equal_the_fused_module():
    torch.manual_seed(1)
    separate = heads.SeparateHeads(12, 4).double()
    fused = heads.fuse(separate)
    x = x_batch()
    for mask in (None, causal_mask(6)):
        torch.testing.assert_close(fused(x, mask), separate(x, mask), rtol=0, atol=1e-12)
    assert count_parameters(separate) == count_parameters(fused) == 4 * 12 ** 2


def test_split_then_merge_is_the_identity_and_the_wrong_view_mixes_tokens():
    x = x_batch()
    Q = split_heads(x, 3)
    assert Q.shape == (2, 3, 6, 4)
    torch.testing.assert_close(merge_heads(Q), x, rtol=0, atol=0)
    torch.testing.assert_close(Q[:, 1, 2], x[:, 2, 4:8], rtol=0, atol=0)   # head 1 of token 2: features 4..7
    wrong = x.view(2, 3, 6, 4)
    assert wrong.shape == Q.shape and not torch.equal(wrong, Q)
    assert torch.equal(wrong[0, 0, 3], x[0, 1, :4])                        # "head 0, token 3" is token 1's features


def test_per_head_scale_is_sqrt_d_k():
    """Each head divides its scores by √d_k = √(512 / 8) = 8: what the module computes, not √d_model ≈ 22.6."""
    mha = MultiHeadAttention(512, 8).double()
    x = torch.randn(1, 5, 512, dtype=torch.float64)
    Q, K = (split_heads(layer(x), 8) for layer in (mha.W_q, mha.W_k))      # (1, 8, 5, 64)
    with torch.no_grad():
        W = mha.weights(x)
        torch.testing.assert_close(W, torch.softmax(Q @ K.transpose(-2, -1) / 8, dim=-1))
        assert not torch.allclose(W, torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(512), dim=-1), atol=1e-3)
    assert count_parameters(mha) == 4 * 512 ** 2
    assert count_parameters(MultiHeadAttention(512, 8, bias=True)) == 4 * 512 ** 2 + 4 * 512


def test_inputs_with_too_many_or_too_few_axes_are_named():
    from helpers.attention_torch import SelfAttention
    with pytest.raises(ValueError, match="x should be a torch.Tensor of shape"):
        SelfAttention(4, 4)(torch.randn(2, 2, 3, 4))
    with pytest.raises(ValueError, match=r"one sentence of shape \(T, d_model\): x\[None\]"):
        MultiHeadAttention(8, 2)(torch.randn(3, 8))
    with pytest.raises(ValueError, match="x should be a torch.Tensor of shape"):
        MultiHeadAttention(8, 2)(torch.randn(1, 2, 3, 8))


def test_an_input_of_the_wrong_width_is_named():
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        MultiHeadAttention(8, 2)(torch.randn(1, 3, 6))


def test_not_divisible_names_both_numbers():
    with pytest.raises(ValueError, match=r"d_model=10.*n_heads=4"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match="n_heads should be a whole number of at least 1, but got 0"):
        MultiHeadAttention(8, 0)


# ---------------------------------------------------------------- masks

def test_causal_mask_with_fewer_queries_is_bottom_right():
    bias = pytest.importorskip("torch.nn.attention.bias")
    Q, K, V = (torch.randn(1, 2, n, 4, generator=torch.Generator().manual_seed(n)) for n in (3, 7, 7))
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=bias.causal_lower_right(3, 7))
    torch.testing.assert_close(F.scaled_dot_product_attention(Q, K, V, attn_mask=causal_mask(3, 7)), expected)


def test_causal_mask_against_a_loop():
    for T_q, T_k in ((3, 3), (2, 5), (1, 4)):
        loop = [[j <= T_k - T_q + i for j in range(T_k)] for i in range(T_q)]
        assert causal_mask(T_q, T_k).tolist() == loop


def test_padding_and_causal_keep_each_sentence_as_if_alone():
    mha = heads.demo_model()
    words, lengths, X = heads.padded_batch()
    mask = padding_mask(lengths, X.size(1)) & causal_mask(X.size(1))      # (B, 1, T, T)
    assert mask.shape == (len(lengths), 1, X.size(1), X.size(1))
    with torch.no_grad():
        batch = mha(X, mask)
        for b, n in enumerate(lengths.tolist()):
            alone = mha(X[b:b + 1, :n], causal_mask(n))
            torch.testing.assert_close(batch[b:b + 1, :n], alone, rtol=0, atol=1e-12)
        causal_only = mha(X, causal_mask(X.size(1)))
    for b, n in enumerate(lengths.tolist()):       # right-padding: causal alone already hides the later <pad> keys
        assert torch.equal(causal_only[b, :n], batch[b, :n])      # from real tokens (not from <pad> queries)
    assert (mha(X, padding_mask(lengths, X.size(1))) - mha(X)).abs().max() > 1e-3


# ---------------------------------------------------------------- KV cache and dropout

@pytest.mark.parametrize("prompt", [1, 3])
def test_kv_cache_decoding_equals_full_recomputation(prompt):
    torch.manual_seed(2)
    mha = MultiHeadAttention(12, 3, bias=True).double()
    x = x_batch(T=7)
    with torch.no_grad():
        full = mha(x, causal_mask(7))
        assert (heads.decode_with_cache(mha, x, prompt) - full).abs().max() < 1e-12


def test_a_top_left_mask_breaks_the_cached_step():
    mha = heads.demo_model()
    x = x_batch(T=5, d_model=16)
    with torch.no_grad():
        full = mha(x, causal_mask(5))
        _, cache = heads.attend_with_cache(mha, x[:, :3])
        y, _ = heads.attend_with_cache(mha, x[:, 3:], cache)            # bottom-right: causal_mask(2, 5)
        Q = split_heads(mha.W_q(x[:, 3:]), mha.n_heads)                 # (B, h, 2, d_k)
        K, V = (split_heads(layer(x), mha.n_heads) for layer in (mha.W_k, mha.W_v))
        top_left = torch.ones(2, 5, dtype=torch.bool).tril()
        y_top_left = mha.W_o(merge_heads(heads.attention_weights(Q, K, top_left) @ V))
    torch.testing.assert_close(y, full[:, 3:], rtol=0, atol=1e-12)
    assert (y_top_left - full[:, 3:]).abs().max() > 1e-3


def test_kv_cache_bytes_are_the_bytes_of_the_cache_that_decoding_keeps():
    mha = MultiHeadAttention(16, 4)                                      # float32, d_k = 4
    x = torch.randn(2, 10, 16)                                           # a batch of 2, 10 tokens
    with torch.no_grad():
        _, (K, V) = heads.attend_with_cache(mha, x)
    kept = sum(t.numel() * t.element_size() for t in (K, V))
    assert cost.kv_cache_bytes(1, 4, 4, "float32", tokens=10, batch=2) == kept
    assert cost.kv_cache_bytes(32, 32, 128, "float16") == 524_288     # a 32-layer model's 2 × 32 × 32 × 128 × 2 B


def test_attention_dropout_rescales_and_rows_stop_summing_to_one():
    W = torch.softmax(torch.randn(6, 6, generator=torch.Generator().manual_seed(0)), dim=-1)
    dropped = heads.attention_dropout(W, 0.5, torch.Generator().manual_seed(0))
    kept = dropped != 0
    torch.testing.assert_close(dropped[kept], W[kept] * 2)
    assert not torch.allclose(dropped.sum(-1), torch.ones(6))
    many = torch.stack([heads.attention_dropout(W, 0.5, torch.Generator().manual_seed(s)) for s in range(4000)])
    torch.testing.assert_close(many.mean(0), W, atol=0.02, rtol=0)       # the rescale keeps the expectation


def test_dropout_at_p_0_1_zeroes_about_a_tenth_of_the_weights():
    W = torch.full((100, 100), 0.5)
    dropped = heads.attention_dropout(W, 0.1, torch.Generator().manual_seed(0))
    assert 0.08 < (dropped == 0).float().mean() < 0.12               # 10,000 draws: 0.1 ± 0.003 (one sd)
    torch.testing.assert_close(dropped[dropped != 0], torch.full_like(dropped[dropped != 0], 0.5 / 0.9))


# ---------------------------------------------------------------- the widget's function

def test_head_pattern_data_masks_and_rows():
    model = heads.demo_model()
    for mask_type in heads.MASK_TYPES:
        data = heads.head_pattern_data("money bank grows", 2, mask_type, model)
        assert data["tokens"] == ["money", "bank", "grows", heads.PAD, heads.PAD]
        np.testing.assert_allclose(data["W"].sum(-1), 1.0)
        assert np.all(data["W"][~data["mask"]] == 0)
        assert (data["on_padding"] > 0.01) == (mask_type == "none")
        real = data["W"][:data["length"]]                                  # the real words' rows: what they give PAD
        assert data["on_padding"] == pytest.approx(1 - real[:, :data["length"]].sum(-1).mean())
    assert data["weights"].shape == (4, 5, 5)


def test_widget_moves():
    from helpers.widgets.heads import HeadsWidget
    w = HeadsWidget()
    w.head.value = 3
    w.mask.value = "padding"
    assert w.result["head"] == 3 and w.result["on_padding"] == 0
    hidden, T = int((~w.result["mask"]).sum()), len(w.result["tokens"])
    assert 0 < hidden < T * T - hidden and f"{hidden} of {T ** 2} pairs hidden" in w.reading.value
    assert "head 3 (heads 0–3)" in w.reading.value
    assert math.isfinite(w.last_update_ms)          # measured


# ---------------------------------------------------------------- checkers


def test_split_heads_checker():
    assert verdict(ex.check_split_heads(ex.reference_split_heads))[0]
    assert verdict(ex.check_split_heads(split_heads))[0]
    assert verdict(ex.check_split_heads(lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3).numpy()))[0]
    failing(ex.check_split_heads(lambda x, h: x.view(x.size(0), h, x.size(1), -1)), "mixes tokens", "transpose")
    failing(ex.check_split_heads(lambda x, h: x.view(*x.shape[:2], -1, h).permute(0, 3, 1, 2)), "interleaved")
    failing(ex.check_split_heads(lambda x, h: x.view(*x.shape[:2], h, -1)), ".transpose(1, 2)")
    failing(ex.check_split_heads(lambda x, h: x.view(*x.shape[:2], h, -1).permute(0, 2, 3, 1)), "tokens come before")
    failing(ex.check_split_heads(lambda x, h: x[:, None]), "one head")
    failing(ex.check_split_heads(lambda x, h: torch.stack(x.chunk(h, -1))), "(H, B, T, d_k)", "stack on dim=1")
    failing(ex.check_split_heads(lambda x, h: None), "None")
    failing(ex.check_split_heads(lambda x, h: 1 / 0), "ZeroDivisionError")
    failing(ex.check_split_heads("x"), "expected a function")
    assert isinstance(ex.check_split_heads.solution(), Solution)


def test_causal_mask_checker():
    passed, message = verdict(ex.check_causal_mask(ex.reference_causal_mask))
    assert passed and "causal_mask, though" not in message
    def wraps(T_q, T_k):
        return causal_mask(T_q, T_k).int().numpy()

    for courses in (causal_mask, wraps):   # right, with the nudge to write it
        passed, message = verdict(ex.check_causal_mask(courses))
        assert passed and message.endswith("It calls a ready-made causal_mask, though: write it yourself.")
    failing(ex.check_causal_mask(lambda q, k: torch.ones(q, k).tril()), "top-left", "T_q=2, T_k=5")
    failing(ex.check_causal_mask(lambda q, k: ~causal_mask(q, k)), "polarity is flipped")
    failing(ex.check_causal_mask(lambda q, k: torch.ones(q, k).triu(1)), "flipped")
    failing(ex.check_causal_mask(lambda q, k: torch.ones(q, k).tril(k - q - 1)), "its own key")
    failing(ex.check_causal_mask(lambda q, k: torch.zeros(q, k).masked_fill(~causal_mask(q, k), -math.inf)),
            "additive")
    failing(ex.check_causal_mask(lambda q, k: torch.ones(q, k).tril(q - k)), "sign is flipped")
    failing(ex.check_causal_mask(lambda q, k: causal_mask(q)), "shape")
    failing(ex.check_causal_mask(lambda q, k: torch.ones(q, k).tril(k - q + 1)), "token after it")
    for upper in (lambda q, k: torch.ones(q, k).triu(k - q), lambda q, k: causal_mask(k)[-q:].T):   # square: one
        failing(ex.check_causal_mask(upper), "upper triangle (triu)", "T_q=4, T_k=4")
    message = verdict(ex.check_causal_mask(lambda q, k: None))[1]
    assert message.count("T_q=4, T_k=4") == 1, message          # the case is named once
    failing(ex.check_causal_mask(lambda q, k: "tril"), "True/False")
    bias = pytest.importorskip("torch.nn.attention.bias")      # not in the floor's PyTorch
    failing(ex.check_causal_mask(bias.causal_lower_right), "causal_lower_right(...) object", "T_q=4, T_k=4")
    assert isinstance(ex.check_causal_mask.solution(), Solution)


def test_combined_mask_checker():
    assert verdict(ex.check_combined_mask(ex.reference_combined_mask))[0]
    failing(ex.check_combined_mask(lambda n, T: padding_mask(n, T) and causal_mask(T)), "if a truth value is "
            "ambiguous: and, or, not ask a whole tensor for one True or False, where & | ~ go entry by entry.")
    assert verdict(ex.check_combined_mask(lambda n, T: padding_mask(n, T) & causal_mask(T)))[0]
    failing(ex.check_combined_mask(lambda n, T: causal_mask(T)), "padding is missing", "<pad> queries attend")
    pad_rows = lambda n, T: padding_mask(n, T).transpose(-1, -2) & padding_mask(n, T) & causal_mask(T)  # noqa: E731
    failing(ex.check_combined_mask(pad_rows), "hid the <pad> QUERIES", "NaN")
    failing(ex.check_combined_mask(lambda n, T: padding_mask(n, T)), "causal part is missing")
    failing(ex.check_combined_mask(lambda n, T: ~(padding_mask(n, T) & causal_mask(T))), "polarity")
    failing(ex.check_combined_mask(lambda n, T: padding_mask(n, T) | causal_mask(T)), "OR")
    failing(ex.check_combined_mask(lambda n, T: padding_mask(n, T).transpose(-1, -2) & causal_mask(T)),
            "QUERIES")
    one_more = lambda n, T: (torch.arange(T) <= n[:, None])[:, None, None, :] & causal_mask(T)  # noqa: E731
    failing(ex.check_combined_mask(one_more), "j < length")
    failing(ex.check_combined_mask(lambda n, T: (padding_mask(n, T) & causal_mask(T))[:, 0]), "head axis")
    failing(ex.check_combined_mask(lambda n, T: torch.ones(3, 3)), "does not broadcast")
    failing(ex.check_combined_mask(lambda n, T: (padding_mask(n, T) & causal_mask(T)).expand(-1, 4, -1, -1)),
            "head axis of 4 fits only scores with 4 heads")
    failing(ex.check_combined_mask(lambda n, T: None), "None")
    assert isinstance(ex.check_combined_mask.solution(), Solution)


def test_an_answer_that_hard_codes_the_pages_head_size_fails_on_a_drawn_case():
    feedback = ex.check_split_heads(lambda x, n_heads: x.view(x.size(0), x.size(1), -1, 4).transpose(1, 2))
    failing(feedback, "drawn at random")


def test_a_mask_as_wide_as_the_longest_sentence_fails_on_a_drawn_case():
    def as_wide_as_the_longest(lengths, T):
        T = int(max(lengths))                                  # the page's batches: T is the longest length
        return padding_mask(lengths, T) & causal_mask(T)

    failing(ex.check_combined_mask(as_wide_as_the_longest), "drawn at random", "does not broadcast")


def test_attention_weights_are_not_a_mask():
    def weights(T_q, T_k):
        allowed = torch.ones(T_q, T_k).tril(T_k - T_q)
        return allowed / allowed.sum(-1, keepdim=True)            # zero where hidden, but no 1s
    failing(ex.check_causal_mask(weights), "the mask holds 0.5", "weights are no mask")
    failing(ex.check_combined_mask(lambda lengths, T: 0.5 * ex.reference_combined_mask(lengths, T)), "holds 0.5")
    summed = lambda lengths, T: heads.padding_mask(lengths, T).int() + causal_mask(T).int()  # noqa: E731
    failing(ex.check_combined_mask(summed), "the mask holds 2.0", "masks combine with &, not +")


@pytest.mark.parametrize("answer", [lambda lengths, T: torch.ones(T, T, dtype=torch.bool).tril(-1),
                                    lambda lengths, T: torch.ones(T, T, dtype=torch.bool).triu(),
                                    lambda lengths, T: ex.reference_combined_mask(lengths[:1], T)])
def test_a_combined_mask_without_its_batch_axis_is_told_so(answer):
    failing(ex.check_combined_mask(answer), "one mask for every sentence of the batch", "(B, 1, T, T)")


def test_a_combined_mask_that_hides_the_diagonal_or_ands_floats_is_named():
    def real_keys(lengths, T):
        return (torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None])[:, None, None, :]
    failing(ex.check_combined_mask(lambda lengths, T: real_keys(lengths, T) & torch.ones(T, T, dtype=torch.bool).tril(
        -1)), "every token is kept off its own key", "query 0's row is empty")
    failing(ex.check_combined_mask(lambda lengths, T: real_keys(lengths, T) & torch.ones(T, T).bool().triu()),
            "the causal part is the upper triangle (triu)")
    failing(ex.check_combined_mask(lambda lengths, T: real_keys(lengths, T) & torch.ones(T, T).tril()),
            "your function raised ", "dtype=torch.bool")
    failing(ex.check_causal_mask(lambda T_q, T_k: torch.ones(T_q, T_k).tril(T_k - T_q) & torch.ones(T_q, T_k)),
            "your function raised ", "dtype=torch.bool")
    assert failing(ex.check_causal_mask(lambda T_q, T_k: torch.ones(T_q, T_k).tril())).endswith("tril(diagonal=T_k "
                                                                                                 "- T_q).")
