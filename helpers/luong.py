"""Luong attention, cross-attention and self-attention: one function, three uses (notebook 06).

The toy translation: an English encoder reads "money bank grows"; a Hindi decoder is writing "paisa badhta" (पैसा बढ़ता,
"money grows"). Encoder states h_j are the course's static embeddings; decoder states s_i are hand-picked so every
number can be checked by eye.

    encoder_states()            H: (T_k, d) = (3, 4), one row per English token
    decoder_states()            S_dec: (T_q, d) = (2, 4), one row per Hindi token
    luong_dot_attention(s, H)   one decoder step, Luong's way: (d,), (T_k, d) -> context (d,), weights (T_k,)
    projections(d_model, d_k)   seeded W_q, W_k, W_v, each (d_model, d_k)
    qkv_attention(X_q, X_kv, P) Q from X_q, K and V from X_kv (P: the projections) -> Q, K, V, W, Y
    dictionary_lookup(c, noise) {'a': 1, 'b': 2, 'c': c} asked for 'b', Luong's way and with separate roles
    lineup_data(learned, same)  the widget's 2 x 2 line-up: the Hindi decoder asks the English encoder (two
                                sequences) or the English sentence asks itself (one), with or without projections"""
import math

import torch

from helpers.attention_torch import attention_weights, check_attention_inputs
from helpers.running_example import EMBEDDINGS
from helpers.validation import describe

ENCODER_TOKENS, DECODER_TOKENS = ("money", "bank", "grows"), ("paisa", "badhta")
#: Hand-picked decoder states: "paisa" (money) leans toward money, "badhta" (grows) toward grows.
DECODER_STATES = {"paisa": (1.0, 0.2, 0.8, 0.0), "badhta": (0.0, 0.6, 0.8, 1.0)}
D_MODEL = 4

#: The four mechanisms the two differences span: (learned projections?, one sequence?) -> name.
MECHANISMS = {(False, False): "Luong-style attention (no projections, two sequences, but divided by √d_k)",
              (False, True): "parameter-free self-attention (notebook 03)",
              (True, False): "cross-attention (learned projections, two sequences)",
              (True, True): "self-attention (learned projections, one sequence)"}


def encoder_states() -> torch.Tensor:
    """H, the encoder states h_j of "money bank grows": (T_k, d) = (3, 4)."""
    return torch.tensor([EMBEDDINGS[w] for w in ENCODER_TOKENS])


def decoder_states() -> torch.Tensor:
    """S_dec, the decoder states s_i of "paisa badhta": (T_q, d) = (2, 4)."""
    return torch.tensor([DECODER_STATES[w] for w in DECODER_TOKENS])


def luong_dot_attention(s, H) -> tuple[torch.Tensor, torch.Tensor]:
    """Luong's "dot" attention, one decoder step: s (d,), H (T_k, d) -> context Σ_j a_j h_j (d,), a (T_k,)."""
    if not (all(map(torch.is_tensor, (s, H))) and s.dim() == 1 and H.shape[1:] == s.shape and s.dtype == H.dtype
            and s.is_floating_point()):
        raise ValueError(f"s should be one decoder state (d,) and H (T_k, d), float tensors of one dtype, but got s "
                         f"{describe(s)} ({getattr(s, 'dtype', 'no dtype')}) and H {describe(H)} "
                         f"({getattr(H, 'dtype', 'no dtype')}). Many decoder states at once: qkv_attention.")
    weights = torch.softmax(H @ s, dim=0)   # (T_k,): one score per encoder state, softmaxed
    return weights @ H, weights             # the context (d,), the weights (T_k,)


def projections(d_model: int = D_MODEL, d_k: int = D_MODEL, seed: int = 0) -> dict[str, torch.Tensor]:
    """W_q, W_k, W_v of shape (d_model, d_k), random as at initialisation (seeded, scaled by 1/√d_model)."""
    g = torch.Generator().manual_seed(seed)
    return {name: torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model) for name in ("W_q", "W_k", "W_v")}


def qkv_attention(X_q, X_kv, P: dict | None = None) -> dict[str, torch.Tensor]:
    """Queries from X_q (T_q, d), keys and values from X_kv (T_k, d); P None reuses them (K = V = X_kv).
    Returns {"Q", "K", "V", "W" (T_q, T_k), "Y" (T_q, d_v)}."""
    if P is None:
        Q, K, V = X_q, X_kv, X_kv                                        # (T_q, d), (T_k, d), (T_k, d)
    else:
        if not isinstance(P, dict) or {"W_q", "W_k", "W_v"} - set(P):   # a tuple (W_q, W_k, W_v), a key missing
            raise TypeError(f"P should be a dict {{'W_q': …, 'W_k': …, 'W_v': …}} as projections(d_model, d_k) makes, "
                            f"but got {describe(P)}{f' with keys {sorted(P)}' if isinstance(P, dict) else ''}.")
        like = X_q.dtype if torch.is_tensor(X_q) else None   # a hand-made P's NumPy arrays or lists: in X_q's dtype
        P = {k: P[k] if torch.is_tensor(P[k]) else torch.as_tensor(P[k], dtype=like) for k in ("W_q", "W_k", "W_v")}
        for name, X, (key, W) in zip(("X_q", "X_kv", "X_kv"), (X_q, X_kv, X_kv), P.items()):   # each fits its W
            if not (isinstance(X, torch.Tensor) and X.dtype == W.dtype and X.shape[-1:] == W.shape[:1]):
                raise (ValueError if getattr(X, "dtype", None) == W.dtype else TypeError)(
                    f"{name} should be a {W.dtype} tensor (T, {W.shape[0]}), as P[{key!r}] is {tuple(W.shape)}, "
                    f"but got {describe(X)}" + (f" of {X.dtype}." if hasattr(X, "dtype") else "."))
        Q, K, V = X_q @ P["W_q"], X_kv @ P["W_k"], X_kv @ P["W_v"]       # (T_q, d_k), (T_k, d_k), (T_k, d_v)
    check_attention_inputs(Q, K, V)                                      # tensors of one dtype, d_k for Q and K
    W = attention_weights(Q, K)                                          # (T_q, T_k)
    return {"Q": Q, "K": K, "V": V, "W": W, "Y": W @ V}


def dictionary_lookup(value_c: float = 4.0, noise: float = 1.0) -> dict:
    """Look up 'b' in {'a': 1, 'b': 2, 'c': value_c} three ways: Luong's (whole h_j), with a query projection W_q only
    (set by hand; keys and values still the whole h_j), and with separate W_q, W_k, W_v. Each h_j is (one-hot key code
    | value); the query is (0, 3, 0, noise). Weights (3,) and answers per way."""
    H_dict = torch.tensor([[1.0, 0, 0, 1], [0.0, 1, 0, 2], [0.0, 0, 1, value_c]])   # (3, 4): key code | value
    q = torch.tensor([0.0, 3, 0, noise])                                             # (4,) asks for 'b'
    w_luong = torch.softmax(H_dict @ q, dim=0)                                       # (3,)
    W_q = W_k = torch.eye(4)[:, :3]                                                  # (4, 3) read the key code
    W_v = torch.eye(4)[:, 3:]                                                        # (4, 1) reads the value
    w_query = torch.softmax(H_dict @ (W_q @ (q @ W_q)), dim=0)                       # (3,) keys: the whole h_j
    w_roles = torch.softmax((H_dict @ W_k) @ (q @ W_q), dim=0)                       # (3,)
    return {"keys": ["a", "b", "c"], "weights_luong": w_luong.numpy(), "weights_query_only": w_query.numpy(),
            "weights_roles": w_roles.numpy(), "answer_luong": float((w_luong @ H_dict)[3]), "true": 2.0,
            "answer_query_only": float((w_query @ H_dict)[3]), "answer_roles": float((w_roles @ (H_dict @ W_v))[0])}


def lineup_data(learned: bool, same_sequence: bool) -> dict:
    """One cell of the line-up: the mechanism's name, who asks whom, W, shapes, parameters, K == V."""
    H = encoder_states()
    X_q, rows, sequences = ((H, ENCODER_TOKENS, "the English sentence asks itself") if same_sequence else
                            (decoder_states(), DECODER_TOKENS, "the Hindi decoder asks the English encoder"))
    P = projections() if learned else None
    out = qkv_attention(X_q, H, P)
    return {"name": MECHANISMS[(learned, same_sequence)], "sequences": sequences, "W": out["W"].numpy(),
            "rows": list(rows), "cols": list(ENCODER_TOKENS),
            "shapes": {k: tuple(out[k].shape) for k in ("Q", "K", "V", "W", "Y")},
            "parameters": 0 if P is None else sum(w.numel() for w in P.values()),
            "K_equals_V": bool(torch.equal(out["K"], out["V"]))}
