"""Scaled dot-product attention in PyTorch: the bare function and the module.

    scaled_dot_product_attention(Q, K, V, mask=None)    (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v)
                                                         -> (..., T_q, d_v)
    SelfAttention(d_model, d_k)                          (B, T, d_model) -> (B, T, d_k)

Mask convention (the textbook one): mask == 0 means "query i may NOT attend
to key j"; nonzero / True means it may. Note that this is the same polarity as
a boolean `attn_mask` in torch.nn.functional.scaled_dot_product_attention
(True = may attend), and the opposite of nn.MultiheadAttention's
`key_padding_mask` (True = ignore).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers import validation as check


def _require_tensor(x, name: str, layout: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} should be a torch.Tensor of shape {layout}, but got {type(x).__name__}.")
    if x.dim() < 2:
        raise ValueError(f"{name} should have at least 2 dimensions {layout}, but has shape {tuple(x.shape)}.")
    if not x.is_floating_point():
        raise TypeError(f"{name} should hold floating-point numbers, but has dtype {x.dtype}. Try {name}.float().")
    return x


def _require_agreement(**tensors: torch.Tensor) -> None:
    """One dtype and one device for all: a clear error instead of torch's 'expected scalar type'."""
    (first_name, first), *rest = tensors.items()
    for name, x in rest:
        if x.dtype != first.dtype:
            raise TypeError(
                f"{first_name} is {first.dtype} but {name} is {x.dtype}: attention needs one dtype for all its "
                f"inputs. Convert one, e.g. {name} = {name}.to({first_name}.dtype) "
                "(torch.tensor(numpy_array) gives float64, torch.randn gives float32)."
            )
        if x.device != first.device:
            raise ValueError(f"{first_name} is on {first.device} but {name} is on {x.device}: put them on one "
                             f"device, e.g. {name} = {name}.to({first_name}.device).")


def check_qk(Q, K) -> torch.Size:
    """Raise a clear error unless Q (..., T_q, d_k) and K (..., T_k, d_k) can be dotted together.

    Returns the broadcast batch shape (...).
    """
    _require_tensor(Q, "Q", "(..., T_q, d_k)")
    _require_tensor(K, "K", "(..., T_k, d_k)")
    _require_agreement(Q=Q, K=K)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"Q has d_k={Q.shape[-1]} but K has d_k={K.shape[-1]}: the query and key vectors must have "
            "the same length to take dot products."
        )
    if Q.shape[-1] == 0:
        raise ValueError(f"Q and K have d_k=0 (shapes {tuple(Q.shape)} and {tuple(K.shape)}): "
                         "a query or key needs at least one number.")
    if K.shape[-2] == 0:
        raise ValueError(f"K has no keys (shape {tuple(K.shape)}, T_k=0): every query needs at least one key "
                         "to attend to.")
    try:
        return torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    except RuntimeError:
        raise ValueError(f"The batch dimensions of Q {tuple(Q.shape[:-2])} and K {tuple(K.shape[:-2])} "
                         "do not match (nor broadcast).") from None


def check_qkv(Q, K, V) -> torch.Size:
    """Raise a clear error unless Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v) fit together.

    Returns the broadcast batch shape (...). NaN is looked for in the output
    instead (see `refuse_nonfinite`): one scan rather than three.
    """
    check_qk(Q, K)
    _require_tensor(V, "V", "(..., T_k, d_v)")
    _require_agreement(Q=Q, V=V)
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K has T_k={K.shape[-2]} keys but V has {V.shape[-2]} values: every key needs exactly one value."
        )
    try:
        return torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"The batch dimensions of Q {tuple(Q.shape[:-2])}, K {tuple(K.shape[:-2])} and "
            f"V {tuple(V.shape[:-2])} do not match (nor broadcast)."
        ) from None


def refuse_nonfinite(out: torch.Tensor, **inputs: torch.Tensor) -> torch.Tensor:
    """Return `out`, or raise a clear error if it holds NaN or infinity, naming the input it came from.

    A NaN or inf in any input that can affect the result reaches the output
    (even a weight of exactly 0 times NaN is NaN), so scanning the output is enough.
    """
    if not torch.isfinite(out).all():
        for name, x in inputs.items():
            if not torch.isfinite(x).all():
                bad = "NaN" if torch.isnan(x).any() else "infinity"
                raise ValueError(f"{name} contains {bad}: attention spreads it to every output it touches.")
        raise ValueError(
            "The attention result overflowed to NaN or infinity although the inputs are finite: the scores "
            f"are too large for {out.dtype} (largest {torch.finfo(out.dtype).max:.4g}). Scale the inputs down "
            "or compute in a wider dtype, e.g. .float()."
        )
    return out


def check_mask(mask, t_q: int, t_k: int, batch: torch.Size | None = None) -> torch.Tensor:
    """The boolean (..., T_q, T_k) 'may attend' mask; a clear error for a bad shape or a fully hidden row.

    `batch`: the batch shape (...) of the scores; the mask's own must broadcast to it.
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask should be a torch.Tensor of shape (..., {t_q}, {t_k}), but got {type(mask).__name__}.")
    if mask.dim() < 2 or mask.shape[-2:] != (t_q, t_k):
        raise ValueError(
            f"mask should end in shape (T_q, T_k) = ({t_q}, {t_k}), one entry per query-key pair, "
            f"but has shape {tuple(mask.shape)}."
        )
    if batch is not None:
        try:
            fits = torch.broadcast_shapes(mask.shape[:-2], batch) == batch
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"mask has batch dimensions {tuple(mask.shape[:-2])} but the queries and keys have "
                             f"{tuple(batch)}: give the mask the same leading dimensions, or none.")
    if mask.is_floating_point() and torch.isnan(mask).any():
        raise ValueError("mask contains NaN: use 1 or True where a query may attend to a key, 0 or False where not.")
    if mask.is_floating_point() and (mask < 0).any():
        raise ValueError(
            "mask holds negative numbers (or -inf): that is an additive mask (0 = attend, -inf = blocked), "
            "which is added to the scores. This function takes a 'may attend' mask instead: 1 or True where "
            "query i may attend to key j, 0 or False where it may not. Try mask = (additive_mask == 0)."
        )
    allowed = mask != 0
    if not allowed.any(dim=-1).all():
        row = torch.nonzero(~allowed.any(dim=-1))[0].tolist()
        raise ValueError(
            f"The mask hides every key from query row {row[-1]} (index {tuple(row)}): softmax over nothing "
            "is 0/0 = NaN. Every query must be allowed to attend to at least one key (mask == 0 means 'may not')."
        )
    return allowed


def causal_mask(T: int, device=None) -> torch.Tensor:
    """(T, T) lower-triangular mask of ones: token i may attend to tokens 0..i."""
    T = check.positive_int(T, "T")
    return torch.tril(torch.ones(T, T, dtype=torch.bool, device=device))


def attention_weights(Q, K, mask=None) -> torch.Tensor:
    """softmax(Q Kᵀ / √d_k) with masked pairs at weight 0.

    Q: (..., T_q, d_k)   K: (..., T_k, d_k)   mask: (..., T_q, T_k)  ->  (..., T_q, T_k)
    """
    return refuse_nonfinite(_weights(Q, K, mask), Q=Q, K=K)


def _weights(Q, K, mask=None) -> torch.Tensor:
    """attention_weights without the final scan for NaN (its callers scan their own result)."""
    batch = check_qk(Q, K)
    d_k = Q.size(-1)
    scores = (Q @ K.transpose(-2, -1)) / math.sqrt(d_k)  # (..., T_q, T_k)
    if mask is not None:
        allowed = check_mask(mask, Q.size(-2), K.size(-2), batch)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return F.softmax(scores, dim=-1)


def scaled_dot_product_attention(Q, K, V, mask=None) -> torch.Tensor:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V.

    Q: (..., T_q, d_k)   K: (..., T_k, d_k)   V: (..., T_k, d_v)   mask: (..., T_q, T_k)
    -> (..., T_q, d_v). mask == 0 means "may not attend"; a query row with no
    allowed key raises ValueError instead of returning NaN.
    """
    check_qkv(Q, K, V)
    return refuse_nonfinite(_weights(Q, K, mask) @ V, Q=Q, K=K, V=V)


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention with learned W_q, W_k, W_v.

    (B, T, d_model) -> (B, T, d_k). Parameters: 3 · d_model · d_k (no biases).
    """

    def __init__(self, d_model: int, d_k: int):
        super().__init__()
        self.d_model = d_model = check.positive_int(d_model, "d_model")
        self.d_k = d_k = check.positive_int(d_k, "d_k")
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_k, bias=False)

    def _check_input(self, x) -> None:
        _require_tensor(x, "x", "(B, T, d_model)")
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x has {x.shape[-1]} features per token but this SelfAttention was built with "
                f"d_model={self.d_model}."
            )
        weight = self.W_q.weight
        if x.dtype != weight.dtype:
            raise TypeError(f"x is {x.dtype} but this SelfAttention's weights are {weight.dtype}: convert one, "
                            f"e.g. x.to({weight.dtype}) or layer.to({x.dtype}) "
                            "(torch.tensor(numpy_array) gives float64).")
        if x.device != weight.device:
            raise ValueError(f"x is on {x.device} but this SelfAttention is on {weight.device}: "
                             f"move one, e.g. x.to('{weight.device}').")

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        self._check_input(x)
        Q = self.W_q(x)  # (B, T, d_k)
        K = self.W_k(x)  # (B, T, d_k)
        V = self.W_v(x)  # (B, T, d_k)
        return refuse_nonfinite(scaled_dot_product_attention(Q, K, V, mask), x=x)  # (B, T, d_k)

    def weights(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        """The (B, T, T) attention weights for input x (B, T, d_model), for plotting."""
        self._check_input(x)
        return attention_weights(self.W_q(x), self.W_k(x), mask)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable numbers in a module."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
