"""helpers.attention_torch: equal to PyTorch's SDPA, the mask convention, and clear errors at the edge."""
import math
import re

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from stored_notebooks import prose

from helpers.attention_torch import (
    SelfAttention,
    attention_weights,
    causal_mask,
    check_attention_inputs,
    count_parameters,
    scaled_dot_product_attention,
)


def qkv(*batch, T=6, d_k=8, d_v=8, T_k=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    T_k = T if T_k is None else T_k
    return (torch.randn(*batch, T, d_k, generator=g), torch.randn(*batch, T_k, d_k, generator=g),
            torch.randn(*batch, T_k, d_v, generator=g))


# ---------------------------------------------------------------- equal to PyTorch

@pytest.mark.parametrize("batch", [(), (3,), (2, 4)])
def test_equals_torch_sdpa_without_mask(batch):
    Q, K, V = qkv(*batch)
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V), F.scaled_dot_product_attention(Q, K, V))


@pytest.mark.parametrize("batch", [(), (3,), (2, 4)])
def test_equals_torch_sdpa_with_causal_mask(batch):
    Q, K, V = qkv(*batch, T=7)
    mask = causal_mask(7)
    ours = scaled_dot_product_attention(Q, K, V, mask)
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(Q, K, V, is_causal=True))
    # SDPA's boolean attn_mask has the same polarity as ours: True = may attend.
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))


def test_equals_torch_sdpa_with_cross_attention_shapes_and_d_v():
    Q, K, V = qkv(2, T=3, T_k=5, d_k=4, d_v=6)
    out = scaled_dot_product_attention(Q, K, V)
    assert out.shape == (2, 3, 6)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V))


def test_matches_the_formula_written_out():
    Q, K, V = qkv(T=4, d_k=5)
    W = torch.softmax(Q @ K.T / math.sqrt(5), dim=-1)
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V), W @ V)
    torch.testing.assert_close(attention_weights(Q, K), W)


def test_the_module_text_worked_example():
    E = torch.tensor([[1.0, 0, 1, 0], [1.0, 1, 0, 0], [0.0, 1, 1, 1]])
    W = attention_weights(E, E)
    torch.testing.assert_close(W[1], torch.tensor([0.2741, 0.4519, 0.2741]), atol=1e-4, rtol=0)
    Y = scaled_dot_product_attention(E, E, E)
    torch.testing.assert_close(Y[1], torch.tensor([0.7259, 0.7259, 0.5481, 0.2741]), atol=1e-4, rtol=0)


# ---------------------------------------------------------------- the mask

def test_causal_mask_is_lower_triangular_booleans():
    m = causal_mask(3)
    assert m.dtype == torch.bool
    assert m.tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_causal_mask_is_bottom_right_aligned():
    """The last T_q of T_k tokens: query i sees keys 0 … T_k − T_q + i (torch's causal_lower_right)."""
    m = causal_mask(2, 5)
    assert m.shape == (2, 5) and m.dtype == torch.bool
    assert torch.equal(m, torch.ones(2, 5).tril(diagonal=3).bool())
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    try:
        from torch.nn.attention.bias import causal_lower_right
    except ImportError:
        pytest.skip("torch.nn.attention.bias.causal_lower_right is not in this PyTorch")
    Q, K, V = qkv(1, 1, T=2, T_k=5)
    bias = causal_lower_right(2, 5)
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V, m),
                               F.scaled_dot_product_attention(Q, K, V, attn_mask=bias))
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V, m),
                               F.scaled_dot_product_attention(Q, K, V, attn_mask=m))


def test_causal_mask_on_a_device():
    assert causal_mask(3, device="cpu").device == torch.device("cpu")
    meta = causal_mask(2, 5, device="meta")                # a device other than the default, without a GPU
    assert meta.device.type == "meta" and meta.shape == (2, 5)


@pytest.mark.parametrize("mask_shape", [(1, 1, 5, 5), (2, 1, 1, 5)])
def test_a_mask_broadcasts_over_batch_and_heads(mask_shape):
    """(1, 1, T, T): one mask for every sequence and head; (B, 1, 1, T): per-sequence padding of the keys."""
    B, H, T = 2, 3, 5
    Q, K, V = qkv(B, H, T=T)
    if mask_shape == (1, 1, T, T):
        mask = causal_mask(T)[None, None]
    else:
        mask = torch.ones(mask_shape, dtype=torch.bool)
        mask[0, ..., 3:] = False  # sequence 0 is padded after 3 tokens
    out = scaled_dot_product_attention(Q, K, V, mask)
    assert out.shape == (B, H, T, 8)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))
    W = attention_weights(Q, K, mask)
    assert W.shape == (B, H, T, T)
    assert torch.all(W[~mask.expand(B, H, T, T)] == 0)
    torch.testing.assert_close(W.sum(-1), torch.ones(B, H, T))


def test_mask_zero_means_may_not_attend():
    Q, K, V = qkv(T=4)
    W = attention_weights(Q, K, causal_mask(4))
    assert torch.all(W.triu(diagonal=1) == 0), "weights above the diagonal (the future) are exactly 0"
    torch.testing.assert_close(W.sum(-1), torch.ones(4))
    assert W[0, 0] == 1.0, "the first token can only see itself"


def test_a_hidden_key_stays_hidden_however_low_the_visible_scores():
    """Hidden means −inf, not a large negative number: with every visible score near −10¹⁰ a key 'hidden' by −10⁹
    would take all the weight."""
    Q, K = torch.tensor([[1e5]]), torch.tensor([[-1e5], [0.0]])      # scores −10¹⁰ (visible) and 0 (hidden)
    torch.testing.assert_close(attention_weights(Q, K, torch.tensor([[True, False]])), torch.tensor([[1.0, 0.0]]))


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.float32, torch.int64])
def test_any_dtype_of_mask_uses_the_zero_means_hidden_rule(mask_dtype):
    Q, K, V = qkv(T=5)
    expected = scaled_dot_product_attention(Q, K, V, causal_mask(5))
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V, causal_mask(5).to(mask_dtype)), expected)


def test_wrong_polarity_is_a_different_answer():
    """The classic bug: the mask inverted. It must not pass silently as the same result."""
    Q, K, V = qkv(T=5)
    right = scaled_dot_product_attention(Q, K, V, causal_mask(5))
    inverted = ~causal_mask(5)
    inverted[-1, 0] = True  # keep every row attendable so the inverted mask is legal
    wrong = scaled_dot_product_attention(Q, K, V, inverted)
    assert not torch.allclose(right, wrong)
    W = attention_weights(Q, K, inverted)
    assert torch.all(W.tril(diagonal=-1)[:-1] == 0), "the inverted mask looks only at the future"


def test_multihead_attention_uses_the_opposite_boolean_polarity():
    """nn.MultiheadAttention's boolean attn_mask: True = may NOT attend; ~causal_mask gives our result."""
    torch.manual_seed(0)
    d = 6
    ours = SelfAttention(d, d)
    mha = nn.MultiheadAttention(d, num_heads=1, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        mha.out_proj.weight.copy_(torch.eye(d))
    x = torch.randn(2, 5, d)
    mask = causal_mask(5)
    expected = ours(x, mask)
    got, _ = mha(x, x, x, attn_mask=~mask, need_weights=False)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    bug, _ = mha(x, x, x, attn_mask=mask, need_weights=False)  # our polarity handed to MHA: the classic bug
    assert not torch.allclose(bug, expected, atol=1e-3)


def test_a_fully_masked_row_raises_instead_of_nan():
    Q, K, V = qkv(T=3)
    mask = causal_mask(3).clone()
    mask[1] = False
    with pytest.raises(ValueError, match=r"hides every key from query row 1.*NaN"):
        scaled_dot_product_attention(Q, K, V, mask)
    with pytest.raises(ValueError, match=r"hides every key from query row 0: softmax"):   # no batch axes to name
        SelfAttention(4, 4)(torch.randn(3, 4), torch.zeros(3, 3))


def test_a_fully_masked_row_in_a_batch_names_its_index():
    Q, K, V = qkv(2, T=3)
    mask = causal_mask(3).repeat(2, 1, 1)
    mask[1, 2] = False
    with pytest.raises(ValueError, match=r"query row 2 of mask\[1\]: softmax"):
        scaled_dot_product_attention(Q, K, V, mask)
    mask = torch.ones(2, 3, 1, 3, dtype=torch.bool)   # (B, H, 1, T_k): sentence 1's head 2 sees no key, from any query
    mask[1, 2] = False
    with pytest.raises(ValueError, match=r"hides every key from every query of mask\[1, 2\]: softmax"):
        scaled_dot_product_attention(*qkv(2, 3, T=3), mask)


@pytest.mark.parametrize("need_weights", [True, False])
def test_torch_does_not_raise_on_a_fully_masked_row(need_weights):
    """Documents what PyTorch itself does (zeros or NaN, by function, arguments and version): silent either way,
    SDPA and nn.MultiheadAttention alike (notebooks 07 and 09 say so; make test-floor runs this on torch 2.3)."""
    Q, K, V = qkv(1, 1, T=3)
    mask = causal_mask(3).clone()
    mask[1] = False
    mha = torch.nn.MultiheadAttention(8, 1, batch_first=True)
    with torch.no_grad():
        rows = [F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)[0, 0, 1],
                mha(Q[0], K[0], V[0], attn_mask=~mask, need_weights=need_weights)[0][0, 1]]
    assert all(torch.all(row == 0) or torch.isnan(row).all() for row in rows)


def test_mask_of_the_wrong_shape_or_type():
    Q, K, V = qkv(T=3)
    with pytest.raises(ValueError, match=r"mask has shape \(4, 4\), which does not broadcast to the scores' "
                                         r"shape \(\.\.\., T_q, T_k\) = \(3, 3\)"):
        scaled_dot_product_attention(Q, K, V, causal_mask(4))
    with pytest.raises(TypeError, match="mask should be a torch.Tensor"):
        scaled_dot_product_attention(Q, K, V, [[1, 0, 0], [1, 1, 0], [1, 1, 1]])


# ---------------------------------------------------------------- bad input

def test_d_k_mismatch_is_explained():
    Q, _, V = qkv(T=3, d_k=4)
    K = torch.randn(3, 3)
    with pytest.raises(ValueError, match="Q has d_k=4 but K has d_k=3"):
        scaled_dot_product_attention(Q, K, V)


def test_keys_and_values_must_pair_up():
    Q, K, _ = qkv(T=3)
    with pytest.raises(ValueError, match="K has T_k=3 keys but V has 4 values"):
        scaled_dot_product_attention(Q, K, torch.randn(4, 8))


@pytest.mark.parametrize("bad, message", [
    ([[1.0, 2.0]], r"Q should be a floating-point torch.Tensor of shape \(\.\.\., T_q, d_k\), but got list"),
    (None, "Q should be a floating-point torch.Tensor"),
])
def test_wrong_types(bad, message):
    _, K, V = qkv(T=3)
    with pytest.raises(TypeError, match=message):
        scaled_dot_product_attention(bad, K, V)


def test_integer_tensors_and_vectors_are_refused():
    _, K, V = qkv(T=3)
    with pytest.raises(TypeError, match=r"Q should be a floating-point torch.Tensor.*torch.int64"):
        scaled_dot_product_attention(torch.ones(3, 8, dtype=torch.int64), K, V)
    with pytest.raises(TypeError, match=r"Q should be a floating-point torch.Tensor.*\(8,\)"):
        scaled_dot_product_attention(torch.ones(8), K, V)


def test_check_attention_inputs_accepts_a_good_triple_and_batch_axes_broadcast():
    assert check_attention_inputs(*qkv(2, T=3, T_k=4, d_v=5)) is None
    Q, _, _ = qkv(2, 1, T=3)                                                     # (2, 1, 3, 8)
    _, K, V = qkv(3, T=3, T_k=4, d_v=5)                                          # (3, 4, 8), (3, 4, 5)
    assert check_attention_inputs(Q, K, V, causal_mask(3, 4)) is None
    out = scaled_dot_product_attention(Q, K, V, causal_mask(3, 4))
    assert out.shape == (2, 3, 3, 5)                                             # batch axes broadcast
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K.expand(2, 3, 4, 8), V.expand(2, 3, 4, 5),
                                                                   attn_mask=causal_mask(3, 4)))


# ---------------------------------------------------------------- the module

def test_self_attention_shape_and_parameters():
    layer = SelfAttention(d_model=16, d_k=4)
    assert count_parameters(layer) == 3 * 16 * 4
    out = layer(torch.randn(2, 5, 16))
    assert out.shape == (2, 5, 4)


def test_count_parameters_leaves_out_frozen_weights():
    layer = SelfAttention(d_model=16, d_k=4)
    layer.W_q.weight.requires_grad_(False)                              # frozen: not trained
    assert count_parameters(layer) == 3 * 16 * 4 - 16 * 4


def test_self_attention_is_the_bare_function_on_projections():
    torch.manual_seed(1)
    layer = SelfAttention(6, 3)
    x = torch.randn(2, 4, 6)
    Q, K, V = x @ layer.W_q.weight.T, x @ layer.W_k.weight.T, x @ layer.W_v.weight.T
    torch.testing.assert_close(layer(x), F.scaled_dot_product_attention(Q, K, V))
    torch.testing.assert_close(layer(x, causal_mask(4)), F.scaled_dot_product_attention(Q, K, V, is_causal=True))
    torch.testing.assert_close(layer.weights(x).sum(-1), torch.ones(2, 4))


def test_self_attention_names_an_input_it_was_not_built_for():
    layer = SelfAttention(4, 2)
    with pytest.raises(ValueError, match=r"\(B, T, 4\).*got Tensor of shape \(3, 5\)\."):
        layer(torch.randn(3, 5))                                      # 5 numbers per token, built for 4
    with pytest.raises(ValueError, match=r"got Tensor of shape \(4,\)\."):
        layer(torch.randn(4))                                         # one token without its T axis
    with pytest.raises(TypeError, match="torch.float64.*torch.float32.*x.to"):
        layer(torch.tensor(np.ones((2, 3, 4))))                       # float64 from NumPy, float32 weights
    assert layer(torch.ones(2, 3, 4)).shape == (2, 3, 2)


def test_self_attention_takes_numpy_integers():
    assert SelfAttention(np.int64(4), np.int64(2)).d_k == 2          # NumPy integers are whole numbers


def test_an_additive_mask_is_refused_with_the_convention_spelled_out():
    Q = K = V = torch.randn(1, 4, 3)
    additive = torch.zeros(4, 4).masked_fill(~causal_mask(4), float("-inf"))
    with pytest.raises(ValueError, match="additive mask.*'may attend' mask"):
        scaled_dot_product_attention(Q, K, V, additive)
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V, additive == 0),
                               scaled_dot_product_attention(Q, K, V, causal_mask(4)))


def test_a_float_mask_with_any_negative_number_is_refused_as_additive():
    Q = K = V = torch.randn(1, 3, 2)
    with pytest.raises(ValueError, match="additive mask"):
        scaled_dot_product_attention(Q, K, V, torch.tensor([[0.0, -0.5, 0.0]] * 3))   # no -inf, still additive


def test_mixed_dtypes_and_mask_batches_are_named():
    Q = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match=r"Q is torch.float64 on cpu but K is torch.float32 on cpu.*K = K.to\(Q\)"):
        scaled_dot_product_attention(Q.double(), Q, Q)
    with pytest.raises(TypeError, match="Q is torch.float32 on cpu but V is torch.float64 on cpu"):
        scaled_dot_product_attention(Q, Q, Q.double())
    with pytest.raises(TypeError, match="Q is torch.float32 on cpu but K is torch.float64 on cpu"):
        scaled_dot_product_attention(Q, Q.double(), Q.double())
    with pytest.raises(ValueError, match=r"mask has shape \(3, 3, 3\), which does not broadcast"):
        scaled_dot_product_attention(Q, Q, Q, torch.ones(3, 3, 3))


@pytest.mark.parametrize("heads", [(), (4,)])
def test_a_mask_with_one_flag_per_key_is_shown_its_missing_axes(heads):
    """(B, T) padding flags against (B, T, T) or (B, H, T, T) scores: the hint adds the query (and head) axes,
    and the mask it names works; a mask of other sizes gets no such hint; one with an axis too many is told to
    drop it."""
    Q, keep = torch.randn(2, *heads, 5, 4), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]).bool()
    with pytest.raises(ValueError) as error:
        scaled_dot_product_attention(Q, Q, Q, keep)
    hint = re.search(r"if its first axis is the batch, use (mask\[.*\])\.$", str(error.value))
    assert hint is not None, str(error.value)
    scaled_dot_product_attention(Q, Q, Q, eval(hint.group(1), {"mask": keep}))   # the named mask runs
    with pytest.raises(ValueError) as error:                                   # a (T_q, T_k) mask of other sizes
        scaled_dot_product_attention(Q, Q, Q, causal_mask(4, 5))
    assert "first axis" not in str(error.value)
    with pytest.raises(ValueError, match=r"\(mask\[:, 0\] drops a head axis\)\.$"):
        scaled_dot_product_attention(Q, Q, Q, keep[:, None, None, None])
    with pytest.raises(ValueError) as error:                                   # as many axes as the scores
        scaled_dot_product_attention(Q, Q, Q, torch.ones(3, *heads, 5, 5))
    assert "drops a head axis" not in str(error.value) and "first axis" not in str(error.value)


def test_inputs_on_two_devices_are_named():
    Q = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match=r"Q is torch.float32 on cpu but K is torch.float32 on meta"):   # no GPU needed
        scaled_dot_product_attention(Q, Q.to("meta"), Q)
    with pytest.raises(TypeError, match=r"x is torch.float32 on meta but the module's weights are torch.float32 on"):
        SelfAttention(4, 2)(Q.to("meta"))


@pytest.mark.parametrize("mask", [torch.zeros(3), torch.tensor(0.0)])
def test_a_one_dimensional_mask_that_hides_every_key_is_named(mask):
    Q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="hides every key from every query: softmax"):   # no row axis: all of them
        scaled_dot_product_attention(Q, Q, Q, mask)


def test_the_modules_check_their_input_and_mask_once_where_it_enters():
    layer = SelfAttention(4, 2)
    with pytest.raises(ValueError, match="x should be a torch.Tensor of shape"):
        layer(torch.randn(4, 3))
    with pytest.raises(ValueError, match="additive mask"):
        layer(torch.randn(4, 4), torch.zeros(4, 4).masked_fill(~causal_mask(4), -1e9))
    with pytest.raises(ValueError, match="does not broadcast"):
        layer(torch.randn(4, 4), causal_mask(5))


def test_pytorchs_causal_bias_is_named_for_what_it_is():
    from torch.nn.attention.bias import causal_lower_right
    Q = torch.randn(2, 4)
    with pytest.raises(TypeError, match=r"causal_lower_right\(\.\.\.\) object.*causal_mask\(2, 4\)"):
        scaled_dot_product_attention(Q, torch.randn(4, 4), torch.randn(4, 4), causal_lower_right(2, 4))
    from helpers.heads import MultiHeadAttention, SeparateHeads
    x = torch.randn(2, 5, 8)
    for layer in (SelfAttention(8, 4), SeparateHeads(8, 2), MultiHeadAttention(8, 2)):   # a module names it too
        with pytest.raises(TypeError, match=r"causal_lower_right\(\.\.\.\) object.*causal_mask\(5, 5\)"):
            layer(x, causal_lower_right(5, 5))


def test_a_hidden_key_gets_no_weight_even_beside_very_low_scores():
    """-inf, not a large negative number: with every visible score below -1e4, a stand-in would win the row."""
    Q, K = torch.tensor([[1.0]], dtype=torch.float64), torch.tensor([[-3e4], [-2e4], [0.0]], dtype=torch.float64)
    W = attention_weights(Q, K, torch.tensor([[True, True, False]]))
    assert W[0, 2] == 0 and W[0, 1] == 1


def test_a_mask_that_would_add_axes_to_the_scores_is_refused():
    """A (B, 1, 1, T) padding mask on (B, T, T) scores would pair every sentence with every other's mask."""
    x, pad = torch.randn(2, 5, 16), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]).bool()[:, None, None]
    for attend in (lambda: scaled_dot_product_attention(x, x, x, pad), lambda: SelfAttention(16, 4)(x, pad)):
        with pytest.raises(ValueError, match=r"= \(2, 5, 5\) but turns it into \(2, 2, 5, 5\)"):
            attend()
    assert scaled_dot_product_attention(x, x, x, pad[:, 0]).shape == (2, 5, 16)   # (B, 1, T): one mask a sentence


@pytest.mark.skipif(not torch.__version__.startswith("2.13."), reason="notebook 07 says what torch 2.13 does")
def test_notebook_07s_flipped_mask_as_torch_2_13_treats_it():
    """The colleague's causal mask read as True = hidden: the last row has no key. torch 2.13's MultiheadAttention
    gives it zeros with need_weights=False, NaN with need_weights=True; and NaN with need_weights=False too on its
    faster path (eval() under no_grad, two heads with biases, batch_first), not with section 3's one head without
    biases: as 07's Check yourself says."""
    torch.manual_seed(0)
    x, flipped = torch.randn(1, 5, 8), torch.ones(5, 5).tril().bool()   # True = hidden: the last row sees nothing
    fast, section_3 = (nn.MultiheadAttention(8, 2, batch_first=True),
                       nn.MultiheadAttention(8, num_heads=1, bias=False, batch_first=True))

    def last_row(mha, need_weights=False):
        return mha(x, x, x, attn_mask=flipped, need_weights=need_weights)[0][0, -1]
    assert (last_row(fast) == 0).all() and last_row(fast, need_weights=True).isnan().all()
    with torch.no_grad():
        assert last_row(fast.eval()).isnan().all() and (last_row(section_3.eval()) == 0).all()
    assert ("two heads with biases and `batch_first=True` take it; section 3's one head without biases does not, and "
            "gives zeros either way") in prose("07")
