"""Word order: attention without positions sees a set; sinusoidal and learned positions fix that.

    sinusoidal_positions(T, d)     (T, d) torch tensor: PE[p, 2m] = sin(p ω_m), PE[p, 2m+1] = cos(p ω_m)
    frequencies(d)                 (d/2,) ω_m = 1 / 10000^(2m/d); wavelengths 2π / ω_m
    shift_matrix(k, d)             (d, d) block rotation R_k with PE(p + k) = PE(p) R_k for every p
    LearnedPositions(T_max, d)     an nn.Embedding(T_max, d) of positions: T -> (T, d)
    four_terms(E, P)               (T, d), (T, d) -> the four (T, T) parts of (E + P)(E + P)ᵀ
    position_snapshot(p, d, T)     the data behind notebook 08's widget"""
import math

import torch
import torch.nn as nn

from helpers.validation import count, describe, floating

BASE = 10000.0  # the paper's constant: the slowest pair turns once in about 10000 · 2π positions


def even(d) -> int:
    """d, checked: a whole number of (sin, cos) pairs, so even."""
    if count(d, "d (the embedding dimension)") % 2:
        raise ValueError(f"d = {d} is odd: the encoding is made of (sin, cos) pairs, so d must be even.")
    return int(d)


def frequencies(d: int, dtype=torch.float64) -> torch.Tensor:
    """ω_m = 1 / 10000^(2m/d) for the d/2 (sin, cos) pairs m = 0 … d/2 − 1: shape (d/2,)."""
    d = even(d)
    two_m = torch.arange(0, d, 2, dtype=dtype)               # (d/2,) 0, 2, 4, …, d − 2
    return 1.0 / BASE ** (two_m / d)                         # (d/2,) from 1 down to almost 1/10000


def sinusoidal_positions(T: int, d: int, dtype=torch.float32) -> torch.Tensor:
    """The encoding of "Attention Is All You Need": T positions, d dimensions -> (T, d).

    PE[p, 2m] = sin(p / 10000^(2m/d)),  PE[p, 2m+1] = cos(p / 10000^(2m/d))."""
    T, d, dtype = count(T, "T (the number of positions)"), even(d), floating(dtype)
    p = torch.arange(T, dtype=torch.float64)[:, None]        # (T, 1) positions 0 … T − 1
    angles = p * frequencies(d)[None, :]                     # (T, d/2) angle p ω_m of pair m
    PE = torch.empty(T, d, dtype=torch.float64)
    PE[:, 0::2] = torch.sin(angles)                          # even columns 2m
    PE[:, 1::2] = torch.cos(angles)                          # odd columns 2m + 1
    return PE.to(dtype)                                      # (T, d)


def shift_matrix(k: int, d: int, dtype=torch.float64) -> torch.Tensor:
    """(d, d) block-diagonal rotation R_k: row vectors PE(p) R_k = PE(p + k), the same R_k for every p.

    Block m is [[cos kω_m, −sin kω_m], [sin kω_m, cos kω_m]], because
    sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b − sin a sin b."""
    w = k * frequencies(even(d), floating(dtype))   # (d/2,) k ω_m; d even; an integer dtype would hold only 0s
    c, s = torch.cos(w), torch.sin(w)
    return torch.block_diag(*torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2))   # block m


class LearnedPositions(nn.Module):
    """Learned positions: one trainable row per position, T_max · d parameters. forward(T) -> (T, d)."""

    def __init__(self, T_max: int, d: int):
        super().__init__()
        self.T_max = T_max
        self.table = nn.Embedding(T_max, d)                  # weight (T_max, d), random until trained

    def forward(self, T: int) -> torch.Tensor:
        T = count(T, "T (the number of positions)")
        if T > self.T_max:
            raise ValueError(f"this table has rows for positions 0 … {self.T_max - 1} only (T_max = {self.T_max}); "
                             f"a sentence of T = {T} tokens needs position {T - 1}, which was never learned.")
        return self.table(torch.arange(T))                   # (T, d)


def four_terms(E: torch.Tensor, P: torch.Tensor) -> dict[str, torch.Tensor]:
    """(e_i + PE(i))·(e_j + PE(j)) as four terms, content and position, for all pairs: E, P (T, d) -> 4 × (T, T)."""
    if not (isinstance(E, torch.Tensor) and isinstance(P, torch.Tensor) and (E.shape, E.dtype) == (P.shape, P.dtype)):
        raise ValueError(f"E and P should be tensors of one shape (T, d) and one dtype, but got {describe(E)} "
                         f"{getattr(E, 'dtype', '')} and {describe(P)} {getattr(P, 'dtype', '')}: E = torch.tensor(E) "
                         "first for a NumPy array, then P = sinusoidal_positions(T, d, dtype=E.dtype) for its T and d.")
    return {"content-content": E @ E.T,                      # (T, T) what the words are
            "content-position": E @ P.T,                     # (T, T) word i against position j
            "position-content": P @ E.T,                     # (T, T) position i against word j
            "position-position": P @ P.T}                    # (T, T) where the words are


def position_snapshot(p: int, d: int, T: int = 48) -> dict:
    """Notebook 08's widget data: the (T, d) encoding and position p's dot product with every position. Returns PE
    (T, d), similarity (T,) = PE @ PE[p], the offsets' range of similarity (for a fixed axis), the nearest other
    positions, and the wavelengths (d/2,) 2π / ω_m."""
    PE = sinusoidal_positions(T, d, dtype=torch.float64)     # (T, d)
    similarity = PE @ PE[p]                                  # (T,) = Σ_m cos((p′ − p) ω_m): depends on p′ − p only
    offsets = torch.arange(-(T - 1), T, dtype=torch.float64)[:, None]  # (2T − 1, 1)
    every_offset = torch.cos(offsets * frequencies(d)).sum(dim=1)     # (2T − 1,) the same curve, all offsets
    others = torch.where(torch.arange(T) == p, -math.inf, similarity)   # every position but p itself
    return {"p": p, "d": d, "T": T, "PE": PE.numpy(), "similarity": similarity.numpy(),
            "self": float(similarity[p]),                        # = d / 2: every (sin, cos) pair has length 1
            "range": (float(every_offset.min()), float(every_offset.max())),
            "nearest": [int(q) for q in torch.nonzero(torch.isclose(others, others.max())).flatten()],
            "nearest_value": float(others.max()), "wavelengths": (2 * math.pi / frequencies(d)).numpy()}
