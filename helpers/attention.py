"""Self-attention in NumPy, written three ways that give the same numbers.

    attention_scores(Q, K)                (T_q, d_k), (T_k, d_k) -> (T_q, T_k)      S = Q Kᵀ
    attention_weights(Q, K, scale=None)   -> W (T_q, T_k): rows positive, each sums to 1
    attend(Q, K, V, scale=None)           -> Y (T_q, d_v) = softmax(scale · Q Kᵀ) V: product, softmax, product
    attend_rows(Q, K, V, scale=None)      the same, one query row i at a time
    attend_loops(Q, K, V, scale=None)     the same, explicit Python loops over i and j
    self_attention(E, scaled=True)        (T, d) -> (T, d): attend(E, E, E), no parameters
    self_attention_steps(E, scaled=True)  every intermediate of the worked example, in a dict

`scale` is the number the scores are multiplied by, as in
torch.nn.functional.scaled_dot_product_attention: None means 1/√d_k (divide by
√d_k, derived in notebook 05); 1.0 means no scaling. Q and K may have different
numbers of rows (T_q != T_k, as in cross-attention); K and V must have the same.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from helpers import validation as check


def _scale(scale, d_k: int) -> float:
    """The multiplier for the scores: 1/√d_k by default, else a finite number >= 0."""
    if scale is None:
        return 1.0 / math.sqrt(d_k)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(
            f"scale should be a number that multiplies the scores (None means 1/√d_k), but got "
            f"{check.describe(scale)} ({scale!r})."
        )
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(
            f"scale should be a finite number >= 0 (it multiplies the scores; None means 1/√d_k), but got {scale}. "
            "A negative scale would make the least similar token the most attended one."
        )
    return float(scale)


def check_qkv(Q, K, V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return Q (T_q, d_k), K (T_k, d_k), V (T_k, d_v) as float arrays, or raise a clear error."""
    Q = check.matrix(Q, "Q", "(T_q, d_k)")
    K = check.matrix(K, "K", "(T_k, d_k)")
    V = check.matrix(V, "V", "(T_k, d_v)")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(
            f"Q has d_k={Q.shape[1]} but K has d_k={K.shape[1]}: the query and key vectors must have "
            "the same length to take dot products."
        )
    if K.shape[0] != V.shape[0]:
        raise ValueError(
            f"K has T_k={K.shape[0]} keys but V has {V.shape[0]} values: every key needs exactly one value."
        )
    return Q, K, V


_OVERFLOW = ("Some scores overflowed to infinity: the vectors are too large for float64. "
             "Scale the inputs down.")


def _softmax_rows_(S: np.ndarray) -> np.ndarray:
    """Stable softmax of each row of a float array, in place (no (T, T) temporaries): returns S."""
    biggest = S.max(axis=-1, keepdims=True)
    if not np.isfinite(biggest).all():
        raise ValueError(_OVERFLOW)
    S -= biggest
    np.exp(S, out=S)
    S /= S.sum(axis=-1, keepdims=True)
    return S


def attention_scores(Q, K) -> np.ndarray:
    """All pairwise dot products s_ij = q_i · k_j: (T_q, d_k), (T_k, d_k) -> (T_q, T_k)."""
    Q, K, _ = check_qkv(Q, K, K)
    return Q @ K.T  # (T_q, T_k)


def attention_weights(Q, K, scale=None) -> np.ndarray:
    """W = softmax(scale · Q Kᵀ) row by row: (T_q, d_k), (T_k, d_k) -> (T_q, T_k), rows sum to 1."""
    Q, K, _ = check_qkv(Q, K, K)
    with np.errstate(over="ignore"):     # an overflow is reported clearly by _softmax_rows_
        S = Q @ K.T                      # (T_q, T_k)
    S *= _scale(scale, Q.shape[1])
    return _softmax_rows_(S)             # (T_q, T_k), each row sums to 1


def attend(Q, K, V, scale=None) -> np.ndarray:
    """Attention as three matrix operations, two products and a row-wise softmax: Y = softmax(scale · Q Kᵀ) V.

    Q: (T_q, d_k), K: (T_k, d_k), V: (T_k, d_v) -> Y: (T_q, d_v).
    """
    Q, K, V = check_qkv(Q, K, V)
    with np.errstate(over="ignore"):   # an overflow is reported clearly by _softmax_rows_
        S = Q @ K.T                    # (T_q, T_k) every score in one product
    S *= _scale(scale, Q.shape[1])
    W = _softmax_rows_(S)              # (T_q, T_k) each row sums to 1 (computed in place of S)
    return W @ V                       # (T_q, d_v) every mixture in one product


def attend_rows(Q, K, V, scale=None) -> np.ndarray:
    """The same as `attend`, computed one output row at a time (a loop over i only).

    Q: (T_q, d_k), K: (T_k, d_k), V: (T_k, d_v) -> (T_q, d_v).

    Row i needs q_i and all of K and V, and nothing from any other row:
    this is the independence that lets the matrix form do all rows at once.
    """
    Q, K, V = check_qkv(Q, K, V)
    c = _scale(scale, Q.shape[1])
    Y = np.empty((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        with np.errstate(over="ignore"):
            s = c * (K @ Q[i])      # (T_k,) scores of query i against every key
        if not np.isfinite(s.max()):
            raise ValueError(_OVERFLOW)
        w = np.exp(s - s.max())
        Y[i] = (w / w.sum()) @ V    # (d_v,)
    return Y


def attend_loops(Q, K, V, scale=None) -> np.ndarray:
    """The recipe exactly as written, with explicit loops over i and j (slow, for teaching).

        s_ij = scale · (q_i · k_j)          score of query i against key j
        w_ij = exp(s_ij) / Σ_j' exp(s_ij')  softmax over j (the max is subtracted first, for safety)
        y_i  = Σ_j w_ij v_j                  weighted mixture of the values
    """
    Q, K, V = check_qkv(Q, K, V)
    c = _scale(scale, Q.shape[1])
    T_q, T_k = Q.shape[0], K.shape[0]
    Y = np.zeros((T_q, V.shape[1]))
    for i in range(T_q):
        with np.errstate(over="ignore"):
            scores = [c * float(Q[i] @ K[j]) for j in range(T_k)]
        biggest = max(scores)
        if not math.isfinite(biggest):
            raise ValueError(_OVERFLOW)
        exps = [math.exp(s - biggest) for s in scores]
        total = sum(exps)
        for j in range(T_k):
            Y[i] += (exps[j] / total) * V[j]
    return Y


def _scaled_flag(scaled) -> bool:
    if not isinstance(scaled, (bool, np.bool_)):
        raise TypeError(
            f"scaled should be True (divide the scores by √d) or False (use them as they are), but got "
            f"{check.describe(scaled)} ({scaled!r}). For another factor call attend(E, E, E, scale=...)."
        )
    return bool(scaled)


def self_attention(E, scaled: bool = True) -> np.ndarray:
    """Attention with no parameters: every token is query, key and value. (T, d) -> (T, d)."""
    E = check.matrix(E, "E", "(T, d)")
    return attend(E, E, E, scale=None if _scaled_flag(scaled) else 1.0)


def self_attention_steps(E, scaled: bool = True) -> dict[str, np.ndarray | float]:
    """Every intermediate of parameter-free self-attention on E (T, d), for printing and plotting.

    Returns a dict:
        E          (T, d)   the static embeddings
        S          (T, T)   S = E Eᵀ, all pairwise dot products
        scale      float    1/√d if scaled else 1.0
        S_scaled   (T, T)   scale · S
        exp        (T, T)   exp(S_scaled) as written in the recipe (for display; inf if a score is huge)
        exp_sum    (T,)     the row sums of exp
        W          (T, T)   softmax of each row of S_scaled (computed stably)
        Y          (T, d)   Y = W E, the contextual embeddings
    """
    E = check.matrix(E, "E", "(T, d)")
    c = 1.0 / math.sqrt(E.shape[1]) if _scaled_flag(scaled) else 1.0
    with np.errstate(over="ignore"):
        S = E @ E.T                # (T, T)
        S_scaled = c * S           # (T, T)
        exp = np.exp(S_scaled)     # (T, T)
    W = _softmax_rows_(S_scaled.copy())  # (T, T)
    return {"E": E, "S": S, "scale": c, "S_scaled": S_scaled, "exp": exp,
            "exp_sum": exp.sum(axis=-1), "W": W, "Y": W @ E}
