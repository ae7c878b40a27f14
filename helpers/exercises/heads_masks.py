"""Exercises of notebook 09: split the heads, the bottom-right causal mask, padding combined with causal."""
from functools import partial

import numpy as np
import torch

from helpers import validation as check
from helpers.attention_torch import is_causal_bias
from helpers.exercises.engine import Case, Exercise, named_slip, raised


# --- Exercise 1: split the heads ----------------------------------------------------------------
def reference_split_heads(x, n_heads):
    """(B, T, d_model) -> (B, H, T, d_k): each token's features cut into H blocks, heads before tokens."""
    B, T, d_model = x.shape
    d_k = d_model // n_heads
    return x.view(B, T, n_heads, d_k).transpose(1, 2)   # (B, T, H, d_k) -> (B, H, T, d_k)


def _split_case(B, T, d_model, h, drawn="", seed=0) -> Case:
    x = torch.randperm(B * T * d_model, generator=torch.Generator().manual_seed(seed)).double().view(B, T, d_model)
    x += 0.5   # not whole numbers: a .long() shows
    return Case(x, h, what=f"x of shape ({B}, {T}, {d_model}) with n_heads={h}{drawn}")


def _draw_split(rng, like_the_page=False, square=False) -> Case:
    """2, 3, 5 or 6 heads of 2, 3, 5 or 6 features (not d_k = 4); `like_the_page`: x (2, 5, 12) with 2, 4 or 6 heads;
    `square`: as many tokens as features, so the number of tokens, which divides d_model, cannot pass for n_heads."""
    h, d_k = (int(n) for n in rng.choice([2, 3, 5, 6], size=2))
    B, T = int(rng.integers(1, 4)), int(rng.choice([n for n in (2, 3, 4, 5, 7) if n not in (h, d_k)]))
    T = h * d_k if square else T
    if like_the_page:
        B, T, h, d_k = 2, 5, (h := int(rng.choice([2, 4, 6]))), 12 // h
    return _split_case(B, T, h * d_k, h, ", drawn at random", int(rng.integers(2**31)))   # every entry different


def _split_shapes(case):
    (x, h), what = case.args, case.what
    (B, T, d_model), d_k = x.shape, x.shape[-1] // h
    return {shape: f"on {what} you returned shape {shape}: {message}." for shape, message in {
        (B, T, h, d_k): "that is (B, T, H, d_k): the view is right; now swap tokens and heads, .transpose(1, 2)",
        (B, h, d_k, T): "that is (B, H, d_k, T): tokens come before features, (B, H, T, d_k)",
        (B, h, T, d_model): f"each head gets d_k = d_model / H = {d_k} features, not all {d_model}",
        (B, 1, T, d_model): f"that is one head; cut the {d_model} features into H = {h} heads of d_k = {d_k}",
        (h, B, T, d_k): "that is (H, B, T, d_k): the heads came first (torch.stack puts them on dim 0); "
                        "stack on dim=1, or view as (B, T, H, d_k) and .transpose(1, 2)"}.items()}


def _split_slips(case):
    (x, h), (B, T, d_model) = case.args, case.args[0].shape
    d_k = d_model // h
    return [
        (lambda: x.view(B, h, T, d_k), f"on {case.what}: a view straight to (B, H, T, d_k) keeps the shape but mixes "
         "tokens: head 0 gets the first tokens' features, not a slice of every token. View as (B, T, H, d_k), then "
         ".transpose(1, 2)."), (lambda: x.view(B, T, d_k, h).permute(0, 3, 1, 2), f"on {case.what}: the heads are "
         f"interleaved (head 0 got features 0, {h}, {2 * h}, …): view as (B, T, H, d_k), so each head gets a block of "
         "d_k neighbouring features."), (lambda: reference_split_heads(x, h).floor(), f"on {case.what}: the numbers "
         "lost their fractions (x holds 0.5, 1.5, …): a .long(), .int() or int() made them whole. Keep x's dtype.")]


def _split_error(case, error):
    """After a TypeError (the signature fits): most often a size made with /, which Python makes a float."""
    if type(error) is TypeError:
        return (f"on {case.what}: {raised(error)}. If a size comes from /: in Python / always gives a float (12 / 3 = "
                "4.0), and view and reshape take whole numbers: d_k = d_model // n_heads.")


check_split_heads = Exercise(reference_split_heads, title="split the heads", own="split_heads", atol=1e-9,
    expects="split_heads(x, n_heads) returning a (B, H, T, d_k) tensor", shapes=_split_shapes, slips=_split_slips,
    cases=lambda: [_split_case(*case) for case in ((2, 5, 12, 3), (1, 3, 8, 2))],   # T, H and d_k all differ
    draw=(_draw_split, partial(_draw_split, square=True), partial(_draw_split, like_the_page=True)),
    hint="View as (B, T, n_heads, d_model // n_heads), each size read from x and n_heads, then .transpose(1, 2).",
    success="view as (B, T, H, d_k), then transpose to (B, H, T, d_k): every head sees every token, each through "
            "its own d_k features.",
    explanation="merge_heads undoes it: Y.transpose(1, 2).contiguous().view(B, T, H * d_k).", errors=_split_error)


# --- Exercise 2: the bottom-right causal mask ---------------------------------------------------
def reference_causal_mask(T_q, T_k):
    """(T_q, T_k) bool, True = may attend: the T_q queries are the LAST T_q of the T_k tokens."""
    i = torch.arange(T_q)[:, None]            # (T_q, 1) query i is token T_k − T_q + i
    j = torch.arange(T_k)[None, :]            # (1, T_k)
    return j <= i + (T_k - T_q)               # (T_q, T_k) key j is not in that token's future


def _read_mask(got, case):
    """(0/1 float array, None) for a mask given as bools or 0/1 numbers, else (None, what is wrong on this case)."""
    where = f"for {case.what}: "
    if is_causal_bias(got):   # its storage is not the mask: only F.scaled_dot_product_attention reads it
        return None, (f"{where}the mask is PyTorch's causal_lower_right(...) object, which only "
                      "torch.nn.functional.scaled_dot_product_attention understands. Build the mask as a tensor of "
                      "True/False: torch.ones(T_q, T_k, dtype=torch.bool).tril(...).")
    try:
        array = check.as_array(got, "the mask")   # bfloat16 too; text or complex numbers named
    except TypeError as error:
        return None, f"{where}{error} It should be a tensor of True/False (or 1/0)."
    if np.any(array < 0):
        return None, (f"{where}the mask holds negative numbers or -inf: that is an additive mask. This course's mask "
                      "is True (or 1) where a query may attend, False (or 0) where not.")
    if (other := array[(array != 0) & (array != 1)]).size:   # NaN, inf, or weights between 0 and 1
        return None, (f"{where}the mask holds {float(other[0])!r}. A mask holds True (or 1) where a query may attend "
                      "and False (or 0) where not: nothing else (weights are no mask; masks combine with &, not +).")
    return array, None


def _mask_error(case, error):
    """& or | on 0/1 floats: NotImplementedError (RuntimeError in torch 2.3, the floor); shapes; `and`."""
    return type(error) in (RuntimeError, NotImplementedError) and (
        f"for {case.what}: {raised(error).rstrip('.')}. If it names a dtype: &, | and ~ combine torch.bool masks, so "
        "build them with dtype=torch.bool; if shapes: print each part's .shape before you combine them; if a truth "
        "value is ambiguous: and, or, not ask a whole tensor for one True or False, where & | ~ go entry by entry.")


def _causal_slips(case):
    (T_q, T_k), what = case.args, case.what
    right, top_left = reference_causal_mask(T_q, T_k).double(), torch.ones(T_q, T_k).tril()
    return [
        (top_left, f"for {what} the mask is aligned top-left: query 0 sees only key 0. The {T_q} queries are the LAST "
         f"{T_q} tokens, so query 0 is token {T_k - T_q} and sees keys 0 … {T_k - T_q}: use tril(diagonal=T_k - T_q)"),
        (1 - right, f"for {what} the polarity is flipped: True marks the keys a query may NOT see "
                    "(nn.MultiheadAttention's convention). Here True = may attend"),
        (1 - top_left, f"for {what} the mask is flipped (True = hidden) and aligned top-left"),
        (torch.ones(T_q, T_k).triu(T_k - T_q), f"for {what} the mask is the upper triangle (triu), the keys from each "
                                               "query's own onward: tril keeps those up to it"),
        (torch.ones(T_q, T_k).tril(T_k - T_q - 1), f"for {what} every query is kept off its own key: "
                                                  "a token may attend to itself (diagonal T_k - T_q)"),
        (torch.ones(T_q, T_k).tril(T_q - T_k), f"for {what} the diagonal's sign is flipped: the "
                                              "triangle moves right by T_k - T_q, not T_q - T_k"),
        (torch.ones(T_q, T_k).tril(T_k - T_q + 1), f"for {what} every query also sees the token after "
                                                  "it: the diagonal is T_k - T_q, not one more")]


def _draw_causal(rng, shortest=2, longest=9) -> Case:
    T_q, T_k = sorted(int(n) for n in rng.choice(range(shortest, longest + 1), size=2, replace=False))   # T_q < T_k
    return Case(T_q, T_k, what=f"T_q={T_q}, T_k={T_k} (drawn at random)")


check_causal_mask = Exercise(reference_causal_mask, title="the bottom-right causal mask",
    expects="causal(T_q, T_k) returning a (T_q, T_k) mask", where="for {what}: ", name="the mask for {what}",
    cases=lambda: [Case(T_q, T_k, what=f"T_q={T_q}, T_k={T_k}") for T_q, T_k in ((4, 4), (2, 5), (1, 6), (3, 7))],
    draw=(_draw_causal, _draw_causal, partial(_draw_causal, shortest=10, longest=40)), read=_read_mask,
    slips=lambda case: [(v, f"{m}.") for v, m in _causal_slips(case)],
    hint="Query i may attend to keys 0 … T_k − T_q + i.", reads="the mask", atol=0.5, errors=_mask_error,
    success="bottom-right aligned: with 2 queries over 5 keys, query 0 is token 3 and sees keys 0 … 3. The same "
            "mask serves a square sequence and a generation step with a KV cache.", own="causal_mask",
    explanation="Shorter: torch.ones(T_q, T_k, dtype=torch.bool).tril(diagonal=T_k - T_q), which is "
                "helpers.attention_torch.causal_mask.")


# --- Exercise 3: padding and causal together ----------------------------------------------------
def reference_combined_mask(lengths, T):
    """(B,) lengths -> (B, 1, T, T) bool: key j is a real token AND not in query i's future."""
    real_keys = torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]   # (B, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()                         # (T, T)
    return real_keys[:, None, None, :] & causal                               # (B, 1, 1, T) & (T, T) -> (B, 1, T, T)


def _read_combined(result, case):
    """The mask as 0/1 numbers, broadcast to (B, 1, T, T); a (B, T, T) mask is told to add the head axis."""
    what, B, T = case.what, len(case.args[0]), case.args[1]
    got, message = _read_mask(result, case)
    if message is not None:
        return None, message
    if got.shape == (B, T, T):
        return None, (f"for {what} the mask is (B, T, T) = {got.shape}: against scores (B, H, T, T) its batch "
                      "axis would meet the heads. Add a head axis: (B, 1, T, T).")
    if got.ndim == 4 and got.shape[0] == B and got.shape[2:] == (T, T) and got.shape[1] > 1:
        return None, (f"for {what} the mask is {got.shape}: a head axis of {got.shape[1]} fits only scores with "
                      f"{got.shape[1]} heads. Give it size 1, (B, 1, T, T), and it broadcasts over any number.")
    try:
        stretched = np.broadcast_to(got, (B, 1, T, T))
    except ValueError:
        shorter = ": T is the argument, not max(lengths)" * (got.shape[-1] == max(case.args[0]) != T)
        return None, (f"for {what} the mask has shape {got.shape}, which does not broadcast to (B, 1, T, T) = "
                      f"{(B, 1, T, T)}{shorter}.")
    if got.shape[-4:-3] != (B,) and not np.array_equal(stretched, reference_combined_mask(*case.args)) and named_slip(
            stretched, _combined_slips(case), atol=0.5) is None:   # a slip is named as such; anything else is told
        return None, (f"for {what} the mask has shape {got.shape}: one mask for every sentence of the batch, but "
                      f"each has its own padding. Give the batch its own axis: (B, 1, T, T) = {(B, 1, T, T)}.")
    return stretched, None


def _combined_slips(case):
    lengths, T = case.args
    keys = torch.arange(T)[None, :] < lengths[:, None]                     # (B, T)
    causal, right = torch.ones(T, T).tril(), reference_combined_mask(lengths, T).double()
    return [
        (causal.expand(right.shape), "the padding is missing. With the <pad>s at the end, causality alone keeps the "
         "real tokens off them, but the <pad> queries attend to <pad> keys, and with padding at the start (or no "
         "causal mask, in an encoder) real tokens would see pads. AND in the padding mask"),
        (keys[:, None, None, :].double().expand(right.shape), "the causal part is missing: every token sees the "
         "tokens after it. AND in causal_mask(T)"),
        (1 - right, "the polarity is flipped: True should mean 'may attend' (the course's convention)"),
        (keys[:, None, None, :] & causal.T.bool(), "the causal part is the upper triangle (triu): each query sees "
         "itself and the keys AFTER it. tril keeps the keys up to each query"),
        (keys[:, None, None, :] | causal.bool(), "the masks were combined with OR; a key must pass both tests: "
         "combine with & (AND)"),
        (keys[:, None, :, None] & causal.bool(), "you hid the <pad> QUERIES (rows): their rows are now empty, and "
         "softmax over an empty row is 0/0 = NaN (section 9). Hide only the <pad> KEYS (columns): the key mask (B, T) "
         "as [:, None, None, :], (B, 1, 1, T)"),   # the <pad>s at the end: hiding their keys as well changes nothing
        ((torch.arange(T)[None, :] <= lengths[:, None])[:, None, None, :] & causal.bool(), "one <pad> too many is "
         "visible: key j is real when j < length (j counts from 0)"),
        ((torch.arange(T)[None, :] >= T - lengths[:, None])[:, None, None, :] & causal.bool(), "the <pad>s are at the "
         "END of each sentence: key j is real when j < length"),
        (keys[:, None, None, :] & causal.tril(-1).bool(), "every token is kept off its own key, so query 0's row is "
         "empty: a token may attend to itself (j <= i, tril() with diagonal 0)")]


def _draw_combined(rng, T=None, B=2) -> Case:
    """A batch whose longest sentence, 2 … T − 1 tokens, is shorter than T (so T = max(lengths) shows: its mask,
    at least 2 wide, cannot broadcast), in another order; `T`: the page's 5, say, B sentences of other lengths."""
    B, T = (B, T) if T else (int(rng.integers(2, 5)), int(rng.integers(4, 9)))
    lengths = [int(n) for n in rng.integers(1, T, size=B)]
    lengths[int(rng.integers(B))] = int(rng.integers(2, T))
    return Case(torch.tensor(lengths), T, what=f"lengths={lengths}, T={T} (drawn at random)")


check_combined_mask = Exercise(reference_combined_mask, title="padding combined with causal",
    expects="combined(lengths, T) returning a (B, 1, T, T) mask", where="for {what}: ", errors=_mask_error,
    cases=lambda: [Case(torch.tensor(n), T, what=f"lengths={n}, T={T}") for n, T in (([3, 5], 5), ([2, 4, 1], 4))],
    draw=(_draw_combined, lambda rng: _draw_combined(rng, int(rng.integers(9, 21)), int(rng.integers(5, 8))),
          partial(_draw_combined, T=5)), read=_read_combined, reads="the mask",
    slips=lambda case: [(v, f"for {case.what}: {m}.") for v, m in _combined_slips(case)],
    name="the mask for {what}", atol=0.5, hint="A key is allowed if it is a real token AND not in the future.",
    success="padding AND causal, (B, 1, T, T): it broadcasts over the heads, and each real token sees itself and "
            "the real tokens before it.",
    explanation="With the helpers: padding_mask(lengths, T) & causal_mask(T).")
