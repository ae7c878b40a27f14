"""Why attention divides by √d_k, as measurements that return data (notebook 05).

    sample_dot_products(d, n_pairs, sigma, seed)        -> (n_pairs,)  q·k of fresh d-dimensional pairs
    variance_table(d_values, n_pairs, sigma, seed)      -> dict of columns: d, var, predicted, ratio, var_scaled (walks)
    fit_variance_line(d, var)                           -> dict: slope (line through 0), exponent (log-log)
    softmax_gradient(W, G)                              -> ∂L/∂z for W = softmax(z), L = Σ W·G   (..., T)
    attention_snapshot(d_k, scaled)                     -> dict: weights and score gradients (the widget's data)
    saturation_table(d_values)                          -> dict: entropy and top weight vs d, scaled and not
    gradient_measurements(d_values, scaled)             -> dict: autograd gradients at the scores and at W_q
    per_head_dim(d_model, n_heads), score_divisor(d_model, n_heads)
    constant_comparison(d_model, n_heads)               -> dict: the weights under c = 1, √d_k, √d_model"""
import math
from functools import lru_cache

import numpy as np
import torch

from helpers.heads import check_heads
from helpers.measure import cpu_threads
from helpers.similarity import entropy_bits, softmax
from helpers.validation import count

#: The head sizes the notebook samples: 1, 2, 4, ..., 1024.
POWERS_OF_TWO: tuple[int, ...] = tuple(2**p for p in range(11))


# --------------------------------------------------------------------------- Step 1: the variance of q·k
def sample_dot_products(d: int, n_pairs: int = 10_000, sigma: float = 1.0, seed=0) -> np.ndarray:
    """q·k for n_pairs fresh pairs of d-dimensional N(0, σ²) vectors: -> (n_pairs,). seed: int or Generator."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(0.0, sigma, (2, n_pairs, d))   # (n_pairs, d) each: one query, one key per row
    return (q * k).sum(axis=1)                       # (n_pairs,) q·k = Σ_i q_i k_i


def variance_table(d_values=POWERS_OF_TWO, n_pairs: int = 50_000, sigma: float = 1.0, seed: int = 0) -> dict:
    """Measured Var(q·k) next to the prediction d·σ⁴, for each d in d_values. Each pair of N(0, σ²) vectors is one
    walk, q·k summed a component at a time up to the largest d and read at every d, so the rows share first components.
    Columns, one entry per d: d, var, predicted, ratio (var / predicted), noise (relative standard error of var),
    var_scaled (variance of q·k / √d); also sigma, n_pairs, samples (n_pairs, len(d))."""
    d = np.array([count(n, "each d (a vector size)") for n in np.atleast_1d(d_values)])   # (len(d),), d = 0 refused
    g, walks, n_pairs = torch.Generator().manual_seed(seed), [], count(n_pairs, "n_pairs (a variance needs two)", 2)
    for start in range(0, n_pairs, 5_000):   # 5,000 pairs at a time: about 100 MB, not 1 GB
        q, k = sigma * torch.randn(2, min(5_000, n_pairs - start), int(d.max()), generator=g)   # (n, d_max) each
        walks.append((q * k).cumsum(-1)[:, d - 1])                         # (n, len(d)): q·k over the first d
    samples = torch.cat(walks).double().numpy()                            # (n_pairs, len(d)), float32 sums: 1e-5
    var, predicted = samples.var(axis=0, ddof=1), d * sigma**4
    fourth = ((samples - samples.mean(axis=0))**4).mean(axis=0)
    return {"d": d, "var": var, "predicted": predicted, "ratio": var / predicted,
            "noise": np.sqrt((fourth / var**2 - 1.0) / n_pairs),
            "var_scaled": (samples / np.sqrt(d)).var(axis=0, ddof=1),
            "sigma": float(sigma), "n_pairs": n_pairs, "samples": samples}


def fit_variance_line(d, var) -> dict:
    """slope: var ≈ slope · d through the origin; exponent: slope of log(var) vs log(d) (1: proportional)."""
    d, var = np.asarray(d, dtype=float), np.asarray(var, dtype=float)
    slope = float((d * var).sum() / (d * d).sum())
    return {"slope": slope, "exponent": float(np.polyfit(np.log(d), np.log(var), 1)[0])}


# --------------------------------------------------------------------------- Steps 2 and 3: softmax and its gradient
def softmax_gradient(W, G) -> np.ndarray:
    """∂L/∂z_j = w_j · (g_j - Σ_k w_k g_k) for W = softmax(z), G = ∂L/∂W: (..., T), (..., T) -> (..., T)."""
    return W * (G - (W * G).sum(axis=-1, keepdims=True))


@lru_cache(maxsize=64)  # the widget asks for the same d_k again and again
def _scores_and_upstream(d_k: int, T: int, n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw scores q·k (n_queries, T) of unit-Gaussian q and T keys, and an upstream gradient G (n_queries, T)."""
    rng = np.random.default_rng([seed, d_k, T])
    rows = max(1, 2**20 // (T * d_k))                       # queries per draw: at most 2**20 numbers at once
    S = np.empty((n_queries, T))
    for lo in range(0, n_queries, rows):
        hi = min(lo + rows, n_queries)
        q, k = rng.standard_normal((hi - lo, 1, d_k)), rng.standard_normal((hi - lo, T, d_k))   # (rows, 1 or T, d_k)
        S[lo:hi] = (q * k).sum(axis=-1)                     # (rows, T)
    G = np.random.default_rng([seed, 0, T]).standard_normal((n_queries, T))   # same G for every d_k
    S.flags.writeable = G.flags.writeable = False           # shared by every caller of the cache
    return S, G


def _summarise(S: np.ndarray, G: np.ndarray, c: float) -> dict:
    """Weights and gradient statistics of softmax(S / c) with upstream gradient G."""
    Z = S / c                                                # (n, T) what softmax sees
    W = softmax(Z, axis=-1)                                  # (n, T)
    grad = softmax_gradient(W, G)                            # (n, T) ∂L/∂z
    per_query = np.linalg.norm(grad, axis=-1)                # (n,)
    on_top2 = np.take_along_axis(np.abs(grad), np.argsort(-S, axis=-1)[:, :2], axis=-1).sum()   # each query's top 2
    H = entropy_bits(W)
    return {"divisor": float(c), "score_var": float(Z.var()), "weights": W,
            "mean_sorted_weights": -np.sort(-W, axis=-1).mean(axis=0), "example_weights": W[0],
            "entropy_bits": float(H.mean()), "effective_keys": float((2.0 ** H).mean()),
            "max_weight": float(W.max(axis=-1).mean()), "grad_per_query": per_query,
            "grad_median": float(np.median(per_query)), "grad_p10": float(np.percentile(per_query, 10)),
            "grad_p90": float(np.percentile(per_query, 90)), "top2_share": float(on_top2 / np.abs(grad).sum())}


def attention_snapshot(d_k: int, scaled: bool = True, *, T: int = 16, n_queries: int = 512, seed: int = 0) -> dict:
    """n_queries unit-Gaussian queries against T keys in d_k dimensions, z = q·k (/ √d_k if `scaled`): the weights
    softmax(z), their statistics and ∂L/∂z for a fixed random upstream G, the same for every d_k (keys: _summarise)."""
    S, G = _scores_and_upstream(d_k, T, n_queries, seed)
    return _summarise(S, G, math.sqrt(d_k) if scaled else 1.0) | {"d_k": d_k, "scaled": bool(scaled), "T": T}


def saturation_table(d_values=POWERS_OF_TWO, *, T: int = 16, n_queries: int = 512, seed: int = 0) -> dict:
    """How peaked softmax gets as d grows: {"d", "T", "max_entropy_bits", "unscaled": {...}, "scaled": {...}}."""
    keys = ("max_weight", "entropy_bits", "effective_keys", "grad_median", "top2_share")
    table = {"d": np.array(d_values), "T": T, "max_entropy_bits": math.log2(T)}
    for mode, scaled in (("unscaled", False), ("scaled", True)):
        snaps = [attention_snapshot(d, scaled, T=T, n_queries=n_queries, seed=seed) for d in d_values]
        table[mode] = {k: np.array([s[k] for s in snaps]) for k in keys}
        table[mode]["score_std"] = np.sqrt([s["score_var"] for s in snaps])
    return table


def gradient_measurements(d_values=POWERS_OF_TWO, scaled: bool = True, *, n_seq: int = 64, T: int = 16,
                          d_model: int = 64, seed: int = 0) -> dict:
    """Measure with autograd how much gradient reaches the scores z and the projection W_q, per d_k.
    x (n_seq, T, d_model) ~ N(0, 1), W_q, W_k ~ N(0, 1/d_model), z = Q Kᵀ (/ √d_k if scaled), L = Σ softmax(z) · G for a
    fixed random G; the same draws with and without scaling. Returns d, scaled and, per d_k: score_std (Q Kᵀ), scores_*
    (||∂L/∂z_i||), wq_* (||x_i|| ||∂L/∂q_i||), wq_total, wq_top10_share, gap_top10, gap_rest, top2_share, max_weight."""
    n_seq, T = count(n_seq, "n_seq"), count(T, "T (two keys at least: a query's top two are compared)", 2)
    base = np.random.default_rng([seed, d_model, T, n_seq])
    x = torch.from_numpy(base.standard_normal((n_seq, T, d_model)))   # (n_seq, T, d_model)
    G = torch.from_numpy(base.standard_normal((n_seq, T, T)))         # (n_seq, T, T)
    x_norm = x.norm(dim=-1).reshape(-1)                                # (n_seq*T,)
    out = {}
    with cpu_threads(1):   # one thread, one order of summing: a re-run gives the same sums
        for d_k in d_values:
            draws = np.random.default_rng([seed, d_k, d_model]).standard_normal((2, d_model, d_k)) / math.sqrt(d_model)
            W_q, W_k = (torch.from_numpy(w).requires_grad_() for w in draws)   # (d_model, d_k) each
            Q, K = x @ W_q, x @ W_k                              # (n_seq, T, d_k) each
            Q.retain_grad()
            S = Q @ K.transpose(-2, -1)                          # (n_seq, T, T) raw scores
            Z = S / math.sqrt(d_k) if scaled else S * 1.0        # (n_seq, T, T) what softmax sees
            Z.retain_grad()
            W = torch.softmax(Z, dim=-1)                         # (n_seq, T, T)
            (W * G).sum().backward()
            gz = Z.grad.reshape(-1, T).numpy()                   # (n_seq*T, T)  ∂L/∂z, one row per query
            per_query = np.linalg.norm(gz, axis=-1)              # (n_seq*T,)
            wq = (x_norm * Q.grad.reshape(-1, d_k).norm(dim=-1)).numpy()   # (n_seq*T,) ||x_i|| ||∂L/∂q_i||
            top2 = np.argsort(-S.detach().reshape(-1, T).numpy(), axis=-1)[:, :2]
            order = np.argsort(wq)[::-1]                         # queries, largest contribution first
            largest, ranked = order[: max(1, len(wq) // 10)], np.sort(Z.detach().reshape(-1, T).numpy(), axis=-1)
            gap = ranked[:, -1] - ranked[:, -2]                  # how close each query's two top scores are
            row = {"wq_total": float(W_q.grad.norm()), "wq_top10_share": wq[largest].sum() / wq.sum(),
                   "gap_top10": np.median(gap[largest]), "gap_rest": np.median(gap[order[len(largest):]]),
                   "top2_share": np.take_along_axis(np.abs(gz), top2, axis=-1).sum() / np.abs(gz).sum(),
                   "max_weight": float(W.detach().amax(dim=-1).mean()), "score_std": float(S.detach().std())}
            for prefix, values in (("scores", per_query), ("wq", wq)):
                row.update({f"{prefix}_median": np.median(values), f"{prefix}_p10": np.percentile(values, 10),
                            f"{prefix}_p90": np.percentile(values, 90)})
            for key, value in row.items():
                out.setdefault(key, []).append(value)
    return {k: np.array(v, dtype=float) for k, v in out.items()} | {"d": np.array(d_values), "scaled": bool(scaled)}


# --------------------------------------------------------------------------- Step 4: the constant, per head
def per_head_dim(d_model: int, n_heads: int) -> int:
    """d_k = d_model / n_heads: multi-head attention gives each head an equal slice of d_model."""
    check_heads(d_model, n_heads)          # a named error unless n_heads divides d_model
    return d_model // n_heads


def score_divisor(d_model: int, n_heads: int) -> float:
    """The divisor c = √d_k for a model of width d_model split into n_heads heads."""
    return math.sqrt(per_head_dim(d_model, n_heads))


def constant_comparison(d_model: int = 512, n_heads: int = 8, *, T: int = 16, n_queries: int = 512,
                        seed: int = 0) -> dict:
    """What three divisors do to one head's weights: none (c = 1), right (√d_k), wrong (√d_model). Returns d_model,
    n_heads, d_k, T, example_scores (query 0's raw q·k) and rows (weight statistics per divisor)."""
    d_k = per_head_dim(d_model, n_heads)
    (S, G), rows = _scores_and_upstream(d_k, T, n_queries, seed), []
    for label, c in (("no scaling (c = 1)", 1.0), (f"c = √d_k = √{d_k}", math.sqrt(d_k)),
                     (f"c = √d_model = √{d_model}", math.sqrt(d_model))):
        summary = _summarise(S, G, c)
        rows.append({"label": label, "c": c, **{k: summary[k] for k in ("score_var", "max_weight", "entropy_bits",
                     "effective_keys", "mean_sorted_weights", "example_weights", "grad_median")}})
    return {"d_model": d_model, "n_heads": n_heads, "d_k": d_k, "T": T,
            "example_scores": S[0].copy(), "rows": rows}
