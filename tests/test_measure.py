"""helpers.measure: timing one call (warm-up, synchronisation, interleaving) and its peak memory.

No timing is asserted (the machine's speed is not a test result); what is checked
is that the measurement code measures what it says: synchronisation points,
interleaving, and the peak-memory bookkeeping, on the CPU for real and on CUDA
with stand-ins.
"""
import math
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
    with pytest.raises(ValueError, match="repeats should be a whole number >= 1"):
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


# ---------------------------------------------------------------- bad arguments

@pytest.mark.parametrize("number", [0, -1])
def test_one_sample_needs_at_least_one_call(number):
    """number=0 divided by zero, number=-1 returned a negative time."""
    with pytest.raises(ValueError, match="number should be a whole number >= 1"):
        measure.one_sample(lambda: None, "cpu", number)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(min_sample_s=math.nan), ValueError,
     "min_sample_s should be a number of seconds >= 0, a finite number, but got nan"),
    (dict(min_sample_s=-1.0), ValueError, "min_sample_s should be a number of seconds >= 0, but got -1.0"),
    (dict(min_sample_s="0.1"), TypeError, "min_sample_s should be a number of seconds"),
    (dict(warmup=-1), ValueError, "warmup should be a whole number >= 0"),
    (dict(warmup=1.5), TypeError, "warmup should be a whole number >= 0"),
    (dict(repeats=2.0), TypeError, "repeats should be a whole number >= 1"),
    (dict(device="gpu"), ValueError, "device should be 'cpu', 'cuda' or a torch.device"),
])
def test_time_calls_names_the_bad_argument(kwargs, error, match):
    calls = []
    with pytest.raises(error, match=match):
        measure.time_calls({"f": lambda: calls.append(1)}, **kwargs)
    assert calls == []  # refused before anything ran


def test_time_calls_wants_a_dict_of_functions():
    with pytest.raises(TypeError, match=r"functions should be a dict \{name: function\}.*got list of length 1"):
        measure.time_calls([lambda: None])
    with pytest.raises(TypeError, match=r"functions\['f'\] should be a function called with no arguments"):
        measure.time_calls({"f": 3})


def test_paired_ratio_names_the_functions_that_exist():
    t = {"a": measure.Timing([0.002]), "b": measure.Timing([0.001])}
    with pytest.raises(ValueError, match="denominator 'c' is not one of the timed functions: 'a', 'b'"):
        measure.paired_ratio(t, "a", "c")
    with pytest.raises(ValueError, match="took 0.0 s"):
        measure.paired_ratio({"a": measure.Timing([0.002]), "b": measure.Timing([0.0])}, "a", "b")


@pytest.mark.parametrize("error", [TypeError, RuntimeError])
def test_cpu_peak_bytes_lets_the_functions_own_error_through_once(error):
    """The profiler fallback caught TypeError/RuntimeError and called the function a second time."""
    calls = []

    def broken():
        calls.append(1)
        raise error("the function's own bug")

    with pytest.raises(error, match="the function's own bug"):
        measure.cpu_peak_bytes(broken)
    assert calls == [1]
    with pytest.raises(TypeError, match="fn should be a function called with no arguments"):
        measure.cpu_peak_bytes(torch.ones(3))
