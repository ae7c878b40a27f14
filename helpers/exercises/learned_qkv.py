"""Exercises of notebook 04: a soft lookup, the parameter count, the forward pass with W_q, W_k, W_v, the module.
The course's layout: Q = E W_q with W_q of shape (d_model, d_k), tokens as rows (nn.Linear's .weight is W_qᵀ)."""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch
import torch.nn as nn

from helpers.attention_torch import SelfAttention, count_parameters, scaled_dot_product_attention
from helpers.exercises.feedback import (
    Feedback,
    Solution,
    as_numbers,
    call_student,
    compare_numbers,
    correct,
    require_callable,
    wrong,
)
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
    return (
        (np.array([0.5, 2.0, -1.0]), keys, values, "the query [0.5, 2, -1] over d = {'a': 1, 'b': 2, 'c': 4}"),
        (np.array([1.0, 0.0, 0.0]), keys, values, "the query 'a' over the same dictionary"),
        (rng.normal(size=4), rng.normal(size=(5, 4)), rng.normal(size=5), "random keys (5, 4) and values (5,)"),
        (np.array([800.0, 790.0, 0.0]), keys, values, "the query [800, 790, 0], whose scores overflow exp"),
    )


def _lookup_slips(query, keys, values):
    """[(what a slip returns, what the slip is)]; inf or NaN where its exp overflows (never matched)."""
    scores = keys @ query
    return [
        (values[int(np.argmax(scores))], "that is a HARD lookup (the best key's value only); blend all values"),
        (scores @ values, "the scores went into the blend without softmax: exp them, then divide by the sum"),
        ((scores / scores.sum()) @ values, "the scores were divided by their sum, which is not softmax: exp first"),
        (values.mean(), "that is the plain average of the values; weight each by how well its key matches"),
        (np.exp(scores) @ values, "the exponentials were not divided by their sum, so weights do not add up to 1"),
        (soft_lookup(query / math.sqrt(len(query)), keys, values)[1],
         f"you divided the scores by √d = √{len(query)}, but this lookup has no scale (√d_k comes in section 8)"),
    ]


def check_soft_lookup(student_function) -> Feedback:
    """Exercise 1: soft_lookup(query, keys, values) -> one number, the softmax-weighted blend of the values."""
    problem = require_callable(student_function, "soft_lookup(query, keys, values) returning one number")
    if problem is not None:
        return problem
    for query, keys, values, what in _lookup_cases():
        with np.errstate(all="ignore"):  # an overflow is diagnosed below, not warned about
            result, problem = call_student(student_function, query.copy(), keys.copy(), values.copy())
            slips = _lookup_slips(query, keys, values)
        if problem is not None:
            return wrong(f"on {what}: {problem.message}")
        weights, expected = soft_lookup(query, keys, values)
        if isinstance(result, (tuple, list)) and len(result) == 2 and any(np.ndim(r) > 0 for r in result):
            return wrong(f"on {what} you returned a pair like (weights, blend); return only the blend, one number.")
        got, problem = as_numbers(result, "the result")
        if problem is not None:
            return wrong(f"on {what}: {problem.message}")
        if got.shape == weights.shape and np.allclose(got, weights, atol=1e-6):
            return wrong(f"on {what} you returned the weights {np.round(got, 4).tolist()}. Finish the lookup: "
                         "return the blend weights @ values, one number.")
        if got.size != 1:
            return wrong(f"on {what} you returned {got.size} numbers; a lookup returns one number, weights @ values.")
        got = float(got.reshape(()))
        if not math.isfinite(got):
            return wrong(f"on {what}: you got {got}. exp overflowed: subtract the largest score before exp.")
        problem = compare_numbers(got, expected, f"the blend on {what}", atol=1e-6,
                                  hint="weights = softmax(keys @ query); result = weights @ values.",
                                  slips=[(v, f"on {what}: {m}.") for v, m in slips])
        if problem is not None:
            return problem
    weights, blend = soft_lookup(*_lookup_cases()[1][:3])
    return correct(f"the query 'a' gets weights {np.round(weights, 4).tolist()} and returns {blend:.4f}, not 1: "
                   "a soft lookup blends every value, leaning toward the best-matching key.")


def solution_soft_lookup() -> Solution:
    return Solution.from_function("a soft dictionary lookup", reference_soft_lookup,
                                  "Make the query 10 times longer and the weights approach [1, 0, 0]: the hard lookup "
                                  "d['a'] = 1 is the limit of the soft one.")


# --- Exercise 2: how many parameters? -----------------------------------------------------------

SIZES = ((4, 4), (4, 3), (16, 8), (512, 64), (1, 1))


def reference_qkv_parameters(d_model: int, d_k: int) -> int:
    """Learnable numbers in SelfAttention(d_model, d_k): three (d_model, d_k) matrices, no biases."""
    return 3 * d_model * d_k


def check_qkv_parameters(student_function) -> Feedback:
    """Exercise 2: qkv_parameters(d_model, d_k) -> the parameter count of SelfAttention(d_model, d_k)."""
    problem = require_callable(student_function, "qkv_parameters(d_model, d_k) returning a whole number")
    if problem is not None:
        return problem
    for d_model, d_k in SIZES:
        got, problem = call_student(student_function, d_model, d_k)
        if problem is not None:
            return wrong(f"for d_model={d_model}, d_k={d_k}: {problem.message}")
        if got is None:
            return wrong("your function returned None. Did it forget to `return` the count?")
        if hasattr(got, "item") and np.asarray(got).size == 1:
            got = got.item()   # np.int64(48), np.array([48]), torch.tensor(48): the number inside
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return wrong(f"for d_model={d_model}, d_k={d_k} your function returned {type(got).__name__} "
                         f"{got!r:.40}; return a plain int, a whole number such as 48.")
        expected = count_parameters(SelfAttention(d_model, d_k))
        if got == expected:
            continue
        shape = "each matrix maps d_model numbers to d_k numbers, so it is (d_model, d_k), not"
        slips = {  # a later entry wins where two coincide
            d_model * d_k: "that is one matrix. There are three: W_q, W_k and W_v",
            2 * d_model * d_k: "that is two matrices. Queries, keys AND values each have their own",
            3 * d_model * d_model: f"{shape} (d_model, d_model)",
            3 * d_k * d_k: f"{shape} (d_k, d_k)",
            3 * (d_model * d_k + d_k): "you counted biases, but SelfAttention's layers have bias=False",
            3 * (d_model + d_k): "you added the sizes. A (d_model, d_k) matrix holds d_model × d_k numbers",
        }
        if got in slips:
            return wrong(f"for d_model={d_model}, d_k={d_k} you returned {got:,}, expected {expected:,}: {slips[got]}.")
        return wrong(f"for d_model={d_model}, d_k={d_k} you returned {got!r}, but SelfAttention({d_model}, {d_k}) "
                     f"has {expected:,} parameters. Count the numbers in W_q, W_k and W_v: each is (d_model, d_k).")
    return correct("3 · d_model · d_k, checked against count_parameters(SelfAttention(...)) for "
                   + ", ".join(f"({m}, {k})" for m, k in SIZES)
                   + f". At d_model = 512, d_k = 64 that is {3 * 512 * 64:,} numbers, all learned from data.")


def solution_qkv_parameters() -> Solution:
    return Solution.from_function("the parameter count", reference_qkv_parameters,
                                  "W_q, W_k and W_v are each (d_model, d_k), and SelfAttention builds them with "
                                  "bias=False. Attempt 1 (softmax(E Eᵀ/√d) E) has 0.")


# --- Exercise 3: the forward pass ---------------------------------------------------------------

def reference_attention_forward(E, W_q, W_k, W_v):
    """Self-attention with learned projections: E (T, d_model) -> Y (T, d_v).

    W_q, W_k: (d_model, d_k); W_v: (d_model, d_v). Tokens are the rows of E, so Q = E W_q.
    """
    Q = E @ W_q                                      # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    K = E @ W_k                                      # (T, d_k)  one key per token
    V = E @ W_v                                      # (T, d_v)  one value per token
    d_k = Q.shape[-1]
    S = Q @ K.T / math.sqrt(d_k)                     # (T, T)    s_ij = q_i · k_j / √d_k
    W = torch.softmax(S, dim=-1)                     # (T, T)    each row sums to 1
    return W @ V                                     # (T, d_v)  y_i = Σ_j w_ij v_j


#: (seed, T, d_model, d_k, d_v): all sizes differ, so a scale by the wrong one shows; d_k = 9 shows a hard-coded √4.
FORWARD_CASES = ((7, 5, 6, 4, 3), (8, 6, 12, 9, 2))


def _forward_case(seed: int = 7, T: int = 5, d_model: int = 6, d_k: int = 4, d_v: int = 3):
    g = torch.Generator().manual_seed(seed)
    shapes = ((T, d_model), (d_model, d_k), (d_model, d_k), (d_model, d_v))   # E, W_q, W_k, W_v
    return tuple(torch.randn(*shape, generator=g, dtype=torch.float64) for shape in shapes)


def _forward_slips(E, W_q, W_k, W_v) -> list[tuple[torch.Tensor, str]]:
    """[(what a slip returns, what the slip is)]."""
    Q, K, V = E @ W_q, E @ W_k, E @ W_v
    (T, d_model), d_k, d_v = E.shape, Q.shape[-1], V.shape[-1]
    S = Q @ K.T
    which = f"the scale is √d_k, the length of the query and key vectors (here d_k = {d_k})"
    divisors = [
        (1.0, f"you forgot to divide the scores by √d_k (here √{d_k} = {math.sqrt(d_k):g})"),
        (math.sqrt(d_model), f"you divided by √d_model (√{d_model}); {which}"),
        (math.sqrt(d_v), f"you divided by √d_v (√{d_v}), the length of the values; {which}"),
        (math.sqrt(T), f"you divided by √T (√{T}), the number of tokens; {which}"),
        (1 / math.sqrt(d_k), f"you multiplied the scores by √d_k; divide them: S = Q @ K.T / √d_k (here √{d_k})"),
        (d_k, f"you divided by d_k = {d_k} instead of √d_k"),
        (2.0, f"you divided by 2 = √4, but here d_k = {d_k}: take the size from the queries, d_k = Q.shape[-1]"),
    ]
    return [(torch.softmax(S / c, -1) @ V, message) for c, message in divisors] + [
        (torch.softmax(S / math.sqrt(d_k), 0) @ V, "softmax ran over dim 0: each ROW must sum to 1, use dim=-1"),
        (S / math.sqrt(d_k) @ V, "softmax is missing: the raw scores were used as weights"),
        (torch.softmax(K @ Q.T / math.sqrt(d_k), -1) @ V, "queries and keys are swapped: S = Q @ K.T, not K @ Q.T"),
    ]


def check_attention_forward(student_function) -> Feedback:
    """Exercise 3: attention_forward(E, W_q, W_k, W_v) -> Y, checked against SelfAttention."""
    if (problem := require_callable(student_function, "attention_forward(E, W_q, W_k, W_v) returning Y")) is not None:
        return problem
    for seed, T, d_model, d_k, d_v in FORWARD_CASES:
        E, W_q, W_k, W_v = _forward_case(seed, T, d_model, d_k, d_v)
        what = f"E ({T}, {d_model}), W_q and W_k ({d_model}, {d_k}), W_v ({d_model}, {d_v})"
        result, problem = call_student(student_function, E.clone(), W_q.clone(), W_k.clone(), W_v.clone())
        if problem is not None:
            if "NotImplementedError" in problem.message:
                return problem
            if "RuntimeError" in problem.message and ("shape" in problem.message or "size" in problem.message):
                return wrong(f"on {what} a matrix product failed. W_q is (d_model, d_k) and the tokens are the rows "
                             "of E, so Q = E @ W_q with no .T (only nn.Linear's .weight is W_qᵀ); the same for K, V.")
            return wrong(f"on {what} {problem.message.removeprefix('your function ')}")
        if isinstance(result, (tuple, list)) and len(result) == 2 and all(hasattr(r, "shape") for r in result):
            return wrong(f"on {what} you returned a pair of arrays (of shapes {tuple(result[0].shape)} and "
                         f"{tuple(result[1].shape)}), perhaps (Y, W). Return only Y, the ({T}, {d_v}) outputs.")
        got, problem = as_numbers(result, "Y")
        if problem is not None:
            return wrong(f"on {what}: {problem.message}")
        if got.shape == (T, T):
            return wrong(f"on {what} you returned a ({T}, {T}) matrix: that is the weights. Finish with Y = W @ V.")
        if got.shape == (T, d_model):
            return wrong(f"on {what} Y has the shape of E: did you mix E instead of V = E @ W_v?")
        expected = scaled_dot_product_attention(E @ W_q, E @ W_k, E @ W_v).numpy()  # (T, d_v)
        problem = compare_numbers(got, expected, f"Y on {what}", atol=1e-5,   # a float32 result is right too
                                  hint="Q = E @ W_q, K = E @ W_k, V = E @ W_v; "
                                       "W = softmax(Q @ K.T / √d_k, dim=-1); Y = W @ V.",
                                  slips=[(v.numpy(), f"on {what} {m}.") for v, m in _forward_slips(E, W_q, W_k, W_v)])
        if problem is not None:
            return problem
    return correct("Y matches the course's scaled_dot_product_attention on Q = E W_q, K = E W_k, V = E W_v: "
                   "softmax(Q Kᵀ / √d_k) V, what SelfAttention computes.")


def solution_attention_forward() -> Solution:
    return Solution.from_function(
        "the forward pass", reference_attention_forward,
        "Tokens are rows, so every projection is one product, E @ W_q. nn.Linear(d_model, d_k) stores "
        "its .weight as (d_k, d_model), which is W_qᵀ, and computes x @ weight.T = x @ W_q.")


# --- Exercise 4: the module -----------------------------------------------------------------------

MODULE_CASES = ((3, 2, 5, 6, 4), (4, 1, 7, 12, 9))  #: (seed, B, T, d_model, d_k): batches of 2 and 1, all sizes differ


def _module_slips(Q, K, V) -> list[tuple[torch.Tensor, str]]:
    """[(what a slip returns, what the slip is)] on a batch Q, K (B, T, d_k), V (B, T, d_k)."""
    d_k = Q.shape[-1]
    S = Q @ K.transpose(-2, -1)  # (B, T, T)
    return [
        (torch.softmax(S, -1) @ V, f"the scale is missing: divide the scores by √d_k (here √{d_k})"),
        (torch.softmax(K @ Q.transpose(-2, -1) / math.sqrt(d_k), -1) @ V,
         "wrong transpose: the scores are Q @ K.transpose(-2, -1) (row i = query i), not K @ Q.transpose(-2, -1)"),
        (torch.softmax(S / math.sqrt(d_k), -2) @ V, "softmax ran over the queries (dim=-2 or dim=1): "
                                                    "each query's ROW must sum to 1, use dim=-1"),
        (torch.softmax(S / math.sqrt(d_k), 0) @ V, "softmax ran over the batch (dim=0): use dim=-1"),
    ]


def check_self_attention_module(student_class) -> Feedback:
    """Exercise 4: MySelfAttention(d_model, d_k), an nn.Module with W_q, W_k, W_v, against SelfAttention."""
    if isinstance(student_class, torch.nn.Module):
        return wrong("pass the class itself, check_self_attention_module(MySelfAttention), not an instance of it.")
    if (problem := require_callable(student_class, "the class MySelfAttention itself")) is not None:
        return problem
    for seed, B, T, d_model, d_k in MODULE_CASES:
        model, problem = call_student(student_class, d_model, d_k)
        if problem is not None:
            return wrong(f"MySelfAttention({d_model}, {d_k}): {problem.message.removeprefix('your function ')}")
        layers = {name: getattr(model, name, None) for name in ("W_q", "W_k", "W_v")}
        if not isinstance(model, torch.nn.Module) or not all(isinstance(v, torch.nn.Linear) for v in layers.values()):
            return wrong("make MySelfAttention an nn.Module whose __init__ sets self.W_q = nn.Linear(d_model, d_k, "
                         "bias=False), and the same for self.W_k and self.W_v (super().__init__() first).")
        for name, layer in layers.items():
            if layer.bias is not None or tuple(layer.weight.shape) != (d_k, d_model):
                return wrong(f"for d_model={d_model}, d_k={d_k}, self.{name} should be nn.Linear(d_model, d_k, "
                             f"bias=False), whose .weight is W_qᵀ of shape ({d_k}, {d_model}); yours has .weight "
                             f"{tuple(layer.weight.shape)} and {'a' if layer.bias is not None else 'no'} bias.")
        torch.manual_seed(seed)
        reference = SelfAttention(d_model, d_k).double()
        model.double().load_state_dict(reference.state_dict(), strict=False)  # the same weights in both
        x = torch.randn(B, T, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        what = f"x of shape ({B}, {T}, {d_model}) with d_k = {d_k}"
        with torch.no_grad():
            result, problem = call_student(model, x.clone())
            expected = reference(x)
            slips = _module_slips(reference.W_q(x), reference.W_k(x), reference.W_v(x))
        if problem is not None:
            hint = (" On a batch (B, T, d_k), transpose the last two dims: K.transpose(-2, -1), not K.T."
                    if "size" in problem.message or "shape" in problem.message else "")
            return wrong(f"on {what} forward {problem.message.removeprefix('your function ')}{hint}")
        problem = compare_numbers(result, expected, f"the output on {what}", atol=1e-6,
                                  hint="Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x); "
                                       "softmax(Q @ K.transpose(-2, -1) / √d_k, dim=-1) @ V.",
                                  slips=[(v.numpy(), f"on {what}: {m}.") for v, m in slips])
        if problem is not None:
            return problem
    return correct("your module gives SelfAttention's outputs with the same weights, on a batch of 2 and of 1: "
                   "you have built the layer the rest of the course uses.")


class ReferenceSelfAttention(nn.Module):
    """Exercise 4's solution, (B, T, d_model) -> (B, T, d_k): SelfAttention without its input check."""

    def __init__(self, d_model: int, d_k: int):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_k, bias=False)   # .weight: (d_k, d_model), which is W_qᵀ
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.W_v = nn.Linear(d_model, d_k, bias=False)

    def forward(self, x, mask=None):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)       # each (B, T, d_k)
        return scaled_dot_product_attention(Q, K, V, mask)    # (B, T, d_k)


def solution_self_attention_module() -> Solution:
    return Solution.from_function(
        "the module", ReferenceSelfAttention,
        "nn.Linear(d_model, d_k) computes x @ weight.T, and its .weight is W_qᵀ: so self.W_q(x) is X W_q. "
        "helpers.attention_torch.SelfAttention is this class with one more line: a check that names an input it "
        "was not built for.")
