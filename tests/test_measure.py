"""helpers.measure: timing one call (warm-up, synchronisation, interleaving) and its peak memory.

No timing is asserted (the machine's speed is not a test result); what is checked
is that the measurement code measures what it says: synchronisation points,
interleaving, and the peak-memory bookkeeping, on the CPU for real and on CUDA
with stand-ins.
"""
import tracemalloc
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from helpers import measure
from helpers.benchmarking import make_qkv, naive_attention
from helpers.fast_attention import lean_attention

# ---------------------------------------------------------------- timing

def test_cpu_threads_sets_and_restores():
    before = torch.get_num_threads()
    with measure.cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads should be a whole number >= 1"):
        with measure.cpu_threads(0):
            pass


def test_time_calls_warms_up_and_interleaves():
    calls = []
    timings = measure.time_calls({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                               warmup=2, repeats=3, min_sample_s=0.0)
    assert set(timings) == {"a", "b"}
    assert all(len(t.samples) == 3 and t.median >= 0 for t in timings.values())
    # warm-up (2) per function, then rounds alternate a, b, a, b, a, b: one call per sample.
    assert calls[:4] == ["a", "a", "b", "b"]
    assert calls[4:] == ["a", "b"] * 3


def test_time_calls_calibrates_once_when_looping_fast_functions():
    calls = []
    measure.time_calls({"a": lambda: calls.append("a")}, warmup=1, repeats=1, min_sample_s=1e-9)
    assert calls == ["a", "a", "a"]  # warm-up, calibration, one sample of one call


def test_time_calls_loops_fast_functions_to_a_measurable_sample():
    count = []
    measure.time_calls({"f": lambda: count.append(1)}, warmup=0, repeats=2, min_sample_s=0.01)
    assert len(count) > 3  # each sample ran many calls


def test_time_calls_bad_arguments():
    with pytest.raises(ValueError, match="at least one function"):
        measure.time_calls({})
    with pytest.raises(ValueError, match="repeats should be >= 1"):
        measure.time_calls({"f": lambda: None}, repeats=0)


def test_timing_median_and_paired_ratio():
    t = {"a": measure.Timing([0.002, 0.004, 0.100]), "b": measure.Timing([0.001, 0.002, 0.050])}
    assert t["a"].median == 0.004
    assert t["a"].ms == pytest.approx(4.0)
    assert measure.paired_ratio(t, "a", "b") == pytest.approx(2.0)


def test_cuda_sample_records_events_and_synchronises(monkeypatch):
    """The CUDA branch, exercised with stand-ins: events around the calls, synchronize before reading."""
    log = []

    class Event:
        def __init__(self, enable_timing):
            assert enable_timing
            self.name = f"event{len([x for x in log if x.startswith('new')])}"
            log.append(f"new {self.name}")

        def record(self):
            log.append(f"record {self.name}")

        def elapsed_time(self, other):
            log.append("elapsed")
            return 6.0  # milliseconds, for all calls together

    class Device:  # torch.cuda.device(...): make the timed GPU the current one, then restore
        def __init__(self, device):
            self.device = device

        def __enter__(self):
            log.append(f"enter {self.device}")

        def __exit__(self, *exc):
            log.append("exit")

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "device", Device)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    seconds = measure.one_sample(lambda: log.append("call"), "cuda:1", 3)
    assert seconds == pytest.approx(0.002)
    assert log == ["enter cuda:1", "new event0", "new event1", "sync", "record event0", "call", "call", "call",
                   "record event1", "sync", "elapsed", "exit"]


# ---------------------------------------------------------------- peak memory

def test_replay_peak_counts_allocations_at_start_and_frees_at_end():
    def ev(start, end, amount):
        return SimpleNamespace(time_range=SimpleNamespace(start=start, end=end), self_cpu_memory_usage=amount)

    # an operator that allocates 100 inside a child and frees it itself at its end
    events = [ev(0, 10, -100), ev(1, 2, 100), ev(3, 4, 50), ev(11, 11, -50)]
    assert measure._replay_peak(events) == 150
    assert measure._replay_peak([]) == 0


def test_cpu_peak_memory_sees_the_T_by_T_matrices():
    T, bh = 256, 2
    one_matrix = bh * T * T * 4
    Q, K, V = make_qkv(bh, T, 16)
    naive = measure.cpu_peak_bytes(lambda: naive_attention(Q, K, V))
    lean = measure.cpu_peak_bytes(lambda: lean_attention(Q, K, V))
    fused = measure.cpu_peak_bytes(lambda: F.scaled_dot_product_attention(Q, K, V))
    assert 2 * one_matrix <= naive < 2.5 * one_matrix, "the textbook version holds scores and weights at once"
    assert one_matrix <= lean < 1.5 * one_matrix, "one (T, T) buffer"
    assert fused < 0.5 * one_matrix, "the fused kernel never materialises (T, T)"
    assert measure.peak_memory_bytes(lambda: naive_attention(Q, K, V), "cpu") == naive


def test_tracemalloc_does_not_see_torch_allocations():
    """Why the profiler is used: Python's tracemalloc misses torch's C++ allocations."""
    Q, K, V = make_qkv(2, 256, 16)
    tracemalloc.start()
    naive_attention(Q, K, V)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.1 * 2 * 256 * 256 * 4


def test_cuda_peak_bytes_uses_the_allocator_counters(monkeypatch):
    log = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 1000)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: log.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 5000)
    assert measure.peak_memory_bytes(lambda: log.append("call"), "cuda") == 4000
    assert log == ["sync", "reset", "call", "sync"]
