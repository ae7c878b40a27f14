"""benchmarks/attention.py: arguments, messages, the printed table, forced SDPA backends and the largest-T search;
benchmarks/widget_updates.py: it moves every control of a widget and leaves it as it was.

The measuring itself is helpers/measure.py, tested in test_measure.py. The CUDA
logic of the largest-T search is exercised without a GPU: running out of memory
is simulated by a stand-in attention that raises.
"""
import importlib.util
import re
import weakref
from collections import Counter
from pathlib import Path

import ipywidgets
import pytest
import torch
import torch.nn.functional as F

from helpers import measure

ROOT = Path(__file__).resolve().parents[1]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def load_script(name="attention"):
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the command line

def test_script_prints_a_table(capsys):
    script = load_script()
    rc = script.main(["--device", "cpu", "--sizes", "32", "16", "--batch-heads", "2", "--d-k", "8",
                      "--repeats", "3", "--threads", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "device cpu (1 threads)" in out
    assert sum(line.startswith(("naive", "lean", "tiled", "sdpa")) for line in out.splitlines()) == 8
    assert "T=16 float32: naive" in out


def test_script_find_max_on_the_cpu_does_not_try(capsys):
    script = load_script()
    assert script.main(["--device", "cpu", "--sizes", "16", "--batch-heads", "1", "--d-k", "4", "--repeats", "3",
                        "--no-memory", "--impl", "sdpa", "--find-max"]) == 0
    assert "--find-max is CUDA only" in capsys.readouterr().out


def test_script_explains_a_missing_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    script = load_script()
    assert script.main(["--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "device 'cuda' was asked for" in err and "Use --device cpu" in err


def _on_a_gpu(monkeypatch, seen):
    monkeypatch.setattr(measure, "resolve_device", lambda device: torch.device("cuda"))
    monkeypatch.setattr(measure, "default_dtypes", lambda device: ["bfloat16", "float32"])
    monkeypatch.setattr(measure, "header", lambda *args: "header")
    monkeypatch.setattr(measure, "run_benchmark", lambda **kwargs: seen.update(kwargs) or [])


def test_script_ignores_threads_on_a_gpu(monkeypatch, capsys):
    script = load_script()
    seen = {}
    _on_a_gpu(monkeypatch, seen)
    assert script.main(["--threads", "4"]) == 0
    assert seen["num_threads"] is None
    assert seen["dtypes"] == ["bfloat16", "float32"]


def test_script_find_max_on_a_gpu_prints_one_line_per_dtype(monkeypatch, capsys):
    script = load_script()
    _on_a_gpu(monkeypatch, {})
    answers = {"bfloat16": (32768, 33792), "float32": (16384, "stopped by an error that is not out of memory: boom")}
    monkeypatch.setattr(script, "largest_T", lambda dtype, batch_heads, d_k, device: answers[dtype])
    assert script.main(["--find-max", "--batch-heads", "8"]) == 0
    out = capsys.readouterr().out
    assert "largest T the course's attention fits (bfloat16, batch*heads 8): 32768 (out of memory at 33792)" in out
    assert ("largest T the course's attention fits (float32, batch*heads 8): 16384 "
            "(stopped by an error that is not out of memory: boom)") in out
    answers["float32"] = (2**20, None)
    script.main(["--find-max", "--batch-heads", "8"])
    assert f"(float32, batch*heads 8): {2**20} (all sizes tried fitted)" in capsys.readouterr().out


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
    (["--device", "tpu"], "invalid choice: 'tpu'"),
])
def test_script_rejects_bad_arguments(args, message, capsys):
    script = load_script()
    with pytest.raises(SystemExit) as exit_info:
        script.main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_script_passes_its_checked_arguments_to_the_benchmark(monkeypatch, capsys):
    script = load_script()
    seen = {}
    monkeypatch.setattr(measure, "run_benchmark", lambda **kwargs: seen.update(kwargs) or [])
    assert script.main(["--device", "cpu", "--dtype", "fp32", "bf16", "--sizes", "16", "--impl", "naive",
                        "sdpa:math", "--no-memory", "--causal", "--threads", "2"]) == 0
    assert seen["dtypes"] == ["float32", "bfloat16"] and seen["sizes"] == [16]
    assert seen["impls"] == ["naive", "sdpa:math"]
    assert seen["memory"] is False and seen["causal"] is True and seen["num_threads"] == 2
    assert {"naive", "lean", "tiled", "sdpa", "sdpa:flash", "sdpa:math"} <= set(seen["implementations"])


def test_script_sweeps_flash_tiles_against_the_matrix_products(capsys):
    script = load_script()
    assert script.main(["--device", "cpu", "--sizes", "48", "--batch-heads", "2", "--d-k", "8", "--repeats", "3",
                        "--threads", "1", "--no-memory", "--impl", "flash", "sdpa", "mm", "--blocks", "16x32",
                        "48x48"]) == 0
    out = capsys.readouterr().out
    assert "mm: one square N x N product" in out
    assert [line.split()[0] for line in out.splitlines() if line.startswith(("flash ", "mm ", "flash:"))][:4] == [
        "flash", "mm", "flash:16x32", "flash:48x48"]
    assert re.search(r"T=48 float32: of mm's rate \(\d+ GFLOP/s\), flash \d\.\d\d, sdpa \d\.\d\d, flash:16x32", out)
    assert re.search(r"T=48 float32: flash \S+x, flash:16x32 \S+x, flash:48x48 \S+x the time of sdpa\n", out)  # not mm
    gaps = re.search(r"T=48 float32: max \|impl - sdpa\| flash (\S+), flash:16x32 (\S+), flash:48x48 (\S+)", out)
    assert gaps and all(float(g.rstrip(",")) < 1e-6 for g in gaps.groups())


@pytest.mark.parametrize("text", ["256", "0x512", "256x", "ax4"])
def test_script_rejects_a_bad_tile_size(text, capsys):
    with pytest.raises(SystemExit):
        load_script().main(["--blocks", text])
    assert "expected tile sizes as QUERIESxKEYS" in capsys.readouterr().err


@pytest.mark.parametrize("batch_heads, T, d_k, N", [(8, 2048, 64, 1600), (4, 2048, 64, 1280), (2, 48, 8, 64),
                                                   (8, 1000, 64, 1024)])
def test_the_limit_is_one_square_product_a_multiple_of_64_wide_that_counts_its_own_flops(batch_heads, T, d_k, N):
    Q, K, V = measure.make_qkv(batch_heads, T, d_k)   # N: the multiple of 64 nearest (4·B·H·T²·d_k / 2) ** (1/3)
    call = load_script().matmul_only(Q, K, V)
    assert call().shape == (N, N) and call.flops == 2 * N**3
    rows = measure.run_benchmark(sizes=T, batch_heads=batch_heads, d_k=d_k, impls=("mm",), repeats=1, memory=False,
                                 implementations={"mm": ("", load_script().matmul_only)}) if T < 100 else []
    assert all(row.flops == 2 * N**3 and row.tflops == pytest.approx(row.flops / row.samples_ms[0] / 1e9)
               for row in rows)


# ---------------------------------------------------------------- SDPA forced to one backend

@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("impl", ["sdpa:math", "sdpa:flash"])
def test_forced_backends_ask_for_their_backend_and_compute_the_same_attention_on_the_cpu(impl, causal, monkeypatch):
    import torch.nn.attention as attention  # which kernel then runs is PyTorch's choice; which one is asked, ours
    asked, sdpa_kernel = [], attention.sdpa_kernel
    monkeypatch.setattr(attention, "sdpa_kernel", lambda chosen: asked.append(list(chosen)) or sdpa_kernel(chosen))
    implementations = load_script().implementations()
    Q, K, V = measure.make_qkv(4, 33, 16)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
    torch.testing.assert_close(implementations[impl][1](Q, K, V, causal)(), expected, atol=1e-5, rtol=1e-5)
    backend = {"sdpa:math": attention.SDPBackend.MATH, "sdpa:flash": attention.SDPBackend.FLASH_ATTENTION}[impl]
    assert asked == [[backend]]


def test_a_backend_that_cannot_run_gets_a_note():
    rows = measure.run_benchmark(device="cpu", sizes=(32,), batch_heads=1, d_k=4, repeats=1, warmup=0,
                                 impls=("sdpa:efficient", "sdpa"), implementations=load_script().implementations(),
                                 memory=False)
    notes = {r.impl: r.note for r in rows}
    assert notes["sdpa:efficient"].startswith("cannot run")  # no memory-efficient kernel on the CPU
    assert next(r for r in rows if r.impl == "sdpa").ms > 0


# ---------------------------------------------------------------- the largest T on a GPU, with stand-ins

def fake_gpu(monkeypatch, script, limit, error=None):
    """Attention that runs out of memory above `limit` (or raises `error` there); returns the Ts tried."""
    tried = []

    def attention(Q, K, V):
        T = Q.shape[-2]
        tried.append(T)
        if T > limit:
            raise error or torch.cuda.OutOfMemoryError(f"CUDA out of memory at T={T}")

    monkeypatch.setattr(measure, "make_qkv", lambda bh, T, d_k, **kwargs: (torch.empty(0, T, 0),) * 3)
    monkeypatch.setattr(script, "scaled_dot_product_attention", attention)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    return tried


def test_largest_T_doubles_then_bisects(monkeypatch):
    script = load_script()
    tried = fake_gpu(monkeypatch, script, 45_000)
    ok, bad = script.largest_T("bfloat16", 8, 64, "cuda", start=1024, limit=2**20, step=1024)
    assert ok <= 45_000 < bad and bad - ok <= 1024
    assert ok % 1024 == 0
    assert tried[:7] == [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    assert len(tried) <= 7 + 6  # bisecting 32,768 .. 65,536 to 1,024


def test_largest_T_when_everything_fits_or_nothing_does(monkeypatch):
    script = load_script()
    fake_gpu(monkeypatch, script, 10**9)
    assert script.largest_T("float32", 1, 16, "cuda", start=1024, limit=4096) == (4096, None)
    fake_gpu(monkeypatch, script, 0)
    assert script.largest_T("float32", 1, 16, "cuda", start=1024, limit=4096) == (None, 1024)


def test_a_cublas_allocation_failure_counts_as_out_of_memory(monkeypatch):
    script = load_script()
    fake_gpu(monkeypatch, script, 2048,
             RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"))
    assert script.largest_T("float32", 1, 16, "cuda", start=1024, limit=2**20) == (2048, 3072)  # bisected to step


def test_largest_T_reports_an_error_that_is_not_out_of_memory_instead_of_raising(monkeypatch):
    script = load_script()
    fake_gpu(monkeypatch, script, 4096, RuntimeError("mat1 and mat2 shapes cannot be multiplied\nmore"))
    ok, why = script.largest_T("float32", 1, 16, "cuda", start=1024, limit=2**20)
    assert ok == 4096
    assert why == "stopped by an error that is not out of memory: mat1 and mat2 shapes cannot be multiplied"
    fake_gpu(monkeypatch, script, 0, RuntimeError("No available kernel. Aborting execution."))
    assert script.largest_T("float32", 1, 16, "cuda", start=1024) == (
        None, "stopped by an error that is not out of memory: No available kernel. Aborting execution.")
    # while bisecting, too
    tried = fake_gpu(monkeypatch, script, 10**9)
    real = script.scaled_dot_product_attention

    def later(Q, K, V):
        if Q.shape[-2] == 65536:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        if Q.shape[-2] > 32768:
            raise RuntimeError("an illegal memory access was encountered")
        return real(Q, K, V)

    monkeypatch.setattr(script, "scaled_dot_product_attention", later)
    assert script.largest_T("float32", 1, 16, "cuda", start=1024) == (
        32768, "stopped by an error that is not out of memory: an illegal memory access was encountered")
    assert tried[-1] == 32768


def test_largest_T_lets_a_bug_through(monkeypatch):
    script = load_script()
    fake_gpu(monkeypatch, script, 1024, ValueError("a bug, not a memory limit"))
    with pytest.raises(ValueError, match="a bug"):
        script.largest_T("float32", 1, 16, "cuda", start=1024)


def test_largest_T_cleans_up_after_the_traceback_is_gone(monkeypatch):
    """empty_cache while the traceback still held the big tensors would free nothing."""
    script = load_script()
    fake_gpu(monkeypatch, script, 0)
    held, alive_at_cleanup = [], []

    def attention(Q, K, V):
        big = torch.zeros(Q.shape[-2])
        held.append(weakref.ref(big))
        raise torch.cuda.OutOfMemoryError("stand-in")

    monkeypatch.setattr(script, "scaled_dot_product_attention", attention)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: alive_at_cleanup.append(held[-1]() is not None))
    assert script.largest_T("float32", 1, 16, "cuda", start=8) == (None, 8)
    assert alive_at_cleanup == [False]


# ---------------------------------------------------------------- on a GPU only

@needs_cuda
def test_cuda_largest_T_small_limit():
    ok, bad = load_script().largest_T("float32", 1, 16, "cuda", start=256, limit=1024)
    assert ok == 1024 and bad is None


@needs_cuda
def test_cuda_forced_flash_backend_runs_16_bit():
    """Forced to flash, SDPA agrees with its own choice; a GPU or torch with no flash kernel for bf16 is skipped,
    unless SDPA itself chooses flash for these inputs."""
    implementations = load_script().implementations()
    Q, K, V = measure.make_qkv(2, 128, 64, device="cuda", dtype="bfloat16")
    try:
        forced = implementations["sdpa:flash"][1](Q, K, V, True)()
    except RuntimeError as error:
        if measure.sdpa_backend(Q, K, V, causal=True) == "flash":
            raise
        pytest.skip(f"no flash kernel for bf16 on this GPU and torch: {str(error)[:120]}")
    torch.testing.assert_close(forced, F.scaled_dot_product_attention(Q, K, V, is_causal=True))


# ---------------------------------------------------------------- benchmarks/widget_updates.py

def test_widget_benchmark_moves_every_control_and_puts_it_back():
    from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget
    script = load_script("widget_updates")
    w = SoftmaxTemperatureWidget()
    first = w.picture.value
    scores, scale = script.controls(w)
    assert (scores.description, scale.description) == ("scores", "scale λ")
    moves = script.stops(scores) + script.stops(scale)
    times = script.time_updates(w)
    assert len(times) == len(moves) == (len(script.SCORES) + 1) + (8 + 1) and all(t > 0 for t in times)
    assert (scores.value, scale.value) == ("1.0, 1.2, 0.9", 1.0)      # every control ends where it started
    assert w.picture.value == first      # 8, 4 and 2 bars on the way: the same picture once back at 3


def test_widget_benchmark_knows_every_notebooks_widget():
    cells = Counter(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
                    for _ in range(p.read_text(encoding="utf-8").count("# Output varies: a live widget.")))
    source = (ROOT / "benchmarks" / "widget_updates.py").read_text(encoding="utf-8")
    assert Counter(re.findall(r'yield "(\d\d)"', source)) == cells          # one timed widget per widget cell


def test_widget_benchmark_moves_an_integer_slider_to_each_value_once():
    script = load_script("widget_updates")
    slider = ipywidgets.IntSlider(value=1, min=0, max=3)
    assert script.stops(slider) == [0, 2, 3, 1]
