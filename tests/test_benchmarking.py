"""helpers.benchmarking: the implementations agree, the benchmark's rows and tables, notebook 07's cells.

No timing is asserted (the machine's speed is not a test result); what is checked
is that the benchmark measures what it says: the same attention from every
implementation, nothing but the mathematics in the timed call, rows, notes and
tables, and the CUDA branch's logic without a GPU. How one call is timed is
tested in test_measure.py, the devices in test_devices.py, the script in
test_benchmark_script.py.
"""
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from helpers import benchmarking as bench
from helpers import cost, devices, measure

ROOT = Path(__file__).resolve().parents[1]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
HAS_MEMINFO = Path("/proc/meminfo").exists()


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

    monkeypatch.setattr(fast_attention, "refuse_nonfinite", refuse)
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



# ---------------------------------------------------------------- inputs

def test_make_qkv_is_seeded_4d_and_typed():
    Q, K, V = bench.make_qkv(3, 10, 8, dtype="bf16", seed=5)
    assert Q.shape == K.shape == V.shape == (1, 3, 10, 8)
    assert Q.dtype is torch.bfloat16
    torch.testing.assert_close(bench.make_qkv(3, 10, 8, seed=5)[0], bench.make_qkv(3, 10, 8, seed=5)[0])
    assert not torch.equal(Q.float(), K.float())
    with pytest.raises(ValueError, match="T should be at least 1"):
        bench.make_qkv(3, 0, 8)


# ---------------------------------------------------------------- the whole benchmark

def test_run_benchmark_on_the_cpu():
    rows = bench.run_benchmark(device="cpu", sizes=(64, 32), batch_heads=2, d_k=8, repeats=2, warmup=1,
                               num_threads=1)
    assert [(r.T, r.impl) for r in rows] == [(32, "naive"), (32, "lean"), (32, "tiled"), (32, "sdpa"),
                                            (64, "naive"), (64, "lean"), (64, "tiled"), (64, "sdpa")]
    for r in rows:
        assert r.ms > 0 and len(r.samples_ms) == 2 and r.device == "cpu"
        assert r.tflops == pytest.approx(cost.forward_flops(2, r.T, 8) / (r.ms / 1e3) / 1e12)
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
        assert "not tried on a CPU" in out or devices.available_memory_bytes("cpu") is None


def test_timing_cell_on_a_gpu_prints_tflops_backend_and_largest_T(monkeypatch, capsys):
    """The CUDA branch's logic, with the GPU parts replaced by stand-ins."""
    calls = {}

    def fake_run_benchmark(**kwargs):
        calls["run"] = kwargs
        return [bench.Row("naive", "cuda", "bfloat16", 4096, 8, 64, False, ms=2.0,
                          tflops=cost.tflops_per_second(cost.forward_flops(8, 4096, 64), 2e-3), samples_ms=[2.0]),
                bench.Row("sdpa", "cuda", "bfloat16", 4096, 8, 64, False, ms=0.05,
                          tflops=cost.tflops_per_second(cost.forward_flops(8, 4096, 64), 5e-5), backend="flash",
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



# ---------------------------------------------------------------- largest T on a GPU

def test_largest_naive_T_refuses_the_cpu():
    with pytest.raises(RuntimeError, match="needs a CUDA device: on the CPU running out of memory does not raise"):
        bench.largest_naive_T_cuda(device="cpu")



# ---------------------------------------------------------------- on a GPU only

@needs_cuda
def test_cuda_benchmark_runs_and_reports_a_fused_backend():
    rows = bench.run_benchmark(device="cuda", dtypes=devices.default_dtypes("cuda"), sizes=(256,), batch_heads=2,
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
    timings = measure.time_calls(calls, warmup=0, repeats=1, min_sample_s=0.0)
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


# ---------------------------------------------------------------- bad arguments

def test_run_benchmark_takes_one_name_or_one_size_as_a_list_of_one():
    """dtypes="float32" was read letter by letter ("Unknown dtype 'f'"), sizes=16 was 'not iterable'."""
    rows = bench.run_benchmark(device="cpu", dtypes="fp32", sizes=16, memory=16, impls="naive", batch_heads=1,
                               d_k=4, repeats=1, warmup=0)
    assert [(r.impl, r.dtype, r.T) for r in rows] == [("naive", "float32", 16)]
    assert rows[0].peak_bytes is not None


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(dtypes=["float32", "f32x"]), ValueError, "In dtypes: Unknown dtype 'f32x': expected one of"),
    (dict(dtypes=[]), ValueError, "dtypes is empty"),
    (dict(dtypes=32), TypeError, "dtypes should be a list of names such as"),
    (dict(impls=["naive", "magic"]), ValueError, "each entry of impls should be one of 'naive', 'lean'"),
    (dict(impls=[]), ValueError, "impls is empty"),
    (dict(impls=5), TypeError, "impls should be a list of names"),
    (dict(sizes="16"), TypeError, "sizes should be a list of sequence lengths such as"),
    (dict(sizes=[16, 0]), ValueError, "each entry of sizes should be at least 1"),
    (dict(memory="yes"), TypeError, "memory should be True, False or a list of sequence lengths"),
    (dict(causal="no"), TypeError, "causal should be True or False"),
    (dict(repeats=0), ValueError, "repeats should be a whole number >= 1"),
    (dict(seed=1.5), TypeError, "seed should be a whole number >= 0"),
])
def test_run_benchmark_names_the_bad_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        bench.run_benchmark(**{"device": "cpu", "sizes": (16,), "batch_heads": 1, "d_k": 4, **kwargs})


def test_format_table_and_ratios_want_the_rows_of_run_benchmark():
    with pytest.raises(TypeError, match=r"rows should hold the Row objects that run_benchmark returns, but rows\[0\]"):
        bench.format_table([{"impl": "naive"}])
    with pytest.raises(TypeError, match="rows should be the list that run_benchmark returns"):
        bench.ratios(None)
    with pytest.raises(TypeError, match="seed should be a whole number >= 0"):
        bench.make_qkv(1, 4, 4, seed="a")
