"""Attention written to touch memory less: the same maths as helpers.attention_torch.

    lean_attention(Q, K, V, mask=None)     one (T_q, T_k) buffer, scale folded into Q, softmax in place
    tiled_attention(Q, K, V, causal, block) `block` queries at a time: the (T, T) matrix is never whole

Both take (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v) and return (..., T_q, d_v), with the course's mask
convention (mask == 0: may not attend). Notebook 07 times them against the textbook version and PyTorch's fused
kernel: the gap between them is memory traffic. They check no data (on a GPU a check that scans data makes Python
wait, and the timing would measure the wait); tiled_attention refuses a causal call with more queries than keys.
"""
from __future__ import annotations

import math

import torch

from helpers.validation import count


def lean_attention(Q, K, V, mask=None):
    """softmax(Q Kᵀ / √d_k) V with ONE (T_q, T_k) buffer: the scale is folded into Q (T·d_k multiplications instead
    of T²), the masking and the softmax are done in place. Same signature as attention_torch's version.
    (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v) -> (..., T_q, d_v).
    """
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, d_k, T_k, d_v = Q.shape[-2], Q.shape[-1], K.shape[-2], V.shape[-1]
    q = (Q * (1.0 / math.sqrt(d_k))).expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)  # (n, T_q, d_k)
    k = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k)  # (n, T_k, d_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)  # (n, T_k, d_v)
    S = torch.bmm(q, k.transpose(1, 2))  # (n, T_q, T_k): the one (T, T) buffer
    if mask is not None:
        hidden = (mask == 0).expand(*batch, T_q, T_k).reshape(-1, T_q, T_k)
        S.masked_fill_(hidden, float("-inf"))
    torch.softmax(S, dim=-1, out=S)  # in place: no second (T, T) buffer
    return torch.bmm(S, v).reshape(*batch, T_q, d_v)  # (..., T_q, d_v)


def tiled_attention(Q, K, V, causal: bool = False, block: int = 128):
    """Exact attention computed `block` queries at a time: the (T, T) matrix is never whole.
    (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v) -> (..., T_q, d_v).

    Each tile of scores, (batch, block, T_k), is small enough to stay in the CPU's caches while it is softmaxed and
    multiplied by V (4 MiB at B·H = 8, T = 1,024). Softmax rows are independent, so the result is exact. With
    `causal` (aligned like causal_mask: the last query sees every key), a tile only computes the keys its queries
    may see: the first half of FlashAttention's idea (which also tiles the keys, with a running softmax).
    """
    block = count(block, "block (queries per tile)")
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, d_k, T_k, d_v = Q.shape[-2], Q.shape[-1], K.shape[-2], V.shape[-1]
    q = (Q * (1.0 / math.sqrt(d_k))).expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)  # (n, T_q, d_k)
    k_t = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k).transpose(1, 2)  # (n, d_k, T_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)  # (n, T_k, d_v)
    out = torch.empty(q.shape[0], T_q, d_v, dtype=Q.dtype, device=Q.device)  # (n, T_q, d_v)
    shift = T_k - T_q  # query i may see keys 0 .. i + shift
    if causal and shift < 0:
        raise ValueError(f"causal attention of {T_q} queries over {T_k} keys: the first {-shift} queries would see "
                         "no key (softmax over nothing is NaN). Give at least as many keys as queries.")
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
