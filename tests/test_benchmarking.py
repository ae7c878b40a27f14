"""helpers.benchmarking and benchmarks/attention.py: the CPU path for real, the CUDA logic without a GPU.

No timing is asserted (the machine's speed is not a test result); what is checked
is that the measurement code measures what it says: synchronisation points,
interleaving, FLOP arithmetic, peak-memory bookkeeping and the skip message.
"""
import importlib.util
import json
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from helpers import benchmarking as bench

ROOT = Path(__file__).resolve().parents[1]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def load_script():
    spec = importlib.util.spec_from_file_location("attention_benchmark", ROOT / "benchmarks" / "attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the implementations agree

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("impl", ["naive", "lean", "tiled", "sdpa", "sdpa:math", "sdpa:flash"])
def test_every_cpu_implementation_computes_the_same_attention(impl, causal):
    Q, K, V = bench.make_qkv(4, 33, 16)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    torch.testing.assert_close(bench.get_implementation(impl)(Q, K, V, causal), expected, atol=1e-5, rtol=1e-5)


def test_textbook_attention_is_the_module_texts_function_and_equals_the_helpers_one():
    import inspect

    from helpers.attention_torch import causal_mask, scaled_dot_product_attention

    body = inspect.getsource(bench.textbook_attention)
    for line in ("scores = (Q @ K.transpose(-2, -1)) / math.sqrt(d_k)",
                 'scores = scores.masked_fill(mask == 0, float("-inf"))',
                 "return F.softmax(scores, dim=-1) @ V"):
        assert line in body
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(2, 6, 4, generator=g) for _ in range(3))
    torch.testing.assert_close(bench.textbook_attention(Q, K, V), scaled_dot_product_attention(Q, K, V))
    torch.testing.assert_close(bench.textbook_attention(Q, K, V, causal_mask(6)),
                               scaled_dot_product_attention(Q, K, V, causal_mask(6)))


def test_the_timed_call_builds_no_mask_and_runs_no_checks(monkeypatch):
    """The causal mask is built once, before timing; the timed calls scan nothing (no GPU waits)."""
    from helpers import fast_attention

    built = []
    real_mask = bench.causal_mask
    monkeypatch.setattr(bench, "causal_mask", lambda T, device=None: built.append(T) or real_mask(T, device))

    def refuse(*args, **kwargs):
        raise AssertionError("a check ran inside the timed call")

    monkeypatch.setattr(fast_attention, "refuse_nan", refuse)
    monkeypatch.setattr(fast_attention, "check_mask", refuse)
    monkeypatch.setattr(fast_attention, "check_qkv", refuse)
    Q, K, V = bench.make_qkv(2, 9, 4)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    for name in ("naive", "lean", "tiled"):
        built.clear()
        call = bench.prepare(name, Q, K, V, causal=True)
        mask_builds = len(built)
        for _ in range(3):
            torch.testing.assert_close(call(), expected)
        assert len(built) == mask_builds <= 1, name


def test_unknown_implementation_and_backend():
    with pytest.raises(ValueError, match="Unknown implementation 'fast'.*naive"):
        bench.get_implementation("fast")
    with pytest.raises(ValueError, match="Unknown implementation 'fast'"):
        bench.prepare("fast", None, None, None)
    with pytest.raises(ValueError, match="Unknown SDPA backend 'turbo'"):
        bench.forced_sdpa("turbo")


# ---------------------------------------------------------------- devices, dtypes, messages

@pytest.mark.parametrize("name, dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16),
                                         ("float16", torch.float16), (torch.float64, torch.float64)])
def test_resolve_dtype(name, dtype):
    assert bench.resolve_dtype(name) is dtype


def test_resolve_dtype_refuses_float8():
    with pytest.raises(ValueError, match="not supported for timing"):
        bench.resolve_dtype("float8")


def test_resolve_device_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.resolve_device("auto") == torch.device("cpu")
    assert bench.resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(RuntimeError, match="device 'cuda' was asked for, but this PyTorch"):
        bench.resolve_device("cuda")
    with pytest.raises(ValueError, match="Unknown device 'tpu'"):
        bench.resolve_device("tpu")
    with pytest.raises(TypeError, match="device should be"):
        bench.resolve_device(0)


def test_skip_message_says_why(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(bench, "_mps_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    message = bench.cuda_skip_message()
    assert message.startswith("No CUDA GPU here: this PyTorch")
    assert "CPU-only build" in message and "runs on the CPU instead" in message
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert "supports CUDA 12.8, but no GPU or driver was found" in bench.cuda_skip_message()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert bench.cuda_skip_message() is None


def test_skip_message_on_an_apple_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(bench, "_mps_available", lambda: True)
    message = bench.cuda_skip_message()
    assert "Apple GPU (MPS), which is present but not timed" in message
    assert "CPU-only build" not in message


@pytest.mark.parametrize("bf16, capability, half", [
    (True, (9, 0), "bfloat16"),   # H100
    (True, (8, 0), "bfloat16"),   # A100
    (True, (7, 5), "float16"),    # T4: is_bf16_supported() says True, but only emulates bf16
    (True, (7, 0), "float16"),    # V100
    (False, (8, 6), "float16"),
])
def test_default_dtypes(monkeypatch, bf16, capability, half):
    assert bench.default_dtypes("cpu") == ["float32"]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: capability)
    assert bench.default_dtypes("cuda") == [half, "float32"]


def test_make_qkv_is_seeded_4d_and_typed():
    Q, K, V = bench.make_qkv(3, 10, 8, dtype="bf16", seed=5)
    assert Q.shape == K.shape == V.shape == (1, 3, 10, 8)
    assert Q.dtype is torch.bfloat16
    torch.testing.assert_close(bench.make_qkv(3, 10, 8, seed=5)[0], bench.make_qkv(3, 10, 8, seed=5)[0])
    assert not torch.equal(Q.float(), K.float())
    with pytest.raises(ValueError, match="T should be at least 1"):
        bench.make_qkv(3, 0, 8)


# ---------------------------------------------------------------- arithmetic

def test_forward_flops_and_tflops():
    assert bench.forward_flops(8, 1024, 64) == 4 * 8 * 1024**2 * 64
    assert bench.forward_flops(8, 1024, 64, causal=True) == 2 * 8 * 1024**2 * 64
    assert bench.tflops_per_second(2e12, 0.5) == pytest.approx(4.0)
    # 4·B·H·T²·d at B·H = 64, T = 4096, d = 128 in 1.2 ms: 458 TFLOP/s.
    assert bench.tflops_per_second(bench.forward_flops(64, 4096, 128), 1.2e-3) == pytest.approx(458.1, abs=0.1)
    with pytest.raises(ValueError, match="seconds should be a positive time"):
        bench.tflops_per_second(1e9, 0.0)
    with pytest.raises(ValueError, match="flops should be >= 0"):
        bench.tflops_per_second(-1, 1.0)


def test_peak_tflops_for_known_gpus():
    assert bench.peak_tflops_for("NVIDIA H200") == 989.0
    assert bench.peak_tflops_for("NVIDIA GH200 480GB") == 989.0
    assert bench.peak_tflops_for("NVIDIA H100 80GB HBM3") == 989.0  # the SXM module's name
    assert bench.peak_tflops_for("NVIDIA H100 PCIe") == 756.0
    assert bench.peak_tflops_for("NVIDIA H100 NVL") is None          # unsure: not claimed
    assert bench.peak_tflops_for("NVIDIA A100-SXM4-80GB") == 312.0
    assert bench.peak_tflops_for("NVIDIA A100 80GB PCIe") == 312.0
    assert bench.peak_tflops_for("NVIDIA GeForce RTX 4090") is None
    with pytest.raises(TypeError, match="gpu_name should be a string"):
        bench.peak_tflops_for(None)


def test_published_numbers_are_compared_with_their_own_gpu():
    assert bench.PUBLISHED_TFLOPS["FlashAttention-3 on H100, fp16 (up to)"] == (740, "H100 SXM")
    lines = bench.published_lines()
    assert "230 TFLOP/s = 73.7% of the A100's 312" in lines[0]
    assert "335 TFLOP/s = 33.9% of the H100 SXM's 989" in lines[1]
    assert "740 TFLOP/s = 74.8% of the H100 SXM's 989" in lines[2]


# ---------------------------------------------------------------- timing

def test_cpu_threads_sets_and_restores():
    before = torch.get_num_threads()
    with bench.cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads should be a whole number >= 1"):
        with bench.cpu_threads(0):
            pass


def test_time_calls_warms_up_and_interleaves():
    calls = []
    timings = bench.time_calls({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                               warmup=2, repeats=3, min_sample_s=0.0)
    assert set(timings) == {"a", "b"}
    assert all(len(t.samples) == 3 and t.median >= 0 for t in timings.values())
    # warm-up (2) and one calibration call per function, then rounds alternate a, b, a, b, a, b.
    assert calls[:6] == ["a", "a", "a", "b", "b", "b"]
    assert calls[6:] == ["a", "b"] * 3


def test_time_calls_loops_fast_functions_to_a_measurable_sample():
    count = []
    bench.time_calls({"f": lambda: count.append(1)}, warmup=0, repeats=2, min_sample_s=0.01)
    assert len(count) > 3  # each sample ran many calls


def test_time_calls_bad_arguments():
    with pytest.raises(ValueError, match="at least one function"):
        bench.time_calls({})
    with pytest.raises(ValueError, match="repeats should be >= 1"):
        bench.time_calls({"f": lambda: None}, repeats=0)


def test_timing_median_and_paired_ratio():
    t = {"a": bench.Timing([0.002, 0.004, 0.100]), "b": bench.Timing([0.001, 0.002, 0.050])}
    assert t["a"].median == 0.004
    assert t["a"].ms == pytest.approx(4.0)
    assert bench.paired_ratio(t, "a", "b") == pytest.approx(2.0)


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
    seconds = bench.one_sample(lambda: log.append("call"), "cuda:1", 3)
    assert seconds == pytest.approx(0.002)
    assert log == ["enter cuda:1", "new event0", "new event1", "sync", "record event0", "call", "call", "call",
                   "record event1", "sync", "elapsed", "exit"]


# ---------------------------------------------------------------- peak memory

def test_replay_peak_counts_allocations_at_start_and_frees_at_end():
    def ev(start, end, amount):
        return SimpleNamespace(time_range=SimpleNamespace(start=start, end=end), self_cpu_memory_usage=amount)

    # an operator that allocates 100 inside a child and frees it itself at its end
    events = [ev(0, 10, -100), ev(1, 2, 100), ev(3, 4, 50), ev(11, 11, -50)]
    assert bench._replay_peak(events) == 150
    assert bench._replay_peak([]) == 0


def test_cpu_peak_memory_sees_the_T_by_T_matrices():
    T, bh = 256, 2
    one_matrix = bh * T * T * 4
    Q, K, V = bench.make_qkv(bh, T, 16)
    naive = bench.cpu_peak_bytes(lambda: bench.naive_attention(Q, K, V))
    lean = bench.cpu_peak_bytes(lambda: bench.lean_attention(Q, K, V))
    fused = bench.cpu_peak_bytes(lambda: F.scaled_dot_product_attention(Q, K, V))
    assert 2 * one_matrix <= naive < 2.5 * one_matrix, "the textbook version holds scores and weights at once"
    assert one_matrix <= lean < 1.5 * one_matrix, "one (T, T) buffer"
    assert fused < 0.5 * one_matrix, "the fused kernel never materialises (T, T)"
    assert bench.peak_memory_bytes(lambda: bench.naive_attention(Q, K, V), "cpu") == naive


def test_tracemalloc_does_not_see_torch_allocations():
    """Why the profiler is used: Python's tracemalloc misses torch's C++ allocations."""
    Q, K, V = bench.make_qkv(2, 256, 16)
    tracemalloc.start()
    bench.naive_attention(Q, K, V)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.1 * 2 * 256 * 256 * 4


def test_cuda_peak_bytes_uses_the_allocator_counters(monkeypatch):
    log = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 1000)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: log.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 5000)
    assert bench.peak_memory_bytes(lambda: log.append("call"), "cuda") == 4000
    assert log == ["sync", "reset", "call", "sync"]


# ---------------------------------------------------------------- backend and largest T

def test_sdpa_backend_on_the_cpu():
    Q, K, V = bench.make_qkv(2, 16, 8)
    assert bench.sdpa_backend(Q, K, V) == "flash"
    assert bench.sdpa_backend(Q[0], K[0], V[0]) == "math (unfused)"  # 3-D inputs: no fused CPU kernel


def test_backend_labels_and_missing_dispatcher(monkeypatch):
    from torch.nn.attention import SDPBackend

    assert bench.backend_label(int(SDPBackend.FLASH_ATTENTION)) == "flash"
    assert bench.backend_label(int(SDPBackend.EFFICIENT_ATTENTION)) == "memory-efficient"
    assert bench.backend_label(int(SDPBackend.CUDNN_ATTENTION)) == "cuDNN"
    assert bench.backend_label(int(SDPBackend.MATH)) == "math (unfused)"
    assert bench.backend_label(99) == "unknown backend 99"
    Q, K, V = bench.make_qkv(1, 4, 4)
    monkeypatch.delattr(torch, "_fused_sdp_choice")
    assert bench.sdpa_backend(Q, K, V) == "unknown"


def fake_run(limit):
    tried = []

    def run(T):
        tried.append(T)
        if T > limit:
            raise torch.cuda.OutOfMemoryError(f"CUDA out of memory at T={T}")
        return T

    return run, tried


def test_find_largest_T_stops_at_the_first_out_of_memory():
    run, tried = fake_run(3000)
    cleaned = []
    assert bench.find_largest_T(run, [1024, 4096, 2048, 8192], cleanup=lambda: cleaned.append(1)) == (2048, 4096)
    assert tried == [1024, 2048, 4096]
    assert len(cleaned) == 3
    run, _ = fake_run(10**9)
    assert bench.find_largest_T(run, [1, 2]) == (2, None)
    run, _ = fake_run(0)
    assert bench.find_largest_T(run, [1, 2]) == (None, 1)


def test_find_largest_T_lets_other_errors_through():
    def broken(T):
        raise ValueError("a bug, not a memory limit")

    with pytest.raises(ValueError, match="a bug"):
        bench.find_largest_T(broken, [1])

    def shape_bug(T):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        bench.find_largest_T(shape_bug, [1])


def test_a_cublas_allocation_failure_counts_as_out_of_memory():
    def run(T):
        if T > 2:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
        return T

    assert bench.find_largest_T(run, [1, 2, 4]) == (2, 4)
    assert bench.is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 4 GiB"))
    assert bench.is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not bench.is_out_of_memory(RuntimeError("No available kernel. Aborting execution."))
    assert not bench.is_out_of_memory(ValueError("out of memory"))


def test_find_largest_T_cleans_up_after_the_traceback_is_gone():
    """empty_cache inside the except block would run while the traceback still holds the big tensors."""
    import weakref

    held = []

    def run(T):
        big = torch.zeros(T)
        held.append(weakref.ref(big))
        raise torch.cuda.OutOfMemoryError("stand-in")

    alive_at_cleanup = []
    bench.find_largest_T(run, [8], cleanup=lambda: alive_at_cleanup.append(held[-1]() is not None))
    assert alive_at_cleanup == [False]


def test_search_largest_T_doubles_then_bisects():
    run, tried = fake_run(45_000)
    ok, bad = bench.search_largest_T(run, start=1024, limit=2**20, refine_to=1024)
    assert ok <= 45_000 < bad and bad - ok <= 1024
    assert tried[:7] == [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    run, _ = fake_run(10**9)
    assert bench.search_largest_T(run, start=1024, limit=4096) == (4096, None)


def test_release_cuda_memory_collects_first(monkeypatch):
    log = []
    monkeypatch.setattr(bench.gc, "collect", lambda: log.append("collect"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: log.append("empty_cache"))
    bench.release_cuda_memory()
    assert log == ["collect", "empty_cache"]


def test_largest_naive_T_refuses_the_cpu():
    with pytest.raises(RuntimeError, match="needs a CUDA device: on the CPU running out of memory does not raise"):
        bench.largest_naive_T_cuda(device="cpu")


HAS_MEMINFO = Path("/proc/meminfo").exists()


def test_available_memory_is_a_positive_number_or_unknown():
    free = bench.available_memory_bytes("cpu")
    if HAS_MEMINFO:  # Linux: MemAvailable is read, so a number must come back
        assert isinstance(free, int) and free > 0
    else:
        assert free is None or free > 0


def test_available_memory_reads_memavailable(monkeypatch, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       8000000 kB\nMemAvailable:   2000000 kB\n")
    real_open = open
    monkeypatch.setattr(bench, "open", lambda path, *a, **k: real_open(  # the module's own `open` only
        meminfo if path == "/proc/meminfo" else path, *a, **k), raising=False)
    assert bench.available_memory_bytes("cpu") == 2_000_000 * 1024
    meminfo.write_text("MemTotal:       8000000 kB\n")
    assert bench.available_memory_bytes("cpu") is None


# ---------------------------------------------------------------- the whole benchmark

def test_run_benchmark_on_the_cpu():
    rows = bench.run_benchmark(device="cpu", sizes=(64, 32), batch_heads=2, d_k=8, repeats=2, warmup=1,
                               num_threads=1)
    assert [(r.T, r.impl) for r in rows] == [(32, "naive"), (32, "lean"), (32, "tiled"), (32, "sdpa"),
                                            (64, "naive"), (64, "lean"), (64, "tiled"), (64, "sdpa")]
    for r in rows:
        assert r.ms > 0 and len(r.samples_ms) == 2 and r.device == "cpu"
        assert r.tflops == pytest.approx(bench.forward_flops(2, r.T, 8) / (r.ms / 1e3) / 1e12)
        assert r.score_bytes == 2 * r.T * r.T * 4
    naive64 = next(r for r in rows if r.impl == "naive" and r.T == 64)
    sdpa64 = next(r for r in rows if r.impl == "sdpa" and r.T == 64)
    assert naive64.peak_bytes >= 2 * naive64.score_bytes
    assert sdpa64.backend == "flash"
    table = bench.format_table(rows)
    assert table.splitlines()[0].split()[:4] == ["impl", "dtype", "T", "ms"]
    assert len(table.splitlines()) == 2 + len(rows)
    lines = bench.ratios(rows)
    assert lines[0].startswith("T=32 float32: naive ") and lines[0].endswith("the time of sdpa")


def test_run_benchmark_measures_memory_only_where_asked():
    rows = bench.run_benchmark(device="cpu", sizes=(16, 32, 64), batch_heads=1, d_k=4, repeats=1, warmup=0,
                               impls=("naive", "sdpa"), memory=(32,))
    assert {r.T for r in rows if r.peak_bytes is not None} == {32}
    naive32 = next(r for r in rows if r.impl == "naive" and r.T == 32)
    assert naive32.peak_bytes >= 2 * naive32.score_bytes
    rows = bench.run_benchmark(device="cpu", sizes=(16,), batch_heads=1, d_k=4, repeats=1, warmup=0,
                               impls=("sdpa",), memory=False)
    assert rows[0].peak_bytes is None and rows[0].ms > 0


def test_run_benchmark_notes_what_cannot_run_and_what_runs_out_of_memory(monkeypatch):
    def greedy(Q, K, V, causal=False):
        if Q.shape[-2] >= 64:
            raise torch.cuda.OutOfMemoryError("out of memory (stand-in)")
        return bench.naive_attention(Q, K, V, causal)

    def cublas(Q, K, V, causal=False):
        if Q.shape[-2] >= 128:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
        return bench.naive_attention(Q, K, V, causal)

    monkeypatch.setitem(bench.IMPLEMENTATIONS, "greedy", ("test stand-in", bench.with_flag(greedy)))
    monkeypatch.setitem(bench.IMPLEMENTATIONS, "cublas", ("test stand-in", bench.with_flag(cublas)))
    rows = bench.run_benchmark(device="cpu", sizes=(32, 64, 128), batch_heads=1, d_k=4, repeats=1, warmup=0,
                               impls=("greedy", "cublas", "sdpa:efficient", "sdpa"), memory=False)
    notes = {(r.impl, r.T): r.note for r in rows}
    assert notes[("greedy", 32)] == ""
    assert notes[("greedy", 64)] == "out of memory"
    assert notes[("greedy", 128)].startswith("skipped")
    assert notes[("cublas", 64)] == "" and notes[("cublas", 128)] == "out of memory"
    assert notes[("sdpa:efficient", 32)].startswith("cannot run")  # no memory-efficient kernel on the CPU
    assert all(r.ms for r in rows if r.impl == "sdpa")
    assert "out of memory" in bench.format_table(rows)


def test_timing_cell_on_a_cpu_only_machine(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rows = bench.timing_cell(cpu_sizes=(32,), batch_heads=2, d_k=8, repeats=2)
    out = capsys.readouterr().out
    assert out.startswith("No CUDA GPU here:")
    assert "device cpu (" in out and "naive" in out and "sdpa" in out
    assert {r.impl for r in rows} == {"naive", "sdpa"}
    if HAS_MEMINFO:  # free memory is known there, so the prediction line must be printed
        assert "largest T the naive version fits: not tried on a CPU" in out
        assert "predicted from " in out and "free: T = " in out
    else:
        assert "not tried on a CPU" in out or bench.available_memory_bytes("cpu") is None


def test_timing_cell_on_a_gpu_prints_tflops_backend_and_largest_T(monkeypatch, capsys):
    """The CUDA branch's logic, with the GPU parts replaced by stand-ins."""
    calls = {}

    def fake_run_benchmark(**kwargs):
        calls["run"] = kwargs
        return [bench.Row("naive", "cuda", "bfloat16", 4096, 8, 64, False, ms=2.0,
                          tflops=bench.tflops_per_second(bench.forward_flops(8, 4096, 64), 2e-3), samples_ms=[2.0]),
                bench.Row("sdpa", "cuda", "bfloat16", 4096, 8, 64, False, ms=0.05,
                          tflops=bench.tflops_per_second(bench.forward_flops(8, 4096, 64), 5e-5), backend="flash",
                          samples_ms=[0.05])]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "NVIDIA H200")
    monkeypatch.setattr(bench, "run_benchmark", fake_run_benchmark)
    monkeypatch.setattr(bench, "largest_naive_T_cuda", lambda dtype, **k: (32768, 33792))
    rows = bench.timing_cell(cuda_sizes=(4096,), batch_heads=8, d_k=64)
    out = capsys.readouterr().out
    assert calls["run"]["dtypes"] == ["bfloat16", "float32"] and calls["run"]["impls"] == ("naive", "sdpa")
    assert out.startswith("device cuda (NVIDIA H200)")
    assert "T=4096 bfloat16: naive 40.00x the time of sdpa" in out
    assert "best: sdpa bfloat16 at T=4096: 687 TFLOP/s = 69% of this GPU's nominal dense 16-bit peak (989)" in out
    assert "largest T the naive version fits (bfloat16, batch*heads 8): 32768 (out of memory at 33792)" in out
    assert "FlashAttention-2 on H100 (up to):" in out and "335 TFLOP/s = 33.9% of the H100 SXM's 989" in out
    assert len(rows) == 2


def test_header_names_threads_and_flops():
    line = bench.header("cpu", 2, 8, 64, True)
    assert line.startswith("device cpu (2 threads)")
    assert "batch*heads 8, d_k 64, causal yes" in line and line.endswith("/ 2")


# ---------------------------------------------------------------- the command-line script

def test_script_prints_a_table(capsys):
    script = load_script()
    rc = script.main(["--device", "cpu", "--sizes", "32", "16", "--batch-heads", "2", "--d-k", "8",
                      "--repeats", "3", "--threads", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "device cpu (1 threads)" in out
    assert sum(line.startswith(("naive", "lean", "tiled", "sdpa")) for line in out.splitlines()) == 8
    assert "T=16 float32: naive" in out


def test_script_find_max_on_the_cpu_predicts_instead_of_trying(capsys):
    script = load_script()
    assert script.main(["--device", "cpu", "--sizes", "16", "--batch-heads", "1", "--d-k", "4", "--repeats", "3",
                        "--no-memory", "--impl", "sdpa", "--find-max"]) == 0
    assert "--find-max is CUDA only" in capsys.readouterr().out


def test_script_explains_a_missing_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    script = load_script()
    assert script.main(["--device", "cuda"]) == 2
    assert "device 'cuda' was asked for" in capsys.readouterr().err


def test_script_says_threads_are_ignored_on_a_gpu(monkeypatch, capsys):
    script = load_script()
    seen = {}
    monkeypatch.setattr(bench, "resolve_device", lambda device: torch.device("cuda"))
    monkeypatch.setattr(bench, "default_dtypes", lambda device: ["float32"])
    monkeypatch.setattr(bench, "header", lambda *args: "header")
    monkeypatch.setattr(bench, "run_benchmark", lambda **kwargs: seen.update(kwargs) or [])
    assert script.main(["--threads", "4"]) == 0
    assert "--threads 4 is ignored on cuda" in capsys.readouterr().out
    assert seen["num_threads"] is None


def test_script_finds_helpers_from_a_fresh_checkout():
    """`python benchmarks/attention.py` puts benchmarks/ on sys.path; the script adds the repository root."""
    text = (ROOT / "benchmarks" / "attention.py").read_text()
    assert text.index("sys.path.insert(0, str(ROOT))") < text.index("from helpers import")
    assert load_script().ROOT == ROOT


@pytest.mark.parametrize("args, message", [
    (["--dtype", "int3"], "Unknown dtype 'int3'"),
    (["--sizes", "0"], "expected a whole number >= 1"),
    (["--sizes", "ten"], "expected a whole number >= 1, got 'ten'"),
    (["--impl", "magic"], "invalid choice: 'magic'"),
    (["--repeats", "2"], "expected a whole number >= 3"),
    (["--warmup", "-1"], "expected a whole number >= 0"),
])
def test_script_rejects_bad_arguments(args, message, capsys):
    script = load_script()
    with pytest.raises(SystemExit) as exit_info:
        script.main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- on a GPU only

@needs_cuda
def test_cuda_benchmark_runs_and_reports_a_fused_backend():
    rows = bench.run_benchmark(device="cuda", dtypes=bench.default_dtypes("cuda"), sizes=(256,), batch_heads=2,
                               d_k=64, repeats=2, impls=("naive", "sdpa"))
    assert all(r.ms and r.ms > 0 for r in rows)
    half = next(r for r in rows if r.impl == "sdpa" and r.dtype != "float32")
    assert half.backend in {"flash", "memory-efficient", "cuDNN"}
    naive = next(r for r in rows if r.impl == "naive" and r.dtype == "float32")
    assert naive.peak_bytes >= 2 * naive.score_bytes


@needs_cuda
def test_cuda_largest_naive_T_small_limit():
    ok, bad = bench.largest_naive_T_cuda("float32", batch_heads=1, d_k=16, start=256, limit=1024)
    assert ok == 1024 and bad is None


# ---------------------------------------------------------------- notebook 07's pieces and reference

def test_piece_calls_compute_the_textbook_steps():
    calls = bench.piece_calls(batch_heads=2, T=16, d_k=4)
    assert list(calls) == ["Q Kᵀ into a (T, T) buffer", "softmax of the buffer, in place", "S · V",
                           "SDPA, whole call, 4-D inputs", "SDPA, whole call, 3-D inputs"]
    Q, K, V = bench.make_qkv(2, 16, 4)
    S = calls["Q Kᵀ into a (T, T) buffer"]()
    torch.testing.assert_close(S, Q[0] @ K[0].transpose(1, 2) / 2.0)
    W = calls["softmax of the buffer, in place"]()
    assert W.data_ptr() == S.data_ptr()  # the same buffer: nothing new allocated
    torch.testing.assert_close(calls["S · V"](), F.scaled_dot_product_attention(Q, K, V)[0])
    torch.testing.assert_close(calls["SDPA, whole call, 3-D inputs"](), calls["SDPA, whole call, 4-D inputs"]()[0])
    timings = bench.time_calls(calls, warmup=0, repeats=1, min_sample_s=0.0)
    assert set(timings) == set(calls)


def test_reference_table_puts_the_kept_numbers_next_to_the_measured_ones():
    assert bench.REFERENCE_CPU["ratios"]["tiled"] > 1
    ref = bench.REFERENCE_CPU["ms"]
    assert set(bench.piece_calls(1, 4, 2)) <= set(ref)
    text = bench.reference_table({"S · V": 1.23, "something new": 2.0})
    lines = text.splitlines()
    assert lines[0].split() == ["here", "reference"]
    assert lines[1].split()[-2:] == ["1.2", f"{ref['S · V']:.1f}"]
    assert lines[2].split()[-1] == "2.0"
    assert lines[-1].startswith("(reference: ") and bench.REFERENCE_CPU["date"] in lines[-1]


def test_reference_ratios_follow_from_the_reference_milliseconds():
    ms, ratios = bench.REFERENCE_CPU["ms"], bench.REFERENCE_CPU["ratios"]
    assert set(ratios) == {"naive", "lean", "tiled"}
    for name, ratio in ratios.items():
        assert ratio == pytest.approx(ms[name] / ms["sdpa"])
    assert ratios["naive"] > ratios["lean"] > ratios["tiled"] > 1   # the order the notebook's prose tells


def _notebook_07_markdown() -> str:
    """All markdown of notebook 07, whitespace collapsed (so a line break in the prose does not matter)."""
    notebook = json.loads((ROOT / "notebooks" / "07_pytorch_and_cost.ipynb").read_text(encoding="utf-8"))
    text = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    return " ".join(text.split())


def test_notebook_07_quotes_the_reference_numbers_as_they_are_kept():
    """The prose of notebook 07 cannot drift from REFERENCE_CPU: every figure it quotes is formatted from it."""
    text = _notebook_07_markdown()
    r, ms = bench.REFERENCE_CPU["ratios"], bench.REFERENCE_CPU["ms"]
    assert f"naive {r['naive']:.2f}×, lean {r['lean']:.2f}×, tiled {r['tiled']:.2f}× SDPA's time" in text

    qk, sv = ms["Q Kᵀ into a (T, T) buffer"], ms["S · V"]
    sdpa_4d, sdpa_3d = ms["SDPA, whole call, 4-D inputs"], ms["SDPA, whole call, 3-D inputs"]
    assert f"{qk:.1f} + {sv:.1f} ms against {sdpa_4d:.1f} ms" in text
    assert qk + sv > sdpa_4d              # "the two products alone add up to more than SDPA's whole call"
    assert round(sdpa_3d / sdpa_4d) == 5  # "about five times slower than the 4-D call"
    assert "about five times slower than the 4-D call" in text
