"""Measuring one call of a function: how long it takes, and the most memory torch holds during it.

Nothing here knows about attention: every function takes zero-argument calls
(`fn()`), whatever tensors they use, on the CPU or a CUDA GPU.

    synchronize(device)                wait for all queued GPU work (a no-op on the CPU)
    cpu_threads(n)                     run a block with torch on n CPU threads, then restore
    one_sample(fn, device, number)     seconds per call, over `number` back-to-back calls
    Timing                             one function's samples (seconds), their median in s and ms
    time_calls({name: fn}, device)     warmed-up, synchronised, interleaved timings -> {name: Timing}
    paired_ratio(timings, a, b)        median over rounds of t_a / t_b
    cpu_peak_bytes(fn)                 peak extra bytes torch's CPU allocator held (profiler replay)
    cuda_peak_bytes(fn, device)        peak extra bytes on the GPU (the allocator's counters)
    peak_memory_bytes(fn, device)      whichever of the two fits the device

How time is measured. Every function is run `warmup` times first (the first calls
pay for memory allocation, kernel selection and caches). On CUDA, kernels run
asynchronously: the Python call returns before the GPU has finished, so a plain
clock measures only the launch. We record CUDA events around the calls and call
torch.cuda.synchronize() before reading them. On the CPU a perf_counter clock is
exact, and we pin the number of threads (reported with the result). The
functions are timed in interleaved rounds (a, b, c, a, b, c, ...) and the
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch

from helpers import validation as check

# --------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------


_NO_ARGUMENTS = "a function called with no arguments (e.g. lambda: f(x))"


def _checked(fn, number):
    """(fn, number) for one_sample: fn callable with no arguments, number a whole number >= 1."""
    return check.a_function(fn, "fn", _NO_ARGUMENTS), check.whole_number(number, "number", 1)


def _device(device) -> torch.device:
    """'cpu', 'cuda', 'cuda:1' or a torch.device -> torch.device; a clear error for anything else."""
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device should be 'cpu', 'cuda' or a torch.device, but got {check.describe(device)} "
                        f"({device!r:.40}).")
    try:
        return torch.device(device)
    except RuntimeError:
        raise ValueError(f"device should be 'cpu', 'cuda' or a torch.device, but got {device!r:.40}.") from None


# --------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run the block with torch using `n` CPU threads (None: leave as is); restore afterwards."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(check.whole_number(n, "num_threads", 1))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def synchronize(device) -> None:
    """Wait for all queued GPU work (a no-op on the CPU)."""
    if _device(device).type == "cuda":
        torch.cuda.synchronize(device)


def one_sample(fn: Callable, device, number: int) -> float:
    """Seconds per call of `fn`, averaged over `number` back-to-back calls."""
    fn, number = _checked(fn, number)   # a clear error for a bad argument
    if _device(device).type == "cuda":
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
    so clock resolution and launch overhead do not dominate; with
    `min_sample_s=0` every sample is one call (for slow functions: no extra run).
    """
    if not isinstance(functions, Mapping):
        raise TypeError(f"functions should be a dict {{name: function}}, e.g. {{'naive': lambda: f(x)}}, "
                        f"but got {check.describe(functions)}.")
    if not functions:
        raise ValueError("Give at least one function to time.")
    for name, fn in functions.items():
        check.a_function(fn, f"functions[{name!r}]", _NO_ARGUMENTS)
    _device(device)
    warmup = check.whole_number(warmup, "warmup", 0)
    repeats = check.whole_number(repeats, "repeats", 1)
    min_sample_s = check.real_number(min_sample_s, "min_sample_s", "a number of seconds >= 0", 0.0)
    timings = {name: Timing() for name in functions}
    with cpu_threads(num_threads):
        numbers = {}
        for name, fn in functions.items():
            for _ in range(warmup):
                fn()
            synchronize(device)
            if min_sample_s <= 0:
                numbers[name] = 1
                continue
            once = one_sample(fn, device, 1)
            numbers[name] = max(1, min(1000, math.ceil(min_sample_s / max(once, 1e-9))))
        for _ in range(repeats):
            for name, fn in functions.items():
                timings[name].samples.append(one_sample(fn, device, numbers[name]))
    return timings



def paired_ratio(timings: dict[str, Timing], numerator: str, denominator: str) -> float:
    """Median over rounds of t_numerator / t_denominator (robust to load that varies between rounds)."""
    if not isinstance(timings, Mapping):
        raise TypeError(f"timings should be the dict {{name: Timing}} that time_calls returns, "
                        f"but got {check.describe(timings)}.")
    for which, name in (("numerator", numerator), ("denominator", denominator)):
        if name not in timings:
            raise ValueError(f"{which} {name!r:.40} is not one of the timed functions: "
                             f"{', '.join(map(repr, timings))}.")
    a, b = timings[numerator].samples, timings[denominator].samples
    if not a or not b:
        raise ValueError(f"paired_ratio needs samples of both functions, but {numerator!r} has {len(a)} and "
                         f"{denominator!r} has {len(b)}.")
    if min(b) <= 0:
        raise ValueError(f"A sample of {denominator!r} took {min(b)} s, and a ratio cannot divide by it: "
                         "time it with a larger min_sample_s so that every sample is longer than the clock's tick.")
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

    fn = check.a_function(fn, "fn", _NO_ARGUMENTS)
    with _quiet_native_stderr():
        ran = None  # None: the profiler did not start; False: fn raised; True: fn returned
        try:
            with profiler.profile(profile_memory=True, use_kineto=False) as prof:
                ran = False
                result = fn()
                ran = True
                del result
        except (TypeError, RuntimeError):
            if ran is False:  # fn's own error: let it through, without calling fn a second time
                raise
            # a torch without the legacy profiler
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        profile_memory=True) as prof:
                result = fn()
                del result
    return _replay_peak(prof.function_events if hasattr(prof, "function_events") else prof.events())


def cuda_peak_bytes(fn: Callable, device="cuda") -> int:
    """Peak extra bytes on the GPU during one call: reset_peak_memory_stats, call, max_memory_allocated."""
    fn = check.a_function(fn, "fn", _NO_ARGUMENTS)
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
    if _device(device).type == "cuda":
        return cuda_peak_bytes(fn, device)
    return cpu_peak_bytes(fn)
