"""Many heads and what generation needs: multi-head attention, masks for batches, the KV cache.

    split_heads(x, H)                (B, T, d_model) -> (B, H, T, d_k)       view, THEN transpose
    merge_heads(Y)                   (B, H, T, d_k)  -> (B, T, H · d_k)
    SeparateHeads(d_model, H)        H SelfAttention heads, concatenated, projected by W_o
    MultiHeadAttention(d_model, H)   the same, fused: one W_q, W_k, W_v, W_o each (d_model -> d_model)
    fuse(separate)                   the MultiHeadAttention that computes what SeparateHeads computes
    padding_mask(lengths, T)         (B,) -> (B, 1, 1, T) bool: key j is a real token
    attend_with_cache(mha, x, cache) new tokens attend to cached keys/values plus their own
    decode_with_cache(mha, x)        token by token with a KV cache -> (B, T, d_model)
    attention_dropout(W, p, g)       dropout on attention weights, kept entries scaled by 1/(1 - p)
    head_pattern_data(...)           what the notebook 09 widget shows

Masks follow the course (helpers.attention_torch): mask == 0 means "may not attend", broadcast to (B, H, T_q, T_k)."""
import numpy as np
import torch
import torch.nn as nn

from helpers.attention_torch import SelfAttention, attention_weights, causal_mask, check_tokens
from helpers.running_example import random_table
from helpers.validation import count, fraction, plain


def split_heads(x, n_heads: int):
    """(B, T, d_model) -> (B, H, T, d_k): cut each token's features into H pieces, then put heads before tokens."""
    B, T, d_model = x.shape
    check_heads(d_model, n_heads)                                       # n_heads must divide d_model
    return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)   # (B, T, H, d_k) -> (B, H, T, d_k)


def merge_heads(Y):
    """(B, H, T, d_k) -> (B, T, H · d_k): each token's head outputs side by side (the inverse of split_heads)."""
    B, H, T, d_k = Y.shape
    return Y.transpose(1, 2).contiguous().view(B, T, H * d_k)          # (B, T, H, d_k) -> (B, T, H · d_k)


def check_heads(d_model: int, n_heads: int) -> None:
    """A clear error when d_model cannot be cut into n_heads equal heads."""
    if count(d_model, "d_model") % count(n_heads, "n_heads"):
        raise ValueError(f"d_model={d_model} cannot be split into n_heads={n_heads} equal heads: each head gets "
                         f"d_k = d_model / n_heads features, so n_heads must divide {d_model}.")


class SeparateHeads(nn.Module):
    """H separate SelfAttention(d_model, d_k) heads, outputs concatenated and mixed by W_o: (B, T, d_model) -> same."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        check_heads(d_model, n_heads)
        self.heads = nn.ModuleList(SelfAttention(d_model, d_model // n_heads) for _ in range(n_heads))
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        check_tokens(x, self.heads[0], mask)                           # once for all heads: x (B, T, d_model)
        Y = torch.cat([attention_weights(head.W_q(x), head.W_k(x), mask) @ head.W_v(x)   # each (B, T, d_k)
                       for head in self.heads], dim=-1)                # H × (B, T, d_k) -> (B, T, H · d_k)
        return self.W_o(Y)                                             # (B, T, d_model)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention, fused: (B, T, d_model) -> (B, T, d_model), H heads of d_k = d_model / H.

    Parameters: 4 · d_model² (+ 4 · d_model with bias), the same as one head with d_k = d_model plus W_o.
    After a call, `last_weights` holds the (B, H, T, T) weights that call used."""
    def __init__(self, d_model: int, n_heads: int, bias: bool = False):
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        # W_q, W_k, W_v: all H heads' projections side by side; W_o mixes the concatenated heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def forward(self, x, mask=None):
        check_tokens(x, self, mask)                         # x: (B, T, d_model); mask broadcasts to (B, H, T, T)
        Q = split_heads(self.W_q(x), self.n_heads)          # (B, T, d_model) -> (B, H, T, d_k)
        K = split_heads(self.W_k(x), self.n_heads)          # (B, H, T, d_k)
        V = split_heads(self.W_v(x), self.n_heads)          # (B, H, T, d_k)
        self.last_weights = attention_weights(Q, K, mask)   # (B, H, T, T): every head at once, divided by √d_k
        return self.W_o(merge_heads(self.last_weights @ V))  # (B, H, T, d_k) -> (B, T, d_model)

    def weights(self, x, mask=None):
        """Every head's attention weights that forward uses on x, (B, H, T, T), for plotting."""
        self(x, mask)
        return self.last_weights


def fuse(separate: SeparateHeads) -> MultiHeadAttention:
    """A MultiHeadAttention whose W_q is the heads' W_q stacked (same for K, V), and the same W_o."""
    fused = MultiHeadAttention(separate.W_o.in_features, len(separate.heads)).to(separate.W_o.weight.dtype)
    with torch.no_grad():
        for name in ("W_q", "W_k", "W_v"):                  # H × (d_k, d_model) -> (d_model, d_model)
            getattr(fused, name).weight.copy_(torch.cat([getattr(head, name).weight for head in separate.heads]))
        fused.W_o.weight.copy_(separate.W_o.weight)
    return fused


def padding_mask(lengths, T: int):
    """(B,) real lengths -> (B, 1, 1, T) bool, True where key j < length: broadcasts over heads and queries."""
    T = count(T, "T (the padded length)")
    lengths = torch.tensor([count(n, "each length", 1, T) for n in np.atleast_1d(plain(lengths)).tolist()])
    return (torch.arange(T) < lengths[:, None])[:, None, None, :]   # (B, T) -> (B, 1, 1, T)


def attend_with_cache(mha: MultiHeadAttention, x_new, cache=None):
    """New tokens x_new (B, T_new, d_model) attend to the cached tokens and to themselves (causally).

    cache: None or (K, V), each (B, H, T_past, d_k). Returns (y_new (B, T_new, d_model), the cache with
    the new keys and values appended). The mask is causal_mask(T_new, T_past + T_new): bottom-right."""
    check_tokens(x_new, mha)                                      # a named error for an x_new the layer cannot take
    H = mha.n_heads
    Q = split_heads(mha.W_q(x_new), H)                            # (B, H, T_new, d_k)
    K = split_heads(mha.W_k(x_new), H)                            # (B, H, T_new, d_k)
    V = split_heads(mha.W_v(x_new), H)
    if cache is not None:
        K = torch.cat([cache[0], K], dim=2)                       # (B, H, T_past + T_new, d_k)
        V = torch.cat([cache[1], V], dim=2)
    mask = causal_mask(Q.size(2), K.size(2), device=x_new.device)  # (T_new, T_all), the last T_new rows
    Y = attention_weights(Q, K, mask) @ V                         # (B, H, T_new, d_k)
    return mha.W_o(merge_heads(Y)), (K, V)


def decode_with_cache(mha: MultiHeadAttention, x, prompt: int = 1):
    """Read the first `prompt` tokens at once, then one token per step with a KV cache: (B, T, d_model) -> same."""
    check_tokens(x, mha)                                          # before x is cut into steps
    prompt = count(prompt, "prompt (the tokens read at once)", 1, x.size(1))
    y, cache = attend_with_cache(mha, x[:, :prompt])              # (B, prompt, d_model)
    outputs = [y]
    for t in range(prompt, x.size(1)):
        y, cache = attend_with_cache(mha, x[:, t:t + 1], cache)   # (B, 1, d_model): one new token
        outputs.append(y)
    return torch.cat(outputs, dim=1)                              # (B, T, d_model)


def attention_dropout(W, p: float, generator: torch.Generator):
    """Training-time dropout on weights W: each entry zeroed with probability p, the rest divided by 1 - p."""
    p = fraction(p, "p (the probability of dropping a weight; 1 would zero them all and divide by 0)", one=False)
    keep = torch.rand(W.shape, generator=generator, dtype=W.dtype) >= p   # (..., T_q, T_k) True = kept
    return W * keep / (1 - p)


# --- the sentences and the untrained model behind the per-head pictures and the widget -----------
BATCH_SENTENCES = ("the river bank flows slowly", "money bank grows", "the old bank lends money", "river flows")
PAD, MASK_TYPES, D_MODEL, N_HEADS = "<pad>", ("none", "causal", "padding", "padding + causal"), 16, 4


def demo_model(d_model: int = D_MODEL, n_heads: int = N_HEADS, seed: int = 0, std: float = 0.6):
    """An untrained float64 MultiHeadAttention with weights N(0, std²) from `seed`, the same on every PyTorch."""
    mha, g = MultiHeadAttention(d_model, n_heads).double(), torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in (mha.W_q, mha.W_k, mha.W_v, mha.W_o):
            layer.weight.copy_(std * torch.randn(d_model, d_model, generator=g, dtype=torch.float64))
    return mha


def padded_batch():
    """BATCH_SENTENCES -> (padded word lists, lengths (B,), X (B, T_max, d_model)), padded at the end with PAD. X is
    float64: a fixed random vector per word, zeros for PAD."""
    rows = [s.split() for s in BATCH_SENTENCES]
    T = max(len(r) for r in rows)
    words = [r + [PAD] * (T - len(r)) for r in rows]
    vocabulary = sorted({w for r in rows for w in r})   # (V,) words; PAD: a zero row after them
    table = torch.cat([torch.from_numpy(random_table(len(vocabulary), D_MODEL, 9)), torch.zeros(1, D_MODEL).double()])
    ids = torch.tensor([[vocabulary.index(w) if w != PAD else -1 for w in r] for r in words])   # (B, T_max)
    return words, torch.tensor([len(r) for r in rows]), table[ids]


def head_pattern_data(sentence: str, head: int, mask_type: str = "none", model=None) -> dict:
    """The weights of every head for one sentence of BATCH_SENTENCES, padded like the batch, under one mask.
    Returns {"tokens", "length", "mask" (T, T) bool, "weights" (H, T, T), "head", "W" (T, T) of that head,
    "on_padding" (the weight real tokens give to PAD keys, summed over keys, averaged over real queries)}."""
    model = demo_model() if model is None else model
    (words, lengths, X), b = padded_batch(), BATCH_SENTENCES.index(sentence)
    T, n = X.size(1), int(lengths[b])
    mask = torch.ones(T, T, dtype=torch.bool)
    if "causal" in mask_type:
        mask &= causal_mask(T)
    if "padding" in mask_type:
        mask &= padding_mask(lengths[b:b + 1], T)[0, 0]           # (1, T) -> (T, T)
    with torch.no_grad():
        weights = model.weights(X[b:b + 1].to(model.W_q.weight), mask)[0].double().numpy()   # (H, T, T)
    return {"tokens": words[b], "length": n, "mask": mask.numpy(), "weights": weights, "head": head,
            "W": weights[head], "on_padding": float(weights[head, :n, n:].sum(-1).mean())}
