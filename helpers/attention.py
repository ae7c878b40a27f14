"""Self-attention in NumPy, written three ways that give the same numbers (notebook 03).

    attend(Q, K, V, scale=None)           Y (T_q, d_v) = softmax(scale · Q Kᵀ) V: product, softmax, product
    attend_rows(Q, K, V, scale=None)      the same, one query row i at a time
    attend_loops(Q, K, V, scale=None)     the same, explicit Python loops over i and j
    self_attention(E, scaled=True)        (T, d) -> (T, d): attend(E, E, E), no parameters
    self_attention_steps(E, scaled=True)  every intermediate of the worked example, in a dict

Q: (T_q, d_k), K: (T_k, d_k), V: (T_k, d_v). `scale` multiplies the scores, as in torch.nn.functional's
scaled_dot_product_attention: None means 1/√d_k (divide by √d_k, derived in notebook 05); 1.0 means no scaling. Q and
K may have different numbers of rows (T_q != T_k, as in cross-attention); K and V must have the same."""
import math

import numpy as np

from helpers import validation as check
from helpers.similarity import softmax


def _checked(Q, K, V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V as float arrays, or a clear error: a student calls attention with their own arrays."""
    Q, K, V = check.matrix(Q, "Q", "(T_q, d_k)"), check.matrix(K, "K", "(T_k, d_k)"), check.matrix(V, "V", "(T_k, d_v)")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q has d_k={Q.shape[1]} but K has d_k={K.shape[1]}: the query and key vectors must "
                         "have the same dimension (number of entries) to take dot products.")
    if K.shape[0] != V.shape[0]:
        raise ValueError(f"K has T_k={K.shape[0]} keys but V has {V.shape[0]} values: every key needs exactly "
                         "one value.")
    return Q, K, V


def _multiplier(scale, d_k: int) -> float:
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


def attend(Q, K, V, scale=None) -> np.ndarray:
    """Attention as three matrix operations, two products and a row-wise softmax: Y = softmax(scale · Q Kᵀ) V."""
    Q, K, V = _checked(Q, K, V)
    S = _multiplier(scale, Q.shape[1]) * (Q @ K.T)   # (T_q, T_k) every score in one product
    W = softmax(S, axis=-1)                          # (T_q, T_k) each row sums to 1
    return W @ V                                     # (T_q, d_v) every mixture in one product


def attend_rows(Q, K, V, scale=None) -> np.ndarray:
    """The same as `attend`, one output row at a time: row i needs only q_i, K and V."""
    Q, K, V = _checked(Q, K, V)
    c = _multiplier(scale, Q.shape[1])
    Y = np.empty((Q.shape[0], V.shape[1]))   # (T_q, d_v)
    for i in range(Q.shape[0]):
        s = c * (K @ Q[i])                   # (T_k,) scores of query i against every key
        Y[i] = softmax(s) @ V                # (d_v,) its weights mix the values
    return Y


def attend_loops(Q, K, V, scale=None) -> np.ndarray:
    """The recipe exactly as written, with explicit loops over i and j (slow, for teaching).

        s_ij = scale · (q_i · k_j)          score of query i against key j
        w_ij = exp(s_ij) / Σ_j' exp(s_ij')  softmax over j (the max is subtracted first, for safety)
        y_i  = Σ_j w_ij v_j                  weighted mixture of the values"""
    Q, K, V = _checked(Q, K, V)
    c, T_q, T_k = _multiplier(scale, Q.shape[1]), Q.shape[0], K.shape[0]
    Y = np.zeros((T_q, V.shape[1]))
    for i in range(T_q):
        scores = [c * float(Q[i] @ K[j]) for j in range(T_k)]
        biggest = max(scores)
        exps = [math.exp(s - biggest) for s in scores]
        total = sum(exps)
        for j in range(T_k):
            Y[i] += (exps[j] / total) * V[j]
    return Y


def self_attention(E, scaled: bool = True) -> np.ndarray:
    """Attention with no parameters: every token is query, key and value. (T, d) -> (T, d)."""
    E = check.matrix(E, "E", "(T, d)")   # named as E, not as the Q, K, V it becomes
    return attend(E, E, E, scale=None if check.flag(scaled, "scaled") else 1.0)


def self_attention_steps(E, scaled: bool = True) -> dict[str, np.ndarray | float]:
    """Every intermediate of parameter-free self-attention on E (T, d): E, S = E Eᵀ, scale (1/√d or 1),
    S_scaled, exp (as written; inf if a score is huge), exp_sum, W (stable softmax) and Y = W E."""
    E = check.matrix(E, "E", "(T, d)")
    c = 1.0 / math.sqrt(E.shape[1]) if check.flag(scaled, "scaled") else 1.0
    S = E @ E.T                    # (T, T)
    S_scaled = c * S               # (T, T)
    with np.errstate(over="ignore"):
        exp = np.exp(S_scaled)     # (T, T)
    W = softmax(S_scaled)          # (T, T)
    return {"E": E, "S": S, "scale": c, "S_scaled": S_scaled, "exp": exp, "exp_sum": exp.sum(-1), "W": W, "Y": W @ E}
