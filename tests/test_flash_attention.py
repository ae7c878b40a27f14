"""helpers.fast_attention, notebook 11: flash_attention and its gradients equal PyTorch's SDPA over every case of the
notebook (masks, causal tiles, ragged blocks, broadcast batches), the recomputing backward keeps no tile, the named
errors, the running softmax of one query, and the tile map the loop follows."""
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import cost, measure
from helpers.attention_torch import causal_mask
from helpers.fast_attention import (
    RecomputingFlashAttention,
    flash_attention,
    flash_backward,
    flash_forward,
    online_softmax_step,
    tile_is_future,
    tile_map,
    tiled_attention,
)
from helpers.heads import padding_mask
from helpers.measure import cpu_peak_bytes, make_qkv


def left_padding(lengths, T):
    """(B, 1, 1, T): the real tokens are the LAST `length` of each row (whole tiles of hidden keys come first)."""
    return torch.arange(T).flip(0) < torch.as_tensor(lengths)[:, None, None, None]


#: name -> (Q batch, K batch, V batch, T_q, T_k, d_k, d_v, mask(T_q, T_k) or None, causal, block_q, block_k)
CASES = {
    "no mask": ((2, 3), (2, 3), (2, 3), 16, 16, 8, 8, None, False, 4, 4),
    "causal, square": ((2, 3), (2, 3), (2, 3), 16, 16, 8, 8, None, True, 4, 4),
    "causal, fewer queries than keys": ((2,), (2,), (2,), 5, 19, 8, 8, None, True, 2, 4),
    "causal, a decode step: one query": ((2,), (2,), (2,), 1, 40, 8, 8, None, True, 1, 8),
    "padding, whole key tiles hidden": ((2, 1), (2, 1), (2, 1), 12, 12, 4, 4,
                                        lambda T_q, T_k: padding_mask([3, 12], T_k), False, 4, 4),
    "left padding, the first key tiles hidden": ((2, 1), (2, 1), (2, 1), 12, 12, 4, 4,
                                                 lambda T_q, T_k: left_padding([3, 9], T_k), False, 4, 4),
    "padding and causal": ((2, 1), (2, 1), (2, 1), 12, 12, 4, 4,
                           lambda T_q, T_k: padding_mask([5, 12], T_k), True, 4, 2),
    "a random mask, one visible key per row at least": ((3,), (3,), (3,), 9, 13, 4, 4, "random", False, 2, 3),
    "T not a multiple of a block": ((2,), (2,), (2,), 13, 13, 4, 4, None, True, 5, 3),
    "T_q != T_k": ((2,), (2,), (2,), 7, 23, 4, 4, None, False, 3, 5),
    "d_v != d_k": ((2,), (2,), (2,), 10, 10, 4, 7, None, True, 4, 4),
    "blocks of 1": ((2,), (2,), (2,), 6, 8, 4, 4, None, True, 1, 1),
    "blocks larger than T": ((2,), (2,), (2,), 6, 8, 4, 4, None, True, 64, 100),
    "batch axes that broadcast": ((2, 3), (3,), (1, 1), 9, 11, 4, 5,
                                  lambda T_q, T_k: padding_mask([4, 11], T_k), False, 4, 4),
    "batch axes that broadcast, causal, Q with the fewest": ((3,), (2, 3), (1, 1), 9, 11, 4, 5,
                                                           lambda T_q, T_k: padding_mask([4, 11], T_k), True, 4, 4),
}


def inputs(case, dtype, seed=0):
    bq, bk, bv, T_q, T_k, d_k, d_v, make_mask, causal, block_q, block_k = CASES[case]
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(*bq, T_q, d_k, generator=g, dtype=dtype)
    K = torch.randn(*bk, T_k, d_k, generator=g, dtype=dtype)
    V = torch.randn(*bv, T_k, d_v, generator=g, dtype=dtype)
    if make_mask == "random":
        mask = torch.rand(T_q, T_k, generator=g) > 0.6
        mask[torch.arange(T_q), torch.randint(T_k, (T_q,), generator=g)] = True
    else:
        mask = None if make_mask is None else make_mask(T_q, T_k)
    return Q, K, V, mask, causal, block_q, block_k


def sdpa_reference(Q, K, V, mask, causal):
    """PyTorch's SDPA on the same inputs: its boolean attn_mask is True = may attend (the course's polarity); a
    bottom-right causal mask is built with causal_mask, since is_causal=True is top-left when T_q != T_k."""
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], () if mask is None else mask.shape[:-2])
    Q, K, V = (x.expand(*batch, *x.shape[-2:]) for x in (Q, K, V))
    if causal:
        mask = causal_mask(Q.shape[-2], K.shape[-2]) if mask is None else mask & causal_mask(Q.shape[-2], K.shape[-2])
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)


TOLERANCE = {torch.float32: 1e-6, torch.float64: 1e-12}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES)
def test_flash_attention_equals_sdpa(case, dtype):
    Q, K, V, mask, causal, block_q, block_k = inputs(case, dtype)
    got = flash_attention(Q, K, V, mask, causal, block_q, block_k)
    torch.testing.assert_close(got, sdpa_reference(Q, K, V, mask, causal), atol=TOLERANCE[dtype], rtol=0)


@pytest.mark.parametrize("backward", ["autograd through the loop", "recomputing"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES)
def test_gradients_equal_sdpas(case, dtype, backward):
    Q, K, V, mask, causal, block_q, block_k = (x.requires_grad_() if i < 3 else x
                                               for i, x in enumerate(inputs(case, dtype)))
    if backward == "recomputing":
        out = RecomputingFlashAttention.apply(Q, K, V, mask, causal, block_q, block_k)
    else:
        out = flash_attention(Q, K, V, mask, causal, block_q, block_k)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=dtype)  # a loss of every entry
    got = torch.autograd.grad((out * weights).sum(), (Q, K, V))
    expected = torch.autograd.grad((sdpa_reference(Q, K, V, mask, causal) * weights).sum(), (Q, K, V))
    scale = {torch.float32: 1e-5, torch.float64: 1e-12}[dtype]   # gradients sum over many products: float32 at 1e-5
    for name, g, e in zip("QKV", got, expected):
        assert g.shape == e.shape, name
        torch.testing.assert_close(g, e, atol=scale, rtol=0, msg=f"d{name}")


@pytest.mark.parametrize("causal", [False, True])
def test_the_recomputing_backward_passes_gradcheck(causal):
    """Small inputs (gradcheck perturbs every number): broadcast batches, a padding mask, ragged tiles, T_q < T_k."""
    g = torch.Generator().manual_seed(2)
    Q = torch.randn(2, 1, 3, 3, generator=g, dtype=torch.float64, requires_grad=True)
    K = torch.randn(1, 2, 7, 3, generator=g, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 1, 7, 2, generator=g, dtype=torch.float64, requires_grad=True)
    pad = padding_mask([5, 7], 7)                                     # (2, 1, 1, 7): sequence 0 hides keys 5, 6
    assert torch.autograd.gradcheck(lambda q, k, v: RecomputingFlashAttention.apply(q, k, v, pad, causal, 2, 3),
                                    (Q, K, V))


def rising_scores(dtype, T=16, seed=0):
    """Q, K, V (2, T, 8) whose scores climb key by key: key t is (1 + 3t) times one positive vector and every query
    is positive, so the largest score of each tile of 4 keys lies at least 8.5 above those before it: every tile
    rescales."""
    g = torch.Generator().manual_seed(seed)
    Q, u, V = (torch.randn(2, n, 8, generator=g, dtype=dtype) for n in (T, 1, T))
    return Q.abs() + 0.5, (u.abs() + 0.5) * torch.arange(1, 3 * T + 1, 3, dtype=dtype)[:, None], V


def test_a_negative_control_a_loop_without_its_correction_fails_the_comparison(monkeypatch):
    """The comparison can fail: the same loop without its correction (exp(m_old − m_new) taken as 1) is caught."""
    Q, K, V = rising_scores(torch.float64)
    real_exp = torch.exp
    monkeypatch.setattr(torch, "exp", lambda x: torch.ones_like(x) if x.shape[-1] == 1 else real_exp(x))
    got = flash_forward(Q, K, V, None, False, 4, 4)[0]
    assert torch.isfinite(got).all() and (got - sdpa_reference(Q, K, V, None, False)).abs().max() > 0.01


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
def test_scores_that_rise_far_above_the_first_tiles_are_rescaled(dtype, causal):
    """Kept with the old maximum, the later tiles' weights would overflow: they are redone the exact way. Scores of
    several hundred carry float32 rounding of their size times 1e-7, hence float32's tolerance scaled by the largest."""
    Q, K, V = rising_scores(dtype, T=40)
    S = Q @ K.transpose(-1, -2) / math.sqrt(8)
    assert (S[..., 36:].amax(-1) - S[..., :4].amax(-1)).min() > 80   # the last tile: beyond float32's e^88 from m
    got = flash_attention(Q, K, V, causal=causal, block_q=8, block_k=4)
    atol = TOLERANCE[dtype] * (S.abs().max().item() if dtype == torch.float32 else 1)
    torch.testing.assert_close(got, sdpa_reference(Q, K, V, None, causal), atol=atol, rtol=0)


def shifted_scores(by, T=64, seed=0):
    """Q, K, V (2, T, 9) float64 whose scores are make_qkv's plus `by` in every pair: a column of 3 in Q against one
    of `by` in K (3 · by / √9 = by). The weights, and so the output, are those of the unshifted scores (float64: in
    float32 a score of 30 alone carries a rounding of 2e-6)."""
    Q, K, V = make_qkv(2, T, 8, seed=seed, dtype="float64")
    return torch.cat([Q, torch.full_like(Q[..., :1], 3.0)], -1), torch.cat([K, torch.full_like(K[..., :1], by)], -1), V


@pytest.mark.parametrize("inputs_of, lazy, maxima", [(lambda: make_qkv(2, 64, 8), True, 0),
                                                    (lambda: make_qkv(2, 64, 8), False, 64),
                                                    (lambda: shifted_scores(-30), True, 4),
                                                    (lambda: shifted_scores(30), True, 4),
                                                    (lambda: shifted_scores(-10), True, 4),
                                                    (lambda: shifted_scores(10), True, 4),
                                                    (lambda: rising_scores(torch.float32, 64), True, 64)])
def test_the_guess_and_the_kept_maximum(monkeypatch, inputs_of, lazy, maxima):
    """Random scores: m stays the guess 0 in every tile and no maximum is taken (lazy=False: every tile takes its
    own). Scores 10 or 30 below or above 0 (e^10 is past KEPT_SUM, 256): the first tile of each row of tiles refuses
    the guess (its rows sum to under 1 / KEPT_SUM, or over KEPT_SUM per key) and takes its maximum; the later tiles
    keep it. Rising scores: every tile takes its own (each tried with the m before it first, then exactly)."""
    taken = []
    real_amax = torch.Tensor.amax
    monkeypatch.setattr(torch.Tensor, "amax", lambda x, *a, **kw: taken.append(x.shape) or real_amax(x, *a, **kw))
    Q, K, V = inputs_of()
    got = flash_forward(Q, K, V, None, False, 16, 4, lazy)[0]
    assert len(taken) == maxima
    torch.testing.assert_close(got, sdpa_reference(Q, K, V, None, False), atol=1e-6, rtol=0)


def test_float16_takes_the_textbook_step_every_tile(monkeypatch):
    """float16 ends at 65,504, below the sums a kept tile may reach: every tile takes its own maximum."""
    taken = []
    real_amax = torch.Tensor.amax
    monkeypatch.setattr(torch.Tensor, "amax", lambda x, *a, **kw: taken.append(x.shape) or real_amax(x, *a, **kw))
    Q, K, V = make_qkv(2, 64, 8)
    got = flash_forward(Q.half(), K.half(), V.half(), None, False, 16, 4)[0]
    assert len(taken) == 64
    torch.testing.assert_close(got.float(), sdpa_reference(Q, K, V, None, False), atol=2e-3, rtol=0)


def test_16_bit_inputs_keep_their_sums_in_float32():
    """ℓ reaches T_k: 70,000 keys of equal score would overflow float16's 65,504 (NaN out). Kept in float32, the
    output is exact and the log-sum-exp is ln 70,000. In bfloat16 over 64 tiles of keys the error stays within 4 times
    that of the exact answer rounded to bfloat16 (3.2 times: each tile's weights are bfloat16; summed in bfloat16,
    9.6 times)."""
    T = 70_000
    O, lse = flash_forward(torch.zeros(1, 1, 8).half(), torch.zeros(1, T, 8).half(), torch.ones(1, T, 8).half())
    assert O.dtype == torch.float16 and O.eq(1).all() and lse.dtype == torch.float32
    assert lse.item() == pytest.approx(math.log(T), abs=1e-5)
    ell = torch.ones(T, dtype=torch.float16).sum()     # ℓ kept in float16 instead: inf, so o / ℓ is 0, or NaN
    assert ell.isinf() and (O[0, 0, 0] / ell).item() == 0 and (ell / ell).isnan()   # where o overflows too
    g = torch.Generator().manual_seed(3)
    Q, K, V = (torch.randn(1, T, 32, generator=g).bfloat16() for T in (64, 32_768, 32_768))
    exact = sdpa_reference(Q.double(), K.double(), V.double(), None, False)      # on the bfloat16 inputs
    error = {name: (answer.double() - exact).pow(2).mean().sqrt().item()
             for name, answer in (("flash", flash_attention(Q, K, V)), ("rounded", exact.bfloat16()))}
    assert error["flash"] < 4 * error["rounded"], error


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lazy", [True, False])
def test_16_bit_inputs_on_every_path(dtype, causal, lazy):
    """A padding mask, causal tiles, the guess or not; forward and both backward passes: finite, in the inputs'
    dtype, and as close to float64 attention on the same numbers as 16 bits allow."""
    g = torch.Generator().manual_seed(4)
    Q, K, V = (torch.randn(2, 1, T, d, generator=g).to(dtype) for T, d in ((11, 8), (13, 8), (13, 5)))
    pad = padding_mask([9, 13], 13)
    exact = sdpa_reference(Q.double(), K.double(), V.double(), pad, causal)
    O, lse = flash_forward(Q, K, V, pad, causal, 4, 3, lazy)
    assert O.dtype == dtype and lse.dtype == torch.float32
    torch.testing.assert_close(O.double(), exact, atol=2e-2, rtol=0)
    dO = torch.ones_like(O)
    leaves = [x.clone().requires_grad_() for x in (Q, K, V)]
    through_loop = torch.autograd.grad(flash_attention(*leaves, pad, causal, 4, 3), leaves, dO)
    recomputed = torch.autograd.grad(RecomputingFlashAttention.apply(*leaves, pad, causal, 4, 3), leaves, dO)
    exact_leaves = [x.double().requires_grad_() for x in (Q, K, V)]
    expected = torch.autograd.grad(sdpa_reference(*exact_leaves, pad, causal), exact_leaves, dO.double())
    for a, b, e in zip(through_loop, recomputed, expected):
        assert a.dtype == b.dtype == dtype
        torch.testing.assert_close(a.double(), e, atol=0.1, rtol=0)
        torch.testing.assert_close(b.double(), e, atol=0.1, rtol=0)


# ---------------------------------------------------------------- the named errors, where a student types

@pytest.mark.parametrize("causal", [False, True])
def test_a_hidden_pair_weighs_exactly_zero(causal):
    """A hidden key's value never reaches the output, however large: its weight is 0, not merely tiny (e^-80 of
    the largest weight times 1e30 would show as 1e-5)."""
    T = 12
    Q, K, V = (torch.randn(2, 1, T, 4, dtype=torch.float64) for _ in range(3))
    mask = padding_mask([5, 9], T)                                        # (2, 1, 1, T): keys 5… and 9… hidden
    V[0, :, 5:], V[1, :, 9:] = 1e30, 1e30
    got = flash_attention(Q, K, V, mask, causal, block_q=4, block_k=4)
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask & causal_mask(T, T) if causal else mask)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_a_hidden_key_whose_score_overflows_exp_is_still_ignored(dtype):
    """A kept tile takes exp of its scores as they are and multiplies the hidden pairs by 0: a hidden score over 10⁴
    makes exp infinite and inf · 0 NaN, so the tile's sums refuse it and it is done the exact way, with −∞ added."""
    T = 12
    g = torch.Generator().manual_seed(5)
    Q, K, V = (torch.randn(2, 1, T, 4, generator=g, dtype=dtype) for _ in range(3))
    Q, K[:, :, 10] = Q.abs() + 0.5, 1e4                                   # every score against key 10: over 10⁴
    mask = padding_mask([10, 9], T)                                       # key 10 hidden in both
    got = flash_attention(Q, K, V, mask, False, block_q=4, block_k=4)
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6 if dtype == torch.float32 else 1e-12)


@pytest.mark.parametrize("causal", [False, True], ids=["padding", "causal"])
def test_the_recomputing_backward_ignores_a_hidden_score_that_overflows_exp(causal):
    """Its tiles hide the masked pairs before exp, as the forward's do: exp(106) in float32 is inf, and inf · 0 NaN."""
    Q = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], requires_grad=True)
    K = torch.tensor([[[0.0, 0.0], [150.0, 0.0]]], requires_grad=True)   # query 0 scores key 1 at 150 / √2 = 106
    V = torch.randn(1, 2, 2, generator=torch.Generator().manual_seed(0)).requires_grad_()
    mask = None if causal else torch.tensor([[True, False]])                # key 1 hidden from query 0 either way
    got = torch.autograd.grad(RecomputingFlashAttention.apply(Q, K, V, mask, causal, 2, 2).sum(), (Q, K, V))
    sdpa = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, is_causal=causal)
    for grad, expected in zip(got, torch.autograd.grad(sdpa.sum(), (Q, K, V)), strict=True):
        torch.testing.assert_close(grad, expected)


def test_a_visible_pair_far_below_the_largest_keeps_its_own_weight():
    """On a masked tile, only weights under e^-80 of the row's largest are raised: one at e^-30 stays e^-30."""
    Q = torch.ones(1, 1, 1, 4, dtype=torch.float64)
    K = torch.zeros(1, 1, 8, 4, dtype=torch.float64)
    K[..., 0, :], K[..., 1, :] = 15.0, 0.0                                 # scores 30 and 0: weights 1 and e^-30
    V = torch.zeros(1, 1, 8, 1, dtype=torch.float64)
    V[..., 1, 0] = 1e20                                                    # e^-30 · 1e20 ≈ 9.4e6 in the output
    mask = padding_mask([2], 8)
    got = flash_attention(Q, K, V, mask, block_q=1, block_k=8)
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=0)


def test_a_row_the_mask_hides_completely_is_the_courses_named_error():
    Q, K, V = make_qkv(1, 6, 4)
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[2] = False
    with pytest.raises(ValueError, match="The mask hides every key from query row 2"):
        flash_attention(Q, K, V, mask)
    with pytest.raises(ValueError, match="The mask hides every key from query row 2"):    # not a row of NaN
        RecomputingFlashAttention.apply(Q, K, V, mask)


def test_causal_with_more_queries_than_keys_says_so_as_tiled_attention_does():
    Q, K = torch.randn(8, 4), torch.randn(3, 4)            # bottom-right: queries 0-4 would see no key
    for attend in (flash_attention, tiled_attention):      # no mask was given: the message does not blame one
        with pytest.raises(ValueError, match="causal attention of 8 queries over 3 keys: the first 5 queries"):
            attend(Q, K, K, causal=True)


def test_causal_and_left_padding_together_leave_a_row_blind():
    """Each alone leaves every query a key; together query 0 of sequence 0 sees only a <pad>: the named error."""
    Q, K, V = (torch.randn(2, 1, 6, 4) for _ in range(3))
    pad = left_padding([4, 6], 6)                          # sequence 0: keys 0, 1 are <pad>
    flash_attention(Q, K, V, pad)
    flash_attention(Q, K, V, causal=True)
    with pytest.raises(ValueError, match="The mask with causal=True hides every key from query row 0"):
        flash_attention(Q, K, V, pad, causal=True)


@pytest.mark.parametrize("args, error, message", [
    ((torch.randn(5, 4), torch.randn(5, 3), torch.randn(5, 4)), ValueError, "Q has d_k=4 but K has d_k=3"),
    ((torch.randn(5, 4), torch.randn(5, 4), torch.randn(6, 4)), ValueError, "K has T_k=5 keys but V has 6"),
    ((torch.randn(5, 4), torch.randn(5, 4, dtype=torch.float64), torch.randn(5, 4)), TypeError, "one dtype"),
])
def test_bad_inputs_get_the_courses_named_errors(args, error, message):
    with pytest.raises(error, match=message):
        flash_attention(*args)


@pytest.mark.parametrize("blocks, name", [((0, 4), "block_q"), ((4, -1), "block_k"), ((2.5, 4), "block_q"),
                                          ((4, None), "block_k")])
def test_a_block_that_is_not_a_whole_number_is_named(blocks, name):
    Q = torch.randn(5, 4)
    with pytest.raises(ValueError, match=rf"{name} \((queries|keys) per tile\) should be a whole number of at least 1"):
        flash_attention(Q, Q, Q, block_q=blocks[0], block_k=blocks[1])


# ---------------------------------------------------------------- tiles: the map, the skipped ones, the memory

@pytest.mark.parametrize("T_q, T_k, block_q, block_k, skipped", [(16, 16, 4, 4, 6), (5, 19, 2, 4, 1), (13, 13, 5, 3, 4),
                                                                 (1, 40, 1, 8, 0)])
def test_the_loop_computes_exactly_the_tiles_the_map_marks(monkeypatch, T_q, T_k, block_q, block_k, skipped):
    """Every score tile the causal loop computes is a nonzero entry of tile_map; no other is computed (a tile whose
    sums refuse the m it was tried with is computed again). A decode step (one query, the last token) sees every
    key: nothing to skip."""
    seen = []
    real_bmm = torch.bmm
    monkeypatch.setattr(torch, "bmm", lambda a, b, **out: seen.append((a.data_ptr(), b.data_ptr()))
                        or real_bmm(a, b, **out))                # which queries, which keys
    g = torch.Generator().manual_seed(T_q)
    Q, K, V = (torch.randn(1, T, 4, generator=g) for T in (T_q, T_k, T_k))
    flash_forward(Q, K, V, None, True, block_q, block_k)
    tiles = tile_map(T_q, T_k, block_q, block_k, causal=True)
    assert len(set(seen)) == int((tiles > 0).sum()) == tiles.numel() - skipped
    queries, keys = ({ptr: n for n, ptr in enumerate(sorted({pair[axis] for pair in seen}))} for axis in (0, 1))
    assert {(queries[a], keys[b]) for a, b in seen} == {tuple(ij) for ij in (tiles > 0).nonzero().tolist()}
    assert tile_map(T_q, T_k, block_q, block_k).eq(2).all()     # without causal, every tile is computed whole


def test_without_autograd_every_tile_is_written_into_one_buffer(monkeypatch):
    """Fresh memory for every tile costs page faults; a loop that autograd records needs each tile of its own."""
    outs = []
    real_bmm = torch.bmm
    monkeypatch.setattr(torch, "bmm", lambda a, b, out=None: outs.append(out) or real_bmm(a, b, out=out))
    Q, K, V = make_qkv(2, 40, 8)
    flash_forward(Q, K, V, None, True, 16, 8)
    assert len(outs) > 1 and len({out.untyped_storage().data_ptr() for out in outs}) == 1
    outs.clear()
    flash_attention(Q.requires_grad_(), K, V, None, True, 16, 8)
    assert len(outs) > 1 and all(out is None for out in outs)


def test_tile_map_square_causal():
    assert tile_map(8, 8, 2, 2, causal=True).tolist() == [[1, 0, 0, 0], [2, 1, 0, 0], [2, 2, 1, 0], [2, 2, 2, 1]]
    assert tile_map(2048, 2048, 256, 512, causal=True).gt(0).sum() == 20   # of 32: the diagonal's tiles and below


@pytest.mark.parametrize("T_q, T_k, block_q, block_k", [(8, 8, 1, 2), (6, 10, 2, 3), (13, 13, 5, 3), (5, 19, 2, 4)])
def test_tile_map_matches_the_causal_mask_tile_by_tile(T_q, T_k, block_q, block_k):
    mask, tiles = causal_mask(T_q, T_k), tile_map(T_q, T_k, block_q, block_k, causal=True)
    for a, i in enumerate(range(0, T_q, block_q)):
        for b, j in enumerate(range(0, T_k, block_k)):
            tile = mask[i:i + block_q, j:j + block_k]                      # 0 none visible, 2 all, 1 some
            assert tiles[a, b] == (2 if tile.all() else 1 if tile.any() else 0), (a, b)


def test_the_skip_condition_is_bottom_right_aligned():
    # 2 queries over 6 keys: they are tokens 4 and 5, so the last sees key 5; a tile from key 5 is not in the future
    assert not tile_is_future(0, 2, 5, 2, 6)
    assert tile_is_future(0, 2, 6, 2, 6)
    assert tile_is_future(0, 2, 2, 2, 2) and not tile_is_future(0, 2, 1, 2, 2)


def test_the_extra_memory_does_not_grow_with_T():
    """Beyond the scaled copy of Q, the output and the log-sum-exp (all linear in T), the loop holds a few tiles."""
    extras = []
    for T in (256, 512, 1024):
        Q, K, V = make_qkv(1, T, 8)
        linear = 2 * T * 8 * 4 + T * 4                      # q = Q / √d_k and O (T, d_k) float32; lse (T,)
        extras.append(cpu_peak_bytes(lambda Q=Q, K=K, V=V: flash_forward(Q, K, V, None, False, 64, 64)) - linear)
    assert max(extras) - min(extras) < 4 * 1024                 # the same few tiles at every T
    assert max(extras) < 3 * 64 * 64 * 4                        # a few (64, 64) tiles, not a (T, T) matrix


def test_the_recomputing_backward_keeps_no_tile():
    """One forward and backward pass each, measured through autograd: the loop's graph keeps every tile of weights,
    the Function saves only Q, K, V, O and the log-sum-exp, and its backward is flash_backward."""
    T = 512
    Q, K, V = (x.requires_grad_() for x in make_qkv(1, T, 8))
    dO = torch.randn(1, 1, T, 8)
    through_loop = cpu_peak_bytes(lambda: torch.autograd.grad(flash_attention(Q, K, V, block_q=128, block_k=128),
                                                              (Q, K, V), dO))
    recomputing = cpu_peak_bytes(lambda: torch.autograd.grad(
        RecomputingFlashAttention.apply(Q, K, V, None, False, 128, 128), (Q, K, V), dO))
    assert through_loop > T * T * 4                             # autograd kept every tile of weights: a (T, T) matrix
    assert recomputing < 0.5 * T * T * 4                        # a few tiles, O, dQ, dK, dV
    grads = torch.autograd.grad(RecomputingFlashAttention.apply(Q, K, V, None, False, 128, 128), (Q, K, V), dO)
    with torch.no_grad():
        O, lse = flash_forward(Q, K, V, None, False, 128, 128)
    for g, e in zip(grads, flash_backward(dO, Q, K, V, O, lse, None, False, 128, 128)):
        torch.testing.assert_close(g, e, rtol=0, atol=0)        # the Function's backward is that function


# ---------------------------------------------------------------- the running softmax of one query

def test_the_running_softmax_of_banks_row():
    """Notebook 03's worked example: bank's scores [0.5, 1, 0.5] (S / √4), values the embeddings."""
    E = torch.tensor([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=torch.float64)   # money, bank, grows
    s = E[1] @ E.T / math.sqrt(4)
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        m, l, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), E[0] * 0
        for j in order:
            m, l, o = online_softmax_step(m, l, o, s[j:j + 1], E[j:j + 1])
        assert torch.allclose(o / l, torch.tensor([0.7259, 0.7259, 0.5481, 0.2741], dtype=torch.float64), atol=5e-5)
        assert m == 1.0 and torch.isclose(m + torch.log(l), torch.logsumexp(s, 0))


# ---------------------------------------------------------------- timed beside the others: the CPU, and a GPU stand-in

@pytest.mark.parametrize("causal", [False, True])
def test_the_timed_flash_computes_sdpas_attention(causal):
    Q, K, V = make_qkv(4, 33, 16)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    for preparer in (measure.WITH_FLASH["flash"][1], measure.flash_preparer(8, 16)):
        torch.testing.assert_close(preparer(Q, K, V, causal)(), expected, atol=1e-6, rtol=0)


def test_causal_flash_counts_half_the_flops():
    rows = measure.run_benchmark(device="cpu", sizes=(32,), batch_heads=1, d_k=4, repeats=1, warmup=0, causal=True,
                                 impls=("naive", "flash"), implementations=measure.WITH_FLASH, memory=False)
    assert {r.impl: r.flops for r in rows} == {"naive": 4 * 32 * 32 * 4, "flash": 2 * 32 * 32 * 4}


def test_the_gpu_cell_on_a_cpu_only_machine_says_so_and_runs_on_the_cpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rows = measure.timing_cell({"H200": 989}, cpu_sizes=(32,), batch_heads=2, d_k=8, repeats=2,
                               impls=("flash", "sdpa"), implementations=measure.WITH_FLASH)
    out = capsys.readouterr().out
    assert out.startswith("No CUDA GPU here:") and "T=32 float32: flash" in out and "TFLOP/s =" not in out
    assert [r.impl for r in rows] == ["flash", "sdpa"] and all(r.ms > 0 for r in rows)


def test_the_gpu_cell_compares_flash_with_sdpa_in_bf16_on_a_stand_in_gpu(monkeypatch, capsys):
    """The CUDA branch with stand-ins (CI has no GPU): bf16 and fp32 asked for, the best 16-bit TFLOP/s of each."""
    def row(impl, dtype, seconds):
        flops = cost.attention_flops(4096, 64, heads=8)["total"]
        return measure.Row(impl, dtype, 4096, flops, 0, ms=seconds * 1e3, tflops=flops / seconds / 1e12,
                           samples_ms=[seconds * 1e3])
    seen = {}
    rows = [row("flash", "bfloat16", 4e-3), row("sdpa", "bfloat16", 1e-4), row("flash", "float32", 1e-3)]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "NVIDIA H200")
    monkeypatch.setattr(measure, "run_benchmark", lambda **kwargs: seen.update(kwargs) or rows)
    measure.timing_cell({"H200": 989}, cuda_sizes=(4096,), impls=("flash", "sdpa"),
                        implementations=measure.WITH_FLASH)
    out = capsys.readouterr().out
    assert seen["dtypes"] == ["bfloat16", "float32"] and seen["impls"] == ("flash", "sdpa")
    assert seen["implementations"] is measure.WITH_FLASH
    assert "T=4096 bfloat16: flash 40.00x the time of sdpa" in out
    assert "best sdpa (bfloat16, T=4096): 344 TFLOP/s = 35% of this GPU's nominal dense 16-bit peak (989)" in out
    assert "best flash (bfloat16, T=4096): 9 TFLOP/s = 1% of this GPU" in out   # fp32's faster row is not 16-bit


def test_a_mask_with_causal_is_checked_against_the_bottom_right_causal_mask():
    """2 queries, 4 keys: causal lets query 0 see keys 0 to 2 (bottom-right). A mask hiding keys 0 and 1 leaves it
    key 2, a valid call; one hiding keys 0 to 2 leaves it none, the named error."""
    Q, K, V = (torch.randn(1, T, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
               for seed, T in enumerate((2, 4, 4)))
    mask = torch.tensor([[False, False, True, True]])                      # (1, T_k): for every query
    got = flash_attention(Q, K, V, mask, causal=True, block_q=1, block_k=2)
    torch.testing.assert_close(got, sdpa_reference(Q, K, V, mask, True), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match=r"query row 0"):
        flash_attention(Q, K, V, torch.tensor([[False, False, False, True]]), causal=True)
