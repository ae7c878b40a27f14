"""Measuring attention: naive vs PyTorch's fused SDPA, in time and peak memory, on CPU or CUDA.

One module is used by notebook 07's timing cells and by `benchmarks/attention.py`,
so the notebook and the command line measure exactly the same thing.

    textbook_attention(Q, K, V)     the textbook formula as a bare function, line for line, without checks
    IMPLEMENTATIONS                 "naive", "lean", "tiled", "sdpa" (and "sdpa:flash", ... on request)
    prepare(name, Q, K, V, causal)  a zero-argument call of one of them, its mask built beforehand
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

What is timed is the mathematics only. The course's own functions check their
inputs (a mask row with no allowed key, NaN in the output); each such check is a
scan whose answer Python must wait for, and on a GPU that wait stops the queue of
kernels, so a timing loop would measure the waits. The timed versions therefore
run without those checks (textbook_attention; lean and tiled with checks=False),
and a causal mask is built once per size, outside the timed call, like the
inputs. SDPA does its own (cheap, asynchronous) checks, as it always does.

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
import gc
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


def native_bf16(device="cuda") -> bool:
    """Whether this GPU computes bfloat16 in hardware (compute capability 8.0 or newer: A100, H100, RTX 30xx, ...).

    torch.cuda.is_bf16_supported() alone also says True on older GPUs (T4, V100)
    that only emulate bf16, slowly; timing them in bf16 would measure the emulation.
    """
    return torch.cuda.is_bf16_supported() and tuple(torch.cuda.get_device_capability(device)) >= (8, 0)


def default_dtypes(device) -> list[str]:
    """What to time by default: on CUDA a 16-bit type (bf16 if native, else fp16) and fp32; on CPU fp32."""
    device = torch.device(device)
    if device.type == "cuda":
        half = "bfloat16" if native_bf16(device) else "float16"
        return [half, "float32"]
    return ["float32"]


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def cuda_unavailable_reason() -> str | None:
    """None if a CUDA GPU is usable, else why not (a CPU-only build, an Apple GPU, or no GPU/driver found)."""
    if torch.cuda.is_available():
        return None
    if _mps_available():
        return (f"this PyTorch ({torch.__version__}) runs on an Apple GPU (MPS), which is present but "
                "not timed by this course (its timing code is written for CUDA)")
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


#: Nominal dense (no sparsity) bf16/fp16 tensor-core peaks from NVIDIA's datasheets, TFLOP/s.
#: Paper figures at full clock: no real kernel reaches them.
PEAK_TFLOPS = {
    "A100": 312,
    "H100 SXM": 989,
    "H100 PCIe": 756,
    "H200": 989,
}

#: Published forward-pass attention numbers (TFLOP/s, 16-bit inputs), each with the GPU it ran on.
PUBLISHED_TFLOPS = {
    "FlashAttention-2 on A100 (up to)": (230, "A100"),
    "FlashAttention-2 on H100 (up to)": (335, "H100 SXM"),
    "FlashAttention-3 on H100, fp16 (up to)": (740, "H100 SXM"),
}


def peak_tflops_for(gpu_name: str) -> float | None:
    """The nominal dense bf16/fp16 peak of a GPU named like torch.cuda.get_device_name() says, or None.

    A100 (SXM or PCIe) 312; H100 SXM, H200 and GH200 989; H100 PCIe 756. None when
    unsure, e.g. for the NVL variants (their clocks and power limits differ).
    """
    if not isinstance(gpu_name, str):
        raise TypeError(f"gpu_name should be a string such as 'NVIDIA H100 80GB HBM3', but got {gpu_name!r}.")
    name = gpu_name.upper()
    if "NVL" in name:
        return None
    if "H100" in name:
        return float(PEAK_TFLOPS["H100 PCIe"] if "PCIE" in name else PEAK_TFLOPS["H100 SXM"])
    if "H200" in name:
        return float(PEAK_TFLOPS["H200"])
    if "A100" in name:
        return float(PEAK_TFLOPS["A100"])
    return None


def published_lines() -> list[str]:
    """Each published number as a share of its own GPU's nominal peak ('... 230 TFLOP/s = 73.7% of the A100's 312')."""
    lines = []
    for name, (value, gpu) in PUBLISHED_TFLOPS.items():
        peak = PEAK_TFLOPS[gpu]
        lines.append(f"{name + ':':<40} {value:>4} TFLOP/s = {100 * value / peak:4.1f}% of the {gpu}'s {peak}")
    return lines


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


def one_sample(fn: Callable, device, number: int) -> float:
    """Seconds per call of `fn`, averaged over `number` back-to-back calls."""
    if torch.device(device).type == "cuda":
        with torch.cuda.device(device):  # events and streams of the GPU being timed, not of GPU 0
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
            once = one_sample(fn, device, 1)
            numbers[name] = max(1, min(1000, math.ceil(min_sample_s / max(once, 1e-9))))
        for _ in range(repeats):
            for name, fn in functions.items():
                timings[name].samples.append(one_sample(fn, device, numbers[name]))
    return timings


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
    width = max(len(label) for label in measured_ms)
    ref = REFERENCE_CPU["ms"]
    lines = [f"{'':<{width}}  {'here':>9}  {'reference':>9}"]
    for label, ms in measured_ms.items():
        kept = f"{ref[label]:9.1f}" if label in ref else f"{'':>9}"
        lines.append(f"{label:<{width}}  {ms:9.1f}  {kept}")
    lines.append(f"(reference: {REFERENCE_CPU['machine']}, measured {REFERENCE_CPU['date']})")
    return "\n".join(lines)


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


def is_out_of_memory(error: BaseException) -> bool:
    """Whether an error means the GPU ran out of memory.

    torch.cuda.OutOfMemoryError for PyTorch's own allocations; a cuBLAS or cuDNN
    workspace that cannot be allocated arrives as a plain RuntimeError whose
    message says CUBLAS_STATUS_ALLOC_FAILED (or "out of memory").
    """
    if isinstance(error, torch.cuda.OutOfMemoryError):
        return True
    if isinstance(error, RuntimeError):
        message = str(error).lower()
        return "out of memory" in message or "alloc_failed" in message
    return False


def release_cuda_memory() -> None:
    """Collect unreachable tensors (e.g. held by a finished traceback), then return cached blocks to the GPU."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def find_largest_T(run: Callable[[int], object], sizes: Iterable[int],
                   out_of_memory: Callable[[BaseException], bool] = is_out_of_memory,
                   cleanup: Callable[[], None] | None = None) -> tuple[int | None, int | None]:
    """Try `run(T)` for growing sizes; return (largest T that ran, first T that ran out of memory).

    Stops at the first error for which `out_of_memory(error)` is true (caught; any
    other error propagates). `cleanup` (e.g. release_cuda_memory) runs after every
    attempt, once the except block is left: until then the traceback still holds
    the failed attempt's tensors. (None, T0) means even the first size failed;
    (T_last, None) means all of them fitted.
    """
    largest = None
    for T in sorted(sizes):
        failed = False
        try:
            result = run(T)
            del result
        except Exception as error:
            if not out_of_memory(error):
                raise
            failed = True
        # Here the exception and its traceback (and the (T, T) tensors its frames held) are gone.
        if cleanup:
            cleanup()
        if failed:
            return largest, T
        largest = T
    return largest, None


def search_largest_T(run: Callable[[int], object], *, start: int = 1024, limit: int = 2**20, refine_to: int = 1024,
                     out_of_memory: Callable[[BaseException], bool] = is_out_of_memory,
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

    Catches torch.cuda.OutOfMemoryError (and cuBLAS allocation failures, see
    is_out_of_memory) and frees the memory after each attempt. Returns (largest T
    that ran, smallest T found to fail).
    """
    if torch.device(device).type != "cuda":
        raise RuntimeError("largest_naive_T_cuda needs a CUDA device: on the CPU running out of memory does not "
                           "raise, the operating system swaps or stops the process. Use "
                           "cost.largest_T_for_memory for a prediction instead.")
    device = resolve_device(device)

    def run(T):
        Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype)
        out = textbook_attention(Q, K, V)
        synchronize(device)
        return out

    with torch.cuda.device(device):
        return search_largest_T(run, start=start, limit=limit, refine_to=refine_to, cleanup=release_cuda_memory)


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
    device = resolve_device(device)
    for name in impls:
        _check_name(name)
    memory_sizes = set(sizes) if memory is True else set() if memory is False else set(memory)
    rows = []
    for dtype in dtypes:
        dtype_name = cost.dtype_name(dtype)
        exhausted: set[str] = set()
        for T in sorted(sizes):
            Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype_name, seed=seed)
            flops = forward_flops(batch_heads, T, d_k, causal)
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
                    synchronize(device)
                except RuntimeError as error:
                    if is_out_of_memory(error):
                        out_of_memory = True
                    else:
                        row.note = f"cannot run: {str(error).splitlines()[0][:60]}"
                        continue
                if out_of_memory:  # after the except block, when the traceback no longer holds the tensors
                    row.note = "out of memory"
                    exhausted.add(name)
                    call = None
                    if device.type == "cuda":
                        release_cuda_memory()
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
                    if T in memory_sizes:
                        with cpu_threads(num_threads):
                            row.peak_bytes = peak_memory_bytes(runnable[name], device)
            rows.extend(table[name] for name in impls)
            del Q, K, V, runnable, call
            if device.type == "cuda":
                release_cuda_memory()
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
                  f"{100 * best.tflops / peak:.0f}% of this GPU's nominal dense 16-bit peak ({peak:.0f})")
        if find_largest:
            for dtype in default_dtypes(device):
                ok, bad = largest_naive_T_cuda(dtype, batch_heads=batch_heads, d_k=d_k)
                print(f"largest T the naive version fits ({dtype}, batch*heads {batch_heads}): {ok} "
                      f"(out of memory at {bad})")
        print("published, for comparison (nominal dense bf16 peaks from NVIDIA's datasheets):")
        for line in published_lines():
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
    free = available_memory_bytes("cpu")
    if free:
        T = cost.largest_T_for_memory(free, "float32", heads=batch_heads, matrices=2)
        print(f"largest T the naive version fits: not tried on a CPU (running out of memory there swaps or "
              f"stops the process instead of raising); predicted from {cost.format_bytes(free)} free: T = {T:,}")
    return rows
