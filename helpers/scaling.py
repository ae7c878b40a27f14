"""Why attention divides by √d_k, as measurements that return data (notebook 05).

    nested_dot_products(d_values, n_pairs, sigma, seed) -> (n_pairs, len(d_values))  q·k for every d at once
    sample_dot_products(d, n_pairs, sigma, seed)        -> (n_pairs,)  q·k of fresh d-dimensional pairs
    variance_table(d_values, n_pairs, sigma, seed)      -> dict of columns: d, var, predicted, ratio, var_scaled
    fit_variance_line(d, var)                           -> dict: slope (line through 0), exponent (log-log)
    softmax_gradient(W, G)                              -> ∂L/∂z for W = softmax(z), L = Σ W·G   (..., T)
    entropy_bits(W)                                     -> (...,) -Σ w log2 w per row
    attention_snapshot(d_k, scaled)                     -> dict: weights and score gradients (the widget's data)
    saturation_table(d_values)                          -> dict: entropy and top weight vs d, scaled and not
    gradient_measurements(d_values, scaled)             -> dict: autograd gradients at the scores and at W_q
    per_head_dim(d_model, n_heads), scale_constant(d_model, n_heads)
    constant_comparison(d_model, n_heads)               -> dict: the weights under c = 1, √d_k, √d_model

Every sample comes from a seeded NumPy Generator, so the same arguments give
the same numbers on every machine. Large samples are drawn in chunks (each with
its own seed spawned from `seed`), so memory stays small and the result does not
depend on how many threads draw them.
"""
from __future__ import annotations

import math
import numbers
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from helpers import validation as check
from helpers.similarity import softmax

#: The head sizes the notebook samples: 1, 2, 4, ..., 1024.
POWERS_OF_TWO: tuple[int, ...] = tuple(2**p for p in range(11))

#: Numbers drawn per chunk (per array): 2**20 float32 = 4 MB, so nothing large is ever held.
_CHUNK_ELEMENTS = 2**20
#: Largest head size the functions accept (keeps a typo from asking for gigabytes).
MAX_D = 8192
#: The component spreads σ the functions accept: σ⁸ (in the fourth moment) stays far from float64's limits.
SIGMA_RANGE = (1e-10, 1e10)


# --------------------------------------------------------------------------- checks

def _d_values(d_values, name: str = "d_values") -> np.ndarray:
    """Increasing whole numbers from 1 to MAX_D, as an int array."""
    if isinstance(d_values, numbers.Integral) and not isinstance(d_values, bool):
        d_values = [d_values]
    if isinstance(d_values, (str, bytes)) or not hasattr(d_values, "__len__"):
        raise TypeError(f"{name} should be a list of dimensions such as [1, 2, 4, 8], but got "
                        f"{check.describe(d_values)}.")
    values = [check.positive_int(int(d) if isinstance(d, np.integer) else d, f"each entry of {name}")
              for d in d_values]
    if not values:
        raise ValueError(f"{name} is empty: give at least one dimension, e.g. [1, 2, 4, 8].")
    if any(b <= a for a, b in zip(values[:-1], values[1:], strict=True)):
        raise ValueError(f"{name} should be strictly increasing (e.g. [1, 2, 4, 8]), but got {values}.")
    if values[-1] > MAX_D:
        raise ValueError(f"{name} goes up to {values[-1]}; this course samples at most d = {MAX_D}.")
    return np.array(values, dtype=np.int64)


def _dimension(d, name: str) -> int:
    d = check.positive_int(int(d) if isinstance(d, np.integer) else d, name)
    if d > MAX_D:
        raise ValueError(f"{name} = {d} is larger than this course samples (at most {MAX_D}).")
    return d


def _count(n, name: str, least: int) -> int:
    if isinstance(n, numbers.Integral) and not isinstance(n, bool) and n < least:  # 0 too: name the real minimum
        raise ValueError(f"{name} should be at least {least} to measure a spread, but got {n}.")
    return check.positive_int(n, name)


def _seed(seed) -> int:
    return check.seed(seed)


def _sigma(sigma) -> float:
    """A standard deviation σ > 0 inside SIGMA_RANGE (σ⁴ and σ⁸ must not overflow or vanish)."""
    sigma = check.positive_number(sigma, "sigma")
    low, high = SIGMA_RANGE
    if not low <= sigma <= high:
        raise ValueError(f"sigma should be between {low:g} and {high:g}, but got {sigma:g}: the variances d·σ⁴ "
                         "(and their spread, with σ⁸) would overflow or vanish in float64. Try sigma = 1.0 or 2.0.")
    return sigma


def _workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


# --------------------------------------------------------------------------- Step 1: the variance of q·k

def nested_dot_products(d_values=POWERS_OF_TWO, n_pairs: int = 50_000, sigma: float = 1.0,
                        seed: int = 0) -> np.ndarray:
    """q·k for n_pairs random pairs, at every dimension in d_values: -> (n_pairs, len(d_values)).

    Each pair is one q and one k of dimension max(d_values) with independent
    N(0, σ²) components; column j is the dot product of their first
    d_values[j] components. So every column is n_pairs genuine samples of q·k
    in that dimension (the columns share components, which is what makes this
    cheap: the 1024-dimensional sample contains all the smaller ones).
    """
    d = _d_values(d_values)
    n_pairs = _count(n_pairs, "n_pairs", 2)
    sigma = _sigma(sigma)
    seed = _seed(seed)
    d_max = int(d[-1])
    starts = np.concatenate([[0], d[:-1]])             # block j holds components d[j-1] .. d[j]-1
    rows = max(1, _CHUNK_ELEMENTS // d_max)
    bounds = [(s, min(s + rows, n_pairs)) for s in range(0, n_pairs, rows)]
    seeds = np.random.SeedSequence(seed).spawn(len(bounds))
    out = np.empty((n_pairs, len(d)))

    def draw(i: int) -> None:
        lo, hi = bounds[i]
        rng = np.random.default_rng(seeds[i])
        q = rng.standard_normal((hi - lo, d_max), dtype=np.float32)   # (rows, d_max)
        k = rng.standard_normal((hi - lo, d_max), dtype=np.float32)   # (rows, d_max)
        q *= k                                                        # the d_max products q_i k_i
        blocks = np.add.reduceat(q, starts, axis=1, dtype=np.float64)  # (rows, len(d)) sums of each block
        out[lo:hi] = np.cumsum(blocks, axis=1)                        # (rows, len(d)) prefix sums = q·k

    if len(bounds) == 1 or _workers() == 1:
        for i in range(len(bounds)):
            draw(i)
    else:  # NumPy draws outside the GIL: chunks run side by side, each with its own seed
        with ThreadPoolExecutor(_workers()) as pool:
            list(pool.map(draw, range(len(bounds))))
    return out * sigma**2                                             # q = σ z_q, k = σ z_k  =>  q·k = σ² z_q·z_k


def sample_dot_products(d: int, n_pairs: int = 50_000, sigma: float = 1.0, seed: int = 0) -> np.ndarray:
    """q·k for n_pairs fresh pairs of d-dimensional vectors with N(0, σ²) components: -> (n_pairs,)."""
    d = _dimension(d, "d")
    return nested_dot_products([d], n_pairs, sigma, seed)[:, 0]


def variance_table(d_values=POWERS_OF_TWO, n_pairs: int = 50_000, sigma: float = 1.0, seed: int = 0) -> dict:
    """Measured Var(q·k) next to the prediction d·σ⁴, for each d in d_values.

    Returns a dict of columns (each an array with one entry per d):
        d            the dimensions
        var          sample variance of q·k over n_pairs pairs
        predicted    d · σ⁴
        ratio        var / predicted (1 when the derivation holds)
        noise        the standard error of var, relative to var: sqrt((m4 / var² - 1) / n_pairs),
                     with m4 the fourth central moment (how far `ratio` may stray from 1 by chance)
        var_scaled   sample variance of q·k / √d (the fix: ≈ σ⁴ for every d)
    and sigma, n_pairs, and samples (n_pairs, len(d)) for further experiments.
    """
    samples = nested_dot_products(d_values, n_pairs, sigma, seed)
    d = _d_values(d_values)
    sigma = float(sigma)
    var = samples.var(axis=0, ddof=1)
    predicted = d * sigma**4
    centred = samples - samples.mean(axis=0)
    fourth = (centred**4).mean(axis=0)
    return {
        "d": d,
        "var": var,
        "predicted": predicted,
        "ratio": var / predicted,
        "noise": np.sqrt(np.maximum(fourth / var**2 - 1.0, 0.0) / samples.shape[0]),
        "var_scaled": (samples / np.sqrt(d)).var(axis=0, ddof=1),
        "sigma": sigma,
        "n_pairs": int(n_pairs),
        "samples": samples,
    }


def fit_variance_line(d, var) -> dict:
    """Fit the measured variances two ways: (len,), (len,) -> dict.

        slope        least-squares line through the origin, var ≈ slope · d (the derivation says σ⁴)
        exponent     slope of log(var) against log(d): 1 means "proportional to d"
        coefficient  the fitted var at d = 1 from the log-log line
    """
    d = check.vector(d, "d")
    var = check.vector(var, "var")
    check.require_same_length(d, var, "d", "var", "each dimension needs one measured variance.")
    for name, values, what in (("d", d, "dimensions"), ("var", var, "variances")):
        if (values <= 0).any():
            raise ValueError(f"{name} should hold positive numbers ({what}), but holds {values[values <= 0][0]:g}.")
    if len(d) < 2:
        raise ValueError("Give at least two (d, var) points to fit a line.")
    if len(np.unique(d)) < 2:
        raise ValueError(f"d should hold at least two different dimensions to fit a line, but holds only "
                         f"{d[0]:g}: a slope needs two places to compare.")
    slope = float((d * var).sum() / (d * d).sum())
    exponent, intercept = np.polyfit(np.log(d), np.log(var), 1)
    return {"slope": slope, "exponent": float(exponent), "coefficient": float(np.exp(intercept))}


# --------------------------------------------------------------------------- Steps 2 and 3: softmax and its gradient

def _weights(W, name: str = "W") -> np.ndarray:
    W = check.require_finite(check.require_nonempty(check.as_array(W, name), name), name)
    if W.ndim < 1:
        raise ValueError(f"{name} should hold rows of attention weights, shape (..., T), but got a single number.")
    if (W < 0).any() or not np.allclose(W.sum(axis=-1), 1.0, atol=1e-6):
        raise ValueError(f"{name} should be softmax output: rows of weights >= 0 that sum to 1.")
    return W


def entropy_bits(W) -> np.ndarray:
    """-Σ w log2 w along the last axis: (..., T) -> (...). 0 for one-hot, log2(T) for uniform."""
    W = _weights(W)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(W > 0, W * np.log2(np.where(W > 0, W, 1.0)), 0.0)
    return -terms.sum(axis=-1)


def softmax_gradient(W, G) -> np.ndarray:
    """The gradient softmax passes back to its inputs: W (..., T), G (..., T) -> (..., T).

    W = softmax(z) and G = ∂L/∂W (what the rest of the network asks of each
    weight). Then ∂L/∂z_j = w_j · (g_j - Σ_k w_k g_k): every entry carries a
    factor w_j, and when W is one-hot the bracket is 0 for the winner, so a
    saturated softmax passes back (almost) nothing.
    """
    W = _weights(W)
    G = check.require_finite(check.as_array(G, "G"), "G")
    if G.shape != W.shape:
        raise ValueError(f"G should have the same shape as W {W.shape} (one gradient per weight), "
                         f"but has shape {G.shape}.")
    return W * (G - (W * G).sum(axis=-1, keepdims=True))


@lru_cache(maxsize=64)
def _scores_and_upstream(d_k: int, T: int, n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw scores q·k (n_queries, T) of unit-Gaussian q and T keys, and an upstream gradient G (n_queries, T)."""
    rng = np.random.default_rng([seed, d_k, T])
    rows = max(1, _CHUNK_ELEMENTS // (T * d_k))
    S = np.empty((n_queries, T))
    for lo in range(0, n_queries, rows):
        hi = min(lo + rows, n_queries)
        q = rng.standard_normal((hi - lo, 1, d_k))          # (rows, 1, d_k)
        k = rng.standard_normal((hi - lo, T, d_k))          # (rows, T, d_k)
        S[lo:hi] = (q * k).sum(axis=-1)                     # (rows, T)
    G = np.random.default_rng([seed, 0, T]).standard_normal((n_queries, T))   # same G for every d_k
    S.flags.writeable = False
    G.flags.writeable = False
    return S, G


def _summarise(S: np.ndarray, G: np.ndarray, c: float) -> dict:
    """Weights and gradient statistics of softmax(S / c) with upstream gradient G."""
    Z = S / c                                                # (n, T) what softmax sees
    W = softmax(Z, axis=-1)                                  # (n, T)
    grad = softmax_gradient(W, G)                            # (n, T) ∂L/∂z
    per_query = np.linalg.norm(grad, axis=-1)                # (n,)
    top2 = np.argsort(-S, axis=-1)[:, :2]                    # the two highest-scoring keys per query
    on_top2 = np.take_along_axis(np.abs(grad), top2, axis=-1).sum()
    H = entropy_bits(W)
    return {
        "scale": float(c),
        "score_var": float(Z.var()),
        "weights": W,
        "mean_sorted_weights": -np.sort(-W, axis=-1).mean(axis=0),
        "example_weights": W[0],
        "entropy_bits": float(H.mean()),
        "effective_keys": float((2.0 ** H).mean()),
        "max_weight": float(W.max(axis=-1).mean()),
        "grad_per_query": per_query,
        "grad_median": float(np.median(per_query)),
        "grad_p10": float(np.percentile(per_query, 10)),
        "grad_p90": float(np.percentile(per_query, 90)),
        "top2_share": float(on_top2 / np.abs(grad).sum()),
    }


def attention_snapshot(d_k: int, scaled: bool = True, *, T: int = 16, n_queries: int = 512, seed: int = 0) -> dict:
    """One query against T keys, n_queries times, all with unit-Gaussian components in d_k dimensions.

    Scores z = q·k / √d_k if `scaled`, else z = q·k; weights W = softmax(z); the
    upstream gradient G is a fixed random (n_queries, T) array (the same for
    every d_k), so differences come from softmax and the scale alone. Returns:
        d_k, scaled, T, scale (the divisor c), score_var (variance of z)
        weights (n_queries, T), mean_sorted_weights (T,) largest first, example_weights (T,)
        entropy_bits, effective_keys (mean 2**entropy: how many keys a query spreads over), max_weight
        grad_per_query (n_queries,) = ||∂L/∂z|| per query; grad_median, grad_p10, grad_p90
        top2_share: fraction of all |∂L/∂z| that lands on each query's two highest-scoring keys
    """
    d_k = _dimension(d_k, "d_k")
    if not isinstance(scaled, (bool, np.bool_)):
        raise TypeError(f"scaled should be True (divide by √d_k) or False (do not), but got {scaled!r}.")
    T = _count(T, "T (the number of keys)", 2)
    n_queries = _count(n_queries, "n_queries", 2)
    S, G = _scores_and_upstream(d_k, T, n_queries, _seed(seed))
    result = _summarise(S, G, math.sqrt(d_k) if scaled else 1.0)
    result.update({"d_k": d_k, "scaled": bool(scaled), "T": T})
    return result


def saturation_table(d_values=POWERS_OF_TWO, *, T: int = 16, n_queries: int = 512, seed: int = 0) -> dict:
    """How peaked softmax gets as d grows, with and without dividing by √d.

    Returns {"d": (len,), "max_entropy_bits": log2(T), "T": T,
             "unscaled": {...}, "scaled": {...}} where each inner dict has arrays
    score_std, max_weight, entropy_bits, effective_keys, grad_median, top2_share.
    """
    d = _d_values(d_values)
    T = _count(T, "T (the number of keys)", 2)
    n_queries = _count(n_queries, "n_queries", 2)
    seed = _seed(seed)
    keys = ("score_std", "max_weight", "entropy_bits", "effective_keys", "grad_median", "top2_share")
    table = {"d": d, "T": T, "max_entropy_bits": math.log2(T)}
    for mode, scaled in (("unscaled", False), ("scaled", True)):
        snaps = [attention_snapshot(int(dk), scaled, T=T, n_queries=n_queries, seed=seed) for dk in d]
        columns = {k: np.array([s[k] for s in snaps]) for k in keys if k != "score_std"}
        columns["score_std"] = np.sqrt([s["score_var"] for s in snaps])
        table[mode] = columns
    return table


def gradient_measurements(d_values=POWERS_OF_TWO, scaled: bool = True, *, n_seq: int = 64, T: int = 16,
                          d_model: int = 64, seed: int = 0) -> dict:
    """Measure with autograd how much gradient reaches the scores and the projection W_q.

    For each d_k: x (n_seq, T, d_model) ~ N(0, 1) (the same x for every d_k),
    W_q, W_k (d_model, d_k) ~ N(0, 1/d_model) so q and k have unit-variance
    components, Q = x W_q, K = x W_k, z = Q Kᵀ (/ √d_k if scaled),
    W = softmax(z), L = Σ W · G with a fixed random G (n_seq, T, T). The same
    x, W_q, W_k and G are used with and without scaling, so the two are paired.

    Returns a dict of arrays, one entry per d_k:
        d, scores_median, scores_p10, scores_p90   ||∂L/∂z_i|| per query (z is what softmax sees)
        wq_median, wq_p10, wq_p90                  ||x_i|| · ||∂L/∂q_i||: query i's share of ∂L/∂W_q
        wq_total                                   ||∂L/∂W_q|| (Frobenius), all queries together
        wq_top10_share                             fraction of Σ_i ||x_i|| ||∂L/∂q_i|| from the 10% largest
        gap_top10, gap_rest                        median gap between a query's two largest z, for those
                                                   10% of queries and for the other 90%
        top2_share                                 fraction of |∂L/∂z| on each query's two top-scoring keys
        max_weight                                 mean largest weight per query
    """
    import torch

    d = _d_values(d_values)
    if not isinstance(scaled, (bool, np.bool_)):
        raise TypeError(f"scaled should be True (divide by √d_k) or False (do not), but got {scaled!r}.")
    n_seq = _count(n_seq, "n_seq", 1)
    T = _count(T, "T", 2)
    d_model = _dimension(d_model, "d_model")
    seed = _seed(seed)
    base = np.random.default_rng([seed, d_model, T, n_seq])
    x_np = base.standard_normal((n_seq, T, d_model))         # (n_seq, T, d_model)
    G_np = base.standard_normal((n_seq, T, T))               # (n_seq, T, T)
    x = torch.from_numpy(x_np)
    G = torch.from_numpy(G_np)
    x_norm = x.norm(dim=-1).reshape(-1)                      # (n_seq*T,)
    names = ("scores_median", "scores_p10", "scores_p90", "wq_median", "wq_p10", "wq_p90",
             "wq_total", "wq_top10_share", "gap_top10", "gap_rest", "top2_share", "max_weight")
    out = {k: [] for k in names}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # tiny tensors: one thread is fastest, and the sums never depend on the machine
    try:
        for d_k in d:
            _one_gradient_measurement(torch, x, G, x_norm, int(d_k), d_model, T, scaled, seed, out)
    finally:
        torch.set_num_threads(threads)
    result = {k: np.array(v, dtype=np.float64) for k, v in out.items()}
    result.update({"d": d, "scaled": bool(scaled)})
    return result


def _one_gradient_measurement(torch, x, G, x_norm, d_k: int, d_model: int, T: int, scaled: bool, seed: int,
                              out: dict) -> None:
    """One forward and backward pass of gradient_measurements; appends its numbers to `out`."""
    rng = np.random.default_rng([seed, d_k, d_model])
    W_q = torch.from_numpy(rng.standard_normal((d_model, d_k)) / math.sqrt(d_model)).requires_grad_()
    W_k = torch.from_numpy(rng.standard_normal((d_model, d_k)) / math.sqrt(d_model)).requires_grad_()
    Q = x @ W_q                                          # (n_seq, T, d_k)
    K = x @ W_k                                          # (n_seq, T, d_k)
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
    for prefix, values in (("scores", per_query), ("wq", wq)):
        out[f"{prefix}_median"].append(np.median(values))
        out[f"{prefix}_p10"].append(np.percentile(values, 10))
        out[f"{prefix}_p90"].append(np.percentile(values, 90))
    out["wq_total"].append(float(W_q.grad.norm()))
    order = np.argsort(wq)[::-1]                         # queries, largest contribution first
    largest = order[: max(1, len(wq) // 10)]
    out["wq_top10_share"].append(float(wq[largest].sum() / wq.sum()))
    ranked = np.sort(Z.detach().reshape(-1, T).numpy(), axis=-1)
    gap = ranked[:, -1] - ranked[:, -2]                  # how close each query's two top scores are
    out["gap_top10"].append(float(np.median(gap[largest])))
    out["gap_rest"].append(float(np.median(gap[order[len(largest):]])))
    out["top2_share"].append(float(np.take_along_axis(np.abs(gz), top2, axis=-1).sum() / np.abs(gz).sum()))
    out["max_weight"].append(float(W.detach().amax(dim=-1).mean()))


# --------------------------------------------------------------------------- Step 4: the constant, per head

def per_head_dim(d_model: int, n_heads: int) -> int:
    """d_k = d_model / n_heads: multi-head attention gives each head an equal slice of d_model."""
    d_model = check.positive_int(d_model, "d_model")
    n_heads = check.positive_int(n_heads, "n_heads")
    if d_model % n_heads:
        raise ValueError(
            f"d_model = {d_model} does not split into n_heads = {n_heads} equal heads "
            f"({d_model} / {n_heads} = {d_model / n_heads:.4g}): each head gets d_k = d_model / n_heads "
            "dimensions, so n_heads must divide d_model exactly."
        )
    return d_model // n_heads


def scale_constant(d_model: int, n_heads: int) -> float:
    """The divisor c = √d_k for a model of width d_model split into n_heads heads."""
    return math.sqrt(per_head_dim(d_model, n_heads))


def constant_comparison(d_model: int = 512, n_heads: int = 8, *, T: int = 16, n_queries: int = 512,
                        seed: int = 0) -> dict:
    """What three divisors do to one head's weights: none (c = 1), right (√d_k), wrong (√d_model).

    Scores are q·k of unit-Gaussian vectors in d_k = d_model / n_heads
    dimensions (one head). Returns {"d_model", "n_heads", "d_k", "T",
    "max_entropy_bits", "example_scores" (T,): the raw scores q·k of query 0, whose weights are each
    row's example_weights, "rows": [ {label, c, score_var, max_weight, entropy_bits,
    effective_keys, mean_sorted_weights (T,), example_weights (T,), grad_median}, ... ]}.
    """
    d_k = per_head_dim(d_model, n_heads)
    T = _count(T, "T (the number of keys)", 2)
    n_queries = _count(n_queries, "n_queries", 2)
    S, G = _scores_and_upstream(_dimension(d_k, "d_k"), T, n_queries, _seed(seed))
    rows = []
    for label, c in (("no scaling (c = 1)", 1.0),
                     (f"c = √d_k = √{d_k}", math.sqrt(d_k)),
                     (f"c = √d_model = √{d_model}", math.sqrt(d_model))):
        summary = _summarise(S, G, c)
        rows.append({"label": label, "c": c, **{k: summary[k] for k in (
            "score_var", "max_weight", "entropy_bits", "effective_keys", "mean_sorted_weights",
            "example_weights", "grad_median")}})
    return {"d_model": int(d_model), "n_heads": int(n_heads), "d_k": d_k, "T": T,
            "max_entropy_bits": math.log2(T), "example_scores": S[0].copy(), "rows": rows}
