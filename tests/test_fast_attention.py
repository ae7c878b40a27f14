"""helpers.fast_attention: the lean and tiled forms give the textbook result (they check nothing: no GPU waits)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention_torch import causal_mask, scaled_dot_product_attention
from helpers.fast_attention import lean_attention, tiled_attention
from helpers.measure import cpu_peak_bytes, make_qkv


def test_lean_attention_is_a_drop_in_for_the_helpers_function():
    g = torch.Generator().manual_seed(0)
    Q, K, V = torch.randn(2, 3, 5, 4, generator=g), torch.randn(3, 7, 4, generator=g), torch.randn(3, 7, 6, generator=g)
    mask = (torch.rand(5, 7, generator=g) > 0.4)
    mask[:, 0] = True
    torch.testing.assert_close(lean_attention(Q, K, V, mask), scaled_dot_product_attention(Q, K, V, mask))
    torch.testing.assert_close(lean_attention(Q, K, V, mask.float()), scaled_dot_product_attention(Q, K, V, mask))


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_with_ragged_tiles_and_broadcast_batches(causal):
    g = torch.Generator().manual_seed(3)
    Q, K, V = torch.randn(2, 3, 9, 4, generator=g), torch.randn(3, 9, 4, generator=g), torch.randn(3, 9, 5, generator=g)
    expected = F.scaled_dot_product_attention(Q, K.expand(2, 3, 9, 4), V.expand(2, 3, 9, 5), is_causal=causal)
    torch.testing.assert_close(tiled_attention(Q, K, V, causal, block=4), expected)


def test_tiled_attention_never_holds_the_whole_matrix():
    Q, K, V = make_qkv(2, 256, 16)
    peak = cpu_peak_bytes(lambda: tiled_attention(Q, K, V, block=32))
    assert peak < 0.5 * 2 * 256 * 256 * 4


@pytest.mark.parametrize("causal", [False, True])
def test_lean_attention_with_a_causal_mask_and_numpy_block_for_tiled(causal):
    Q, K, V = make_qkv(3, 10, 4, seed=4)
    mask = causal_mask(10) if causal else None
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    torch.testing.assert_close(lean_attention(Q, K, V, mask), expected)
    torch.testing.assert_close(tiled_attention(Q, K, V, causal, block=np.int64(3)), expected)


def test_lean_attention_takes_a_mask_that_broadcasts_over_the_batch():
    Q, K, V = make_qkv(2, 5, 4)  # batch (1, 2)
    torch.testing.assert_close(lean_attention(Q, K, V, torch.ones(1, 2, 5, 5)), lean_attention(Q, K, V))
    padding = torch.ones(1, 1, 1, 5, dtype=torch.bool)
    padding[..., 4] = False
    torch.testing.assert_close(lean_attention(Q, K, V, padding), scaled_dot_product_attention(Q, K, V, padding))


def test_the_lean_form_does_not_scan_its_mask():
    """It is for timing valid inputs: a mask that hides every key from a query is not refused, unlike by the
    checked function (whose scan would make a GPU wait inside the timing). tiled_attention takes no mask."""
    Q, K, V = make_qkv(1, 6, 4)
    blind = causal_mask(6).clone()
    blind[2] = False
    with pytest.raises(ValueError, match="hides every key"):
        scaled_dot_product_attention(Q, K, V, blind)
    assert torch.isnan(lean_attention(Q, K, V, blind)[0, 0, 2]).all()


@pytest.mark.parametrize("T_q, T_k", [(3, 8), (8, 8)])
def test_causal_tiles_align_like_causal_mask(T_q, T_k):
    """A cached step: the last of T_q queries sees all T_k keys, as with causal_mask (bottom-right)."""
    g = torch.Generator().manual_seed(4)
    Q = torch.randn(2, T_q, 4, generator=g)                                     # (B, T_q, d_k)
    K, V = torch.randn(2, T_k, 4, generator=g), torch.randn(2, T_k, 5, generator=g)  # (B, T_k, d_k), (B, T_k, d_v)
    expected = scaled_dot_product_attention(Q, K, V, causal_mask(T_q, T_k))
    torch.testing.assert_close(tiled_attention(Q, K, V, True, block=2), expected)
    torch.testing.assert_close(lean_attention(Q, K, V, causal_mask(T_q, T_k)), expected)


def test_causal_tiles_refuse_more_queries_than_keys():
    Q, K = torch.randn(1, 8, 4), torch.randn(1, 3, 4)            # 8 queries, 3 keys: queries 0-4 would see nothing
    with pytest.raises(ValueError, match="first 5 queries would see no key"):
        tiled_attention(Q, K, K, True, block=2)


def test_causal_tiles_refuse_even_one_query_more_than_keys():
    Q, K = torch.randn(1, 4, 2), torch.randn(1, 3, 2)            # query 0 of 4 would see none of the 3 keys
    with pytest.raises(ValueError, match="first 1 queries would see no key"):
        tiled_attention(Q, K, K, True, block=2)
