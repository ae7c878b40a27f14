"""Exercises of notebook 04: a soft lookup, the parameter count, the forward pass with W_q, W_k, W_v, the module.
The course's layout: Q = E W_q with W_q of shape (d_model, d_k), tokens as rows (nn.Linear's .weight is W_qᵀ)."""
import math
from functools import partial

import numpy as np
import torch

from helpers.attention_torch import SelfAttention, count_parameters, scaled_dot_product_attention
from helpers.exercises.engine import Case, Exercise, Refusal, as_numbers, changed_in_place, placeholder, returned_number
from helpers.learning import soft_lookup


# --- Exercise 1: a soft dictionary lookup -------------------------------------------------------
def reference_soft_lookup(query, keys, values):
    """Blend of all values, weighted by softmax of the key-query dot products: (d,), (n, d), (n,) -> number."""
    scores = keys @ query                    # (n,) how well each key matches the query
    weights = np.exp(scores - scores.max())  # softmax, safely
    weights = weights / weights.sum()        # (n,) positive, sum to 1
    return float(weights @ values)           # one number: the blend


def _lookup_cases():
    keys = np.eye(3)                                  # the keys 'a', 'b', 'c' as one-hot vectors
    values = np.array([1.0, 2.0, 4.0])                # d = {'a': 1, 'b': 2, 'c': 4}
    rng = np.random.default_rng(4)
    return ((np.array([0.5, 2.0, -1.0]), keys, values, "the query [0.5, 2, -1] over d = {'a': 1, 'b': 2, 'c': 4}"),
            (np.array([1.0, 0.0, 0.0]), keys, values, "the query 'a' over the same dictionary"),
            (rng.normal(size=4), rng.normal(size=(5, 4)), rng.normal(size=5), "random keys (5, 4) and values (5,)"),
            (np.array([800.0, 790.0, 0.0]), keys, values, "the query [800, 790, 0], whose scores overflow exp"),
            (np.array([0.0, 800.0, 790.0]), keys, values, "the query [0, 800, 790], the largest score second"),
            (np.array([1000.0, -1000.0, 0.0]), 2 * keys, values, "the query [1000, -1000, 0] over keys twice as long"),
            (np.array([-1000.0, -1001.0, -1002.0]), keys, values, "the query [-1000, -1001, -1002], all far below 0"),
            (np.array([1000.0, 990.0, -2000.0]), keys, values, "the query [1000, 990, -2000] (two scores high)"))


def _lookup_slips(query, keys, values):
    """[(what a slip returns, what the slip is)]; inf or NaN where its exp overflows (never matched)."""
    scores = keys @ query
    return [
        (values[int(np.argmax(scores))], "that is a HARD lookup (the best key's value only); blend all values"),
        (scores @ values, "the scores went into the blend without softmax: exp(s − s.max()), then divide by the sum"),
        ((scores / scores.sum()) @ values, "the scores were divided by their sum, which is not softmax: exp first"),
        (values.mean(), "that is the plain average of the values; weight each by how well its key matches"),
        (soft_lookup(query, keys, values)[1] / len(values), "that is the MEAN of the weighted values: add them"),
        (np.exp(scores) @ values, "the exponentials were not divided by their sum, so weights do not add up to 1"),
        (soft_lookup(query / math.sqrt(len(query)), keys, values)[1],
         f"you divided the scores by √d = √{len(query)}{' (or by √n, the number of keys)' * (len(keys) == len(query))}"
         ", but this lookup has no scale (√d_k comes in section 8)")]


def _draw_lookup(rng, long=False, square=False) -> Case:
    """Random query, keys, values: the page's 3 keys of 3; `long`: 4 to 7 keys, j ≥ 1 scoring 1,000; `square`: n = d."""
    n, d = rng.integers(4, 8) if long else 3, rng.integers(2, 7) if long or square else 3
    n = d if square else n
    query, keys, values = rng.normal(size=d), rng.normal(size=(n, d)), rng.normal(size=n)
    j = int(rng.integers(1, n))
    if long:
        keys[:, -1], keys[j, -1], query[-1] = 0.0, 1.0, 1000.0   # in that order: key j alone keeps its 1
    score = f", key {j}'s score near 1,000" * long
    return Case(query, keys, values, what=f"random keys ({n}, {d}) and values ({n},){score}, drawn for this check")


def _read_blend(result, case):
    """One number, the blend; the weights, a pair or many numbers are named."""
    if isinstance(result, (tuple, list)) and len(result) == 2 and any(np.ndim(r) > 0 for r in result):
        return None, f"on {case.what} you returned a pair like (weights, blend); return only the blend, one number."
    got, problem = as_numbers(result, "the result")
    if problem is not None:
        return None, f"on {case.what}: {problem.message}"
    weights = soft_lookup(*case.args)[0]
    if got.shape == weights.shape and np.allclose(got, weights, atol=1e-6):
        return None, (f"on {case.what} you returned the weights {np.round(got, 4).tolist()}. Finish the lookup: "
                      "return the blend weights @ values, one number.")
    if got.size != 1:
        return None, f"on {case.what} you returned {got.size} numbers; a lookup returns one number, weights @ values."
    if not np.isfinite(got).all():
        return None, (f"on {case.what}: you got {got.item()}. exp overflowed, or every exp fell to 0 (0 / 0): subtract "
                      "the largest score before exp.")
    return got.reshape(()), None


def _lookup_verdict(answer) -> str:
    weights, blend = soft_lookup(*_lookup_cases()[1][:3])
    return (f"the query 'a' gets weights {np.round(weights, 4).tolist()} and returns {blend:.4f}, not 1: "
            "a soft lookup blends every value, leaning toward the best-matching key.")


check_soft_lookup = Exercise(reference_soft_lookup, title="a soft dictionary lookup",
    expects="soft_lookup(query, keys, values) returning one number", success=_lookup_verdict, own="soft_lookup",
    cases=lambda: [Case(*args, what=what) for *args, what in _lookup_cases()], read=_read_blend,
    draw=(_draw_lookup, partial(_draw_lookup, square=True), partial(_draw_lookup, long=True)),
    slips=lambda case: [(v, f"on {case.what}: {m}.") for v, m in _lookup_slips(*case.args)], name="the blend on {what}",
    hint="Score each key against the query (keys @ query, one score per key), softmax, blend the values by them.",
    explanation="Make the query 10 times longer and the weights approach [1, 0, 0]: the hard lookup d['a'] = 1 is "
                "the limit of the soft one.")


# --- Exercise 2: how many parameters? -----------------------------------------------------------
SIZES = ((4, 4), (16, 8), (4, 3), (512, 64), (1, 1), (3, 8))   #: 48, (4, 4)'s, is no slip at (16, 8); d_model < d_k


def reference_qkv_parameters(d_model: int, d_k: int) -> int:
    """Learnable numbers in SelfAttention(d_model, d_k): three (d_model, d_k) matrices, no biases."""
    return 3 * d_model * d_k


def _judge_count(case, got, expected):
    """Not the exact count (atol=0): the slip it is (a later entry wins where two coincide), or what to count."""
    (d_model, d_k), got, expected = case.args, got.item(), int(expected)
    shape = "each matrix maps d_model numbers to d_k numbers, so it is (d_model, d_k), not"
    slips = {d_model * d_k: "that is one matrix. There are three: W_q, W_k and W_v",
             2 * d_model * d_k: "that is two matrices. Queries, keys AND values each have their own",
             3 * d_model * d_model: f"{shape} (d_model, d_model)", 3 * d_k * d_k: f"{shape} (d_k, d_k)",
             3 * (d_model * d_k + d_k): "you counted biases, but SelfAttention's layers have bias=False",
             3 * (d_model + d_k): "you added the sizes. A (d_model, d_k) matrix holds d_model × d_k numbers"}
    if got in slips:
        return f"for d_model={d_model}, d_k={d_k} you returned {int(got):,}, expected {expected:,}: {slips[got]}."
    got, again = int(got) if got == int(got) else got, " (the count at d_model = d_k = 4, again)" * (got == 48)
    return (f"for d_model={d_model}, d_k={d_k} you returned {got!r}{again}, but SelfAttention({d_model}, {d_k}) "
            f"has {expected:,} parameters. Count the numbers in W_q, W_k and W_v: each is (d_model, d_k).")


def _draw_sizes(rng, d_model=None, d_k=None) -> Case:   # one given: the page's 512 or 64, beside one drawn (not 64)
    d_model, d_k = d_model or int(rng.choice(np.r_[2:64, 65:300])), d_k or int(rng.choice(np.r_[2:64, 65:300]))
    return Case(d_model, d_k, what=f"d_model={d_model}, d_k={d_k}")


check_qkv_parameters = Exercise(reference_qkv_parameters, title="the parameter count",
    expects="qkv_parameters(d_model, d_k) returning a whole number", where="for {what}: ", reads="the count",
    cases=lambda: [Case(m, k, what=f"d_model={m}, d_k={k}") for m, k in SIZES], own="count_parameters or SelfAttention",
    draw=(_draw_sizes, partial(_draw_sizes, d_model=512), partial(_draw_sizes, d_k=64)), atol=0.0,   # exactly
    expected=lambda case: count_parameters(SelfAttention(*case.args)), judge=_judge_count,
    read=lambda result, case: returned_number(result, "for d_model={}, d_k={} your function".format(*case.args),
                                              "the count, a whole number such as 48"),   # np.int64(48) too
    success=f"3 · d_model · d_k, checked against count_parameters(SelfAttention(...)) for {', '.join(map(str, SIZES))}"
            f" and three sizes drawn at random. At d_model = 512, d_k = 64 that is {3 * 512 * 64:,} numbers, all "
            "learned from data.",
    explanation="W_q, W_k and W_v are each (d_model, d_k), and SelfAttention builds them with bias=False. "
                "Attempt 1 (softmax(E Eᵀ/√d) E) has 0.")


# --- Exercise 3: the forward pass ---------------------------------------------------------------
def reference_attention_forward(E, W_q, W_k, W_v):
    """Self-attention with learned projections: E (T, d_model) -> Y (T, d_v).

    W_q, W_k: (d_model, d_k); W_v: (d_model, d_v). Tokens are the rows of E, so Q = E W_q."""
    Q = E @ W_q                                      # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    K = E @ W_k                                      # (T, d_k)  one key per token
    V = E @ W_v                                      # (T, d_v)  one value per token
    d_k = Q.shape[-1]
    S = Q @ K.T                                      # (T, T)    s_ij = q_i · k_j
    W = torch.softmax(S / math.sqrt(d_k), dim=-1)    # (T, T)    each row sums to 1
    return W @ V                                     # (T, d_v)  y_i = Σ_j w_ij v_j


#: (seed, T, d_model, d_k, d_v): all sizes differ, so a scale by the wrong one shows; d_k = 9 shows a hard-coded √4.
FORWARD_CASES = ((7, 5, 6, 4, 3), (8, 6, 12, 9, 2))


def _forward_case(seed: int = 7, T: int = 5, d_model: int = 6, d_k: int = 4, d_v: int = 3):
    g = torch.Generator().manual_seed(seed)
    shapes = ((T, d_model), (d_model, d_k), (d_model, d_k), (d_model, d_v))   # E, W_q, W_k, W_v
    return tuple(torch.randn(*shape, generator=g, dtype=torch.float64) for shape in shapes)


def _attention_slips(Q, K, V, d_model) -> list[tuple[torch.Tensor, str]]:
    """[(what a slip returns, what the slip is)] for Q, K (…, T, d_k), V (…, T, d_v) made from tokens d_model wide."""
    (T, d_k), d_v = Q.shape[-2:], V.shape[-1]
    S = Q @ K.transpose(-2, -1)                      # (…, T, T)
    A, flat = S / math.sqrt(d_k), "has shape (T,) and lines up with the COLUMNS: keepdim=True"
    which = f"the scale is √d_k, the size of a query: Q.shape[-1] (here d_k = {d_k}), not the tokens' width"
    divisors = [   # the first that fits is named: √d_k rounded down before 1 and 2, which only draws reach
        (math.isqrt(d_k), f"you rounded √{d_k} down to {math.isqrt(d_k)} (int() or //): keep it a float, d_k ** 0.5"),
        (1.0, f"you forgot to divide the scores by √d_k (here √{d_k} = {math.sqrt(d_k):g})"),
        (math.sqrt(d_model), f"you divided by √d_model = √{d_model}; {which}"),
        (math.sqrt(d_v), f"you divided by √d_v = √{d_v}, the dimension of the values; {which}"),
        (math.sqrt(T), f"you divided by √T = √{T}, the number of tokens; {which}"),
        (1 / math.sqrt(d_k), f"you multiplied the scores by √d_k; divide them: softmax(Q @ K.T / √d_k) (here √{d_k})"),
        (d_k, f"you divided by d_k = {d_k} instead of √d_k"),
        *[(c, f"you divided by {n} = {c:g}: in Python d_k**1/2 is (d_k**1)/2, so write d_k ** 0.5")
          for c, n in ((d_k / 2, "d_k / 2"), (2 * d_k, "2·d_k"))],
        (2.0, f"you divided by 2 = √4, but here d_k = {d_k}: take the size from the queries, d_k = Q.shape[-1]")]
    slips = [(torch.softmax(S / c, -1) @ V, message) for c, message in divisors if c != math.sqrt(d_k)] + [
        (torch.softmax(A, -2) @ V, "softmax ran over the queries (dim=-2): each query's ROW must sum to 1, use dim=-1"),
        (A @ V, "softmax is missing: the raw scores were used as weights"),
        *[(torch.softmax(S, -1) @ V / c, f"you divided Y (or V, or the weights) by {n}: divide the scores, before the "
           "softmax, by √d_k") for c, n in ((math.sqrt(d_k), "√d_k"), (d_k, "d_k"), (d_model**0.5, "√d_model"),
                                            (d_v**0.5, "√d_v"), (T**0.5, "√T"))],
        (torch.softmax(A, -1) @ V / math.sqrt(d_k), "you divided both the scores and Y by √d_k: only the scores"),
        (torch.softmax(K @ Q.transpose(-2, -1) / math.sqrt(d_k), -1) @ V,
         "queries and keys are swapped: the scores are Q @ K.T (row i = query i), not K @ Q.T"),
        (torch.softmax(Q @ K.reshape(*K.shape[:-2], d_k, T) / math.sqrt(d_k), -1) @ V, "K.reshape(…, d_k, T) is not "
         "K's transpose: it refills the rows in reading order. Use K.transpose(-2, -1) (K.T for one sentence)"),
        *[(torch.softmax(X @ Y.transpose(-2, -1) / math.sqrt(d_k), -1) @ Z, f"the {made} made with {used}: each of Q, "
           "K and V has its own weights, W_q, W_k, W_v") for X, Y, Z, made, used in (
            (Q, Q, V, "keys were", "W_q"), (K, K, V, "queries were", "W_k"), (Q, K, Q, "values were", "W_q"),
            (Q, K, K, "values were", "W_k"))]]
    if S.dim() == 3:   # a batch
        return [*slips, (torch.softmax(A, 0) @ V, "softmax ran over the batch (dim=0): use dim=-1")]
    e = torch.exp(A - A.amax(-1, keepdim=True))   # S is square: a (T,) max or sum broadcasts without an error
    return slips + [
        (torch.softmax(A - A.amax(-1), -1) @ V, f"each row was shifted by the wrong max: S.max(-1).values {flat}"),
        *[((x / x.sum(-1)) @ V, f"each row was divided by the wrong sum: e.sum(-1) {flat}") for x in (e, A.exp())],
        ((g := (A - A.max()).exp()) / g.sum() @ V, "the softmax ran over the whole matrix (one sum for every entry): "
                                                   "each query's row is its own softmax, dim=-1"),
        (((f := (A - A.amax(-1)).exp()) / f.sum(-1)) @ V, "the row max and the row sum both miss keepdim=True: "
                                                         "each has shape (T,) and lines up with the COLUMNS")]


def _forward(seed, T, d_model, d_k, d_v, drawn="") -> Case:
    return Case(*_forward_case(seed, T, d_model, d_k, d_v),
                what=f"E ({T}, {d_model}), W_q and W_k ({d_model}, {d_k}), W_v ({d_model}, {d_v}){drawn}")


def _route(E, W_q, W_k, column, sign) -> None:
    """In place: E's last column set to `column`, which W_q and W_k send to the first query and key component alone,
    as a and sign · a, a = √(1000 √d_k): the scaled score of tokens i, j gains sign · 1,000 · column_i · column_j."""
    E[..., -1], W_q[:, 0], W_k[:, 0] = column, 0.0, 0.0
    W_q[-1, 0] = math.sqrt(1000 * math.sqrt(W_q.shape[1]))
    W_k[-1, 0] = sign * W_q[-1, 0]


def _large_forward(sunk=False) -> Case:
    """The first case with E 30 times longer: scores in the thousands, where exp without the row max overflows;
    `sunk`: every score 1,000 lower instead, each row's largest far below 0, where a plain exp falls to 0."""
    E, W_q, W_k, W_v = _forward_case()
    if sunk:
        _route(E, W_q, W_k, 1.0, -1)
        return Case(E, W_q, W_k, W_v, what="E (5, 6) whose last column is 1, W_q and W_k (6, 4) that lower every "
                                           "score by 1,000 through it, W_v (6, 3)")
    return Case(30 * E, W_q, W_k, W_v, what="E (5, 6) 30 times longer (scores in the thousands), W_q and W_k (6, 4), "
                                            "W_v (6, 3)")


def _draw_forward(rng, spiked=False) -> Case:
    """Sizes that all differ (d_k ≠ 4); `spiked`: tokens r and k in E's last column, so that r's scaled scores with
    itself and with k are near 1,000 and 1 less (a near tie), every other score as drawn."""
    T, d_model, d_k, d_v = (int(n) for n in rng.choice([3, 5, 6, 7, 8, 10, 11, 12], size=4, replace=False))
    r, k = (r := int(rng.integers(T))), (r + 1) % T
    spike = f", token {r}'s scores with itself and token {k} near 1,000 and 1 less" if spiked else ""
    case = _forward(int(rng.integers(2**31)), T, d_model, d_k, d_v, f", drawn at random{spike}")
    if spiked:   # E[k, -1] from 0 to x moves r's score with k by x (q_r · W_k[-1]) / √d_k, about 1,000 x
        (E, W_q, W_k), _ = case.args[:3], _route(*case.args[:3], (torch.arange(T) == r).double(), 1)
        E[k, -1] = ((E[r] @ W_q) @ ((E[r] - E[k]) @ W_k) - math.sqrt(d_k)) / (E[r] @ W_q @ W_k[-1])
        case.atol32 = 1e-3 * reference_attention_forward(*case.args).abs().max().item()   # float32: 8.5e-5 of it
    return case


def _forward_error(case, error):
    hint = {RuntimeError: (   # what torch raises when a product's shapes or dtypes differ
        " If a matrix product's shapes do not fit: W_q is (d_model, d_k) and the tokens are the rows of E, so Q = E @ "
        "W_q with no .T (only nn.Linear's .weight is W_qᵀ); the same for K, V. The scores are Q @ K.T: (T, d_k) @ "
        "(d_k, T), and Y has V's width, d_v. If the dtypes differ: keep E's float64 (no .float()).")}.get(type(error))
    return hint and f"on {case.what} your function raised {type(error).__name__} ({str(error).rstrip('.')}).{hint}"


def _forward_shapes(case):
    (T, d_model), d_k, d_v, what = case.args[0].shape, case.args[1].shape[1], case.args[3].shape[1], case.what
    return {(T, d_k): f"on {what} Y has d_k = {d_k} columns, not d_v = {d_v}: were the values made with W_q or W_k?",
            (T, d_model): f"on {what} Y has the shape of E: did you mix E instead of V = E @ W_v?",
            (T, T): f"on {what} you returned a ({T}, {T}) matrix: that is the weights. Finish with Y = W @ V."}


check_attention_forward = Exercise(reference_attention_forward, title="the forward pass",
    expects="attention_forward(E, W_q, W_k, W_v) returning Y", reads="Y", shapes=_forward_shapes,
    cases=lambda: [*(_forward(*case) for case in FORWARD_CASES), _large_forward(), _large_forward(sunk=True)],
    draw=(_draw_forward, _draw_forward, partial(_draw_forward, spiked=True)), name="Y on {what}", errors=_forward_error,
    own="scaled_dot_product_attention or attention_weights or SelfAttention or MultiheadAttention",
    atol=1e-5, atol32=1e-4,   # float32 is right too: its rounding reached 2.1e-5 over 6,000 drawn cases
    expected=lambda case: scaled_dot_product_attention(*(case.args[0] @ W for W in case.args[1:])),
    slips=lambda case: [(v, f"on {case.what} {m}.") for v, m in _attention_slips(
        *(case.args[0] @ W for W in case.args[1:]), case.args[0].shape[-1])],
    hint="Project E three times (Q, K, V); scale the scores by √d_k, softmax each row, and mix the rows of V.",
    success="Y matches the course's scaled_dot_product_attention on Q = E W_q, K = E W_k, V = E W_v: "
            "softmax(Q Kᵀ / √d_k) V, what SelfAttention computes.",
    explanation="Tokens are rows, so every projection is one product, E @ W_q. nn.Linear(d_model, d_k) stores "
                "its .weight as (d_k, d_model), which is W_qᵀ, and computes x @ weight.T = x @ W_q.")


# --- Exercise 4: the module -----------------------------------------------------------------------
MODULE_CASES = ((3, 2, 5, 6, 4), (4, 1, 7, 12, 9))  #: (seed, B, T, d_model, d_k): batches of 2 and 1, all sizes differ


def _module_case(seed, B, T, d_model, d_k, drawn="", scale=1.0, sunk=False, tie=None) -> Case:
    x = scale * torch.randn(B, T, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    longer = f", {scale:.3g} times longer (scores in the thousands)" if scale != 1 else ""
    drawn += ", its last feature 1, which W_q and W_k use to lower every score by 1,000" * sunk
    case = Case(x, what=f"x of shape ({B}, {T}, {d_model}){longer} with d_k = {d_k}{drawn}", seed=seed,
                d_model=d_model, d_k=d_k, route=(1.0, -1) if sunk else None)   # _route's column and sign
    if tie:   # tokens (r, k): x[:, k, -1] from 0 to c moves r's score with k by c (q_r · W_k[-1]) / √d_k, ~1,000 c
        (r, k), case.route = tie, ((torch.arange(T) == tie[0]).double().repeat(B, 1), 1)   # x[:, r, -1] = 1
        q, W_k = (model := _reference_module(case)).W_q(x[:, r]).detach(), model.W_k.weight.detach().T
        case.route[0][:, k] = ((q * ((x[:, r] - x[:, k]) @ W_k)).sum(-1) - math.sqrt(d_k)) / (q @ W_k[-1])
    if sunk or tie:   # float32 near scores of ±1,000 (near the tie: 2.5e-4 of the largest output at worst)
        case.atol32 = 1e-3 * _module_expected(case).abs().max().item()
    return case


def _draw_module(rng, tied=False) -> Case:
    """T, d_model, d_k differ; `tied`: in every sentence token r's scores with itself and with k 1 apart, near 1,000."""
    B, T, d_model, d_k = (int(n) for n in (rng.integers(1, 4), *rng.choice([3, 5, 6, 7, 9, 10], 3, replace=False)))
    r, k = (r := int(rng.integers(T))), (r + 1) % T
    tie = f", token {r}'s scores with itself and token {k} near 1,000 and 1 less" * tied
    return _module_case(int(rng.integers(2**31)), B, T, d_model, d_k, ", drawn at random" + tie, tie=tied and (r, k))


def _reference_module(case) -> SelfAttention:
    torch.manual_seed(case.seed)
    model = SelfAttention(case.d_model, case.d_k).double()
    if case.route:   # x's last feature set too; nn.Linear's .weight is W_qᵀ, so its .T is a view of W_q
        with torch.no_grad():
            _route(case.args[0], model.W_q.weight.T, model.W_k.weight.T, *case.route)
    return model


def _run_module(student_class, case):
    """Build MySelfAttention(d_model, d_k), give it the reference's weights, run it on the case's x."""
    d_model, d_k = case.d_model, case.d_k
    if isinstance(student_class, torch.nn.Module):
        raise Refusal("pass the class itself, check_self_attention_module(MySelfAttention), not an instance of it.")
    try:
        model = student_class(d_model, d_k)
    except Exception as error:
        if placeholder(error):
            raise
        first = " If it is about Module.__init__, call super().__init__() first." * isinstance(error, AttributeError)
        raise Refusal(f"MySelfAttention({d_model}, {d_k}): raised {type(error).__name__}: {str(error).rstrip('.')}."
                      f"{first}") from None
    layers = {name: getattr(model, name, None) for name in ("W_q", "W_k", "W_v")}
    if not isinstance(model, torch.nn.Module) or not all(isinstance(v, torch.nn.Linear) for v in layers.values()):
        raise Refusal("make MySelfAttention an nn.Module whose __init__ sets self.W_q = nn.Linear(d_model, d_k, "
                      "bias=False), and the same for self.W_k and self.W_v (super().__init__() first).")
    if len(set(map(id, layers.values()))) < 3:   # self.W_q = self.W_k = nn.Linear(…): one layer under two names
        raise Refusal("W_q, W_k and W_v are not three layers: self.W_q = self.W_k = … makes one nn.Linear with two "
                      "names, so they learn one matrix. Give each its own nn.Linear(d_model, d_k, bias=False).")
    for name, layer in layers.items():
        if layer.bias is not None or tuple(layer.weight.shape) != (d_k, d_model):
            raise Refusal(f"for d_model={d_model}, d_k={d_k}, self.{name} should be nn.Linear(d_model, d_k, "
                          f"bias=False), whose .weight is {name}ᵀ of shape ({d_k}, {d_model}); yours has .weight "
                          f"{tuple(layer.weight.shape)} and {'a' if layer.bias is not None else 'no'} bias.")
    if (extra := count_parameters(model) - 3 * d_model * d_k) > 0:
        raise Refusal(f"MySelfAttention({d_model}, {d_k}) learns {extra:,} number{'s' * (extra > 1)} beyond W_q, W_k "
                      "and W_v (3 · d_model · d_k in all): self-attention learns nothing else. Remove the extra ones.")
    weights, x = _reference_module(case).state_dict(), case.args[0].clone()
    model.double().eval().load_state_dict(weights, strict=False)   # the same weights
    with torch.no_grad():
        result = model(x)
    changed = [name for name, W in model.state_dict().items() if name in weights and not torch.allclose(
        W.double(), weights[name], atol=1e-6)]   # float32 copies of the weights are the same weights
    if changed or not torch.equal(x, case.args[0]):
        raise Refusal(f"on {case.what}: " + (changed_in_place("forward", "x") if not changed else "forward "
                      f"changed the module's own weights ({changed[0]}): leave them, and scale the scores instead."))
    if isinstance(result, (np.ndarray, list)) or torch.is_tensor(result) and not (y := model(x)).requires_grad:
        raise Refusal(f"on {case.what}: forward's {type(result).__name__} is cut from autograd, so the layer could not "
                      "learn: return the tensor its layers computed (no .detach(), .numpy(), .tolist(), torch.tensor).")
    if not (torch.is_tensor(result) and result.shape == (expected := _module_expected(case)).shape and torch.allclose(
            result.double(), expected, rtol=1e-3, atol=1e-3 * expected.abs().max().item())):
        return result                                  # not the right numbers: the slips are named first
    try:
        y.sum().backward()                             # the gradients a training step would give each layer
    except RuntimeError as error:
        raise Refusal(f"on {case.what}: forward gives the right numbers, but autograd cannot go back through them ("
                      f"{str(error).split(':')[0]}): write e = e / s, not e /= s, once e is used.") from None
    (reference := _reference_module(case))(x).sum().backward()    # SelfAttention's gradients, the same weights
    right = {name: getattr(reference, name).weight.grad for name in layers}
    floor = 1e-4 * max(g.abs().max().item() for g in right.values())   # a layer whose gradient is ~0 (saturated)
    if off := [name for name, layer in layers.items() if layer.weight.grad is None or not torch.allclose(
            layer.weight.grad.double(), right[name], rtol=0.02, atol=0.02 * right[name].abs().max().item() + floor)]:
        names, one = f"{', '.join(off[:-1])}{' and ' * (len(off) > 1)}{off[-1]}", len(off) == 1
        raise Refusal(f"on {case.what}: forward gives the right numbers, but {names} get{'s' * one} no gradient or the "
                      f"wrong one, so training could not change {'it' if one else 'them'}: nothing on their path to "
                      "the output may stop autograd (.detach(), .data, torch.no_grad(), requires_grad_(False)).")
    return result


def _module_error(case, error):
    hint = (" If a product's shapes do not fit: let the layers do the products, Q = self.W_q(x) (nn.Linear applies "
            ".weight.T for you), and on a batch (B, T, d_k) transpose the last two dims: K.transpose(-2, -1), not K.T."
            " If its dtypes differ: keep x's float64 (no .float())." if type(error) is RuntimeError else "")
    return f"on {case.what} forward raised {type(error).__name__}: {str(error).rstrip('.')}.{hint}"


def _module_expected(case):
    with torch.no_grad():
        return _reference_module(case)(case.args[0])


def _module_slips_of(case):
    reference, (x,) = _reference_module(case), case.args
    with torch.no_grad():
        slips = _attention_slips(reference.W_q(x), reference.W_k(x), reference.W_v(x), case.d_model)
    return [(v, f"on {case.what}: {m}.") for v, m in slips]


check_self_attention_module = Exercise(SelfAttention, title="the module", expects="the class MySelfAttention itself",
    own="SelfAttention or scaled_dot_product_attention or MultiheadAttention",
    cases=lambda: [*(_module_case(*case) for case in MODULE_CASES), _module_case(*MODULE_CASES[0], scale=100.0),
                   _module_case(*MODULE_CASES[1], sunk=True)],
    draw=(_draw_module, _draw_module, partial(_draw_module, tied=True)), name="the output on {what}",
    atol32=3e-5, reads="the output",   # float32 is right too: its error reached 6.2e-6 over 1,500 drawn cases
    call=_run_module, errors=_module_error, expected=_module_expected, slips=_module_slips_of,
    shapes=lambda case: {(*case.args[0].shape[:2], case.args[0].shape[1]): f"on {case.what} you returned a (B, T, T) "
                         "tensor: that is the weights. Finish with their product with V."},
    hint="The layers make Q, K and V from x; then exercise 3's lines, with K.transpose(-2, -1) for a batch.",
    success="your module gives SelfAttention's outputs and gradients with the same weights, on a batch of 2 and of "
            "1, with scores in the thousands, with scores all far below 0, and on three drawn at random: you have "
            "built the layer the rest of the course uses.",
    shown="""import math


class MySelfAttention(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.d_k = d_k
        self.W_q = nn.Linear(d_model, d_k, bias=False)          # .weight is W_qᵀ, (d_k, d_model)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_k, bias=False)

    def forward(self, x):
        \"\"\"x (B, T, d_model) -> (B, T, d_k).\"\"\"
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)          # each (B, T, d_k)
        S = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)        # (B, T, T): K.T would reverse every axis
        W = torch.softmax(S, dim=-1)                             # (B, T, T), each row sums to 1
        return W @ V                                             # (B, T, d_k)
""",
    explanation="self.W_q(x) is X W_q. The course's SelfAttention computes the same: it adds a check line, "
                "check_tokens(x, self, mask), and an optional mask, and its attention_weights(Q, K, mask) holds the "
                "two middle lines, with hidden pairs set to −inf (masks: notebooks 07 and 09).")
