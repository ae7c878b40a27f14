"""helpers.attention_torch: equal to PyTorch's SDPA, the mask convention, and clear errors."""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.attention_torch import (
    SelfAttention,
    attention_weights,
    causal_mask,
    check_qkv,
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


def test_mask_zero_means_may_not_attend():
    Q, K, V = qkv(T=4)
    W = attention_weights(Q, K, causal_mask(4))
    assert torch.all(W.triu(diagonal=1) == 0), "weights above the diagonal (the future) are exactly 0"
    torch.testing.assert_close(W.sum(-1), torch.ones(4))
    assert W[0, 0] == 1.0, "the first token can only see itself"


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
    with pytest.raises(ValueError, match="hides every key"):
        attention_weights(Q, K, torch.zeros(3, 3))


def test_a_fully_masked_row_in_a_batch_names_its_index():
    Q, K, V = qkv(2, T=3)
    mask = causal_mask(3).repeat(2, 1, 1)
    mask[1, 2] = False
    with pytest.raises(ValueError, match=r"query row 2 \(index \(1, 2\)\)"):
        scaled_dot_product_attention(Q, K, V, mask)


def test_torch_sdpa_does_not_raise_on_a_fully_masked_row():
    """Documents what PyTorch itself does (zeros or NaN by version): silent either way."""
    Q, K, V = qkv(1, 1, T=3)
    mask = causal_mask(3).clone()
    mask[1] = False
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    row = out[0, 0, 1]
    assert torch.all(row == 0) or torch.isnan(row).all()


def test_mask_of_the_wrong_shape_or_type():
    Q, K, V = qkv(T=3)
    with pytest.raises(ValueError, match=r"mask should end in shape \(T_q, T_k\) = \(3, 3\)"):
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


def test_batch_dimensions_must_broadcast():
    Q, K, V = qkv(2, T=3)
    with pytest.raises(ValueError, match="batch dimensions"):
        scaled_dot_product_attention(Q, K[:1].expand(3, 3, 8).clone(), V[:1].expand(3, 3, 8).clone())


def test_nan_is_refused_where_it_enters():
    Q, K, V = qkv(T=3)
    K[1, 2] = float("nan")
    with pytest.raises(ValueError, match="K contains NaN"):
        scaled_dot_product_attention(Q, K, V)


@pytest.mark.parametrize("bad, message", [
    ([[1.0, 2.0]], "Q should be a torch.Tensor of shape"),
    (None, "Q should be a torch.Tensor"),
])
def test_wrong_types(bad, message):
    _, K, V = qkv(T=3)
    with pytest.raises(TypeError, match=message):
        scaled_dot_product_attention(bad, K, V)


def test_integer_tensors_and_vectors_are_refused():
    _, K, V = qkv(T=3)
    with pytest.raises(TypeError, match=r"floating-point.*Q.float\(\)"):
        scaled_dot_product_attention(torch.ones(3, 8, dtype=torch.int64), K, V)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        scaled_dot_product_attention(torch.ones(8), K, V)


def test_check_qkv_accepts_a_good_triple():
    assert check_qkv(*qkv(2, T=3, T_k=4, d_v=5)) == torch.Size([2])            # the batch shape
    Q, _, _ = qkv(2, 1, T=3)                                                     # (2, 1, 3, 8)
    _, K, V = qkv(3, T=3, T_k=4, d_v=5)                                          # (3, 4, 8), (3, 4, 5)
    assert check_qkv(Q, K, V) == torch.Size([2, 3])                              # batch axes broadcast


# ---------------------------------------------------------------- the module

def test_self_attention_shape_and_parameters():
    layer = SelfAttention(d_model=16, d_k=4)
    assert count_parameters(layer) == 3 * 16 * 4
    out = layer(torch.randn(2, 5, 16))
    assert out.shape == (2, 5, 4)


def test_self_attention_is_the_bare_function_on_projections():
    torch.manual_seed(1)
    layer = SelfAttention(6, 3)
    x = torch.randn(2, 4, 6)
    Q, K, V = x @ layer.W_q.weight.T, x @ layer.W_k.weight.T, x @ layer.W_v.weight.T
    torch.testing.assert_close(layer(x), F.scaled_dot_product_attention(Q, K, V))
    torch.testing.assert_close(layer(x, causal_mask(4)), F.scaled_dot_product_attention(Q, K, V, is_causal=True))
    torch.testing.assert_close(layer.weights(x).sum(-1), torch.ones(2, 4))


def test_self_attention_bad_construction_and_input():
    with pytest.raises(ValueError, match="d_model should be at least 1, but got 0"):
        SelfAttention(0, 4)
    with pytest.raises(TypeError, match="d_k should be a whole number, but got float"):
        SelfAttention(4, 2.5)
    assert SelfAttention(np.int64(4), np.int64(2)).d_k == 2          # NumPy integers are whole numbers
    with pytest.raises(ValueError, match="x has 5 features per token but this SelfAttention was built with d_model=4"):
        SelfAttention(4, 2)(torch.randn(1, 3, 5))
    with pytest.raises(TypeError, match=r"x is torch.float64 but this SelfAttention's weights are torch.float32.*"
                                        r"torch.tensor\(numpy_array\) gives float64"):
        SelfAttention(4, 2)(torch.randn(1, 3, 4, dtype=torch.float64))


def test_an_additive_mask_is_refused_with_the_convention_spelled_out():
    Q = K = V = torch.randn(1, 4, 3)
    additive = torch.zeros(4, 4).masked_fill(~causal_mask(4), float("-inf"))
    with pytest.raises(ValueError, match="additive mask.*'may attend' mask"):
        scaled_dot_product_attention(Q, K, V, additive)
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V, additive == 0),
                               scaled_dot_product_attention(Q, K, V, causal_mask(4)))


def test_inf_in_an_input_is_reported_not_returned_as_nan():
    from helpers.attention_torch import refuse_nonfinite

    Q = torch.randn(1, 4, 3)
    K = Q.clone()
    K[0, 1, 0] = float("inf")
    with pytest.raises(ValueError, match="K contains infinity"):
        scaled_dot_product_attention(Q, K, torch.randn(1, 4, 3))
    V = torch.randn(1, 4, 3)
    V[0, 2, 1] = float("inf")
    with pytest.raises(ValueError, match="V contains infinity"):
        scaled_dot_product_attention(Q, Q, V)
    with pytest.raises(ValueError, match="Q contains NaN"):
        attention_weights(torch.full((1, 4, 3), float("nan")), Q)
    big = torch.full((1, 4, 3), 300.0, dtype=torch.float16)
    with pytest.raises(ValueError, match="too large for torch.float16"):
        scaled_dot_product_attention(big, big, big)
    out = torch.ones(2)
    assert refuse_nonfinite(out, x=torch.zeros(1)) is out


def test_mixed_dtypes_empty_axes_and_bad_batches_are_named():
    Q = torch.randn(2, 3, 4)
    with pytest.raises(TypeError, match=r"Q is torch.float64 but K is torch.float32.*K.to\(Q.dtype\)"):
        scaled_dot_product_attention(Q.double(), Q, Q)
    with pytest.raises(TypeError, match="Q is torch.float32 but V is torch.float64"):
        scaled_dot_product_attention(Q, Q, Q.double())
    with pytest.raises(ValueError, match="d_k=0"):
        scaled_dot_product_attention(torch.zeros(2, 3, 0), torch.zeros(2, 3, 0), Q)
    with pytest.raises(ValueError, match="K has no keys"):
        attention_weights(Q, torch.zeros(2, 0, 4))
    with pytest.raises(ValueError, match=r"batch dimensions of Q \(2,\) and K \(3,\)"):
        attention_weights(Q, torch.randn(3, 3, 4))
    with pytest.raises(ValueError, match=r"mask has batch dimensions \(3,\) but the queries and keys have \(2,\)"):
        scaled_dot_product_attention(Q, Q, Q, torch.ones(3, 3, 3))
    nan_mask = torch.ones(3, 3)
    nan_mask[1, 1] = float("nan")
    with pytest.raises(ValueError, match="mask contains NaN"):
        scaled_dot_product_attention(Q, Q, Q, nan_mask)


@pytest.mark.parametrize("bad", [2.5, "4", None, 0, True])
def test_causal_mask_wants_a_whole_number(bad):
    with pytest.raises((TypeError, ValueError), match="T should be"):
        causal_mask(bad)


def test_attention_weights_check_their_inputs_too():
    from helpers.attention_torch import SelfAttention, attention_weights

    with pytest.raises(ValueError, match="Q has d_k=3 but K has d_k=2"):
        attention_weights(torch.randn(4, 3), torch.randn(4, 2))
    with pytest.raises(TypeError, match="Q should be a torch.Tensor"):
        attention_weights("QK", torch.randn(4, 2))
    with pytest.raises(ValueError, match="x has 3 features per token but this SelfAttention was built with d_model=4"):
        SelfAttention(4, 2).weights(torch.randn(1, 5, 3))
