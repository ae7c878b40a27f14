"""helpers.benchmarking and benchmarks/attention.py: the CPU path for real, the CUDA logic without a GPU.

No timing is asserted (the machine's speed is not a test result); what is checked
is that the measurement code measures what it says: synchronisation points,
interleaving, FLOP arithmetic, peak-memory bookkeeping and the skip message.
"""
import importlib.util
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


def test_unknown_implementation_and_backend():
    with pytest.raises(ValueError, match="Unknown implementation 'fast'.*naive"):
        bench.get_implementation("fast")
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
    monkeypatch.setattr(torch.version, "cuda", None)
    message = bench.cuda_skip_message()
    assert message.startswith("No CUDA GPU here: this PyTorch")
    assert "CPU-only build" in message and "runs on the CPU instead" in message
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert "supports CUDA 12.8, but no GPU or driver was found" in bench.cuda_skip_message()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert bench.cuda_skip_message() is None


def test_default_dtypes(monkeypatch):
    assert bench.default_dtypes("cpu") == ["float32"]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert bench.default_dtypes("cuda") == ["bfloat16", "float32"]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert bench.default_dtypes("cuda") == ["float16", "float32"]


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
    assert bench.peak_tflops_for("NVIDIA H100 80GB HBM3") == 989.0
    assert bench.peak_tflops_for("NVIDIA A100-SXM4-80GB") == 312.0
    assert bench.peak_tflops_for("NVIDIA GeForce RTX 4090") is None
    assert bench.PUBLISHED_TFLOPS["FlashAttention-3 on H100, fp16 (up to)"] == 740


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

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    seconds = bench._one_sample(lambda: log.append("call"), "cuda", 3)
    assert seconds == pytest.approx(0.002)
    assert log == ["new event0", "new event1", "sync", "record event0", "call", "call", "call",
                   "record event1", "sync", "elapsed"]


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


def test_search_largest_T_doubles_then_bisects():
    run, tried = fake_run(45_000)
    ok, bad = bench.search_largest_T(run, start=1024, limit=2**20, refine_to=1024)
    assert ok <= 45_000 < bad and bad - ok <= 1024
    assert tried[:7] == [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    run, _ = fake_run(10**9)
    assert bench.search_largest_T(run, start=1024, limit=4096) == (4096, None)


def test_largest_naive_T_refuses_the_cpu():
    with pytest.raises(RuntimeError, match="needs a CUDA device: on the CPU running out of memory does not raise"):
        bench.largest_naive_T_cuda(device="cpu")


def test_available_memory_is_a_positive_number_or_unknown():
    free = bench.available_memory_bytes("cpu")
    assert free is None or free > 0


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


def test_run_benchmark_notes_what_cannot_run_and_what_runs_out_of_memory(monkeypatch):
    def greedy(Q, K, V, causal=False):
        if Q.shape[-2] >= 64:
            raise torch.OutOfMemoryError("out of memory (stand-in)")
        return bench.naive_attention(Q, K, V, causal)

    monkeypatch.setitem(bench.IMPLEMENTATIONS, "greedy", ("test stand-in", greedy))
    rows = bench.run_benchmark(device="cpu", sizes=(32, 64, 128), batch_heads=1, d_k=4, repeats=1, warmup=0,
                               impls=("greedy", "sdpa:efficient", "sdpa"), memory=False)
    notes = {(r.impl, r.T): r.note for r in rows}
    assert notes[("greedy", 32)] == ""
    assert notes[("greedy", 64)] == "out of memory"
    assert notes[("greedy", 128)].startswith("skipped")
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
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "NVIDIA H200")
    monkeypatch.setattr(bench, "run_benchmark", fake_run_benchmark)
    monkeypatch.setattr(bench, "largest_naive_T_cuda", lambda dtype, **k: (32768, 33792))
    rows = bench.timing_cell(cuda_sizes=(4096,), batch_heads=8, d_k=64)
    out = capsys.readouterr().out
    assert calls["run"]["dtypes"] == ["bfloat16", "float32"] and calls["run"]["impls"] == ("naive", "sdpa")
    assert out.startswith("device cuda (NVIDIA H200)")
    assert "T=4096 bfloat16: naive 40.00x the time of sdpa" in out
    assert "best: sdpa bfloat16 at T=4096: 687 TFLOP/s = 69% of this GPU's dense 16-bit peak (989)" in out
    assert "largest T the naive version fits (bfloat16, batch*heads 8): 32768 (out of memory at 33792)" in out
    assert "FlashAttention-2 on H100 (up to) 335" in out
    assert len(rows) == 2


def test_header_names_threads_and_flops():
    line = bench.header("cpu", 2, 8, 64, True)
    assert line.startswith("device cpu (2 threads)")
    assert "batch*heads 8, d_k 64, causal yes" in line and line.endswith("/ 2")


# ---------------------------------------------------------------- the command-line script

def test_script_prints_a_table(capsys):
    script = load_script()
    rc = script.main(["--device", "cpu", "--sizes", "32", "16", "--batch-heads", "2", "--d-k", "8",
                      "--repeats", "2", "--threads", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "device cpu (1 threads)" in out
    assert sum(line.startswith(("naive", "lean", "tiled", "sdpa")) for line in out.splitlines()) == 8
    assert "T=16 float32: naive" in out


def test_script_find_max_on_the_cpu_predicts_instead_of_trying(capsys):
    script = load_script()
    assert script.main(["--device", "cpu", "--sizes", "16", "--batch-heads", "1", "--d-k", "4", "--repeats", "1",
                        "--no-memory", "--impl", "sdpa", "--find-max"]) == 0
    assert "--find-max is CUDA only" in capsys.readouterr().out


def test_script_explains_a_missing_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    script = load_script()
    assert script.main(["--device", "cuda"]) == 2
    assert "device 'cuda' was asked for" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--dtype", "int3"], "Unknown dtype 'int3'"),
    (["--sizes", "0"], "expected a whole number >= 1"),
    (["--impl", "magic"], "invalid choice: 'magic'"),
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
