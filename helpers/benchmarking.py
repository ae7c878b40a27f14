"""Naive attention vs PyTorch's fused SDPA: the implementations, and the benchmark that compares them.

Notebook 07's timing cells and `benchmarks/attention.py` both call this module,
so the notebook and the command line measure exactly the same thing. How one call
is timed and its peak memory found lives in helpers.measure; the device, dtype,
GPU peaks, SDPA's kernel and the out-of-memory search in helpers.devices; the
FLOP count in helpers.cost.

    textbook_attention(Q, K, V)     the textbook formula as a bare function, line for line, without checks
    IMPLEMENTATIONS                 "naive", "lean", "tiled", "sdpa" (and "sdpa:flash", ... on request)
    prepare(name, Q, K, V, causal)  a zero-argument call of one of them, its mask built beforehand
    get_implementation(name)        one of them as a plain function(Q, K, V, causal=False)
    make_qkv(bh, T, d_k)            random Q, K, V of shape (1, bh, T, d_k)
    run_benchmark(...)              time, TFLOP/s and peak memory of each over sizes and dtypes -> [Row]
    format_table(rows)              the rows as a text table
    ratios(rows)                    each implementation's time as a multiple of SDPA's
    header(device, ...)             one line saying what was measured on what
    largest_naive_T_cuda(dtype)     the largest T at which the naive version fits on a GPU
    timing_cell(...)                notebook 07's CUDA timing cell (CPU fallback included)
    piece_calls(...)                notebook 07's textbook steps one by one, next to SDPA's whole call
    REFERENCE_CPU, reference_table  a measurement kept for comparison, and a table next to it

What is timed is the mathematics only. The course's own functions check their
inputs (a mask row with no allowed key, NaN in the output); each such check is a
scan whose answer Python must wait for, and on a GPU that wait stops the queue of
kernels, so a timing loop would measure the waits. The timed versions therefore
run without those checks (textbook_attention; lean and tiled with checks=False),
and a causal mask is built once per size, outside the timed call, like the
inputs. SDPA does its own (cheap, asynchronous) checks, as it always does.
"""
from __future__ import annotations

import math
import numbers
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from helpers import cost, devices, measure
from helpers import validation as check
from helpers.attention_torch import causal_mask
from helpers.fast_attention import lean_attention, tiled_attention

# --------------------------------------------------------------------------------------
# The implementations being compared
# --------------------------------------------------------------------------------------


def textbook_attention(Q, K, V, mask=None):
    """Q, K: (..., T, d_k)   V: (..., T, d_v)  ->  (..., T, d_v): the textbook formula, line for line."""
    d_k = Q.size(-1)
    scores = (Q @ K.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return F.softmax(scores, dim=-1) @ V


def naive_attention(Q, K, V, causal: bool = False):
    """textbook_attention with a causal mask if asked: scores, a scaled copy, the softmax ((T, T) each).

    Unlike helpers.attention_torch.scaled_dot_product_attention it checks nothing
    (see the module's docstring: the checks would be timed too). (..., T, d_k) x3 -> (..., T, d_v).
    """
    return prepare("naive", Q, K, V, causal)()


def sdpa_attention(Q, K, V, causal: bool = False):
    """PyTorch's fused torch.nn.functional.scaled_dot_product_attention (is_causal for the mask).

    Q, K: (..., T, d_k)   V: (..., T, d_v)  ->  (..., T, d_v). On the CPU its fused
    kernel wants 4-D inputs (B, H, T, d_k); 3-D inputs fall back to the unfused path.
    """
    return F.scaled_dot_product_attention(Q, K, V, is_causal=causal)


_SDPA_BACKENDS = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "math": "MATH",
}


def forced_sdpa(backend: str) -> Callable:
    """SDPA restricted to one backend ("flash", "efficient", "cudnn", "math") via sdpa_kernel.

    Returns run(Q, K, V, causal=False): Q, K (..., T, d_k), V (..., T, d_v) -> (..., T, d_v),
    like sdpa_attention. If that backend cannot run these inputs, PyTorch raises
    RuntimeError ("No available kernel").
    """
    if backend not in _SDPA_BACKENDS:
        raise ValueError(f"Unknown SDPA backend {backend!r}: expected one of {', '.join(_SDPA_BACKENDS)}.")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = getattr(SDPBackend, _SDPA_BACKENDS[backend])

    def run(Q, K, V, causal: bool = False):
        with sdpa_kernel([chosen]):
            return F.scaled_dot_product_attention(Q, K, V, is_causal=causal)

    run.__name__ = f"sdpa_{backend}"
    return run


def with_mask(fn: Callable) -> Callable:
    """Preparer for fn(Q, K, V, mask): the causal mask is built here, once, not inside the timed call."""
    def prepare_call(Q, K, V, causal: bool = False):
        mask = causal_mask(Q.shape[-2], device=Q.device) if causal else None
        return lambda: fn(Q, K, V, mask)
    return prepare_call


def with_flag(fn: Callable) -> Callable:
    """Preparer for fn(Q, K, V, causal): nothing to build beforehand."""
    def prepare_call(Q, K, V, causal: bool = False):
        return lambda: fn(Q, K, V, causal)
    return prepare_call


def _lean_unchecked(Q, K, V, mask=None):
    return lean_attention(Q, K, V, mask, checks=False)


def _tiled_unchecked(Q, K, V, causal=False):
    return tiled_attention(Q, K, V, causal, checks=False)


#: name -> (what it is, preparer(Q, K, V, causal) -> zero-argument call).
IMPLEMENTATIONS: dict[str, tuple[str, Callable]] = {
    "naive": ("the textbook version: scores, scaled copy, softmax (three (T, T) tensors)",
              with_mask(textbook_attention)),
    "lean": ("same maths, one (T, T) buffer, scale folded into Q, softmax in place", with_mask(_lean_unchecked)),
    "tiled": ("same maths, 128 queries at a time: each tile of scores stays in cache", with_flag(_tiled_unchecked)),
    "sdpa": ("torch.nn.functional.scaled_dot_product_attention (fused; picks its backend)", with_flag(sdpa_attention)),
}
for _short, _name in _SDPA_BACKENDS.items():
    IMPLEMENTATIONS[f"sdpa:{_short}"] = (f"SDPA forced to the {_name} backend", with_flag(forced_sdpa(_short)))


def _check_name(name: str) -> None:
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"Unknown implementation {name!r}: expected one of {', '.join(IMPLEMENTATIONS)}.")


def prepare(name: str, Q, K, V, causal: bool = False) -> Callable[[], torch.Tensor]:
    """A zero-argument call of implementation `name` on Q, K, V; any mask is built now, not in the call.

    Q, K: (..., T, d_k)   V: (..., T, d_v) (make_qkv gives (1, B·H, T, d_k) each); the call
    returns (..., T, d_v). With causal=True a (T, T) boolean mask is built here, once.
    """
    _check_name(name)
    return IMPLEMENTATIONS[name][1](Q, K, V, causal)


def get_implementation(name: str) -> Callable:
    """Implementation `name` as a plain function(Q, K, V, causal=False), with a clear error for a bad name."""
    _check_name(name)

    def run(Q, K, V, causal: bool = False):
        return prepare(name, Q, K, V, causal)()

    run.__name__ = name.replace(":", "_")
    return run


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def make_qkv(batch_heads: int, T: int, d_k: int, *, device="cpu", dtype="float32",
             seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random Q, K, V, each (1, batch_heads, T, d_k) (4-D, the layout fused kernels want)."""
    batch_heads, T, d_k = (check.positive_int(v, n) for v, n in ((batch_heads, "batch_heads"), (T, "T"), (d_k, "d_k")))
    seed = check.seed(seed)
    generator = torch.Generator(device="cpu").manual_seed(seed)
    shape = (1, batch_heads, T, d_k)
    tensors = [torch.randn(shape, generator=generator) for _ in range(3)]
    return tuple(t.to(device=device, dtype=devices.resolve_dtype(dtype)) for t in tensors)


# --------------------------------------------------------------------------------------
# The whole benchmark
# --------------------------------------------------------------------------------------


@dataclass
class Row:
    """One implementation at one size: time, achieved TFLOP/s, peak memory, backend."""

    impl: str
    device: str
    dtype: str
    T: int
    batch_heads: int
    d_k: int
    causal: bool
    ms: float | None = None
    tflops: float | None = None
    peak_bytes: int | None = None
    score_bytes: int = 0
    backend: str = ""
    note: str = ""
    samples_ms: list[float] = field(default_factory=list)


def _sizes(value, name: str, expected: str = "a list of sequence lengths such as [256, 512]") -> list[int]:
    """Sequence lengths: one whole number, or a list of them (each >= 1) -> sorted, without repeats."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} should be {expected}, but got {check.describe(value)} ({value!r:.40}).")
    return sorted({check.positive_int(T, f"each entry of {name}") for T in value})


def _dtypes(value) -> list[str]:
    """Dtypes to time: one name ('fp32') or torch.dtype, or a list of them -> canonical names."""
    if isinstance(value, (str, torch.dtype)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"dtypes should be a list of names such as ['float32', 'bfloat16'], but got "
                        f"{check.describe(value)} ({value!r:.40}).")
    if not value:
        raise ValueError("dtypes is empty: give at least one dtype to time, e.g. ['float32'].")
    for dtype in value:
        try:
            devices.resolve_dtype(dtype)  # a clear error for a name that cannot be timed
        except (TypeError, ValueError) as error:
            raise type(error)(f"In dtypes: {error}") from None
    return [cost.dtype_name(dtype) for dtype in value]


def run_benchmark(*, device="cpu", dtypes: Sequence = ("float32",), sizes: Sequence[int] = (256, 512, 1024),
                  batch_heads: int = 8, d_k: int = 64, causal: bool = False,
                  impls: Sequence[str] = ("naive", "lean", "tiled", "sdpa"), warmup: int = 2, repeats: int = 7,
                  num_threads: int | None = None, memory: bool | Iterable[int] = True, seed: int = 0) -> list[Row]:
    """Time (and measure the peak memory of) each implementation at each size and dtype.

    `memory`: True measures the peak memory at every size, False at none, a
    collection of sizes only at those (profiling the CPU's allocations is slow).
    Returns one Row per (dtype, T, impl). An implementation that runs out of GPU
    memory gets a row with note 'out of memory' and is skipped at larger sizes; one
    that cannot run the inputs (e.g. a forced backend) gets its error as the note.
    """
    device = devices.resolve_device(device)
    dtypes = _dtypes(dtypes)
    sizes = _sizes(sizes, "sizes")
    impls = check.names(impls, "impls", IMPLEMENTATIONS)
    if not impls:
        raise ValueError(f"impls is empty: give at least one of {', '.join(map(repr, IMPLEMENTATIONS))}.")
    batch_heads, d_k = check.positive_int(batch_heads, "batch_heads"), check.positive_int(d_k, "d_k")
    causal = check.flag(causal, "causal")
    warmup, repeats = check.whole_number(warmup, "warmup", 0), check.whole_number(repeats, "repeats", 1)
    if num_threads is not None:
        num_threads = check.whole_number(num_threads, "num_threads", 1)
    seed = check.seed(seed)
    if isinstance(memory, (bool, np.bool_)):
        memory_sizes = set(sizes) if memory else set()
    else:
        memory_sizes = set(_sizes(memory, "memory", "True, False or a list of sequence lengths such as [256, 512]"))
    rows = []
    for dtype_name in dtypes:
        exhausted: set[str] = set()
        for T in sizes:
            Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype_name, seed=seed)
            flops = cost.forward_flops(batch_heads, T, d_k, causal)
            base = dict(device=device.type, dtype=dtype_name, T=T, batch_heads=batch_heads, d_k=d_k, causal=causal,
                        score_bytes=cost.score_matrix_bytes(T, dtype_name, heads=batch_heads))
            runnable, table, call = {}, {}, None
            for name in impls:
                row = Row(impl=name, **base)
                table[name] = row
                if name in exhausted:
                    row.note = "skipped (out of memory at a smaller T)"
                    continue
                call = prepare(name, Q, K, V, causal)
                out_of_memory = False
                try:
                    call()
                    measure.synchronize(device)
                except RuntimeError as error:
                    if devices.is_out_of_memory(error):
                        out_of_memory = True
                    else:
                        row.note = f"cannot run: {str(error).splitlines()[0][:60]}"
                        continue
                if out_of_memory:  # after the except block, when the traceback no longer holds the tensors
                    row.note = "out of memory"
                    exhausted.add(name)
                    call = None
                    if device.type == "cuda":
                        devices.release_cuda_memory()
                    continue
                if name.startswith("sdpa"):
                    row.backend = (devices.sdpa_backend(Q, K, V, causal) if name == "sdpa" else name.split(":")[1])
                runnable[name] = call
            if runnable:
                # the trial call above was the first warm-up call
                timings = measure.time_calls(runnable, device, warmup=max(warmup - 1, 0), repeats=repeats,
                                     num_threads=num_threads)
                for name, timing in timings.items():
                    row = table[name]
                    row.ms = timing.ms
                    row.samples_ms = [s * 1e3 for s in timing.samples]
                    row.tflops = cost.tflops_per_second(flops, timing.median)
                    if T in memory_sizes:
                        with measure.cpu_threads(num_threads):
                            row.peak_bytes = measure.peak_memory_bytes(runnable[name], device)
            rows.extend(table[name] for name in impls)
            del Q, K, V, runnable, call
            if device.type == "cuda":
                devices.release_cuda_memory()
    return rows


def _mib(n) -> str:
    return "" if n is None else f"{n / 2**20:.1f}"


def _rows(rows) -> list[Row]:
    """The list of Row that run_benchmark returns; a clear error for anything else."""
    if not isinstance(rows, (list, tuple)):
        raise TypeError(f"rows should be the list that run_benchmark returns, but got {check.describe(rows)}.")
    for i, r in enumerate(rows):
        if not isinstance(r, Row):
            raise TypeError(f"rows should hold the Row objects that run_benchmark returns, but rows[{i}] is "
                            f"{check.describe(r)}.")
    return list(rows)


def format_table(rows: Sequence[Row]) -> str:
    """The rows as an aligned text table (ms, TFLOP/s, peak MiB next to one (T, T) matrix's MiB)."""
    rows = _rows(rows)
    header = ("impl", "dtype", "T", "ms", "TFLOP/s", "peak MiB", "(T,T) MiB", "SDPA backend / note")
    lines = [header]
    for r in rows:
        lines.append((
            r.impl, r.dtype, str(r.T),
            "" if r.ms is None else f"{r.ms:.3f}",
            "" if r.tflops is None else f"{r.tflops:.3g}",
            _mib(r.peak_bytes), _mib(r.score_bytes),
            "; ".join(x for x in (r.backend, r.note) if x),
        ))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    right = {2, 3, 4, 5, 6}
    out = []
    for k, line in enumerate(lines):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def ratios(rows: Sequence[Row], baseline: str = "sdpa") -> list[str]:
    """'T=1024 float32: naive 4.02x, lean 1.21x the time of sdpa' lines (paired medians over rounds)."""
    rows = _rows(rows)
    baseline = check.one_of(baseline, "baseline", IMPLEMENTATIONS)
    lines = []
    keys = sorted({(r.dtype, r.T) for r in rows}, key=lambda k: (k[0], k[1]))
    for dtype, T in keys:
        group = {r.impl: r for r in rows if r.dtype == dtype and r.T == T and r.samples_ms}
        if baseline not in group:
            continue
        base = group[baseline].samples_ms
        parts = []
        for name, r in group.items():
            if name == baseline:
                continue
            ratio = statistics.median(a / b for a, b in zip(r.samples_ms, base))
            parts.append(f"{name} {ratio:.2f}x")
        if parts:
            lines.append(f"T={T} {dtype}: " + ", ".join(parts) + f" the time of {baseline}")
    return lines


def header(device, num_threads: int | None, batch_heads: int, d_k: int, causal: bool) -> str:
    """One line saying what was measured on what."""
    device = torch.device(device)
    if device.type == "cuda":
        where = f"cuda ({torch.cuda.get_device_name(device)})"
    else:
        where = f"cpu ({num_threads or torch.get_num_threads()} threads)"
    return (f"device {where}, torch {torch.__version__}, batch*heads {batch_heads}, d_k {d_k}, "
            f"causal {'yes' if causal else 'no'}; forward FLOPs 4*B*H*T^2*d{' / 2' if causal else ''}")


# --------------------------------------------------------------------------------------
# How large a T the naive version fits on a GPU
# --------------------------------------------------------------------------------------


def largest_naive_T_cuda(dtype="float32", *, batch_heads: int = 8, d_k: int = 64, device="cuda",
                         start: int = 1024, limit: int = 2**20, refine_to: int = 1024) -> tuple[int | None, int | None]:
    """On CUDA: the largest T at which the naive version runs, found by doubling then bisecting.

    Catches torch.cuda.OutOfMemoryError (and cuBLAS allocation failures, see
    devices.is_out_of_memory) and frees the memory after each attempt. Returns (largest T
    that ran, smallest T found to fail).
    """
    if torch.device(device).type != "cuda":
        raise RuntimeError("largest_naive_T_cuda needs a CUDA device: on the CPU running out of memory does not "
                           "raise, the operating system swaps or stops the process. Use "
                           "cost.largest_T_for_memory for a prediction instead.")
    device = devices.resolve_device(device)

    def run(T):
        Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype)
        out = textbook_attention(Q, K, V)
        measure.synchronize(device)
        return out

    with torch.cuda.device(device):
        return devices.search_largest_T(run, start=start, limit=limit, refine_to=refine_to,
                                        cleanup=devices.release_cuda_memory)


# --------------------------------------------------------------------------------------
# Notebook 07: the timing cell, the steps one by one, a reference measurement
# --------------------------------------------------------------------------------------


def timing_cell(*, cpu_sizes: Sequence[int] = (256, 512), cuda_sizes: Sequence[int] = (1024, 2048, 4096, 8192),
                batch_heads: int = 8, d_k: int = 64, find_largest: bool = True, repeats: int = 5) -> list[Row]:
    """Notebook 07's CUDA timing cell: naive vs SDPA on the GPU, or a plain statement and a CPU run.

    On CUDA: a 16-bit dtype and fp32, ms, achieved TFLOP/s, peak memory, the SDPA
    backend picked, the largest T the naive version fits, and published numbers
    to compare with. On a CPU-only machine: says so, then runs the same
    measurement on the CPU at `cpu_sizes`. Prints everything; returns the rows.
    """
    message = devices.cuda_skip_message()
    if message is None:
        device = torch.device("cuda")
        print(header(device, None, batch_heads, d_k, False))
        rows = run_benchmark(device=device, dtypes=devices.default_dtypes(device), sizes=cuda_sizes,
                             batch_heads=batch_heads, d_k=d_k, impls=("naive", "sdpa"), repeats=repeats)
        print(format_table(rows))
        for line in ratios(rows):
            print(line)
        peak = devices.peak_tflops_for(torch.cuda.get_device_name(device))
        best = max((r for r in rows if r.tflops), key=lambda r: r.tflops, default=None)
        if best is not None and peak:
            print(f"best: {best.impl} {best.dtype} at T={best.T}: {best.tflops:.0f} TFLOP/s = "
                  f"{100 * best.tflops / peak:.0f}% of this GPU's nominal dense 16-bit peak ({peak:.0f})")
        if find_largest:
            for dtype in devices.default_dtypes(device):
                ok, bad = largest_naive_T_cuda(dtype, batch_heads=batch_heads, d_k=d_k)
                print(f"largest T the naive version fits ({dtype}, batch*heads {batch_heads}): {ok} "
                      f"(out of memory at {bad})")
        print("published, for comparison (nominal dense bf16 peaks from NVIDIA's datasheets):")
        for line in devices.published_lines():
            print("  " + line)
        return rows
    print(message)
    threads = torch.get_num_threads()
    print(header("cpu", threads, batch_heads, d_k, False))
    rows = run_benchmark(device="cpu", dtypes=("float32",), sizes=cpu_sizes, batch_heads=batch_heads, d_k=d_k,
                         impls=("naive", "sdpa"), repeats=repeats, num_threads=threads)
    print(format_table(rows))
    for line in ratios(rows):
        print(line)
    free = devices.available_memory_bytes("cpu")
    if free:
        T = cost.largest_T_for_memory(free, "float32", heads=batch_heads, matrices=2)
        print(f"largest T the naive version fits: not tried on a CPU (running out of memory there swaps or "
              f"stops the process instead of raising); predicted from {cost.format_bytes(free)} free: T = {T:,}")
    return rows


def piece_calls(batch_heads: int = 8, T: int = 1024, d_k: int = 64, *, seed: int = 0) -> dict[str, Callable]:
    """The steps of the textbook computation one by one, next to SDPA's whole call: {label: zero-argument call}.

    "Q Kᵀ into a (T, T) buffer" (torch.bmm writing a preallocated buffer), "softmax
    of the buffer, in place", "S · V", then SDPA with 4-D inputs (1, B·H, T, d_k)
    and with the same numbers as 3-D inputs (B·H, T, d_k). Notebook 07 times them
    together: whether the pieces alone already take longer than the fused call.
    """
    Q, K, V = make_qkv(batch_heads, T, d_k, seed=seed)  # each (1, B·H, T, d_k)
    q = (Q[0] / math.sqrt(d_k)).contiguous()  # (B·H, T, d_k)
    k_t = K[0].transpose(1, 2).contiguous()  # (B·H, d_k, T)
    v = V[0].contiguous()  # (B·H, T, d_k)
    S = torch.bmm(q, k_t)  # (B·H, T, T): the buffer, allocated once
    torch.softmax(S, dim=-1, out=S)
    Q3, K3, V3 = (x[0].contiguous() for x in (Q, K, V))  # (B·H, T, d_k): 3-D, same numbers
    return {
        "Q Kᵀ into a (T, T) buffer": lambda: torch.bmm(q, k_t, out=S),
        "softmax of the buffer, in place": lambda: torch.softmax(S, dim=-1, out=S),
        "S · V": lambda: torch.bmm(S, v),
        "SDPA, whole call, 4-D inputs": lambda: F.scaled_dot_product_attention(Q, K, V),
        "SDPA, whole call, 3-D inputs": lambda: F.scaled_dot_product_attention(Q3, K3, V3),
    }


#: A reference measurement kept for comparison: a 2-core x86-64 CPU VM, torch 2.13.0+cpu, 2 threads,
#: 29 Nov 2026 (fp32, B·H = 8, T = 1,024, d_k = 64). Milliseconds per call (medians); "ratios" are
#: naive / lean / tiled as multiples of SDPA's time, computed from those milliseconds below.
REFERENCE_CPU = {
    "machine": "2-core x86-64 CPU VM, torch 2.13.0+cpu, 2 threads",
    "date": "29 Nov 2026",
    "ms": {
        "Q Kᵀ into a (T, T) buffer": 6.9,
        "softmax of the buffer, in place": 3.7,
        "S · V": 4.5,
        "SDPA, whole call, 4-D inputs": 9.4,
        "SDPA, whole call, 3-D inputs": 48.3,
        "naive": 35.1, "lean": 20.2, "tiled": 14.4, "sdpa": 9.0,
    },
}
REFERENCE_CPU["ratios"] = {name: REFERENCE_CPU["ms"][name] / REFERENCE_CPU["ms"]["sdpa"]
                           for name in ("naive", "lean", "tiled")}


def reference_table(measured_ms: dict[str, float]) -> str:
    """Milliseconds measured here next to REFERENCE_CPU's, one line per label ('' where it has none)."""
    if not isinstance(measured_ms, Mapping):
        raise TypeError(f"measured_ms should be a dict {{label: milliseconds}}, but got {check.describe(measured_ms)}.")
    if not measured_ms:
        raise ValueError("measured_ms is empty: give at least one {label: milliseconds}.")
    width = max(len(label) for label in measured_ms)
    ref = REFERENCE_CPU["ms"]
    lines = [f"{'':<{width}}  {'here':>9}  {'reference':>9}"]
    for label, ms in measured_ms.items():
        kept = f"{ref[label]:9.1f}" if label in ref else f"{'':>9}"
        lines.append(f"{label:<{width}}  {ms:9.1f}  {kept}")
    lines.append(f"(reference: {REFERENCE_CPU['machine']}, measured {REFERENCE_CPU['date']})")
    return "\n".join(lines)
