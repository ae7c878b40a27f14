"""helpers.measure: devices and dtypes, timing one call, peak memory, the benchmark's rows, notebook 07's cells.

No timing is asserted (the machine's speed is not a test result); what is checked
is that the measurement code measures what it says: synchronisation points,
interleaving, the peak-memory bookkeeping, the same attention from every
implementation, rows, notes and tables, on the CPU for real and on CUDA with
stand-ins. The script benchmarks/attention.py is tested in test_benchmark_script.py.
"""
import ast
import json
import tracemalloc

import pytest
import torch
import torch.nn.functional as F
from stored_notebooks import cells, prose

from helpers import cost, measure
from helpers.attention_torch import scaled_dot_product_attention
from helpers.fast_attention import lean_attention
from helpers.measure import make_qkv

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


# ---------------------------------------------------------------- devices, dtypes, messages

@pytest.mark.parametrize("name, dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16),
                                         ("float16", torch.float16), (torch.float64, torch.float64)])
def test_torch_dtype(name, dtype):
    assert measure.torch_dtype(name) is dtype


def test_torch_dtype_refuses_an_unknown_name():
    with pytest.raises(ValueError, match="Unknown dtype 'int3'"):
        measure.torch_dtype("int3")


def test_torch_dtype_refuses_float8_clearly():
    with pytest.raises(ValueError, match="float8"):
        measure.torch_dtype("float8")


def test_resolve_device_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert measure.resolve_device("auto") == torch.device("cpu")
    assert measure.resolve_device("cpu") == torch.device("cpu")
    assert measure.resolve_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(RuntimeError, match="device 'cuda' was asked for, but this PyTorch"):
        measure.resolve_device("cuda")


def test_resolve_device_with_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert measure.resolve_device("auto") == torch.device("cuda")
    assert measure.resolve_device("cuda:1") == torch.device("cuda:1")


def test_skip_message_says_why(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    message = measure.cuda_skip_message()
    assert message.startswith("No CUDA GPU here: this PyTorch")
    assert "CPU-only build" in message and "runs on the CPU instead" in message
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert "supports CUDA 12.8, but no GPU or driver was found" in measure.cuda_skip_message()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert measure.cuda_skip_message() is None
    assert measure.cuda_unavailable_reason() is None


def test_skip_message_on_an_apple_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    message = measure.cuda_skip_message()
    assert "Apple GPU (MPS), which the course does not time" in message
    assert "CPU-only build" not in message


@pytest.mark.parametrize("capability, half", [
    ((9, 0), "bfloat16"),   # H100
    ((8, 0), "bfloat16"),   # A100
    ((7, 5), "float16"),    # T4: is_bf16_supported() says True, but only emulates bf16
    ((7, 0), "float16"),    # V100
])
def test_default_dtypes(monkeypatch, capability, half):
    assert measure.default_dtypes("cpu") == ["float32"]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: capability)
    assert measure.default_dtypes("cuda") == [half, "float32"]


def test_is_out_of_memory():
    assert measure.is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 4 GiB"))
    assert measure.is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert measure.is_out_of_memory(
        RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"))
    assert not measure.is_out_of_memory(RuntimeError("No available kernel. Aborting execution."))
    assert not measure.is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


# ---------------------------------------------------------------- timing

def test_cpu_threads_sets_and_restores():
    before = torch.get_num_threads()
    other = 2 if before == 1 else 1                  # a change to see, also where torch already uses one thread
    with measure.cpu_threads(other):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with measure.cpu_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(KeyError):
        with measure.cpu_threads(other):
            raise KeyError("inside")
    assert torch.get_num_threads() == before


def test_time_calls_warms_up_and_interleaves():
    calls = []
    timings = measure.time_calls({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                 warmup=2, repeats=3, min_sample_s=0.0)
    assert set(timings) == {"a", "b"}
    assert all(len(t.samples) == 3 and t.median >= 0 for t in timings.values())
    # warm-up (2) and one calibration call per function, then rounds alternate a, b, a, b, a, b.
    assert calls[:6] == ["a", "a", "a", "b", "b", "b"]
    assert calls[6:] == ["a", "b"] * 3


def test_time_calls_calibrates_once_when_looping_fast_functions():
    calls = []
    measure.time_calls({"a": lambda: calls.append("a")}, warmup=1, repeats=1, min_sample_s=1e-9)
    assert calls == ["a", "a", "a"]  # warm-up, calibration, one sample of one call


def test_time_calls_loops_fast_functions_to_a_measurable_sample():
    count = []
    measure.time_calls({"f": lambda: count.append(1)}, warmup=0, repeats=2, min_sample_s=0.01)
    assert len(count) > 3  # each sample ran many calls


def test_time_calls_uses_the_threads_asked_for_and_restores_them():
    before = torch.get_num_threads()
    seen = []
    measure.time_calls({"f": lambda: seen.append(torch.get_num_threads())}, warmup=1, repeats=1,
                       min_sample_s=0.0, num_threads=1)
    assert set(seen) == {1}
    assert torch.get_num_threads() == before


def test_one_cpu_sample_is_the_time_of_one_call_not_of_all_of_them(monkeypatch):
    clock = [100.0]                                                  # a clock that moves only when fn runs
    monkeypatch.setattr(measure.time, "perf_counter", lambda: clock[0])

    def twenty_ms():
        clock[0] += 0.02
    assert measure.one_sample(twenty_ms, "cpu", 4) == pytest.approx(0.02)   # 4 calls: 80 ms in all


def test_timing_median_and_paired_ratio():
    t = {"a": measure.Timing([0.002, 0.004, 0.100]), "b": measure.Timing([0.001, 0.002, 0.050])}
    assert t["a"].median == 0.004
    assert t["a"].ms == pytest.approx(4.0)
    assert measure.paired_ratio(t, "a", "b") == pytest.approx(2.0)
    rounds = {"a": measure.Timing([1.0, 10.0, 3.0]), "b": measure.Timing([1.0, 2.0, 6.0])}    # ratios 1, 5, 0.5
    assert measure.paired_ratio(rounds, "a", "b") == 1.0       # the median ratio, not 3 / 2 from the two medians


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
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append(f"sync {device}"))
    seconds = measure.one_sample(lambda: log.append("call"), "cuda:1", 3)
    assert seconds == pytest.approx(0.002)
    assert log == ["new event0", "new event1", "sync cuda:1", "record event0", "call", "call", "call",
                   "record event1", "sync cuda:1", "elapsed"]


def test_synchronize_is_a_no_op_on_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)   # also where a GPU is present: the device decides
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: pytest.fail("synchronised on the CPU"))
    measure.synchronize("cpu")
    measure.synchronize(torch.device("cpu"))


# ---------------------------------------------------------------- peak memory

def test_cpu_peak_is_the_largest_running_total_less_the_one_before_the_call(monkeypatch):
    """The profiler's trace, with stand-in events: out of order in the file, a CUDA one among them."""
    def ev(ts, total, nbytes, device_type=0):
        return {"name": "[memory]", "ts": ts, "args": {"Total Allocated": total, "Bytes": nbytes,
                                                        "Device Type": device_type}}

    # 1,000 bytes held before the call; it allocates 100 and 50, frees the 100, then frees 300 it did not make
    events = [ev(3, 1150, 50), ev(1, 1100, 100), {"name": "aten::mm", "ts": 2, "args": {}}, ev(4, 1050, -100),
              ev(2, 9000, 8000, device_type=1), ev(5, 750, -300)]

    class Profile:
        def __init__(self, **kwargs):
            assert kwargs.get("profile_memory") is True

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def export_chrome_trace(self, path):
            with open(path, "w") as trace:
                json.dump({"traceEvents": events}, trace)

    monkeypatch.setattr(torch.autograd.profiler, "profile", Profile)
    assert measure.cpu_peak_bytes(lambda: None) == 150
    events = [ev(1, 400, -600)]                                  # a call that only frees
    assert measure.cpu_peak_bytes(lambda: None) == 0
    events = []
    assert measure.cpu_peak_bytes(lambda: None) == 0


def test_cpu_peak_memory_sees_the_T_by_T_matrices():
    T, bh = 1024, 2      # large enough that the fused kernel's working buffers (per thread) are far below (T, T)
    one_matrix = bh * T * T * 4
    Q, K, V = make_qkv(bh, T, 16)
    naive = measure.cpu_peak_bytes(lambda: scaled_dot_product_attention(Q, K, V))
    lean = measure.cpu_peak_bytes(lambda: lean_attention(Q, K, V))
    fused = measure.cpu_peak_bytes(lambda: F.scaled_dot_product_attention(Q, K, V))
    assert 2 * one_matrix <= naive < 2.5 * one_matrix, "the textbook version holds scores and weights at once"
    assert one_matrix <= lean < 1.5 * one_matrix, "one (T, T) buffer"
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        unfused = measure.cpu_peak_bytes(lambda: F.scaled_dot_product_attention(Q, K, V))
    assert unfused >= one_matrix, "SDPA's unfused path builds the (T, T) matrix"
    if measure.sdpa_backend(Q, K, V) not in {"math (unfused)", "unknown"}:   # this torch's choice, not pinned
        assert fused < 0.5 * one_matrix, "a fused kernel never materialises (T, T)"
    assert measure.peak_memory_bytes(lambda: scaled_dot_product_attention(Q, K, V), "cpu") == naive


def test_tracemalloc_does_not_see_torch_allocations():
    """Why the profiler is used: Python's tracemalloc misses torch's C++ allocations."""
    Q, K, V = make_qkv(2, 256, 16)
    tracemalloc.start()
    scaled_dot_product_attention(Q, K, V)
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


@pytest.mark.parametrize("error", [TypeError, RuntimeError])
def test_cpu_peak_bytes_lets_the_functions_own_error_through_once(error):
    """The function is called once, and its own error is not swallowed."""
    calls = []

    def broken():
        calls.append(1)
        raise error("the function's own bug")

    with pytest.raises(error, match="the function's own bug"):
        measure.cpu_peak_bytes(broken)
    assert calls == [1]


# ---------------------------------------------------------------- backend

#: What sdpa_backend may answer. Which one PyTorch picks is its own choice and changes between versions
#: (torch 2.13 on a CPU fuses 4-D inputs only; other versions may choose otherwise), so tests do not pin it.
BACKENDS = {"flash", "memory-efficient", "cudnn", "math (unfused)", "overrideable", "unknown"}


def test_sdpa_backend_names_a_kernel_on_the_cpu():
    Q, K, V = make_qkv(2, 16, 8)
    assert measure.sdpa_backend(Q, K, V) in BACKENDS - {"unknown"}
    assert measure.sdpa_backend(Q[0], K[0], V[0]) in BACKENDS - {"unknown"}


def test_sdpa_backend_reports_a_forced_choice():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    Q, K, V = make_qkv(2, 16, 8)
    with sdpa_kernel(SDPBackend.MATH):
        assert measure.sdpa_backend(Q, K, V) == "math (unfused)"


def test_sdpa_backend_without_the_dispatcher(monkeypatch):
    Q, K, V = make_qkv(1, 4, 4)
    monkeypatch.delattr(torch, "_fused_sdp_choice")
    assert measure.sdpa_backend(Q, K, V) == "unknown"


# ---------------------------------------------------------------- the implementations and their inputs

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("impl", ["naive", "lean", "tiled", "sdpa"])
def test_every_implementation_computes_the_same_attention(impl, causal):
    Q, K, V = make_qkv(4, 33, 16)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    call = measure.IMPLEMENTATIONS[impl][1](Q, K, V, causal)
    torch.testing.assert_close(call(), expected, atol=1e-5, rtol=1e-5)


def test_the_timed_call_builds_no_mask(monkeypatch):
    """The causal mask is built once, when the call is prepared, not inside the timed call."""
    Q, K, V = make_qkv(2, 9, 4)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    built = []
    real_ones = torch.ones
    monkeypatch.setattr(torch, "ones", lambda *a, **k: built.append(a) or real_ones(*a, **k))
    for name in ("naive", "lean", "tiled", "sdpa"):
        built.clear()
        call = measure.IMPLEMENTATIONS[name][1](Q, K, V, True)
        mask_builds = len(built)
        for _ in range(3):
            torch.testing.assert_close(call(), expected)
        assert len(built) == mask_builds <= 1, name


def test_make_qkv_is_seeded_4d_and_typed():
    Q, K, V = make_qkv(3, 10, 8, dtype="bf16", seed=5)
    assert Q.shape == K.shape == V.shape == (1, 3, 10, 8)
    assert Q.dtype is torch.bfloat16
    torch.testing.assert_close(make_qkv(3, 10, 8, seed=5)[0], make_qkv(3, 10, 8, seed=5)[0])
    assert not torch.equal(make_qkv(3, 10, 8, seed=5)[0], make_qkv(3, 10, 8, seed=6)[0])
    assert not torch.equal(Q.float(), K.float())


# ---------------------------------------------------------------- the whole benchmark

def test_run_benchmark_on_the_cpu():
    rows = measure.run_benchmark(device="cpu", sizes=(64, 32), batch_heads=2, d_k=8, repeats=2, warmup=1,
                                 num_threads=1)
    assert [(r.T, r.impl) for r in rows] == [(32, "naive"), (32, "lean"), (32, "tiled"), (32, "sdpa"),
                                            (64, "naive"), (64, "lean"), (64, "tiled"), (64, "sdpa")]
    for r in rows:
        assert r.ms > 0 and len(r.samples_ms) == 2 and r.dtype == "float32"
        assert r.flops == 4 * 2 * r.T * r.T * 8 == cost.attention_flops(r.T, 8, heads=2)["total"]
        assert r.tflops == pytest.approx(r.flops / (r.ms / 1e3) / 1e12)
        assert r.score_bytes == 2 * r.T * r.T * 4
    naive64 = next(r for r in rows if r.impl == "naive" and r.T == 64)
    sdpa64 = next(r for r in rows if r.impl == "sdpa" and r.T == 64)
    assert naive64.peak_bytes >= 2 * naive64.score_bytes
    assert sdpa64.note in BACKENDS - {"unknown"}
    assert naive64.note == ""
    table = measure.format_table(rows)
    assert table.splitlines()[0].split()[:4] == ["impl", "dtype", "T", "ms"]
    assert len(table.splitlines()) == 2 + len(rows)
    naive_line = table.splitlines()[2 + rows.index(naive64)].split()
    assert naive_line[5:7] == [f"{naive64.peak_bytes / 2**20:.2f}", "0.03"]   # in MiB, two decimals under 1 MiB
    lines = measure.ratios(rows)
    assert len(lines) == 2
    assert lines[0].startswith("T=32 float32: naive ") and lines[0].endswith("the time of sdpa")


def test_format_table_writes_peak_memory_in_mebibytes():
    row = measure.Row("naive", "float32", 512, flops=1, score_bytes=2**21, ms=1.0, tflops=1.0,
                      peak_bytes=10 * 2**20)
    assert measure.format_table([row]).splitlines()[2].split()[5:7] == ["10.0", "2.0"]   # 1 MiB = 2**20 bytes
    row.peak_bytes, row.score_bytes = 2**19, 2**18   # under 1 MiB: two decimals, so 0.25 is not shown as 0.2
    assert measure.format_table([row]).splitlines()[2].split()[5:7] == ["0.50", "0.25"]
    row.score_bytes = 2**20                          # 512 × 512 float32: 1 MiB, one decimal as above it
    assert measure.format_table([row]).splitlines()[2].split()[6] == "1.0"


def test_run_benchmark_causal_halves_the_flops_only_where_hidden_pairs_are_skipped():
    rows = measure.run_benchmark(device="cpu", sizes=(32,), batch_heads=1, d_k=4, repeats=1, warmup=0,
                                 causal=True, memory=False)
    flops = {r.impl: r.flops for r in rows}
    full = 4 * 32 * 32 * 4
    assert flops == {"naive": full, "lean": full, "tiled": full // 2, "sdpa": full // 2}
    assert all(r.tflops == pytest.approx(r.flops / (r.ms / 1e3) / 1e12) for r in rows)


def test_run_benchmark_measures_memory_only_where_asked():
    rows = measure.run_benchmark(device="cpu", sizes=(16, 32, 64), batch_heads=1, d_k=4, repeats=1, warmup=0,
                                 impls=("naive", "sdpa"), memory=(32,))
    assert {r.T for r in rows if r.peak_bytes is not None} == {32}
    naive32 = next(r for r in rows if r.impl == "naive" and r.T == 32)
    assert naive32.peak_bytes >= 2 * naive32.score_bytes
    rows = measure.run_benchmark(device="cpu", sizes=(16,), batch_heads=1, d_k=4, repeats=1, warmup=0,
                                 impls=("sdpa",), memory=False)
    assert rows[0].peak_bytes is None and rows[0].ms > 0


def test_run_benchmark_takes_one_size_and_one_dtype_as_they_are_typed():
    rows = measure.run_benchmark(device="cpu", sizes=16, dtypes="bf16", batch_heads=1, d_k=4, repeats=1, warmup=0,
                                 impls=("sdpa",))   # not sorted(16), nor the dtypes "b", "f", "1", "6"
    assert [(r.T, r.dtype) for r in rows] == [(16, "bfloat16")] and rows[0].peak_bytes is not None


def test_run_benchmark_notes_what_cannot_run_and_what_runs_out_of_memory():
    def greedy(Q, K, V):
        if Q.shape[-2] >= 64:
            raise torch.cuda.OutOfMemoryError("out of memory (stand-in)")
        return scaled_dot_product_attention(Q, K, V)

    def cublas(Q, K, V):
        if Q.shape[-2] >= 128:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
        return scaled_dot_product_attention(Q, K, V)

    def no_kernel(Q, K, V):
        raise RuntimeError("No available kernel. Aborting execution.")

    def preparer(fn):
        return lambda Q, K, V, causal=False: lambda: fn(Q, K, V)

    implementations = {**measure.IMPLEMENTATIONS, "greedy": ("stand-in", preparer(greedy)),
                       "cublas": ("stand-in", preparer(cublas)), "none": ("stand-in", preparer(no_kernel))}
    rows = measure.run_benchmark(device="cpu", sizes=(32, 64, 128), batch_heads=1, d_k=4, repeats=1, warmup=0,
                                 impls=("greedy", "cublas", "none", "sdpa"), implementations=implementations,
                                 memory=False)
    notes = {(r.impl, r.T): r.note for r in rows}
    assert notes[("greedy", 32)] == ""
    assert notes[("greedy", 64)] == "out of memory"
    assert notes[("greedy", 128)].startswith("skipped")
    assert notes[("cublas", 64)] == "" and notes[("cublas", 128)] == "out of memory"
    assert notes[("none", 32)] == "cannot run: No available kernel. Aborting execution."
    assert all(r.ms is None for r in rows if r.note and r.impl != "sdpa")
    assert all(r.ms for r in rows if r.impl == "sdpa")
    assert "out of memory" in measure.format_table(rows)


def test_header_names_threads_and_flops():
    line = measure.header("cpu", 2, 8, 64, True)
    assert line.startswith("device cpu (2 threads)")
    assert "batch*heads 8, d_k 64, causal yes" in line
    assert line.endswith("4*B*H*T^2*d_k (/ 2 for tiled, flash and fused SDPA, which skip hidden pairs)")
    assert measure.header("cpu", 2, 8, 64, False).endswith("causal no; forward FLOPs 4*B*H*T^2*d_k")
    assert measure.header("cpu", None, 8, 64, False).startswith(f"device cpu ({torch.get_num_threads()} threads)")


# ---------------------------------------------------------------- notebook 07's timing cell

def test_timing_cell_on_a_cpu_only_machine(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rows = measure.timing_cell({"H100": 989}, cpu_sizes=(32,), batch_heads=2, d_k=8, repeats=2)
    out = capsys.readouterr().out
    assert out.startswith("No CUDA GPU here:")
    assert "device cpu (" in out and "naive" in out and "sdpa" in out
    assert "T=32 float32: naive" in out
    assert "TFLOP/s =" not in out  # no GPU peak to compare with
    assert {r.impl for r in rows} == {"naive", "sdpa"}


def _cuda_stand_ins(monkeypatch, gpu_name, rows):
    calls = {}

    def fake_run_benchmark(**kwargs):
        calls["run"] = kwargs
        return rows

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: gpu_name)
    monkeypatch.setattr(measure, "run_benchmark", fake_run_benchmark)
    return calls


def _row(impl, dtype, T, seconds):
    flops = cost.attention_flops(T, 64, heads=8)["total"]
    return measure.Row(impl, dtype, T, flops, cost.score_matrix_bytes(T, dtype, heads=8), ms=seconds * 1e3,
                       tflops=flops / seconds / 1e12, samples_ms=[seconds * 1e3])


def test_timing_cell_on_a_gpu_picks_the_best_16_bit_row_only(monkeypatch, capsys):
    """The CUDA branch's logic, with the GPU parts replaced by stand-ins: the peak is a 16-bit figure."""
    rows = [_row("naive", "bfloat16", 2048, 2e-4), _row("sdpa", "bfloat16", 2048, 5e-5),
            _row("naive", "bfloat16", 4096, 2e-3), _row("sdpa", "bfloat16", 4096, 5e-5),
            _row("naive", "float32", 4096, 1e-4), _row("sdpa", "float32", 4096, 1e-5),  # faster, but fp32
            measure.Row("naive", "bfloat16", 8192, 1, 1, note="out of memory")]
    calls = _cuda_stand_ins(monkeypatch, "NVIDIA H200", rows)
    peaks = {"A100": 312, "H100 PCIe": 756, "H100": 989, "H200": 989}
    assert measure.timing_cell(peaks, cuda_sizes=(2048, 4096, 8192), batch_heads=8, d_k=64) is rows
    out = capsys.readouterr().out
    assert calls["run"]["dtypes"] == ["bfloat16", "float32"] and calls["run"]["impls"] == ("naive", "sdpa")
    assert calls["run"]["sizes"] == (2048, 4096, 8192) and calls["run"]["num_threads"] is None
    assert out.startswith("device cuda (NVIDIA H200)")
    assert "No CUDA GPU" not in out
    assert "T=4096 bfloat16: naive 40.00x the time of sdpa" in out
    assert "best sdpa (bfloat16, T=4096): 687 TFLOP/s = 69% of this GPU's nominal dense 16-bit peak (989)" in out
    assert "best naive (bfloat16, T=2048): 43 TFLOP/s = 4% of this GPU's nominal dense 16-bit peak (989)" in out
    assert "float32, T=" not in out
    assert sum(line.startswith("best ") for line in out.splitlines()) == 2


def test_timing_cell_compares_each_gpu_with_its_own_peak(monkeypatch, capsys):
    peaks = {"A100": 312, "H100 PCIe": 756, "H100": 989}
    rows = [_row("sdpa", "bfloat16", 4096, 5e-5)]
    _cuda_stand_ins(monkeypatch, "NVIDIA H100 PCIe", rows)
    measure.timing_cell(peaks, cuda_sizes=(4096,))
    assert "16-bit peak (756)" in capsys.readouterr().out
    _cuda_stand_ins(monkeypatch, "NVIDIA H100 80GB HBM3", rows)
    measure.timing_cell(peaks, cuda_sizes=(4096,))
    assert "16-bit peak (989)" in capsys.readouterr().out
    _cuda_stand_ins(monkeypatch, "NVIDIA GeForce RTX 4090", rows)  # no peak known: no percentage claimed
    measure.timing_cell(peaks, cuda_sizes=(4096,))
    assert "best " not in capsys.readouterr().out


# ---------------------------------------------------------------- notebook 07's pieces and reference

def test_piece_calls_compute_the_textbook_steps():
    calls = measure.piece_calls(batch_heads=2, T=16, d_k=4)
    assert list(calls) == ["Q Kᵀ into a (T, T) buffer", "softmax of the buffer, in place", "W · V",
                           "SDPA, whole call, 4-D inputs", "SDPA, whole call, 3-D inputs"]
    Q, K, V = make_qkv(2, 16, 4)
    S = calls["Q Kᵀ into a (T, T) buffer"]()
    torch.testing.assert_close(S, Q[0] @ K[0].transpose(1, 2) / 2.0)
    W = calls["softmax of the buffer, in place"]()
    assert W.data_ptr() == S.data_ptr()  # the same buffer: nothing new allocated
    torch.testing.assert_close(calls["W · V"](), F.scaled_dot_product_attention(Q, K, V)[0])
    torch.testing.assert_close(calls["SDPA, whole call, 3-D inputs"](), calls["SDPA, whole call, 4-D inputs"]()[0])
    timings = measure.time_calls(calls, warmup=0, repeats=1, min_sample_s=0.0)
    assert set(timings) == set(calls)


def _reference_ms() -> dict:
    """REFERENCE_MS as notebook 07's code keeps it (read, not run)."""
    for cell in cells("07"):
        if cell["cell_type"] == "code" and "REFERENCE_MS =" in "".join(cell["source"]):
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "REFERENCE_MS":
                    return ast.literal_eval(node.value)
    raise AssertionError("notebook 07 keeps no REFERENCE_MS")


def test_the_reference_covers_every_piece_and_implementation():
    ref = _reference_ms()
    assert set(measure.piece_calls(1, 4, 2)) <= set(ref)
    assert set(measure.IMPLEMENTATIONS) <= set(ref)
    ratios = {name: ref[name] / ref["sdpa"] for name in ("naive", "lean", "tiled")}
    assert ratios["naive"] > ratios["lean"] > ratios["tiled"] > 1   # the order the notebook's prose tells


def test_notebook_07_quotes_the_reference_numbers_as_they_are_kept():
    """The prose of notebook 07 cannot drift from REFERENCE_MS: every figure it quotes is formatted from it."""
    text = prose("07")
    ms = _reference_ms()
    r = {name: ms[name] / ms["sdpa"] for name in ("naive", "lean", "tiled")}
    assert f"naive {r['naive']:.2f}×, lean {r['lean']:.2f}×, tiled {r['tiled']:.2f}× SDPA's time" in text

    qk, sv = ms["Q Kᵀ into a (T, T) buffer"], ms["W · V"]
    sdpa_4d, sdpa_3d = ms["SDPA, whole call, 4-D inputs"], ms["SDPA, whole call, 3-D inputs"]
    assert f"{qk:.1f} + {sv:.1f} ms against {sdpa_4d:.1f} ms" in text
    assert qk + sv > sdpa_4d              # "the two products alone add up to more than SDPA's whole call"
    assert round(sdpa_3d / sdpa_4d) == 5  # "about five times slower than the 4-D call"
    assert "about five times slower than the 4-D call" in text


# ---------------------------------------------------------------- on a GPU only

@needs_cuda
def test_cuda_benchmark_runs_and_names_the_backend_sdpa_chose():
    """Which kernel runs is PyTorch's choice on this GPU: the row names it, and it is not pinned here."""
    rows = measure.run_benchmark(device="cuda", dtypes=measure.default_dtypes("cuda"), sizes=(256,), batch_heads=2,
                                 d_k=64, repeats=2, impls=("naive", "sdpa"))
    assert all(r.ms and r.ms > 0 for r in rows)
    half = next(r for r in rows if r.impl == "sdpa" and r.dtype != "float32")
    assert half.note == measure.sdpa_backend(*measure.make_qkv(2, 256, 64, device="cuda", dtype=half.dtype))
    assert half.note != "unknown"
    naive = next(r for r in rows if r.impl == "naive" and r.dtype == "float32")
    assert naive.peak_bytes >= 2 * naive.score_bytes


@needs_cuda
def test_cuda_timing_is_synchronised():
    """A queued kernel is waited for: the sample is at least as long as a plain synchronised clock says."""
    a = torch.randn(2048, 2048, device="cuda")
    seconds = measure.one_sample(lambda: a @ a, "cuda", 3)
    assert seconds > 0
    timings = measure.time_calls({"mm": lambda: a @ a}, "cuda", repeats=2)
    assert timings["mm"].median > 0
