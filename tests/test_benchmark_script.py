"""benchmarks/attention.py: arguments, messages and the printed table (the measuring is tested elsewhere)."""
import importlib.util
from pathlib import Path

import pytest
import torch

from helpers import benchmarking as bench
from helpers import devices

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location("attention_benchmark", ROOT / "benchmarks" / "attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    monkeypatch.setattr(devices, "resolve_device", lambda device: torch.device("cuda"))
    monkeypatch.setattr(devices, "default_dtypes", lambda device: ["float32"])
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


def test_script_passes_its_checked_arguments_to_the_benchmark(monkeypatch, capsys):
    script = load_script()
    seen = {}
    monkeypatch.setattr(bench, "run_benchmark", lambda **kwargs: seen.update(kwargs) or [])
    assert script.main(["--device", "cpu", "--dtype", "fp32", "--sizes", "16", "--impl", "naive",
                        "--no-memory"]) == 0
    assert seen["dtypes"] == ["float32"] and seen["sizes"] == [16] and seen["impls"] == ["naive"]
    assert seen["memory"] is False
