"""Wall-clock timing for the notebooks' "how does it scale" experiments.

Timings are the one kind of output that differs on every machine: cells that
print them are not compared by the tests.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1,
                   min_seconds: float = 0.0) -> float:
    """Median wall-clock time of `fn()` over `repeats` runs, after `warmup` runs.

    With `min_seconds`, each measurement loops `fn` until that much time has
    passed and divides, so very fast functions are timed reliably.
    """
    if repeats < 1:
        raise ValueError(f"repeats should be at least 1, but got {repeats}.")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while True:
            fn()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        samples.append(elapsed / count)
    return statistics.median(samples)
