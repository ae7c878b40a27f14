"""What attention costs: parameters, FLOPs and memory, as plain arithmetic.

    projection_parameters(d_model, d_k)        W_q, W_k, W_v sizes -> 3 · d_model · d_k
    projection_flops(T, d_model, d_k)          Q = X W_q, K = X W_k, V = X W_v
    attention_flops(T, d_k)                    Q Kᵀ and W V -> 4 · B · H · T² · d_k (forward)
    score_matrix_bytes(T, dtype)               one (T, T) matrix -> T² · bytes per number
    kv_cache_bytes(n_layers, n_heads, d_k)     what generation caches: a key and a value per layer, head, token
    cost_table(T, d_model, d_k)                every line above, as rows for printing
    largest_T_for_memory(budget, dtype)        the longest sequence whose (T, T) matrix fits
    cost_widget_data(T, d_k, ...)              what the notebook 07 widget draws
    require_sizes(T=T, d_k=d_k)                a named error for a size that is not a whole number of at least 1

Conventions: one multiply plus one add counts as 2 FLOPs (so an (m, n) @ (n, p) product costs 2·m·n·p), and softmax,
scaling and masking are not counted (they are O(T²) but not matrix products; FlashAttention's benchmarks count the same
way). GB means 10⁹ bytes and GiB 2³⁰ bytes."""
import math
import numbers

from helpers.validation import count, flag

#: Bytes per number for the dtypes attention is run in.
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}
_ALIASES = {"fp64": "float64", "double": "float64", "fp32": "float32", "float": "float32", "bf16": "bfloat16",
            "fp16": "float16", "half": "float16", "fp8": "float8", "float8_e4m3fn": "float8", "float8_e5m2": "float8"}

#: Memory of some devices a student may meet, in bytes (for the widget's bar): sold as "GB", built in GiB (2³⁰ bytes).
DEVICE_MEMORY = {"laptop (16 GB RAM)": 16 * 2**30, "A100 (80 GB)": 80 * 2**30, "H200 (141 GB)": 140 * 2**30}


def dtype_name(dtype) -> str:
    """Canonical name of a dtype given as text ("fp32", "bfloat16") or a torch.dtype: 'float32', ..."""
    name = _ALIASES.get(typed := str(dtype).removeprefix("torch.").strip().lower(), typed)
    if name not in DTYPE_BYTES:
        raise ValueError(f"Unknown dtype {dtype!r}: expected one of {', '.join(DTYPE_BYTES)} (or fp32, bf16, fp16).")
    return name


def require_sizes(**sizes) -> None:
    """A ValueError naming the first size that is not a whole number of at least 1 (None: a default, left out)."""
    for name, n in sizes.items():
        if n is not None:
            count(n, name)


def bytes_per_number(dtype) -> int:
    """4 for float32, 2 for bfloat16 / float16, 8 for float64, 1 for float8."""
    return DTYPE_BYTES[dtype_name(dtype)]


def projection_parameters(d_model: int, d_k: int) -> dict[str, int]:
    """Weights of W_q, W_k, W_v, each (d_model, d_k), no biases: {"W_q", "W_k", "W_v", "total" = 3 · d_model · d_k}."""
    require_sizes(d_model=d_model, d_k=d_k)
    return dict.fromkeys(("W_q", "W_k", "W_v"), d_model * d_k) | {"total": 3 * d_model * d_k}


def projection_flops(T: int, d_model: int, d_k: int, *, batch: int = 1) -> dict[str, int]:
    """FLOPs of Q = X W_q, K = X W_k, V = X W_v for X (batch, T, d_model): 2·T·d_model·d_k each, per sequence."""
    require_sizes(T=T, d_model=d_model, d_k=d_k, batch=batch)
    one = 2 * batch * T * d_model * d_k                      # (T, d_model) @ (d_model, d_k): 2·m·n·p
    return {"Q = X W_q": one, "K = X W_k": one, "V = X W_v": one, "total": 3 * one}


def attention_flops(T: int, d_k: int, *, T_k: int | None = None, batch: int = 1, heads: int = 1,
                    causal: bool = False) -> dict[str, int]:
    """Forward FLOPs of the two products inside attention, for `batch` sequences and `heads` heads.
    S = Q Kᵀ: (T, d_k) @ (d_k, T_k) -> 2·T·T_k·d_k;  Y = W V: (T, T_k) @ (T_k, d_k) -> 2·T·T_k·d_k.
    With T_k = T the total is 4·B·H·T²·d_k. `causal=True` halves it: the pairs a fused kernel
    skips (FlashAttention's convention; an unfused version still computes all T² scores)."""
    require_sizes(T=T, d_k=d_k, T_k=T_k, batch=batch, heads=heads)
    one = 2 * batch * heads * T * d_k * (T if T_k is None else T_k) // (2 if flag(causal, "causal") else 1)
    return {"S = Q Kᵀ": one, "Y = W V": one, "total": 2 * one}


def score_matrix_bytes(T: int, dtype="float32", *, T_k: int | None = None, batch: int = 1, heads: int = 1) -> int:
    """Bytes of the (T, T_k) score matrix, for every sequence in the batch and every head: B·H·T·T_k·bytes."""
    require_sizes(T=T, T_k=T_k, batch=batch, heads=heads)
    return batch * heads * T * (T if T_k is None else T_k) * bytes_per_number(dtype)


def tensor_bytes(*shape: int, dtype="float32") -> int:
    """Bytes of a tensor of the given shape: the product of the sizes times bytes per number."""
    if any(isinstance(n, str) for n in shape):   # tensor_bytes(128, 1024, "float16"): a size of text
        raise TypeError(f"the sizes come first, then dtype by name: tensor_bytes(128, 1024, dtype='float16'); {shape}")
    return math.prod(count(n, f"size {i} of {shape}", 0) for i, n in enumerate(shape)) * bytes_per_number(dtype)


def format_bytes(n: float) -> str:
    """'40.0 GB (37.25 GiB)': decimal units first (as drives and GPUs are sold), binary in brackets."""
    for power, prefix in ((4, "T"), (3, "G"), (2, "M"), (1, "k")):
        if n >= 1000**power:
            return f"{n / 1000**power:.1f} {prefix}B ({n / 1024**power:.2f} {prefix.upper()}iB)"
    return f"{int(n)} B"


def format_count(n: float) -> str:
    """A count in words a reader can say: 196,608 -> '197 thousand'; 1.34e12 -> '1.34 trillion'."""
    for power, name in ((5, "quadrillion"), (4, "trillion"), (3, "billion"), (2, "million"), (1, "thousand")):
        if abs(n) >= 1000**power:
            return f"{n / 1000**power:.3g} {name}"
    return f"{n:,.0f}"


def kv_cache_bytes(n_layers: int, n_heads: int, d_k: int, dtype="float16", *, tokens: int = 1, batch: int = 1) -> int:
    """Bytes of a KV cache: a key and a value (2) per layer, head and token -> 2·n_layers·n_heads·d_k·bytes·tokens·B."""
    require_sizes(n_layers=n_layers, n_heads=n_heads, d_k=d_k, tokens=tokens, batch=batch)
    return 2 * n_layers * n_heads * d_k * bytes_per_number(dtype) * tokens * batch


def cost_table(T: int, d_model: int, d_k: int, *, dtype="float32", batch: int = 1, heads: int = 1) -> list[dict]:
    """The cost of one attention layer, line by line: [{"quantity", "formula", "value", "unit"}].
    Each of `heads` heads (of size d_k) has its own W_q, W_k, W_v: every line is multiplied by H (the projections
    and attention by B·H too), so the crossover of the attention and projection FLOPs stays at T = 1.5 · d_model."""
    require_sizes(T=T, d_model=d_model, d_k=d_k, batch=batch, heads=heads)
    params = projection_parameters(d_model, d_k)["total"] * heads
    proj = projection_flops(T, d_model, d_k, batch=batch * heads)
    attn, bpn = attention_flops(T, d_k, batch=batch, heads=heads), bytes_per_number(dtype)
    per = "" if batch * heads == 1 else " · H" if batch == 1 else " · B·H"     # B sequences of H heads
    size = f" · {bpn} byte{'s' * (bpn != 1)}{per}"                             # the memory lines' bytes per number
    rows = [("parameters W_q, W_k, W_v", "3 · d_model · d_k" + ("" if heads == 1 else " · H"), params, "numbers"),
            ("FLOPs Q = X W_q (same for K, V)", "2 · T · d_model · d_k" + per, proj["Q = X W_q"], "FLOPs"),
            ("FLOPs S = Q Kᵀ", "2 · T² · d_k" + per, attn["S = Q Kᵀ"], "FLOPs"),
            ("FLOPs Y = W V", "2 · T² · d_k" + per, attn["Y = W V"], "FLOPs"),
            ("FLOPs attention (forward)", "4 · T² · d_k" + per, attn["total"], "FLOPs"),
            ("memory Q, K, V", f"3 · T · d_k{size}", 3 * batch * heads * tensor_bytes(T, d_k, dtype=dtype), "bytes"),
            ("memory (T, T) scores", f"T²{size}", score_matrix_bytes(T, dtype, batch=batch, heads=heads), "bytes"),
            ("memory K, V cache (generation)", f"2 · T · d_k{size}",
             kv_cache_bytes(1, heads, d_k, dtype, tokens=T, batch=batch), "bytes")]
    return [dict(zip(("quantity", "formula", "value", "unit"), row)) for row in rows]


def format_cost_table(rows: list[dict]) -> str:
    """The rows of `cost_table` as aligned text: quantity, value (bytes in GB), formula (a narrow cell cuts it)."""
    values = [format_bytes(r["value"]) if r["unit"] == "bytes" else f"{format_count(r['value'])} {r['unit']}"
              for r in rows]
    width, vwidth = max(len(r["quantity"]) for r in rows), max(map(len, values))
    return "\n".join(f"{r['quantity']:<{width}}  {v:<{vwidth}}  {r['formula']}" for r, v in zip(rows, values))


def largest_T_for_memory(budget_bytes: float, dtype="float32", *, heads: int = 1, matrices: int = 1) -> int:
    """The largest T whose (T, T) matrices fit in `budget_bytes`: floor(√(budget / (bytes·H·matrices))).
    `matrices=2` models the textbook implementation, which holds the scores and the softmax output at once."""
    require_sizes(heads=heads, matrices=matrices)
    budget_bytes = budget_bytes.item() if getattr(budget_bytes, "ndim", None) == 0 else budget_bytes   # a 0-d tensor
    if not isinstance(budget_bytes, numbers.Real) or isinstance(budget_bytes, bool) or not 0 <= budget_bytes < math.inf:
        raise ValueError(f"budget_bytes should be a number of bytes, at least 0, such as 40e9 (40 GB), but got "
                         f"{budget_bytes!r}.")
    return math.isqrt(int(budget_bytes // (bytes_per_number(dtype) * heads * matrices)))


def cost_widget_data(T: float, d_k: int, *, d_model: int = 512, heads: int = 1, dtype="float32") -> dict:
    """Everything the cost widget shows for one setting of its controls (T, from a log slider, is rounded):
    {"T", "table" (cost_table's rows), "text" (formatted), "bars" [(label, bytes)] for the (T, T) scores and for
    Q, K, V, "devices" (DEVICE_MEMORY), "fits" {device: bool}}."""
    T = round(T)                                       # from a log slider
    rows = cost_table(T, d_model, d_k, dtype=dtype, heads=heads)
    scores, qkv = score_matrix_bytes(T, dtype, heads=heads), 3 * heads * tensor_bytes(T, d_k, dtype=dtype)
    return {"T": T, "table": rows, "text": format_cost_table(rows), "devices": dict(DEVICE_MEMORY),
            "bars": [(f"(T, T) scores × {heads} head(s)", scores), ("Q, K, V", qkv)],
            "fits": {name: scores <= size for name, size in DEVICE_MEMORY.items()}}
