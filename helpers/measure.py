"""Measuring attention: the time and peak memory of one call, on the CPU or a CUDA GPU (notebook 07, benchmarks/).

    resolve_device("auto"), torch_dtype("bf16"), cuda_skip_message(), synchronize(device), cpu_threads(n)
    one_sample(fn, device, number)      seconds per call, over `number` back-to-back calls
    time_calls({name: fn}, device)      warmed-up, synchronised, interleaved timings -> {name: Timing}
    paired_ratio(timings, a, b)         median over rounds of t_a / t_b
    peak_memory_bytes(fn, device)       the most extra bytes torch held during one call
    sdpa_backend(Q, K, V)               which kernel this PyTorch's F.scaled_dot_product_attention picks
    IMPLEMENTATIONS, make_qkv           naive, lean, tiled and sdpa, and their random inputs; WITH_FLASH adds flash
    run_benchmark(...) -> [Row]         time, TFLOP/s and peak memory over sizes and dtypes
    format_table, ratios, header        the rows as text
    timing_cell(peaks), piece_calls()   notebook 07's CUDA timing cell (CPU fallback); the textbook's steps one by one

Time: warm-up calls first, CUDA events read after a synchronize, interleaved rounds
(a, b, c, a, b, c, ...) and their median. Memory: the CUDA allocator's peak counter; on the
CPU, one call under the PyTorch profiler, which records the allocator's running total at every allocation and free."""
import contextlib
import json
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from helpers import cost
from helpers.attention_torch import attention_weights, causal_mask
from helpers.environment import best_device
from helpers.fast_attention import flash_forward, lean_attention, tiled_attention

# ---- Device and dtype

def resolve_device(device="auto") -> torch.device:
    """'auto' -> cuda if a GPU is usable, else cpu (an Apple GPU is not timed); cuda without one: a clear error."""
    if str(device) == "auto":
        return torch.device("cuda" if best_device() == "cuda" else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and best_device() != "cuda":
        raise RuntimeError(f"device {str(device)!r} was asked for, but {cuda_unavailable_reason()}.")
    return device


def torch_dtype(dtype) -> torch.dtype:
    """'fp32' / 'float32' / torch.float32 -> torch.float32 (also bf16, fp16, fp64)."""
    name = cost.dtype_name(dtype)
    if name == "float8":
        raise ValueError("float8 cannot be timed here: use float64, float32, bfloat16 or float16.")
    return getattr(torch, name)


def default_dtypes(device) -> list[str]:
    """On CUDA a 16-bit type and fp32 (bf16 where the GPU computes it natively: A100 and newer); fp32 on the CPU."""
    if torch.device(device).type != "cuda":
        return ["float32"]
    native_bf16 = torch.cuda.get_device_capability(device) >= (8, 0)  # older GPUs only emulate bf16, slowly
    return ["bfloat16" if native_bf16 else "float16", "float32"]


def cuda_unavailable_reason() -> str | None:
    """None if a CUDA GPU is usable, else why not (a CPU-only build, an Apple GPU, or no GPU/driver found)."""
    if (device := best_device()) == "cuda":
        return None
    why = ("runs on an Apple GPU (MPS), which the course does not time" if device == "mps" else
           "is a CPU-only build, without CUDA support" if torch.version.cuda is None else
           f"supports CUDA {torch.version.cuda}, but no GPU or driver was found")
    return f"this PyTorch ({torch.__version__}) {why}"


def cuda_skip_message() -> str | None:
    """None if a CUDA GPU is usable, else one plain sentence saying why not and what happens instead."""
    why = cuda_unavailable_reason()
    return None if why is None else (f"No CUDA GPU here: {why}. The CUDA timing is skipped; "
                                     "the same measurement runs on the CPU instead, at a small size.")


# ---- Time
@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run the block with torch using `n` CPU threads (None: leave as is); restore afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(before if n is None else n)
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
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        synchronize(device)
        start.record()
        for _ in range(number):
            fn()
        end.record()
        torch.cuda.synchronize(device)                  # elapsed_time is valid once both events have happened
        return start.elapsed_time(end) / 1e3 / number   # elapsed_time is in milliseconds
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


@dataclass
class Timing:
    """Seconds per call: the samples, their median in seconds and in milliseconds."""
    samples: list[float] = field(default_factory=list)
    median, ms = property(lambda self: statistics.median(self.samples)), property(lambda self: self.median * 1e3)


def time_calls(functions: dict[str, Callable], device="cpu", *, warmup: int = 2, repeats: int = 7,
               min_sample_s: float = 0.002, num_threads: int | None = None) -> dict[str, Timing]:
    """Time zero-argument functions in interleaved rounds: {name: Timing}. A sample loops a fast function until
    about `min_sample_s` has passed, so the clock's resolution and launch overheads do not dominate."""
    if not isinstance(functions, dict) or not all(map(callable, functions.values())):   # f(Q, K, V): its result
        got = ({k: type(f).__name__ for k, f in functions.items()} if isinstance(functions, dict)
               else type(functions).__name__)
        raise TypeError(f"functions should map names to functions of no arguments, {{'name': lambda: f(Q, K, V)}}, "
                        f"but got {got}.")
    timings = {name: Timing() for name in functions}
    with cpu_threads(num_threads):
        numbers = {}
        for name, fn in functions.items():
            for _ in range(warmup):
                fn()
            synchronize(device)
            numbers[name] = max(1, min(1000, math.ceil(min_sample_s / max(one_sample(fn, device, 1), 1e-9))))
        for _ in range(repeats):
            for name, fn in functions.items():
                timings[name].samples.append(one_sample(fn, device, numbers[name]))
    return timings


def paired_ratio(timings: dict[str, Timing], numerator: str, denominator: str) -> float:
    """Median over rounds of t_numerator / t_denominator (robust to load that varies between rounds)."""
    return statistics.median(a / b for a, b in zip(timings[numerator].samples, timings[denominator].samples))


# ---- Peak memory
def cpu_peak_bytes(fn: Callable) -> int:
    """Peak extra bytes torch's CPU allocator held during one call of `fn`: the profiler stamps every allocation and
    free with the allocator's running total, and the peak is the largest total less the one before the first."""
    if not callable(fn):   # cpu_peak_bytes(f(Q, K, V)): the call already ran, before the measurement began
        raise TypeError(f"fn should be a function of no arguments, lambda: f(Q, K, V), but got {type(fn).__name__}.")
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)   # C-level stderr silenced: the profiler prints a
    os.dup2(null, 2)                                              # timestamped line each time it starts and stops
    try:
        with torch.autograd.profiler.profile(profile_memory=True, use_kineto=True) as prof:
            fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as trace:
            events = json.load(trace)["traceEvents"]
    memory = sorted((e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0),
                    key=lambda e: e["ts"])                         # the CPU's (type 0), in order
    if not memory:
        return 0
    before = memory[0]["args"]["Total Allocated"] - memory[0]["args"]["Bytes"]   # held before the call
    return max(0, max(e["args"]["Total Allocated"] for e in memory) - before)


def peak_memory_bytes(fn: Callable, device="cpu") -> int:
    """Peak extra bytes torch holds during one call of `fn`, on CUDA or on the CPU."""
    if torch.device(device).type != "cuda":
        return cpu_peak_bytes(fn)
    synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def sdpa_backend(Q, K, V, causal: bool = False) -> str:
    """The kernel F.scaled_dot_product_attention picks for these inputs: 'flash', 'math', ... ('unknown' where
    this PyTorch's private dispatcher, torch._fused_sdp_choice, does not answer; the choice changes by version)."""
    try:
        from torch.nn.attention import SDPBackend
        index = int(torch._fused_sdp_choice(Q, K, V, None, 0.0, causal))
        name = {int(b): n.lower().replace("_attention", "") for n, b in SDPBackend.__members__.items()}.get(index)
        return {"math": "math (unfused)", "efficient": "memory-efficient", None: "unknown"}.get(name, name)
    except (AttributeError, ImportError, RuntimeError, TypeError):
        return "unknown"


# ---- The implementations compared, and the benchmark
def _with_mask(fn):
    """fn(Q, K, V, mask) as a preparer: a causal mask is built here, once, not inside the timed call."""
    def prepare(Q, K, V, causal=False):
        mask = causal_mask(Q.shape[-2], K.shape[-2], device=Q.device) if causal else None
        return lambda: fn(Q, K, V, mask)
    return prepare


#: name -> (what it is, preparer(Q, K, V, causal) -> a zero-argument call).
IMPLEMENTATIONS: dict[str, tuple[str, Callable]] = {
    "naive": ("the course's attention_weights(Q, K, mask) @ V: scores, scaled copy, softmax (three (T, T) tensors)",
              _with_mask(lambda Q, K, V, mask: attention_weights(Q, K, mask) @ V)),
    "lean": ("same maths, one (T, T) buffer, scale folded into Q, softmax in place", _with_mask(lean_attention)),
    "tiled": ("same maths, 128 queries at a time: each tile of scores stays in cache",
              lambda Q, K, V, causal=False: lambda: tiled_attention(Q, K, V, causal)),
    "sdpa": ("torch.nn.functional.scaled_dot_product_attention (fused; picks its backend)",
             lambda Q, K, V, causal=False: lambda: F.scaled_dot_product_attention(Q, K, V, is_causal=causal))}


def make_qkv(batch_heads: int, T: int, d_k: int, *, device="cpu", dtype="float32", seed: int = 0):
    """Random Q, K, V, each (1, batch_heads, T, d_k): 4-D, the layout fused kernels want."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, batch_heads, T, d_k, generator=g).to(device, torch_dtype(dtype)) for _ in range(3))


def is_out_of_memory(error: BaseException) -> bool:
    """Whether an error means the GPU ran out of memory (PyTorch's own, or a cuBLAS workspace's)."""
    message = str(error).lower()
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in message or "alloc_failed" in message


@dataclass
class Row:
    """One implementation at one size: time, achieved TFLOP/s, peak memory, SDPA backend or a note."""
    impl: str
    dtype: str
    T: int
    flops: int
    score_bytes: int
    ms: float | None = None
    tflops: float | None = None
    peak_bytes: int | None = None
    note: str = ""
    samples_ms: list[float] = field(default_factory=list)


def run_benchmark(*, device="cpu", dtypes=("float32",), sizes=(256, 512, 1024), batch_heads: int = 8,
                  d_k: int = 64, causal: bool = False, impls=("naive", "lean", "tiled", "sdpa"),
                  implementations=IMPLEMENTATIONS, warmup: int = 2, repeats: int = 7, num_threads: int | None = None,
                  memory=True, seed: int = 0) -> list[Row]:
    """Time (and measure the peak memory of) each implementation at each size and dtype: one Row each.
    `memory`: True at every size, False at none, or a collection of sizes. An implementation that runs out of GPU
    memory gets the note 'out of memory' and is skipped at larger sizes; one that cannot run these inputs gets its
    error as the note. FLOPs: 4·B·H·T²·d_k, halved when causal for tiled, flash, fused SDPA (naive, lean: all T²);
    a call with `flops` of its own (the benchmark's mm) counts those."""
    device, sizes = resolve_device(device), ((sizes,) if isinstance(sizes, int) else sizes)   # one size, or several
    impls = (impls,) if isinstance(impls, str) else impls   # one name, or several
    if unknown := [name for name in impls if name not in implementations]:
        raise ValueError(f"impls should be among {list(implementations)}, but got {unknown}" + " (for flash, pass "
                         "implementations=measure.WITH_FLASH)" * ("flash" in unknown) + ".")
    memory_sizes, rows = (set(sizes) if memory is True else set(memory or ())), []
    for dtype in map(cost.dtype_name, (dtypes,) if isinstance(dtypes, str) else dtypes):   # "bf16", not "b", "f"
        exhausted = set()
        for T in sorted(sizes):
            Q, K, V = make_qkv(batch_heads, T, d_k, device=device, dtype=dtype, seed=seed)
            flops, table, calls = cost.attention_flops(T, d_k, heads=batch_heads)["total"], {}, {}
            for name in impls:
                skips = causal and (name.startswith(("tiled", "flash", "sdpa")) and name != "sdpa:math")
                row = table[name] = Row(name, dtype, T, flops // 2 if skips else flops,
                                        cost.score_matrix_bytes(T, dtype, heads=batch_heads))
                if name in exhausted:
                    row.note = "skipped (out of memory at a smaller T)"
                    continue
                call = implementations[name][1](Q, K, V, causal)
                row.flops = getattr(call, "flops", row.flops)   # a call that does other work than attention (mm)
                try:
                    call()
                    synchronize(device)
                except RuntimeError as error:
                    row.note = "out of memory" if is_out_of_memory(error) else f"cannot run: {str(error)[:60]}"
                if row.note:  # outside the except block, so that its traceback no longer holds the tensors
                    if row.note == "out of memory":
                        exhausted.add(name)
                    torch.cuda.empty_cache()   # a no-op unless CUDA was initialised
                    continue
                row.note, calls[name] = (sdpa_backend(Q, K, V, causal) if name == "sdpa" else ""), call
            timings = time_calls(calls, device, warmup=max(warmup - 1, 0), repeats=repeats, num_threads=num_threads)
            for name, timing in timings.items():
                row = table[name]
                row.ms, row.samples_ms = timing.ms, [s * 1e3 for s in timing.samples]
                row.tflops = row.flops / timing.median / 1e12
                if T in memory_sizes:
                    with cpu_threads(num_threads):
                        row.peak_bytes = peak_memory_bytes(calls[name], device)
            rows.extend(table.values())
            del Q, K, V, calls
            torch.cuda.empty_cache()
    return rows


def format_table(rows: list[Row]) -> str:
    """The rows as an aligned text table (ms, TFLOP/s, peak MiB next to one (T, T) matrix's MiB: 0.25, not 0.2)."""
    lines = [("impl", "dtype", "T", "ms", "TFLOP/s", "peak MiB", "(T,T) MiB", "SDPA backend / note")]
    lines += [(r.impl, r.dtype, str(r.T), "" if r.ms is None else f"{r.ms:.3f}",
               "" if r.tflops is None else f"{r.tflops:.3g}",
               *("" if n is None else f"{n / 2**20:.{1 + (n < 2**20)}f}" for n in (r.peak_bytes, r.score_bytes)),
               r.note) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(8)]
    out = ["  ".join(c.rjust(w) if 2 <= i <= 6 else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths))).rstrip()
           for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def ratios(rows: list[Row], baseline: str = "sdpa") -> list[str]:
    """'T=1024 float32: naive 4.02x, lean 1.21x the time of sdpa' lines (paired medians over rounds)."""
    lines = []
    for dtype, T in sorted({(r.dtype, r.T) for r in rows}):
        group = {r.impl: r.samples_ms for r in rows if r.dtype == dtype and r.T == T and r.samples_ms}
        if (base := group.pop(baseline, None)) and group:
            parts = [f"{name} {statistics.median(a / b for a, b in zip(s, base)):.2f}x" for name, s in group.items()]
            lines.append(f"T={T} {dtype}: {', '.join(parts)} the time of {baseline}")
    return lines


def header(device, num_threads: int | None, batch_heads: int, d_k: int, causal: bool) -> str:
    """One line saying what was measured on what."""
    device = torch.device(device)
    where = (f"cuda ({torch.cuda.get_device_name(device)})" if device.type == "cuda"
             else f"cpu ({num_threads or torch.get_num_threads()} threads)")
    return (f"device {where}, torch {torch.__version__}, batch*heads {batch_heads}, d_k {d_k}, "
            f"causal {'yes' if causal else 'no'}; forward FLOPs 4*B*H*T^2*d_k"
            f"{' (/ 2 for tiled, flash and fused SDPA, which skip hidden pairs)' if causal else ''}")


# ---- Notebook 07: the timing cell and the steps one by one
def timing_cell(peaks: dict[str, float], *, cpu_sizes=(256, 512), cuda_sizes=(1024, 2048, 4096, 8192),
                batch_heads: int = 8, d_k: int = 64, repeats: int = 5, impls=("naive", "sdpa"),
                implementations=IMPLEMENTATIONS) -> list[Row]:
    """`impls` (naive vs SDPA) on a CUDA GPU (16-bit and fp32), or a plain statement and the same run on the CPU.
    `peaks`: {GPU name: nominal dense 16-bit TFLOP/s}; a GPU whose name holds every word of a key (the first such
    key) is compared with that peak. Prints everything; returns the rows."""
    message = cuda_skip_message()
    device, threads = (torch.device("cpu"), torch.get_num_threads()) if message else (torch.device("cuda"), None)
    if message:
        print(message)
    print(header(device, threads, batch_heads, d_k, False))
    rows = run_benchmark(device=device, dtypes=default_dtypes(device), sizes=cpu_sizes if message else cuda_sizes,
                         batch_heads=batch_heads, d_k=d_k, impls=impls, implementations=implementations,
                         repeats=repeats, num_threads=threads)
    print(format_table(rows))
    print(*ratios(rows), sep="\n")
    if message:
        return rows
    gpu = torch.cuda.get_device_name(device).upper()
    peak = next((p for name, p in peaks.items() if all(w in gpu for w in name.upper().split())), None)
    half = [r for r in rows if r.tflops and r.dtype in ("bfloat16", "float16")]  # the peak is a 16-bit figure
    for impl in reversed(impls):
        best = max((r for r in half if r.impl == impl), key=lambda r: r.tflops, default=None)
        if best and peak:
            print(f"best {impl} ({best.dtype}, T={best.T}): {best.tflops:.0f} TFLOP/s = {100 * best.tflops / peak:.0f}%"
                  f" of this GPU's nominal dense 16-bit peak ({peak:.0f})")
    return rows


def piece_calls(batch_heads: int = 8, T: int = 1024, d_k: int = 64, *, seed: int = 0) -> dict[str, Callable]:
    """The textbook's steps one by one, next to SDPA's whole call (4-D and 3-D): {label: zero-argument call}."""
    Q, K, V = make_qkv(batch_heads, T, d_k, seed=seed)    # each (1, B·H, T, d_k)
    q = (Q[0] / math.sqrt(d_k)).contiguous()               # (B·H, T, d_k)
    k_t = K[0].transpose(1, 2).contiguous()                # (B·H, d_k, T)
    S = torch.bmm(q, k_t)                                  # (B·H, T, T): the buffer, allocated once
    Q3, K3, V3 = (x[0].contiguous() for x in (Q, K, V))    # (B·H, T, d_k): 3-D, same numbers
    return {"Q Kᵀ into a (T, T) buffer": lambda: torch.bmm(q, k_t, out=S),
            "softmax of the buffer, in place": lambda: torch.softmax(S, dim=-1, out=S),
            "W · V": lambda: torch.bmm(S, V3),                 # S now holds the weights
            "SDPA, whole call, 4-D inputs": lambda: F.scaled_dot_product_attention(Q, K, V),
            "SDPA, whole call, 3-D inputs": lambda: F.scaled_dot_product_attention(Q3, K3, V3)}


# ---- Notebook 11: FlashAttention's loop, timed beside the others
def flash_preparer(block_q: int = 256, block_k: int = 512):
    """A preparer like IMPLEMENTATIONS': the FlashAttention loop unchecked (no check inside a timing), these tiles."""
    return lambda Q, K, V, causal=False: lambda: flash_forward(Q, K, V, None, causal, block_q, block_k)[0]


WITH_FLASH = {**IMPLEMENTATIONS, "flash": ("FlashAttention's loop in PyTorch: 256 queries x 512 keys a tile, "
                                           "a running softmax", flash_preparer())}
