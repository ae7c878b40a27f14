"""Measuring attention: naive vs PyTorch's fused SDPA, in time and peak memory, on CPU or CUDA.

One module is used by notebook 07's timing cells and by `benchmarks/attention.py`,
so the notebook and the command line measure exactly the same thing.

    IMPLEMENTATIONS                 "naive", "lean", "tiled", "sdpa" (and "sdpa:flash", ... on request)
    make_qkv(bh, T, d_k)            random Q, K, V of shape (1, bh, T, d_k)
    time_calls({name: fn}, device)  warmed-up, synchronised, interleaved timings
    peak_memory_bytes(fn, device)   peak bytes torch allocates during one call
    sdpa_backend(Q, K, V)           which kernel F.scaled_dot_product_attention picks
    find_largest_T(run, sizes)      the largest T that runs before an out-of-memory error
    run_benchmark(...)              all of the above over sizes and dtypes -> rows
    format_table(rows)              the rows as a text table
    timing_cell(...)                the notebook's CUDA timing cell (CPU fallback included)

How time is measured. Every function is run `warmup` times first (the first calls
pay for memory allocation, kernel selection and caches). On CUDA, kernels run
asynchronously: the Python call returns before the GPU has finished, so a plain
clock measures only the launch. We record CUDA events around the calls and call
torch.cuda.synchronize() before reading them. On the CPU a perf_counter clock is
exact, and we pin the number of threads (reported with the result). The
implementations are timed in interleaved rounds (a, b, c, a, b, c, ...) and the
median is kept, so a burst of load from another program hits all of them alike.

How memory is measured. On CUDA: torch.cuda.reset_peak_memory_stats(), one call,
then torch.cuda.max_memory_allocated() minus what was allocated before. On the
CPU PyTorch keeps no such counter, and Python's tracemalloc does not see torch's
C++ allocations at all. We run one call under the PyTorch profiler with
profile_memory=True, which records every allocation and free made by torch's CPU
allocator, and replay them in order to find the peak. Both numbers mean the same
thing: the most extra bytes torch held at one moment during the call.
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from helpers import cost
from helpers.attention_torch import causal_mask
from helpers.attention_torch import scaled_dot_product_attention as helpers_attention
from helpers.fast_attention import lean_attention, tiled_attention

# --------------------------------------------------------------------------------------
# The implementations being compared
# --------------------------------------------------------------------------------------


def naive_attention(Q, K, V, causal: bool = False):
    """The course's textbook attention (helpers.attention_torch), with a causal mask if asked.

    It materialises the (T, T) scores, then a scaled copy, then the softmax output:
    the textbook line by line. (..., T, d_k) x3 -> (..., T, d_v).
    """
    mask = causal_mask(Q.shape[-2], device=Q.device) if causal else None
    return helpers_attention(Q, K, V, mask)


def lean_attention_causal(Q, K, V, causal: bool = False):
    """lean_attention with a causal mask if asked (the benchmark's calling convention)."""
    mask = causal_mask(Q.shape[-2], device=Q.device) if causal else None
    return lean_attention(Q, K, V, mask)


def sdpa_attention(Q, K, V, causal: bool = False):
    """PyTorch's fused torch.nn.functional.scaled_dot_product_attention (is_causal for the mask)."""
    return F.scaled_dot_product_attention(Q, K, V, is_causal=causal)


_SDPA_BACKENDS = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "math": "MATH",
}


def forced_sdpa(backend: str) -> Callable:
    """SDPA restricted to one backend ("flash", "efficient", "cudnn", "math") via sdpa_kernel.

    If that backend cannot run these inputs, PyTorch raises RuntimeError ("No available kernel").
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


#: name -> (what it is, function(Q, K, V, causal)).
IMPLEMENTATIONS: dict[str, tuple[str, Callable]] = {
    "naive": ("helpers.attention_torch: scores, scaled copy, softmax (three (T, T) tensors)", naive_attention),
    "lean": ("same maths, one (T, T) buffer, scale folded into Q, softmax in place", lean_attention_causal),
    "tiled": ("same maths, 128 queries at a time: each tile of scores stays in cache", tiled_attention),
    "sdpa": ("torch.nn.functional.scaled_dot_product_attention (fused; picks its backend)", sdpa_attention),
}
for _short, _name in _SDPA_BACKENDS.items():
    IMPLEMENTATIONS[f"sdpa:{_short}"] = (f"SDPA forced to the {_name} backend", forced_sdpa(_short))


def get_implementation(name: str) -> Callable:
    """The function registered under `name` in IMPLEMENTATIONS, with a clear error otherwise."""
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"Unknown implementation {name!r}: expected one of {', '.join(IMPLEMENTATIONS)}.")
    return IMPLEMENTATIONS[name][1]


# --------------------------------------------------------------------------------------
# Devices, dtypes, inputs and arithmetic
# --------------------------------------------------------------------------------------

_TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16,
                 "float16": torch.float16}


def resolve_dtype(dtype) -> torch.dtype:
    """'fp32' / 'float32' / torch.float32 -> torch.float32 (also bf16, fp16, fp64)."""
    name = cost.dtype_name(dtype)
    if name not in _TORCH_DTYPES:
        raise ValueError(f"dtype {name!r} is not supported for timing: use one of {', '.join(_TORCH_DTYPES)}.")
    return _TORCH_DTYPES[name]


def resolve_device(device="auto") -> torch.device:
    """'auto' -> cuda if a GPU is usable, else cpu. Asking for cuda without one is a clear error."""
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise TypeError(f"device should be 'auto', 'cpu' or 'cuda', but got {type(device).__name__}.")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {device!r} was asked for, but {cuda_unavailable_reason()}. "
                               "Use --device cpu (or auto).")
        return torch.device(device)
    if device == "cpu":
        return torch.device("cpu")
    raise ValueError(f"Unknown device {device!r}: expected 'auto', 'cpu' or 'cuda'.")


def default_dtypes(device) -> list[str]:
    """What to time by default: on CUDA a 16-bit type (bf16 if supported, else fp16) and fp32; on CPU fp32."""
    if torch.device(device).type == "cuda":
        half = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        return [half, "float32"]
    return ["float32"]


def cuda_unavailable_reason() -> str | None:
    """None if a CUDA GPU is usable, else why not (a CPU-only build, or no GPU/driver found)."""
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return f"this PyTorch ({torch.__version__}) is a CPU-only build, without CUDA support"
    return f"this PyTorch ({torch.__version__}) supports CUDA {torch.version.cuda}, but no GPU or driver was found"


def cuda_skip_message() -> str | None:
    """None if a CUDA GPU is usable, else one plain sentence saying why not and what happens instead."""
    why = cuda_unavailable_reason()
    if why is None:
        return None
    return (f"No CUDA GPU here: {why}. The CUDA timing is skipped; "
            "the same measurement runs on the CPU instead, at a small size.")


def make_qkv(batch_heads: int, T: int, d_k: int, *, device="cpu", dtype="float32",
             seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random Q, K, V, each (1, batch_heads, T, d_k) (4-D, the layout fused kernels want)."""
    from helpers import validation as check

    batch_heads, T, d_k = (check.positive_int(v, n) for v, n in ((batch_heads, "batch_heads"), (T, "T"), (d_k, "d_k")))
    generator = torch.Generator(device="cpu").manual_seed(seed)
    shape = (1, batch_heads, T, d_k)
    tensors = [torch.randn(shape, generator=generator) for _ in range(3)]
    return tuple(t.to(device=device, dtype=resolve_dtype(dtype)) for t in tensors)


def forward_flops(batch_heads: int, T: int, d_k: int, causal: bool = False) -> int:
    """4 · B·H · T² · d_k, the forward FLOPs of attention (halved for causal)."""
    return cost.attention_flops(T, d_k, heads=batch_heads, causal=causal)["total"]


def tflops_per_second(flops: float, seconds: float) -> float:
    """Achieved TFLOP/s = FLOPs / seconds / 10¹²."""
    if not seconds > 0 or not math.isfinite(seconds):
        raise ValueError(f"seconds should be a positive time, but got {seconds!r}.")
    if flops < 0:
        raise ValueError(f"flops should be >= 0, but got {flops!r}.")
    return flops / seconds / 1e12


#: Published forward-pass numbers to compare with (TFLOP/s, 16-bit inputs), and dense peaks.
PUBLISHED_TFLOPS = {
    "FlashAttention-2 on A100 (up to)": 230,
    "FlashAttention-2 on H100 (up to)": 335,
    "FlashAttention-3 on H100, fp16 (up to)": 740,
    "A100 dense bf16 peak": 312,
    "H100 / H200 dense bf16 peak": 989,
}


def peak_tflops_for(gpu_name: str) -> float | None:
    """The dense bf16/fp16 tensor-core peak of a known GPU (TFLOP/s), or None if unknown."""
    name = gpu_name.upper()
    if "H100" in name or "H200" in name:
        return 989.0
    if "A100" in name:
        return 312.0
    return None


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run the block with torch using `n` CPU threads (None: leave as is); restore afterwards."""
    before = torch.get_num_threads()
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"num_threads should be a whole number >= 1, but got {n!r}.")
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def synchronize(device) -> None:
    """Wait for all queued GPU work (a no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _one_sample(fn: Callable, device, number: int) -> float:
    """Seconds per call of `fn`, averaged over `number` back-to-back calls."""
    if torch.device(device).type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        synchronize(device)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        torch.cuda.synchronize(device)  # elapsed_time is only valid once both events have happened
        return start.elapsed_time(end) / 1e3 / number  # elapsed_time is in milliseconds
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


@dataclass
class Timing:
    """Seconds per call: the median of the samples, and the samples themselves."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def ms(self) -> float:
        return self.median * 1e3


def time_calls(functions: dict[str, Callable], device="cpu", *, warmup: int = 2, repeats: int = 7,
               min_sample_s: float = 0.002, num_threads: int | None = None) -> dict[str, Timing]:
    """Time several zero-argument functions in interleaved rounds: {name: Timing}.

    Each is warmed up `warmup` times; then `repeats` rounds time each once in
    turn. A sample loops a fast function until about `min_sample_s` has passed,
    so clock resolution and launch overhead do not dominate.
    """
    if not functions:
        raise ValueError("Give at least one function to time.")
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats should be >= 1 and warmup >= 0, but got repeats={repeats}, warmup={warmup}.")
    timings = {name: Timing() for name in functions}
    with cpu_threads(num_threads):
        numbers = {}
        for name, fn in functions.items():
            for _ in range(warmup):
                fn()
            synchronize(device)
            once = _one_sample(fn, device, 1)
            numbers[name] = max(1, min(1000, math.ceil(min_sample_s / max(once, 1e-9))))
        for _ in range(repeats):
            for name, fn in functions.items():
                timings[name].samples.append(_one_sample(fn, device, numbers[name]))
    return timings


def paired_ratio(timings: dict[str, Timing], numerator: str, denominator: str) -> float:
    """Median over rounds of t_numerator / t_denominator (robust to load that varies between rounds)."""
    a, b = timings[numerator].samples, timings[denominator].samples
    return statistics.median(x / y for x, y in zip(a, b))


# --------------------------------------------------------------------------------------
# Peak memory
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence C-level stderr for the block (the profiler prints a timestamped line on every start)."""
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 (some embedded interpreters)
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _replay_peak(events) -> int:
    """Peak of the running total of allocations minus frees, from profiler events.

    An event's self memory is what it allocated minus what it freed itself:
    allocations are counted at its start, frees at its end (an upper-bound-safe
    ordering for nested operators). '[memory]' events are frees or allocations
    outside any operator.
    """
    deltas = []
    for e in events:
        amount = e.self_cpu_memory_usage
        if amount > 0:
            deltas.append((e.time_range.start, amount))
        elif amount < 0:
            deltas.append((e.time_range.end, amount))
    deltas.sort()
    current = peak = 0
    for _, amount in deltas:
        current += amount
        peak = max(peak, current)
    return peak


def cpu_peak_bytes(fn: Callable) -> int:
    """Peak extra bytes torch's CPU allocator handed out during one call of `fn` (profiler replay)."""
    from torch.autograd import profiler

    with _quiet_native_stderr():
        try:
            with profiler.profile(profile_memory=True, use_kineto=False) as prof:
                result = fn()
                del result
        except (TypeError, RuntimeError):  # a torch without the legacy profiler
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        profile_memory=True) as prof:
                result = fn()
                del result
    return _replay_peak(prof.function_events if hasattr(prof, "function_events") else prof.events())


def cuda_peak_bytes(fn: Callable, device="cuda") -> int:
    """Peak extra bytes on the GPU during one call: reset_peak_memory_stats, call, max_memory_allocated."""
    synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    result = fn()
    synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - before
    del result
    return peak


def peak_memory_bytes(fn: Callable, device="cpu") -> int:
    """Peak extra bytes torch holds during one call of `fn`, on CUDA or on the CPU."""
    if torch.device(device).type == "cuda":
        return cuda_peak_bytes(fn, device)
    return cpu_peak_bytes(fn)


# --------------------------------------------------------------------------------------
# Which SDPA backend, and how large a T fits
# --------------------------------------------------------------------------------------

_BACKEND_LABELS = {
    "FLASH_ATTENTION": "flash",
    "EFFICIENT_ATTENTION": "memory-efficient",
    "CUDNN_ATTENTION": "cuDNN",
    "MATH": "math (unfused)",
    "OVERRIDEABLE": "overrideable (device plug-in)",
    "ERROR": "none (no kernel can run these inputs)",
}


def backend_label(index: int) -> str:
    """Readable name of an SDPBackend number: 1 -> 'flash', 0 -> 'math (unfused)'."""
    from torch.nn.attention import SDPBackend

    names = {int(getattr(SDPBackend, n)): n for n in _BACKEND_LABELS if hasattr(SDPBackend, n)}
    if index not in names:
        return f"unknown backend {index}"
    return _BACKEND_LABELS[names[index]]


def sdpa_backend(Q, K, V, causal: bool = False, attn_mask=None) -> str:
    """The kernel F.scaled_dot_product_attention picks for these inputs: 'flash', 'memory-efficient', ...

    Asks PyTorch's own dispatcher (torch._fused_sdp_choice); 'unknown' if this
    PyTorch does not expose it.
    """
    chooser = getattr(torch, "_fused_sdp_choice", None)
    if chooser is None:
        return "unknown"
    try:
        index = chooser(Q, K, V, attn_mask, 0.0, causal)
    except (RuntimeError, TypeError):
        return "unknown"
    return backend_label(int(index))


def find_largest_T(run: Callable[[int], object], sizes: Iterable[int],
                   out_of_memory: tuple[type[BaseException], ...] = (torch.OutOfMemoryError,),
                   cleanup: Callable[[], None] | None = None) -> tuple[int | None, int | None]:
    """Try `run(T)` for growing sizes; return (largest T that ran, first T that ran out of memory).

    Stops at the first out-of-memory error (caught; any other error propagates).
    `cleanup` runs after every attempt (e.g. torch.cuda.empty_cache). (None, T0)
    means even the first size failed; (T_last, None) means all of them fitted.
    """
    largest = None
    for T in sorted(sizes):
        try:
            result = run(T)
            del result
        except out_of_memory:
            if cleanup:
                cleanup()
            return largest, T
        if cleanup:
            cleanup()
        largest = T
    return largest, None


def search_largest_T(run: Callable[[int], object], *, start: int = 1024, limit: int = 2**20, refine_to: int = 1024,
                     out_of_memory: tuple[type[BaseException], ...] = (torch.OutOfMemoryError,),
                     cleanup: Callable[[], None] | None = None) -> tuple[int | None, int | None]:
    """Double T from `start` until `run(T)` runs out of memory, then bisect to a multiple of `refine_to`.

    Returns (largest T that ran, smallest T seen to fail); (T, None) if all sizes up
    to `limit` ran, (None, start) if even `start` failed.
    """
    sizes = []
    T = start
    while T <= limit:
        sizes.append(T)
        T *= 2
    ok, bad = find_largest_T(run, sizes, out_of_memory, cleanup)
    if ok is None or bad is None:
        return ok, bad
    while bad - ok > refine_to:  # bisect between the last size that ran and the first that did not
        middle = (ok + bad) // 2 // refine_to * refine_to
        if middle in (ok, bad):
            break
        fitted, _ = find_largest_T(run, [middle], out_of_memory, cleanup)
        ok, bad = (middle, bad) if fitted else (ok, middle)
    return ok, bad


def largest_naive_T_cuda(dtype="float32", *, batch_heads: int = 8, d_k: int = 64, device="cuda",
                         start: int = 1024, limit: int = 2**20, refine_to: int = 1024) -> tuple[int | None, int | None]:
    """On CUDA: the largest T at which the naive version runs, found by doubling then bisecting.

    Catches torch.cuda.OutOfMemoryError and empties the cache after each attempt.
    Returns (largest T that ran, smallest T found to fail).
    """
    if torch.device(device).type != "cuda":
        raise RuntimeError("largest_naive_T_cuda needs a CUDA device: on the CPU running out of memory does not "
                           "raise, the operating system swaps or stops the process. Use "
                           "cost.largest_T_for_memory for a prediction instead.")
    device = resolve_device(device)

    def run(T):
        Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype)
        out = naive_attention(Q, K, V)
        synchronize(device)
        return out

    return search_largest_T(run, start=start, limit=limit, refine_to=refine_to,
                            out_of_memory=(torch.cuda.OutOfMemoryError,), cleanup=torch.cuda.empty_cache)


def available_memory_bytes(device="cpu") -> int | None:
    """Free memory now: torch.cuda.mem_get_info on a GPU, MemAvailable on Linux; None if unknown."""
    if torch.device(device).type == "cuda":
        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


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


def _bind(fn: Callable, Q, K, V, causal: bool) -> Callable[[], object]:
    """A zero-argument call of fn(Q, K, V, causal), for the timers."""
    def call():
        return fn(Q, K, V, causal)
    return call


def run_benchmark(*, device="cpu", dtypes: Sequence = ("float32",), sizes: Sequence[int] = (256, 512, 1024),
                  batch_heads: int = 8, d_k: int = 64, causal: bool = False,
                  impls: Sequence[str] = ("naive", "lean", "tiled", "sdpa"), warmup: int = 2, repeats: int = 7,
                  num_threads: int | None = None, memory: bool = True, seed: int = 0) -> list[Row]:
    """Time (and measure the peak memory of) each implementation at each size and dtype.

    Returns one Row per (dtype, T, impl). An implementation that runs out of GPU
    memory gets a row with note 'out of memory' and is skipped at larger sizes; one
    that cannot run the inputs (e.g. a forced backend) gets its error as the note.
    """
    device = resolve_device(device)
    for name in impls:
        get_implementation(name)
    rows = []
    for dtype in dtypes:
        dtype_name = cost.dtype_name(dtype)
        exhausted: set[str] = set()
        for T in sorted(sizes):
            Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype_name, seed=seed)
            flops = forward_flops(batch_heads, T, d_k, causal)
            base = dict(device=device.type, dtype=dtype_name, T=T, batch_heads=batch_heads, d_k=d_k, causal=causal,
                        score_bytes=cost.score_matrix_bytes(T, dtype_name, heads=batch_heads))
            runnable, table = {}, {}
            for name in impls:
                row = Row(impl=name, **base)
                table[name] = row
                if name in exhausted:
                    row.note = "skipped (out of memory at a smaller T)"
                    continue
                call = _bind(get_implementation(name), Q, K, V, causal)
                try:
                    call()
                    synchronize(device)
                except torch.OutOfMemoryError:
                    row.note = "out of memory"
                    exhausted.add(name)
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
                    continue
                except RuntimeError as error:
                    row.note = f"cannot run: {str(error).splitlines()[0][:60]}"
                    continue
                if name.startswith("sdpa"):
                    row.backend = (sdpa_backend(Q, K, V, causal) if name == "sdpa" else name.split(":")[1])
                runnable[name] = call
            if runnable:
                # the trial call above was the first warm-up call
                timings = time_calls(runnable, device, warmup=max(warmup - 1, 0), repeats=repeats,
                                     num_threads=num_threads)
                for name, timing in timings.items():
                    row = table[name]
                    row.ms = timing.ms
                    row.samples_ms = [s * 1e3 for s in timing.samples]
                    row.tflops = tflops_per_second(flops, timing.median)
                    if memory:
                        with cpu_threads(num_threads):
                            row.peak_bytes = peak_memory_bytes(runnable[name], device)
            rows.extend(table[name] for name in impls)
            del Q, K, V
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return rows


def _mib(n) -> str:
    return "" if n is None else f"{n / 2**20:.1f}"


def format_table(rows: Sequence[Row]) -> str:
    """The rows as an aligned text table (ms, TFLOP/s, peak MiB next to one (T, T) matrix's MiB)."""
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


def timing_cell(*, cpu_sizes: Sequence[int] = (256, 512), cuda_sizes: Sequence[int] = (1024, 2048, 4096, 8192),
                batch_heads: int = 8, d_k: int = 64, find_largest: bool = True, repeats: int = 5) -> list[Row]:
    """Notebook 07's CUDA timing cell: naive vs SDPA on the GPU, or a plain statement and a CPU run.

    On CUDA: a 16-bit dtype and fp32, ms, achieved TFLOP/s, peak memory, the SDPA
    backend picked, the largest T the naive version fits, and published numbers
    to compare with. On a CPU-only machine: says so, then runs the same
    measurement on the CPU at `cpu_sizes`. Prints everything; returns the rows.
    """
    message = cuda_skip_message()
    if message is None:
        device = torch.device("cuda")
        print(header(device, None, batch_heads, d_k, False))
        rows = run_benchmark(device=device, dtypes=default_dtypes(device), sizes=cuda_sizes,
                             batch_heads=batch_heads, d_k=d_k, impls=("naive", "sdpa"), repeats=repeats)
        print(format_table(rows))
        for line in ratios(rows):
            print(line)
        peak = peak_tflops_for(torch.cuda.get_device_name(device))
        best = max((r for r in rows if r.tflops), key=lambda r: r.tflops, default=None)
        if best is not None and peak:
            print(f"best: {best.impl} {best.dtype} at T={best.T}: {best.tflops:.0f} TFLOP/s = "
                  f"{100 * best.tflops / peak:.0f}% of this GPU's dense 16-bit peak ({peak:.0f})")
        if find_largest:
            for dtype in default_dtypes(device):
                ok, bad = largest_naive_T_cuda(dtype, batch_heads=batch_heads, d_k=d_k)
                print(f"largest T the naive version fits ({dtype}, batch*heads {batch_heads}): {ok} "
                      f"(out of memory at {bad})")
        print("published, for comparison (TFLOP/s):",
              ", ".join(f"{k} {v}" for k, v in PUBLISHED_TFLOPS.items()))
        return rows
    print(message)
    threads = torch.get_num_threads()
    print(header("cpu", threads, batch_heads, d_k, False))
    rows = run_benchmark(device="cpu", dtypes=("float32",), sizes=cpu_sizes, batch_heads=batch_heads, d_k=d_k,
                         impls=("naive", "sdpa"), repeats=repeats, num_threads=threads)
    print(format_table(rows))
    for line in ratios(rows):
        print(line)
    free = available_memory_bytes("cpu")
    if free:
        T = cost.largest_T_for_memory(free, "float32", heads=batch_heads, matrices=2)
        print(f"largest T the naive version fits: not tried on a CPU (running out of memory there swaps or "
              f"stops the process instead of raising); predicted from {cost.format_bytes(free)} free: T = {T:,}")
    return rows
