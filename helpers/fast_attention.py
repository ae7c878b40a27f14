"""Attention written to touch memory less: the same maths as helpers.attention_torch.

    lean_attention(Q, K, V, mask=None)     one (T_q, T_k) buffer, scale folded into Q, softmax in place
    tiled_attention(Q, K, V, causal, block) `block` queries at a time: the (T, T) matrix is never whole
    flash_attention(Q, K, V, mask, causal)  tiles of queries AND keys, a running softmax: FlashAttention (notebook 11)

All three take (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v) and return (..., T_q, d_v), with the course's mask
convention (mask == 0: may not attend). Notebook 07 times them against the textbook version and PyTorch's fused
kernel: the gap between them is memory traffic. lean and tiled check no data (on a GPU a check that scans data makes
Python wait); flash checks its mask once, tiled and flash refuse a causal call with more queries than keys."""
import math

import torch

from helpers.attention_torch import check_attention_inputs, check_mask
from helpers.validation import count, flag


def lean_attention(Q, K, V, mask=None):
    """softmax(Q Kᵀ / √d_k) V with ONE (T_q, T_k) buffer: the scale is folded into Q (T·d_k multiplications instead
    of T²), the masking and the softmax are done in place. Same signature as attention_torch's version.
    (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v) -> (..., T_q, d_v)."""
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, d_k, T_k, d_v = Q.shape[-2], Q.shape[-1], K.shape[-2], V.shape[-1]
    q = (Q * (1.0 / math.sqrt(d_k))).expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)  # (n, T_q, d_k)
    k = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k)  # (n, T_k, d_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)  # (n, T_k, d_v)
    S = torch.bmm(q, k.transpose(1, 2))  # (n, T_q, T_k): the one (T, T) buffer
    if mask is not None:
        S.masked_fill_((mask == 0).expand(*batch, T_q, T_k).reshape(-1, T_q, T_k), float("-inf"))
    torch.softmax(S, dim=-1, out=S)  # in place: no second (T, T) buffer
    return torch.bmm(S, v).reshape(*batch, T_q, d_v)  # (..., T_q, d_v)


def check_causal(T_q: int, T_k: int) -> None:
    """A named error for causal attention of more queries than keys (the last T_q of T_k tokens)."""
    if T_q > T_k:
        raise ValueError(f"causal attention of {T_q} queries over {T_k} keys: the first {T_q - T_k} queries would see "
                         "no key (softmax over nothing is NaN). Give at least as many keys as queries.")


def tiled_attention(Q, K, V, causal: bool = False, block: int = 128):
    """Exact attention `block` queries at a time, the (T, T) matrix never whole: (..., T_q, d_k), (..., T_k, d_k),
    (..., T_k, d_v) -> (..., T_q, d_v). A tile of scores, (batch, block, T_k), stays in the CPU's caches while it is
    softmaxed and multiplied by V (4 MiB at B·H = 8, T = 1,024); softmax rows are independent, so it is exact. With
    `causal` (aligned like causal_mask: the last query sees every key), a tile computes only the keys its queries may
    see: the first half of FlashAttention's idea (which also tiles the keys, with a running softmax)."""
    block, causal = count(block, "block (queries per tile)"), flag(causal, "causal (a mask goes to flash_attention)")
    check_attention_inputs(Q, K, V)   # a named error for inputs whose shapes or dtypes do not fit
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, d_k, T_k, d_v = Q.shape[-2], Q.shape[-1], K.shape[-2], V.shape[-1]
    q = (Q * (1.0 / math.sqrt(d_k))).expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)  # (n, T_q, d_k)
    k_t = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k).transpose(1, 2)  # (n, d_k, T_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)  # (n, T_k, d_v)
    out = torch.empty(q.shape[0], T_q, d_v, dtype=Q.dtype, device=Q.device)  # (n, T_q, d_v)
    shift = T_k - T_q  # query i may see keys 0 .. i + shift
    if causal:
        check_causal(T_q, T_k)
    for start in range(0, T_q, block):
        stop = min(start + block, T_q)
        seen = min(stop + shift, T_k) if causal else T_k  # a causal tile never looks past its last query
        S = torch.bmm(q[:, start:stop], k_t[:, :, :seen])  # (n, block, seen): one tile of scores
        if causal:
            rows = torch.arange(start + shift, stop + shift, device=Q.device)[:, None]
            S.masked_fill_(torch.arange(seen, device=Q.device)[None, :] > rows, float("-inf"))
        torch.softmax(S, dim=-1, out=S)
        out[:, start:stop] = torch.bmm(S, v[:, :seen])  # (n, block, d_v)
        del S  # free this tile before the next one is allocated
    return out.reshape(*batch, T_q, d_v)


# ---- Notebook 11: never store the (T, T) matrix
def online_softmax_step(m, l, o, s, v):
    """One running-softmax step of ONE query: b keys arrive, scores s (b,), values v (b, d_v), or one key as a 0-d
    score and a (d_v,) value. (m, l, o): the largest score so far, Σ exp(score − m), Σ exp(score − m) · value (d_v,)."""
    s, v = s.reshape(-1), v.reshape(-1, v.shape[-1])  # one key as a block of one: (1,), (1, d_v)
    m_new = torch.maximum(m, s.max())              # the new largest score
    correction = torch.exp(m - m_new)              # rescales what was summed against the old maximum
    p = torch.exp(s - m_new)                       # (b,) the new keys' weights, before dividing
    return m_new, correction * l + p.sum(), correction * o + p @ v    # o: (d_v,)


def running_softmax_trace(q, K, V, block_k: int, visible: int) -> dict:
    """The running softmax of one query q (d_k,) over K (T_k, d_k), V (T_k, d_v), block_k keys a step, only the
    first `visible` keys allowed (causal; a tile wholly after them is skipped): {"m", "l": (tiles + 1,),
    "y": o / l (tiles + 1, d_v), before and after each key tile; "exact": softmax(q Kᵀ / √d_k) V over those keys}."""
    s = K @ q / math.sqrt(q.shape[-1])                                   # (T_k,) this query's scores
    states = [(torch.tensor(float("-inf"), dtype=q.dtype), torch.tensor(0.0, dtype=q.dtype), V[0] * 0)]
    for j in range(0, K.shape[0], block_k):
        stop = min(j + block_k, visible)
        states.append(online_softmax_step(*states[-1], s[j:stop], V[j:stop]) if stop > j else states[-1])
    m, l, o = (torch.stack(x) for x in zip(*states))
    return {"m": m, "l": l, "y": o / l[:, None], "exact": torch.softmax(s[:visible], 0) @ V[:visible]}


def tile_is_future(q_start, q_stop, k_start, T_q, T_k):
    """Whether a causal tile (queries q_start … q_stop − 1, keys from k_start) lies wholly in the future: its
    first key comes after the last key its last query may see (bottom-right aligned, like causal_mask)."""
    return k_start > q_stop - 1 + (T_k - T_q)


def tile_map(T_q, T_k, block_q, block_k, causal=False):
    """(query tiles, key tiles) int: 0 skipped (wholly in the future), 1 computed, masked (crosses the diagonal),
    2 computed whole. Without `causal` every tile is 2."""
    count(block_q, "block_q (queries per tile)"), count(block_k, "block_k (keys per tile)")   # typed in notebook 11
    count(T_q, "T_q"), count(T_k, "T_k"), causal and check_causal(T_q, T_k)   # as flash would refuse
    i, j = torch.tensor(range(0, T_q, block_q))[:, None], torch.tensor(range(0, T_k, block_k))   # first query, key
    masked = (j + block_k).clamp(max=T_k) - 1 > i + T_k - T_q     # last key hidden from the first query: 1; future: 0
    return 2 - bool(causal) * (masked.long() + tile_is_future(i, (i + block_q).clamp(max=T_q), j, T_q, T_k).long())


def check_flash_inputs(Q, K, V, mask=None, causal=False, block_q=1, block_k=1) -> None:
    """check_attention_inputs' named errors, for mask AND causal together: a query that sees no key once both
    are applied gets the same error, naming both, found from each mask row's first visible key (never mask & causal)."""
    check_attention_inputs(Q, K, V, mask)
    count(block_q, "block_q (queries per tile)"), count(block_k, "block_k (keys per tile)")
    if flag(causal, "causal (a mask goes in mask=)"):
        check_causal(T_q := Q.shape[-2], T_k := K.shape[-2])
        first = 0 if mask is None else (mask != 0).byte().argmax(-1)    # (..., 1 or T_q) each row's first visible key
        last = torch.arange(T_q, device=Q.device) + T_k - T_q           # (T_q,) query i sees keys ≤ last[i]
        scores = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2]) + (T_q, T_k)   # batch: Q's, K's, V's
        check_mask((first <= last)[..., None], scores, "The mask with causal=True")   # (..., T_q, 1)


def flash_attention(Q, K, V, mask=None, causal=False, block_q: int = 256, block_k: int = 512):
    """softmax(Q Kᵀ / √d_k) V, block_q queries × block_k keys at a time, never holding more scores than one tile.
    (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v) -> (..., T_q, d_v). mask == 0: may not attend; `causal` adds
    causal_mask(T_q, T_k) (bottom-right) and skips the tiles wholly in the future. Differentiable (autograd keeps
    every tile; RecomputingFlashAttention keeps none)."""
    check_flash_inputs(Q, K, V, mask, causal, block_q, block_k)   # named errors, a query that sees no key too
    return flash_forward(Q, K, V, mask, causal, block_q, block_k)[0]


#: A tile is added with the m it finds while each of its rows sums to at most KEPT_SUM per key: no weight is then
#: above KEPT_SUM · block_k (131,072 for 512 keys), far below float32's and bfloat16's limit, 3.4e38. The guess
#: m = 0 is kept when each row of the first tile also sums to at least 1 / KEPT_SUM (its largest weight is then at
#: least 1 / (KEPT_SUM · block_k), 7.6e-6 for 512 keys, far above float32's smallest, 1.2e-38).
KEPT_SUM = 256


def flash_forward(Q, K, V, mask=None, causal=False, block_q: int = 256, block_k: int = 512, lazy: bool = True):
    """FlashAttention's forward loop, unchecked: (output (..., T_q, d_v), log-sum-exp m + log l (..., T_q)).
    lazy=False: m starts at −∞ and every tile takes its own maximum and rescales (the textbook step), to compare; so
    does float16 (a kept tile's weights reach 131,072; it ends at 65,504). 16-bit inputs keep m, ℓ, o in float32."""
    extra = () if mask is None else mask.shape[:-2]
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], extra)
    T_q, d_k, T_k, d_v = Q.shape[-2], Q.shape[-1], K.shape[-2], V.shape[-1]
    q = (Q * (1.0 / math.sqrt(d_k))).expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)  # (n, T_q, d_k), scale folded
    k = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k)                              # (n, T_k, d_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)                              # (n, T_k, d_v)
    n, like, lazy = q.shape[0], dict(dtype=Q.dtype, device=Q.device), lazy and Q.dtype != torch.float16
    sums = dict(like, dtype=torch.float32) if Q.dtype in (torch.float16, torch.bfloat16) else like   # m, ℓ, o
    O, lse = torch.empty(n, T_q, d_v, **like), torch.empty(n, T_q, 1, **sums)
    recording = torch.is_grad_enabled() and any(x.requires_grad for x in (Q, K, V))   # autograd keeps every tile
    space = None if recording else torch.empty(n * min(block_q, T_q) * min(block_k, T_k), **like)  # one tile, reused
    for i in range(0, T_q, block_q):
        rows = min(block_q, T_q - i)
        m = torch.full((n, rows, 1), 0.0 if lazy else -math.inf, **sums)   # each query's shift: a guess, 0, at first
        l = torch.zeros(n, rows, 1, **sums)                      # its sum of exp(score − m)
        o = torch.zeros(n, rows, d_v, **sums)                    # its sum of exp(score − m) · value
        guess = keep_m = lazy                                    # m is still the guess 0? the next tile keeps m?
        stop = min(i + rows + T_k - T_q, T_k) if causal else T_k   # later key tiles lie wholly in the future
        for j in range(0, stop, block_k):
            S, keep = tile_scores(q, k, mask, causal, batch, i, rows, j, block_k, space)   # (n, rows, cols)
            if keep_m:                                               # m kept: no max, no correction
                P = tile_weights(S, None if guess else m, keep, batch)   # (n, rows, cols) exp(score − m) · keep
                P_sum = P.sum(-1, keepdim=True, dtype=l.dtype)       # (n, rows, 1) no weight is larger
                low, high = torch.aminmax(P_sum)                     # and a first tile's: no row sum too small
                keep_m = bool(high <= KEPT_SUM * P.shape[-1]) and (j > 0 or bool(low >= 1 / KEPT_SUM))   # NaN fails
                if not keep_m:                                       # a score rose far above m (or a first tile's
                    del P                                            # all lie far below 0): this tile again,
                    S, keep = tile_scores(q, k, mask, causal, batch, i, rows, j, block_k, space)   # the exact way
                    if j == 0:
                        m = torch.full_like(m, -math.inf)            # from the first tile's own largest scores
            if not keep_m:
                if keep is not None:
                    hide(S, keep, batch)                             # −∞ at the hidden pairs: not in the max
                m_new = torch.maximum(m, S.detach().amax(-1, keepdim=True))              # (n, rows, 1)
                shift = m_new if keep is None else m_new.masked_fill(m_new == -math.inf, 0.0)  # −∞ − (−∞) is NaN
                P = tile_weights(S, shift, keep, batch, None if keep is None else shift - 80)   # exp(score − m_new)
                P_sum = P.sum(-1, keepdim=True, dtype=l.dtype)       # (n, rows, 1)
                correction = torch.exp(m - shift)                    # (n, rows, 1) exp(m_old − m_new)
                l.mul_(correction)                                   # the old sums rescaled
                o.mul_(correction)
                m, guess, keep_m = m_new, False, lazy and bool(torch.isfinite(m_new).all())
            l.add_(P_sum)                                            # the tile's weights added
            # (n, rows, d_v) the same for the values; a 16-bit tile's P @ v, rounded to 16 bits, is added in float32
            o.baddbmm_(P, v[:, j:j + block_k]) if o.dtype == P.dtype else o.add_(P @ v[:, j:j + block_k])
        O[:, i:i + rows] = o / l                                     # one division, at the end
        lse[:, i:i + rows] = m + torch.log(l)                        # what a backward pass keeps
    return O.reshape(*batch, T_q, d_v), lse.reshape(*batch, T_q)


def tile_scores(q, k, mask, causal, batch, i, rows, j, block_k, space=None):
    """One tile of scaled scores (n, rows, d_k) @ (n, d_k, cols) -> (n, rows, cols), written into `space` (1-D) if
    given; and `keep`, the pairs it may see (None where all of them may)."""
    T_q, T_k = q.shape[1], k.shape[1]
    cols = min(block_k, T_k - j)
    out = None if space is None else space[:q.shape[0] * rows * cols].view(-1, rows, cols)   # no fresh memory
    S = torch.bmm(q[:, i:i + rows], k[:, j:j + cols].transpose(1, 2), out=out)   # (n, rows, cols)
    keep = None if mask is None else mask_tile(mask, i, rows, j, cols) != 0      # broadcasts to (*batch, rows, cols)
    if causal and j + cols - 1 > i + T_k - T_q:                                   # the tile crosses the diagonal
        seen = torch.arange(j, j + cols, device=S.device) <= torch.arange(i, i + rows, device=S.device)[:, None] \
            + T_k - T_q                                                           # (rows, cols)
        keep = seen if keep is None else keep & seen
    return S, keep


def mask_tile(mask, i, rows, j, cols):
    """The mask's entries for queries i … i + rows − 1 and keys j … j + cols − 1; an axis of size 1 stays 1."""
    return mask[..., slice(None) if mask.shape[-2] == 1 else slice(i, i + rows),
                slice(None) if mask.shape[-1] == 1 else slice(j, j + cols)]


def hide(S, keep, batch):
    """−∞ added in place (n, rows, cols) where `keep` is False, so that the tile's maximum skips those pairs (on a
    CPU an added −∞ is much faster than masked_fill_)."""
    S.view(*batch, *S.shape[1:]).add_(torch.where(keep, 0.0, -math.inf))


def tile_weights(S, shift, keep, batch, floor=None):
    """exp(S − shift) in place (n, rows, cols), exp(S) if shift is None, times `keep`: the tile's weights before
    dividing, exactly 0 at the pairs it may not see, whatever S holds there. `floor`: scores under it are first
    raised to it, since exp of a number below −87, or of −∞, takes a slow path on a CPU (floor = shift − 80 changes
    only weights under e^−80 ≈ 2e−35 of the largest)."""
    if floor is not None:
        S = S.clamp_min_(floor)
    P = S.exp_() if shift is None else S.sub_(shift).exp_()
    if keep is None:
        return P
    P = P.view(*batch, *S.shape[1:])
    return (P * keep if P.requires_grad else P.mul_(keep)).view(S.shape)   # autograd keeps exp_'s own result


class RecomputingFlashAttention(torch.autograd.Function):
    """flash_attention whose backward recomputes each tile from Q, K, V, the output and the log-sum-exp: it saves
    no tile (FlashAttention's second idea). RecomputingFlashAttention.apply(Q, K, V, mask, causal, block_q, block_k).
    """

    @staticmethod
    def forward(ctx, Q, K, V, mask=None, causal=False, block_q=256, block_k=512):
        check_flash_inputs(Q, K, V, mask, causal, block_q, block_k)   # as flash_attention: named errors
        O, lse = flash_forward(Q, K, V, mask, causal, block_q, block_k)
        ctx.save_for_backward(Q, K, V, O, lse)                   # linear in T: no tile is kept
        ctx.settings = mask, causal, block_q, block_k
        return O

    @staticmethod
    def backward(ctx, dO):
        return (*flash_backward(dO, *ctx.saved_tensors, *ctx.settings), None, None, None, None)


def flash_backward(dO, Q, K, V, O, lse, mask=None, causal=False, block_q=256, block_k=512):
    """(dQ, dK, dV) from the output's gradient dO (..., T_q, d_v), recomputing each tile's weights exp(S − lse)."""
    batch, (T_q, d_k), (T_k, d_v) = O.shape[:-2], Q.shape[-2:], V.shape[-2:]
    q = (Q * (1.0 / math.sqrt(d_k))).expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)   # (n, T_q, d_k)
    k = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k)                                # (n, T_k, d_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)                                # (n, T_k, d_v)
    dO, lse = dO.expand(O.shape).reshape(-1, T_q, d_v), lse.reshape(-1, T_q, 1)
    D = (dO * O.reshape(dO.shape)).sum(-1, keepdim=True)        # (n, T_q, 1) rowsum(dO ∘ O)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for i in range(0, T_q, block_q):
        rows = min(block_q, T_q - i)
        stop = min(i + rows + T_k - T_q, T_k) if causal else T_k
        for j in range(0, stop, block_k):
            S, keep = tile_scores(q, k, mask, causal, batch, i, rows, j, block_k)
            if keep is not None:
                hide(S, keep, batch)                                 # −∞ where hidden, as the forward: inf · 0 is NaN
            P = tile_weights(S, lse[:, i:i + rows], keep, batch, None if keep is None else lse[:, i:i + rows] - 80)
            dv[:, j:j + block_k] += P.transpose(1, 2) @ dO[:, i:i + rows]      # (n, cols, d_v)
            dP = dO[:, i:i + rows] @ v[:, j:j + block_k].transpose(1, 2)       # (n, rows, cols)
            dS = P * (dP - D[:, i:i + rows])                                   # softmax's backward
            dq[:, i:i + rows] += dS @ k[:, j:j + block_k]                      # (n, rows, d_k)
            dk[:, j:j + block_k] += dS.transpose(1, 2) @ q[:, i:i + rows]      # (n, cols, d_k)
    return ((dq / math.sqrt(d_k)).reshape(*batch, T_q, d_k).sum_to_size(Q.shape),
            dk.reshape(*batch, T_k, d_k).sum_to_size(K.shape), dv.reshape(*batch, T_k, d_v).sum_to_size(V.shape))
