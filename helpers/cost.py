"""What attention costs: parameters, FLOPs and memory, as plain arithmetic.

    projection_parameters(d_model, d_k)        W_q, W_k, W_v sizes -> 3 · d_model · d_k
    matmul_flops(m, n, p)                      (m, n) @ (n, p) -> 2 · m · n · p
    projection_flops(T, d_model, d_k)          Q = X W_q, K = X W_k, V = X W_v
    attention_flops(T, d_k)                    Q Kᵀ and W V -> 4 · B · H · T² · d (forward)
    score_matrix_bytes(T, dtype)               one (T, T) matrix -> T² · bytes per number
    cost_table(T, d_model, d_k)                every line above, as rows for printing
    largest_T_for_memory(budget, dtype)        the longest sequence whose (T, T) matrix fits
    cost_widget_data(T, d_k, ...)              what the notebook 07 widget draws
    forward_flops(batch_heads, T, d_k)         the same total, as one number (what a benchmark divides by)
    tflops_per_second(flops, seconds)          achieved TFLOP/s = FLOPs / seconds / 10¹²

Conventions: one multiply plus one add counts as 2 FLOPs (so an (m, n) @ (n, p)
product costs 2·m·n·p), and softmax, scaling and masking are not counted (they
are O(T²) but not matrix products; FlashAttention's benchmarks count the same
way). GB means 10⁹ bytes and GiB 2³⁰ bytes.
"""
from __future__ import annotations

import math

import numpy as np

from helpers import validation as check

#: Bytes per number for the dtypes attention is run in.
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}
_ALIASES = {
    "fp64": "float64", "double": "float64",
    "fp32": "float32", "float": "float32",
    "bf16": "bfloat16",
    "fp16": "float16", "half": "float16",
    "fp8": "float8", "float8_e4m3fn": "float8", "float8_e5m2": "float8",
}

#: Memory of some devices a student may meet, in bytes (for the widget's bar).
DEVICE_MEMORY = {
    "laptop (16 GB RAM)": 16e9,
    "A100 (80 GB)": 80e9,
    "H200 (141 GB)": 141e9,
}


def dtype_name(dtype) -> str:
    """Canonical name of a dtype given as a string ("fp32", "bfloat16") or a torch.dtype."""
    if hasattr(dtype, "is_floating_point") and not isinstance(dtype, str):  # a torch.dtype
        dtype = str(dtype).removeprefix("torch.")
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        numpy_name = np.dtype(dtype).name
        raise TypeError(
            f"dtype should be a name such as 'float32' or 'bfloat16' (or a torch.dtype), but got the NumPy "
            f"type {numpy_name}: write the name as text instead, e.g. dtype={numpy_name!r}."
        )
    if not isinstance(dtype, str):
        raise TypeError(
            f"dtype should be a name such as 'float32' or 'bfloat16' (or a torch.dtype), but got "
            f"{check.describe(dtype)} ({dtype!r})."
        )
    name = dtype.strip().lower()
    name = _ALIASES.get(name, name)
    if name not in DTYPE_BYTES:
        raise ValueError(
            f"Unknown dtype {dtype!r}: expected one of {', '.join(DTYPE_BYTES)} "
            "(or fp32, bf16, fp16)."
        )
    return name


def bytes_per_number(dtype) -> int:
    """4 for float32, 2 for bfloat16 / float16, 8 for float64, 1 for float8."""
    return DTYPE_BYTES[dtype_name(dtype)]


def projection_parameters(d_model: int, d_k: int, d_v: int | None = None) -> dict[str, int]:
    """Weights of W_q (d_model, d_k), W_k (d_model, d_k), W_v (d_model, d_v), no biases.

    Returns {"W_q": ..., "W_k": ..., "W_v": ..., "total": ...}; with d_v = d_k the
    total is 3 · d_model · d_k.
    """
    d_model = check.positive_int(d_model, "d_model")
    d_k = check.positive_int(d_k, "d_k")
    d_v = d_k if d_v is None else check.positive_int(d_v, "d_v")
    counts = {"W_q": d_model * d_k, "W_k": d_model * d_k, "W_v": d_model * d_v}
    counts["total"] = sum(counts.values())
    return counts


def matmul_flops(m: int, n: int, p: int) -> int:
    """FLOPs of an (m, n) @ (n, p) product: m·p outputs, each n multiplies and n adds -> 2·m·n·p."""
    m, n, p = (check.positive_int(v, name) for v, name in ((m, "m"), (n, "n"), (p, "p")))
    return 2 * m * n * p


def projection_flops(T: int, d_model: int, d_k: int, *, d_v: int | None = None, batch: int = 1) -> dict[str, int]:
    """FLOPs of Q = X W_q, K = X W_k, V = X W_v for X of shape (batch, T, d_model)."""
    T, batch = check.positive_int(T, "T"), check.positive_int(batch, "batch")
    d_model, d_k = check.positive_int(d_model, "d_model"), check.positive_int(d_k, "d_k")
    d_v = d_k if d_v is None else check.positive_int(d_v, "d_v")
    flops = {
        "Q = X W_q": batch * matmul_flops(T, d_model, d_k),
        "K = X W_k": batch * matmul_flops(T, d_model, d_k),
        "V = X W_v": batch * matmul_flops(T, d_model, d_v),
    }
    flops["total"] = sum(flops.values())
    return flops


def attention_flops(T: int, d_k: int, *, d_v: int | None = None, T_k: int | None = None, batch: int = 1,
                    heads: int = 1, causal: bool = False) -> dict[str, int]:
    """Forward FLOPs of the two products inside attention, for `batch` sequences and `heads` heads.

    S = Q Kᵀ: (T, d_k) @ (d_k, T_k) -> 2·T·T_k·d_k;  Y = W V: (T, T_k) @ (T_k, d_v) -> 2·T·T_k·d_v.
    With T_k = T and d_v = d_k = d the total is 4·B·H·T²·d. `causal=True` halves it (half of
    the (T, T) pairs are masked: the convention FlashAttention's benchmarks use).
    """
    T = check.positive_int(T, "T")
    d_k = check.positive_int(d_k, "d_k")
    d_v = d_k if d_v is None else check.positive_int(d_v, "d_v")
    T_k = T if T_k is None else check.positive_int(T_k, "T_k")
    copies = check.positive_int(batch, "batch") * check.positive_int(heads, "heads")
    causal = check.flag(causal, "causal")
    flops = {"S = Q Kᵀ": copies * matmul_flops(T, d_k, T_k), "Y = W V": copies * matmul_flops(T, T_k, d_v)}
    if causal:
        flops = {key: value // 2 for key, value in flops.items()}
    flops["total"] = sum(flops.values())
    return flops


def forward_flops(batch_heads: int, T: int, d_k: int, causal: bool = False) -> int:
    """4 · B·H · T² · d_k, the forward FLOPs of attention (halved for causal)."""
    return attention_flops(T, d_k, heads=batch_heads, causal=causal)["total"]


def tflops_per_second(flops: float, seconds: float) -> float:
    """Achieved TFLOP/s = FLOPs / seconds / 10¹²."""
    seconds = check.real_number(seconds, "seconds", "a positive time")
    if seconds <= 0:
        raise ValueError(f"seconds should be a positive time, but got {seconds!r}.")
    flops = check.real_number(flops, "flops", "a count of floating-point operations >= 0")
    if flops < 0:
        raise ValueError(f"flops should be >= 0, but got {flops!r}.")
    return flops / seconds / 1e12


def score_matrix_bytes(T: int, dtype="float32", *, T_k: int | None = None, batch: int = 1, heads: int = 1) -> int:
    """Bytes of the (T, T_k) score matrix, for every sequence in the batch and every head: B·H·T·T_k·bytes."""
    T = check.positive_int(T, "T")
    T_k = T if T_k is None else check.positive_int(T_k, "T_k")
    copies = check.positive_int(batch, "batch") * check.positive_int(heads, "heads")
    return copies * T * T_k * bytes_per_number(dtype)


def tensor_bytes(*shape: int, dtype="float32") -> int:
    """Bytes of a tensor of the given shape: the product of the sizes times bytes per number."""
    sizes = [check.positive_int(s, "each size") for s in shape]
    return math.prod(sizes) * bytes_per_number(dtype)


def format_bytes(n: float) -> str:
    """'40.0 GB (37.25 GiB)': decimal units first (as drives and GPUs are sold), binary in brackets."""
    n = check.real_number(n, "n", "a number of bytes >= 0")
    if n < 0:
        raise ValueError(f"format_bytes needs a finite number of bytes >= 0, but got {n!r}.")
    for unit, size, binary, bsize in (("TB", 1e12, "TiB", 2**40), ("GB", 1e9, "GiB", 2**30),
                                      ("MB", 1e6, "MiB", 2**20), ("kB", 1e3, "KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({n / bsize:.2f} {binary})"
    return f"{int(n)} B"


def format_count(n: float) -> str:
    """A count in words a reader can say: 196,608 -> '196.6 thousand'; 1.34e12 -> '1.34 trillion'."""
    n = check.real_number(n, "n", "a count")
    for word, size in (("trillion", 1e12), ("billion", 1e9), ("million", 1e6), ("thousand", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {word}"
    return f"{n:,.0f}"


def cost_table(T: int, d_model: int, d_k: int, *, dtype="float32", batch: int = 1,
               heads: int = 1) -> list[dict]:
    """The cost of one attention layer, line by line: [{"quantity", "formula", "value", "unit"}].

    Parameters and projection FLOPs are for one head; the attention FLOPs and the
    (T, T) memory are for `batch` sequences and `heads` heads.
    """
    params = projection_parameters(d_model, d_k)
    proj = projection_flops(T, d_model, d_k)
    attn = attention_flops(T, d_k, batch=batch, heads=heads)
    bpn = bytes_per_number(dtype)
    per = "" if batch * heads == 1 else " · B·H"
    rows = [
        {"quantity": "parameters W_q, W_k, W_v", "formula": "3 · d_model · d_k", "value": params["total"],
         "unit": "numbers"},
        {"quantity": "FLOPs Q = X W_q (same for K, V)", "formula": "2 · T · d_model · d_k",
         "value": proj["Q = X W_q"], "unit": "FLOPs"},
        {"quantity": "FLOPs S = Q Kᵀ", "formula": "2 · T² · d_k" + per, "value": attn["S = Q Kᵀ"],
         "unit": "FLOPs"},
        {"quantity": "FLOPs Y = W V", "formula": "2 · T² · d_k" + per, "value": attn["Y = W V"], "unit": "FLOPs"},
        {"quantity": "FLOPs attention (forward)", "formula": "4 · T² · d_k" + per, "value": attn["total"],
         "unit": "FLOPs"},
        {"quantity": "memory Q, K, V", "formula": f"3 · T · d_k · {bpn} B" + per,
         "value": 3 * batch * heads * tensor_bytes(T, d_k, dtype=dtype), "unit": "bytes"},
        {"quantity": "memory (T, T) scores", "formula": f"T² · {bpn} B" + per,
         "value": score_matrix_bytes(T, dtype, batch=batch, heads=heads), "unit": "bytes"},
    ]
    return rows


def format_cost_table(rows: list[dict]) -> str:
    """The rows of `cost_table` as aligned text, values in words and bytes in GB."""
    if not isinstance(rows, (list, tuple)):
        raise TypeError(f"rows should be the list that cost_table returns, but got {check.describe(rows)}.")
    if not rows:
        raise ValueError("rows is empty: give the rows of cost_table(T, d_model, d_k).")
    keys = ("quantity", "formula", "value", "unit")
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise TypeError(f"Each row should be a dict with keys {', '.join(map(repr, keys))} (as cost_table "
                            f"returns), but rows[{i}] is {check.describe(r)}.")
        missing = [k for k in keys if k not in r]
        if missing:
            raise ValueError(f"Each row should be a dict with keys {', '.join(map(repr, keys))} (as cost_table "
                             f"returns), but rows[{i}] is {check.describe(r)} without {', '.join(map(repr, missing))}.")
    lines = []
    width = max(len(r["quantity"]) for r in rows)
    fwidth = max(len(r["formula"]) for r in rows)
    for r in rows:
        value = format_bytes(r["value"]) if r["unit"] == "bytes" else f"{format_count(r['value'])} {r['unit']}"
        lines.append(f"{r['quantity']:<{width}}  {r['formula']:<{fwidth}}  {value}")
    return "\n".join(lines)


def largest_T_for_memory(budget_bytes: float, dtype="float32", *, batch: int = 1, heads: int = 1,
                         matrices: int = 1) -> int:
    """The largest T whose (T, T) matrices fit in `budget_bytes`: floor(√(budget / (bytes·B·H·matrices))).

    `matrices=2` models the textbook implementation, which holds the scores and the
    softmax output at the same moment.
    """
    budget = check.positive_number(budget_bytes, "budget_bytes")
    per_entry = bytes_per_number(dtype) * check.positive_int(batch, "batch") * check.positive_int(heads, "heads")
    per_entry *= check.positive_int(matrices, "matrices")
    T = math.isqrt(int(budget // per_entry))
    return T


def cost_widget_data(T: float, d_k: int, *, d_model: int = 512, heads: int = 1, dtype="float32") -> dict:
    """Everything the cost widget shows for one setting of its controls.

    Returns {"T", "table" (rows of cost_table), "text" (the table formatted),
    "bars" [(label, bytes)] for the (T, T) scores and for Q, K, V together,
    "devices" (DEVICE_MEMORY), "fits" {device: bool}}. T may come from a log
    slider as a float: it is rounded to the nearest whole number.
    """
    T = check.real_number(T, "T", "a sequence length >= 1")
    if T < 1:
        raise ValueError(f"T should be a sequence length >= 1, but got {T!r}.")
    T = int(round(T))
    rows = cost_table(T, d_model, d_k, dtype=dtype, heads=heads)
    scores = score_matrix_bytes(T, dtype, heads=heads)
    qkv = 3 * heads * tensor_bytes(T, d_k, dtype=dtype)
    return {
        "T": T,
        "table": rows,
        "text": format_cost_table(rows),
        "bars": [(f"(T, T) scores × {heads} head(s)", scores), ("Q, K, V", qkv)],
        "devices": dict(DEVICE_MEMORY),
        "fits": {name: scores <= size for name, size in DEVICE_MEMORY.items()},
    }
