"""The hardware a measurement runs on: device, dtype, peak speed, SDPA's kernel, and what fits in memory.

    resolve_device("auto")              cuda if a GPU is usable, else cpu; a clear error if cuda is asked for in vain
    resolve_dtype("bf16")               torch.bfloat16 (also fp32, fp16, fp64; names as helpers.cost reads them)
    native_bf16(device)                 whether the GPU computes bf16 in hardware (A100 and newer)
    default_dtypes(device)              what to time: a native 16-bit type and fp32 on CUDA, fp32 on the CPU
    cuda_unavailable_reason()           None, or why there is no CUDA GPU (CPU-only build, Apple GPU, no driver)
    cuda_skip_message()                 the same reason as one sentence for notebook 07's timing cell
    PEAK_TFLOPS, peak_tflops_for(name)  nominal dense 16-bit peaks of the A100, H100 and H200
    PUBLISHED_TFLOPS, published_lines() published attention TFLOP/s, each as a share of its own GPU's peak
    sdpa_backend(Q, K, V)               which kernel F.scaled_dot_product_attention picks: "flash", "math", ...
    available_memory_bytes(device)      free memory now (the GPU's, or the machine's on Linux)
    is_out_of_memory(error)             whether an error means the GPU ran out of memory
    release_cuda_memory()               collect garbage, then hand cached GPU blocks back
    find_largest_T(run, sizes)          the largest T that runs before an out-of-memory error
    search_largest_T(run)               the same, doubling T and then bisecting

helpers.benchmarking.largest_naive_T_cuda applies search_largest_T to the textbook
attention on a GPU.
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Iterable

import torch

from helpers import cost
from helpers import validation as check

# --------------------------------------------------------------------------------------
# Device and dtype
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


# --------------------------------------------------------------------------------------
# Peak speed: datasheets and published numbers
# --------------------------------------------------------------------------------------


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
# Which SDPA backend
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

    Q, K: (..., T, d_k)   V: (..., T, d_v), as they would be passed to SDPA (on the CPU
    the fused kernel wants 4-D (B, H, T, d_k); 3-D inputs get 'math (unfused)').
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


# --------------------------------------------------------------------------------------
# Memory: what is free, and how large a T fits
# --------------------------------------------------------------------------------------


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
    check.a_function(run, "run", "a function of T")
    check.a_function(out_of_memory, "out_of_memory", "a function of an error")
    if cleanup is not None:
        check.a_function(cleanup, "cleanup", "a function without arguments, or None")
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Iterable):
        raise TypeError(f"sizes should be a list of sequence lengths such as [1024, 2048], "
                        f"but got {check.describe(sizes)} ({sizes!r:.40}).")
    sizes = [check.positive_int(T, "each entry of sizes") for T in sizes]
    if not sizes:
        raise ValueError("sizes is empty: give at least one sequence length T to try, e.g. [1024, 2048].")
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
    start = check.positive_int(start, "start")
    limit = check.positive_int(limit, "limit")
    refine_to = check.positive_int(refine_to, "refine_to")
    if start > limit:
        raise ValueError(f"start should be at most limit (the largest T to try), but got start={start}, "
                         f"limit={limit}.")
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
