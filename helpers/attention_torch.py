"""Scaled dot-product attention in PyTorch: the bare function and the module.

    scaled_dot_product_attention(Q, K, V, mask=None)    (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v)
                                                         -> (..., T_q, d_v): one check, then attention_weights @ V
    attention_weights(Q, K, mask=None)                   -> (..., T_q, T_k): the scale, the mask, the softmax
    SelfAttention(d_model, d_k)                          (B, T, d_model) -> (B, T, d_k), keeps last_weights
    causal_mask(T_q, T_k=None)                           (T_q, T_k) bool, bottom-right aligned
    check_attention_inputs, check_mask, check_tokens     the named errors, where a person's input enters
    count_parameters(module)                             trainable numbers

Mask convention (the textbook one): mask == 0 means "query i may NOT attend to key j"; nonzero / True means it may.
The mask broadcasts to (..., T_q, T_k). This is the polarity of a boolean `attn_mask` in
torch.nn.functional.scaled_dot_product_attention (True = may attend), and the opposite of nn.MultiheadAttention's
masks (True = ignore)."""
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.validation import count, describe


def check_attention_inputs(Q, K, V=None, mask=None) -> None:
    """A clear error, naming what was expected, for inputs the textbook lines would fail on or turn into NaN.
    Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v), mask broadcasting to (..., T_q, T_k)."""
    named = {"Q": (Q, "(..., T_q, d_k)"), "K": (K, "(..., T_k, d_k)")}
    if V is not None:
        named["V"] = (V, "(..., T_k, d_v)")
    for name, (x, layout) in named.items():
        if not isinstance(x, torch.Tensor) or x.dim() < 2 or not x.is_floating_point():
            raise TypeError(f"{name} should be a floating-point torch.Tensor of shape {layout}, but got "
                            f"{describe(x)}{f' of {x.dtype}' if hasattr(x, 'dtype') else ''}.")
        if x.dtype != Q.dtype or x.device != Q.device:
            raise TypeError(f"Q is {Q.dtype} on {Q.device} but {name} is {x.dtype} on {x.device}: attention needs one "
                            f"dtype and device for all its inputs, e.g. {name} = {name}.to(Q) "
                            "(torch.tensor(numpy_array) gives float64, torch.randn gives float32).")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q has d_k={Q.shape[-1]} but K has d_k={K.shape[-1]}: the query and key vectors must have "
                         "the same dimension to take dot products.")
    if V is not None and K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has T_k={K.shape[-2]} keys but V has {V.shape[-2]} values: every key needs exactly "
                         "one value.")
    if K.shape[-2] == 0:
        raise ValueError(f"K has no keys (shape {tuple(K.shape)}): softmax over no keys is 0/0: T_k must be 1 or more.")
    try:   # the batch axes, all but the last two: each equal or 1
        batch = np.broadcast_shapes(*(tuple(x.shape[:-2]) for x, _ in named.values()))
    except ValueError:
        raise ValueError("the batch axes (all but the last two) do not fit: " + ", ".join(f"{name} {tuple(x.shape)}"
                         for name, (x, _) in named.items()) + "; each must be the same or 1 in every input.") from None
    check_mask(mask, batch + (Q.shape[-2], K.shape[-2]))


def is_causal_bias(mask) -> bool:
    """Whether `mask` is PyTorch's causal_lower_right(...) object (its module is loaded once one has been made;
    importing it here would cost every notebook a second)."""
    bias = sys.modules.get("torch.nn.attention.bias")
    return bias is not None and isinstance(mask, bias.CausalBias)


def check_mask(mask, scores: tuple, what: str = "The mask") -> None:
    """A clear error for a mask that is not a 'may attend' mask broadcasting to the scores' shape (..., T_q, T_k),
    or that hides every key from some query (softmax over nothing is NaN; `what` names it). None passes."""
    if mask is None:
        return
    T_q, T_k = scores[-2:]
    if is_causal_bias(mask):           # PyTorch's causal_lower_right(...): its storage is not the mask
        raise TypeError("mask is PyTorch's causal_lower_right(...) object, which only "
                        "torch.nn.functional.scaled_dot_product_attention understands; here use the course's "
                        f"causal_mask({T_q}, {T_k}), the same bottom-right mask as a tensor of True/False.")
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask should be a torch.Tensor that broadcasts to (..., T_q, T_k) = (..., {T_q}, {T_k}), "
                        f"but got {type(mask).__name__}.")
    if mask.dtype != torch.bool and (mask < 0).any():   # float or integer
        raise ValueError("mask holds negative numbers (or -inf): that is an additive mask (0 = attend, -inf = "
                         "hidden), which PyTorch adds to the scores. This function takes a 'may attend' mask: "
                         "1 or True where query i may attend to key j, 0 or False where not. Try mask == 0.")
    try:
        grown = np.broadcast_shapes(tuple(scores), tuple(mask.shape))   # torch's costs 0.3 s once
    except ValueError:
        grown = None
    if grown != tuple(scores):   # (B, 1, 1, T) on (B, T, T) scores would pair every sentence with every other's mask
        batch_first = 1 < mask.dim() < len(scores) and mask.shape[0] == scores[0] and mask.shape[-1] == T_k
        hint = (" (mask[:, 0] drops a head axis)" if mask.dim() > len(scores) else "; if its first axis is the "
                f"batch, use mask[:, {'None, ' * (len(scores) - mask.dim())}...]" * batch_first)   # e.g. (B, T_k) flags
        raise ValueError(f"mask has shape {tuple(mask.shape)}, which does not broadcast to the scores' shape "
                         f"(..., T_q, T_k) = {tuple(scores)}" + (f" but turns it into {grown}" if grown else "")
                         + f": one entry per query-key pair, no axis the scores lack{hint}.")
    rows = mask.reshape((1,) * (2 - mask.dim()) + tuple(mask.shape))  # at least (T_q or 1, T_k or 1)
    blind = (rows == 0).all(dim=-1)                                    # (..., T_q or 1) in the mask's own rows
    if blind.any():
        *lead, row = torch.nonzero(blind)[0].tolist()                 # lead: the axes before the rows, (b, h) or ()
        who = (f"query row {row}" if rows.size(-2) > 1 else "every query") + f" of mask[{str(lead)[1:-1]}]" * bool(lead)
        raise ValueError(f"{what} hides every key from {who}: softmax over nothing is 0/0 = NaN. Every query must be "
                         "allowed to attend to at least one key (mask == 0 means 'may not').")


def check_tokens(x, module: nn.Module, mask=None) -> None:
    """A clear error for an x that the module's projections cannot take, or a mask that does not fit its scores:
    x must be (B, T, d_model) (one sentence (T, d_model) too, for a single head), in the dtype and on the device
    of the module's weights; a multi-head module's mask broadcasts to (B, H, T, T)."""
    W, heads = module.W_q.weight, getattr(module, "n_heads", None)    # W: (out_features, d_model)
    if not isinstance(x, torch.Tensor) or x.dim() not in ((3,) if heads else (2, 3)) or x.shape[-1] != W.shape[1]:
        one = " (one sentence of shape (T, d_model): x[None])" if heads and getattr(x, "dim", int)() == 2 else ""
        numpy = f" (a NumPy array: torch.from_numpy(x).to({W.dtype}))" * isinstance(x, np.ndarray)
        raise ValueError(f"x should be a torch.Tensor of shape (B, T, d_model) = (B, T, {W.shape[1]}){one}: one row of "
                         f"d_model = {W.shape[1]} numbers per token, as the module was made; got {describe(x)}{numpy}.")
    if x.dtype != W.dtype or x.device != W.device:
        raise TypeError(f"x is {x.dtype} on {x.device} but the module's weights are {W.dtype} on {W.device}: "
                        "convert one to the other, e.g. x = x.to(module.W_q.weight) "
                        "(torch.tensor(numpy_array) gives float64, nn.Linear float32).")
    if heads and isinstance(mask, torch.Tensor) and not is_causal_bias(mask) and mask.dim() == 3:
        raise ValueError(f"mask has shape {tuple(mask.shape)}: (B, T, T) against scores (B, H, T, T) would meet "
                         "the heads with its batch axis. Add a head axis: mask[:, None] is (B, 1, T, T).")
    T = x.shape[-2]
    check_mask(mask, (x.shape[0], heads, T, T) if heads else x.shape[:-1] + (T,))


def attention_weights(Q, K, mask=None):
    """W = softmax(Q Kᵀ / √d_k): (..., T_q, d_k), (..., T_k, d_k) -> (..., T_q, T_k), rows summing to 1.

    The one home of the scale, the mask and the softmax; it checks nothing (its callers have checked once)."""
    scores = (Q @ K.transpose(-2, -1)) / math.sqrt(Q.size(-1))  # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))   # hidden pairs: weight exp(-inf) = 0
    return F.softmax(scores, dim=-1)                            # (..., T_q, T_k), each row sums to 1


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, one output row per query.

    Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v) -> (..., T_q, d_v); mask == 0 means "may not attend"."""
    check_attention_inputs(Q, K, V, mask)      # a named error, not a broadcast error or NaN
    return attention_weights(Q, K, mask) @ V   # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention: (B, T, d_model) -> (B, T, d_k).

    Parameters: 3 · d_model · d_k (no biases). nn.Linear stores its weight as (d_k, d_model), the transpose of W_q
    in Q = X W_q. After a call, `last_weights` holds the (B, T, T) weights that call used."""
    def __init__(self, d_model: int, d_k: int):
        super().__init__()
        self.d_model, self.d_k = count(d_model, "d_model"), count(d_k, "d_k")   # whole sizes, or a named error
        self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_k, bias=False) for _ in range(3))

    def forward(self, x, mask=None):
        check_tokens(x, self, mask)                        # x: (B, T, d_model), the weights' dtype
        Q = self.W_q(x)                                    # (B, T, d_k)
        K = self.W_k(x)                                    # (B, T, d_k)
        V = self.W_v(x)                                    # (B, T, d_k)
        self.last_weights = attention_weights(Q, K, mask)  # (B, T, T)
        return self.last_weights @ V                       # (B, T, d_k)

    def weights(self, x, mask=None):
        """The (B, T, T) attention weights that forward uses on x, for plotting."""
        self(x, mask)
        return self.last_weights


def causal_mask(T_q: int, T_k: int | None = None, *, device=None) -> torch.Tensor:
    """(T_q, T_k) bool: the last T_q of T_k tokens each see themselves and what came before.
    Bottom-right aligned: query i may attend to keys 0 … T_k − T_q + i. causal_mask(T) is the square lower triangle."""
    T_q = count(T_q, "T_q")
    T_k = count(T_q if T_k is None else T_k, "T_k (the queries are the last T_q of the T_k tokens)", low=T_q)
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable numbers in a module."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
