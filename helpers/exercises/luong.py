"""Exercises of notebook 06: Luong attention, cross-attention and the shapes of each."""
import math

import numpy as np
import torch

from helpers.attention_torch import attention_weights, scaled_dot_product_attention
from helpers.exercises.engine import Case, Exercise, Feedback, correct, named_slip, solved_by, whole_numbers, wrong
from helpers.luong import decoder_states, encoder_states, luong_dot_attention, projections


# --- Exercise 1: one step of Luong's dot attention -------------------------------------------------
def reference_luong_context(s, H):
    """Luong's dot attention for one decoder state: s (d,), H (T_k, d) -> context (d,)."""
    scores = H @ s  # (T_k,): s · h_j for every encoder state
    weights = torch.softmax(scores, dim=0)  # (T_k,): positive, sum to 1
    return weights @ H  # (d,): Σ_j w_j h_j


#: Keys that s = [-2000, 1] scores [-3999.5, -2000, -2003, -3999.5, -4000.5]: exp overflows after a shift far below
#: the largest, and falls to 0 for every key with no shift (or a shift by the largest score only when above 0).
SPIKED_KEYS = torch.tensor([[2.0, 0.5], [1.0, 0.0], [1.0015, 0.0], [2.0, 0.5], [2.0, -0.5]])
SPIKED = "keys scoring [-3999.5, -2000, -2003, -3999.5, -4000.5] (shift by the largest score, or exp overflows or is 0)"


def _luong_cases():
    g = torch.Generator().manual_seed(6)
    H_random, s_random = torch.randn(5, 3, generator=g), torch.randn(3, generator=g)
    return [Case(s, encoder_states(), what=f"the story's '{word}' step") for s, word in zip(
        decoder_states(), ("paisa", "badhta"))] + [Case(s_random, H_random, what="a random s of 3 numbers and H of 5")]


def _draw_luong(rng, top=0.0, dtype=torch.float64) -> Case:
    """s (d,), H (T_k, d); `top`: the story's sizes, h_j, h_k alone in the last dimension, s `top` there: scores near
    top and top − 3 (in float32, over 88.72 overflows exp)."""
    T_k, d, j = (int(n) for n in rng.integers(2, 9, size=3))
    T_k, d = encoder_states().shape if top else (T_k, d)   # an answer that swaps in the story's H at its size fails
    g, j, k = torch.Generator().manual_seed(int(rng.integers(2**31))), j % T_k, (j + 1) % T_k
    s, H = torch.randn(d, generator=g, dtype=dtype), torch.randn(T_k, d, generator=g, dtype=dtype)
    if top:
        H[:, -1], H[j, -1], H[k, -1], s[-1] = 0.0, 1.0, 1 - 3 / top, top
    return Case(s, H, what=f"s of dimension {d} and H of shape ({T_k}, {d}){', float32' * (dtype == torch.float32)}, "
                f"drawn at random" + f", h_{j}'s and h_{k}'s scores near {top:,.0f} and {top - 3:,.0f}" * bool(top))


def _judge_context(case, got, expected):
    (s, H), d = case.args, case.args[1].shape[1]
    if got.shape != (d,) and got.size == d:   # (1, d) or (d, 1): the right numbers with an extra axis
        same = "the numbers are right, but " if np.allclose(got.ravel(), expected, atol=1e-4) else ""
        return (f"the context has shape {got.shape}: {same}it has an extra axis of size 1 (from s[None], "
                f"unsqueeze or keepdim=True). One decoder state gives ONE context vector, shape ({d},): "
                "keep s 1-D, or drop the axis with .squeeze().")
    return named_slip(got, atol=1e-4, slips=(
        (luong_dot_attention(s, H)[1], "you returned the attention weights; the context is weights @ H, shape (d,)."),
        (H @ s, "you returned the scores s · h_j. Apply softmax, then take the weighted sum of the h_j.")))


def _context_slips(case):
    (s, H), d = case.args, case.args[1].shape[1]
    scores = H @ s
    return ((scores @ H, "the weights are the raw scores: you forgot the softmax."),
            ((scores / scores.sum()) @ H, "you divided the scores by their sum; use softmax."),
            (torch.softmax(scores / math.sqrt(d), dim=0) @ H, "you divided the scores by √d, the Transformer's "
             "addition (notebook 05); Luong's dot score is plain s · h_j."),
            (H.mean(axis=0), "that is the plain average of the encoder states; weight them by softmax(s · h_j)."),
            (H.sum(axis=0), "every weight came out 1: the softmax ran over an axis of size 1. Run it over the T_k "
                            "scores: dim=-1 of the 1-D scores H @ s."),
            (torch.softmax(scores, dim=0) @ H / len(H), "that is the MEAN of the weighted states: add them, .sum(0)."),
            (H[int(scores.argmax())], "that is a single h_j (here the best-scoring one): softmax blends them all."))


check_luong_context = Exercise(reference_luong_context, title="one step of Luong's dot attention",
    expects="luong_context(s, H) -> context vector of shape (d,)", where="", name="the context on {what}", atol=1e-6,
    cases=_luong_cases, atol32=1e-4, reads="the context", own="luong_dot_attention",
    draw=(_draw_luong, _draw_luong, lambda rng: _draw_luong(rng, top=1000.0),
          lambda rng: _draw_luong(rng, top=float(rng.integers(100, 201)), dtype=torch.float32),
          lambda rng: Case(torch.tensor([-2000.0, 1.0]), SPIKED_KEYS, what=f"s = [-2000, 1] and {SPIKED}")),
    judge=_judge_context, slips=_context_slips, expected=lambda case: luong_dot_attention(*case.args)[0],
    hint="Three steps: a score per encoder state, a softmax over the scores, the weighted sum of the states.",
    success="Luong's three steps: s asks (query), each h_j answers (key), the h_j are mixed (value). "
            "The same vectors H served as keys and as values.",
    explanation="Equivalently: scaled_dot_product_attention(math.sqrt(d) * s[None], H, H)[0] (multiplying the "
                "query by √d undoes the Transformer's 1/√d).")


# --- Exercise 2: the shapes of cross-attention -----------------------------------------------------
_SHAPE_HINTS = {  # what each shape counts, without giving the numbers away
    "Q": "one row per token of the sequence that asks; columns: the dimension of a query after the projection",
    "K": "rows: one key per token of the sequence being looked at; columns: a key's dimension, matching a query's",
    "V": "rows: one value per key; columns: the dimension of a value after the projection, d_v",
    "W": "one row per query and one column per key",
    "Y": "one row per query; each row is a weighted sum of value vectors, so it is as long as a value"}


def reference_cross_attention_shapes() -> dict[str, tuple[int, int]]:
    """Shapes in cross-attention with T_q = 5 decoder tokens, T_k = 7 encoder tokens, d_model 512, d_k = d_v = 64."""
    T_q, T_k, d_k = 5, 7, 64   # a Hindi decoder, an English encoder; d_model = 512 is projected to d_k
    return {"Q": (T_q, d_k), "K": (T_k, d_k), "V": (T_k, d_k), "W": (T_q, T_k), "Y": (T_q, d_k)}


@solved_by("the shapes of cross-attention", """
    shapes = {
        "Q": (5, 64),   # decoder tokens x d_k      (queries come from the decoder)
        "K": (7, 64),   # encoder tokens x d_k      (keys come from the encoder)
        "V": (7, 64),   # encoder tokens x d_v      (values come from the encoder)
        "W": (5, 7),    # one row per query, one column per key
        "Y": (5, 64),   # one output per query
    }
    """)
def check_cross_attention_shapes(shapes) -> Feedback:
    """Exercise 2: a dict {"Q", "K", "V", "W", "Y"} -> shape tuples."""
    expected = reference_cross_attention_shapes()
    if shapes is None:
        return wrong("shapes is None. Fill in the dictionary: shapes = {'Q': (..., ...), 'K': ..., ...}.")
    if not isinstance(shapes, dict):
        return wrong(f"expected a dict like {{'Q': (rows, columns), ...}}, but got {type(shapes).__name__}.")
    if missing := [k for k in expected if k not in shapes]:
        if all(k.lower() in shapes for k in missing):
            return wrong(f"the keys are upper case: 'Q', 'K', 'V', 'W', 'Y' (not {repr(missing)[1:-1].lower()}).")
        return wrong(f"the dictionary is missing {', '.join(missing)}: give a shape for each of Q, K, V, W, Y.")
    for name, shape in expected.items():
        if getattr(shapes[name], "ndim", 0) > 1 and math.prod(shapes[name].shape) > 2:
            return wrong(f"{name} is an array of shape {tuple(shapes[name].shape)}: give its shape, a tuple of two "
                         "whole numbers (rows, columns), not the array itself.")
        got, problem = whole_numbers(shapes[name])
        if problem is not None or len(got) != 2:
            why = problem or f"it has {len(got)} number{'s' * (len(got) != 1)}"
            return wrong(f"the shape of {name} should be a tuple of two whole numbers (rows, columns), but got "
                         f"{shapes[name]!r:.60}: {why}.")
        if got == shape:
            continue
        if got == shape[::-1]:
            return wrong(f"{name} has its axes swapped: {_SHAPE_HINTS[name]}.")
        if name != "W" and got[0] == (5 if name in ("K", "V") else 7):
            return wrong(f"{name} has {got[0]} rows: the keys and values come from the encoder (7 tokens), "
                         "the queries and outputs belong to the decoder (5 tokens).")
        if 512 in got and name != "W":   # W: one row per query, one column per key
            return wrong(f"{name} has a 512 in its shape: after projection each vector has "
                         f"{'d_k' if name in 'QK' else 'd_v'} = 64, not d_model = 512.")
        if name == "W" and got in ((5, 5), (7, 7)):
            return wrong(f"W is {got}, square: that would be self-attention, not decoder queries against encoder keys.")
        if name == "Y" and got == (5, 7):
            return wrong("Y has one column per key: that is the shape of the weights W. Y = W V is as long as a value.")
        return wrong(f"{name} is not {got}. Count again: {_SHAPE_HINTS[name]}.")
    return correct("Q (5, 64), K and V (7, 64), W (5, 7), Y (5, 64). W is not square: T_q ≠ T_k is the mark of "
                   "cross-attention, and each of the 5 decoder tokens gets one output.")


# --- Exercise 3: cross-attention with learned projections ------------------------------------------
def reference_cross_attention(X_dec, X_enc, W_q, W_k, W_v):
    """Queries from the decoder, keys and values from the encoder: (T_q, d), (T_k, d) -> (T_q, d_v)."""
    Q = X_dec @ W_q  # (T_q, d_k)
    K = X_enc @ W_k  # (T_k, d_k)
    V = X_enc @ W_v  # (T_k, d_v)
    return scaled_dot_product_attention(Q, K, V)  # (T_q, d_v)


def _cross_cases():
    """Cases (X_dec, X_enc, W_q, W_k, W_v): the story's, W (4, 4); random, W (4, 3); the same, W_v (4, 2): d_v ≠ d_k."""
    g = torch.Generator().manual_seed(7)
    rectangular = [torch.randn(4, 3, generator=g) for _ in range(3)]   # W_q, W_k, W_v
    X_dec, X_enc, story = torch.randn(4, 4, generator=g), torch.randn(6, 4, generator=g), projections(4, 4, seed=0)
    return [Case(decoder_states(), encoder_states(), *story.values(), what="the story with 4 × 4 projections"),
            Case(X_dec, X_enc, *rectangular, what="random inputs with 4 × 3 projections"),
            Case(X_dec, X_enc, *rectangular[:2], torch.randn(4, 2, generator=g), what="random inputs with a 4 × 2 W_v")]


def _cross_attention_slips(X_dec, X_enc, W_q, W_k, W_v):
    """[(what a slip computes, the message naming it)]: computed when needed; one whose shapes do not fit is skipped."""
    sdpa, Q, K, V = scaled_dot_product_attention, X_dec @ W_q, X_enc @ W_k, X_enc @ W_v
    S, d, d_k = Q @ K.T, X_dec.shape[1], Q.shape[1]   # S: (T_q, T_k) raw scores
    return [
        (lambda: sdpa(Q, X_dec @ W_k, X_dec @ W_v), "self-attention over the decoder: K and V come from X_enc."),
        (lambda: sdpa(Q, X_enc @ W_v, X_enc @ W_k), "W_k and W_v are swapped: K = X_enc @ W_k, V = X_enc @ W_v."),
        (lambda: sdpa(Q, X_enc @ W_q, V), "the keys were made with W_q: K = X_enc @ W_k, each projection its own."),
        (lambda: sdpa(X_dec @ W_k, K, V), "the queries were made with W_k: Q = X_dec @ W_q, each projection its own."),
        (lambda: sdpa(Q, K, X_enc @ W_k), "the values were made with W_k: V = X_enc @ W_v, each projection its own."),
        (lambda: sdpa(X_dec, X_enc, X_enc), "no projections were applied: apply W_q, W_k, W_v first."),
        (lambda: sdpa(Q, K, X_enc), "the values are the raw encoder states: V = X_enc @ W_v."),
        (lambda: torch.softmax(S, -1) @ V, "the 1/√d_k scale is missing (notebook 05)."),
        (lambda: torch.softmax(S, -1) @ V / math.sqrt(d_k), "Y was divided by √d_k: divide the scores before softmax."),
        (lambda: torch.softmax(S * (1 / d_k), -1) @ V, f"the scores were divided by d_k = {d_k}, not by √d_k."),
        (lambda: torch.softmax(S * math.sqrt(d_k), -1) @ V, "the scores were multiplied by √d_k: divide instead."),
        (lambda: torch.softmax(S * (1 / math.sqrt(V.shape[1])), -1) @ V, f"the scores were divided by √d_v = "
         f"√{V.shape[1]}, the values' width; the scale is √d_k = √{d_k}, from the queries and keys."),
        (lambda: torch.softmax(S * (1 / math.sqrt(d)), -1) @ V, f"the scores were divided by √{d}, the square root "
         f"of the input width; d_k = Q.shape[-1] = {d_k}."),
        (lambda: torch.softmax(S * (1 / math.sqrt(d_k)), 0) @ V,
         "the softmax runs over the wrong axis: each query's row of weights must sum to 1 (dim=-1)."),
        (lambda: (S * (1 / math.sqrt(d_k))) @ V,
         "the softmax is missing: apply torch.softmax(scores, dim=-1) to the scaled scores."),
        (lambda: sdpa(X_dec @ W_q.T, X_enc @ W_k.T, X_enc @ W_v.T),
         "the projections were transposed: with W of shape (d, d_k), use X @ W, not X @ W.T."),
        (lambda: sdpa(X_dec @ W_q.T, K, V), "W_q was transposed: the projection is X @ W_q, not X @ W_q.T."),
        (lambda: sdpa(Q, X_enc @ W_k.T, V), "W_k was transposed: the projection is X @ W_k, not X @ W_k.T."),
        (lambda: sdpa(Q, K, X_enc @ W_v.T), "W_v was transposed: the projection is X @ W_v, not X @ W_v.T.")]


def _draw_cross(rng, spiked=False, narrow=False) -> Case:
    """Sizes that differ, float64; `narrow`: d = 2, below d_k, and T_k = T_q; `spiked`: the story's sizes (W (4, 4)),
    query i's scaled scores with keys j, k: near 1,000 and 1 less (a spare dim), k's other features 3 above j's."""
    T_q, T_k, d = (int(n) for n in rng.choice([2, 3, 5, 6, 7, 9], 3))
    d, T_k = (2, T_q) if narrow else (d, T_k)   # every d_k then lies above d; X_enc as long as X_dec
    d_k, d_v = (int(n) for n in rng.choice([n for n in (2, 3, 5, 6, 7) if d not in (n, n * n)], 2, replace=False))
    if spiked:   # an answer that swaps in the story's W at its size fails
        (T_q, d), T_k, d_k, d_v = decoder_states().shape, len(encoder_states()), 4, 4
    g, i, j = torch.Generator().manual_seed(int(rng.integers(2**31))), int(rng.integers(T_q)), int(rng.integers(T_k))
    shapes, k = ((T_q, d), (T_k, d), (d, d_k), (d, d_k), (d, d_v)), (j + 1) % T_k
    X_dec, X_enc, W_q, W_k, W_v = (torch.randn(*shape, generator=g, dtype=torch.float64) for shape in shapes)
    if spiked:
        X_dec[:, -1], X_dec[i, -1], X_enc[:, -1], X_enc[j, -1], X_enc[k, :-1] = 0.0, 1.0, 0.0, 1.0, X_enc[j, :-1] + 3
        W_q[:, 0], W_k[:, 0], W_q[-1, 0], W_k[-1, 0] = 0.0, 0.0, *[math.sqrt(1000 * math.sqrt(d_k))] * 2
        X_enc[k, -1] = ((q := X_dec[i] @ W_q) @ ((X_enc[j] - X_enc[k]) @ W_k) - math.sqrt(d_k)) / (q @ W_k[-1])
    largest = reference_cross_attention(X_dec, X_enc, W_q, W_k, W_v).abs().max().item()
    return Case(X_dec, X_enc, W_q, W_k, W_v, atol32=1e-3 * largest if spiked else 1e-4,   # float32 near it: 1.6e-4
                what=f"X_dec ({T_q}, {d}), X_enc ({T_k}, {d}), W_q and W_k ({d}, {d_k}), W_v ({d}, {d_v}), drawn at "
                     "random" + f", query {i}'s scaled scores with keys {j}, {k} near 1,000 and 1 less" * spiked)


def _judge_cross(case, got, expected):
    T_q, T_k = case.args[0].shape[0], case.args[1].shape[0]
    W = attention_weights(case.args[0] @ case.args[2], case.args[1] @ case.args[3])   # (T_q, T_k)
    if got.shape == tuple(W.shape) != expected.shape and np.allclose(got, W, atol=1e-4):
        return f"you returned the weights W, ({T_q}, {T_k}): one column per encoder token. Finish with Y = W @ V."
    if got.shape == (T_k, T_q) != expected.shape and np.allclose(got, W.T, atol=1e-4):
        return f"you returned the weights transposed, W.T ({T_k}, {T_q}). Finish with Y = W @ V, one row per query."
    if got.shape == (T_k, expected.shape[1]) and T_k != T_q:
        return f"Y has {T_k} rows, one per encoder token: the queries come from the decoder, X_dec @ W_q."


check_cross_attention = Exercise(reference_cross_attention, title="cross-attention with learned projections",
    expects="cross_attention(X_dec, X_enc, W_q, W_k, W_v) -> Y (T_q, d_v)", where="",
    cases=_cross_cases, reads="Y", atol=1e-6, atol32=1e-4,
    draw=(_draw_cross, lambda rng: _draw_cross(rng, narrow=True), lambda rng: _draw_cross(rng, spiked=True),
          lambda rng: Case(math.sqrt(2) * torch.tensor([[-2000.0, 1.0]]), SPIKED_KEYS, *[torch.eye(2)] * 3,
                           what=f"X_dec = √2 · [[-2000, 1]], W_q = W_k = W_v = I, and as X_enc, {SPIKED}")),
    judge=_judge_cross, slips=lambda case: _cross_attention_slips(*case.args), name="Y on {what}",
    hint="The queries come from the decoder's tokens, the keys and the values from the encoder's; the scale is √d_k.",
    success="queries from the decoder, keys and values from the encoder, one function. "
            "Pass the same sequence as X_dec and X_enc and it is self-attention.")
