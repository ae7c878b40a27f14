import tomllib
from pathlib import Path

import numpy as np
import torch

from helpers.environment import (
    MINIMUM_VERSIONS,
    best_device,
    environment_report,
    missing_requirements,
    seed_everything,
)

ROOT = Path(__file__).resolve().parents[1]


def test_seed_everything_makes_numpy_and_torch_repeat():
    rng = seed_everything(7)
    a, t = rng.normal(size=3), torch.randn(3)
    rng = seed_everything(7)
    np.testing.assert_array_equal(a, rng.normal(size=3))
    torch.testing.assert_close(t, torch.randn(3))


def test_report_names_versions_and_a_device():
    report = environment_report()
    assert report["torch"] == torch.__version__
    assert report["numpy"] == np.__version__
    assert report["device used"] == ("cuda" if best_device() == "cuda" else "cpu")
    assert report["cuda"] == ("available" if torch.cuda.is_available() else "not available")


def test_report_on_an_nvidia_gpu_uses_it_and_names_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA H200")
    report = environment_report()
    assert (report["cuda"], report["device used"], report["gpu"]) == ("available", "cuda", "NVIDIA H200")


def test_report_on_an_apple_gpu_uses_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    report = environment_report()
    assert (report["mps"], report["device used"]) == ("available", "cpu")


def test_this_environment_has_everything():
    assert missing_requirements() == []


def test_missing_requirements_reports_an_old_package(monkeypatch):
    monkeypatch.setattr(np, "__version__", "1.19.0")
    assert missing_requirements() == ['numpy 1.19.0 is too old: the course needs 1.24 or newer '
                                      '(pip install --upgrade "numpy>=1.24", or `make course`).']


def test_a_torch_below_the_floor_is_named(monkeypatch):
    """torch 2.1 and 2.2 lack torch.nn.attention's masks: notebook 00 must say so, by name."""
    monkeypatch.setattr(torch, "__version__", "2.2.2+cu121")
    assert missing_requirements() == ['torch 2.2.2+cu121 is too old: the course needs 2.3 or newer '
                                      '(pip install --upgrade "torch>=2.3", or `make course`).']


def test_the_minimum_versions_are_pyproject_floors():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = dict(d.split(">=") for d in dependencies)
    assert {name: tuple(int(p) for p in v.split(".")) for name, v in floors.items()} == MINIMUM_VERSIONS


def test_a_package_exactly_at_its_floor_is_enough(monkeypatch):
    from helpers.environment import MINIMUM_VERSIONS, missing_requirements
    monkeypatch.setattr(np, "__version__", ".".join(map(str, MINIMUM_VERSIONS["numpy"])) + ".0")
    assert missing_requirements() == []


def test_python_3_9_is_named(monkeypatch):
    import sys

    from helpers.environment import missing_requirements
    monkeypatch.setattr(sys, "version_info", (3, 9, 18, "final", 0))
    assert any("Python 3.10 or newer" in p for p in missing_requirements())


def test_seed_everything_seeds_numpy_with_the_given_seed():
    from helpers.environment import seed_everything
    seed_everything(5)
    drawn = np.random.rand(3)
    np.random.seed(5)
    assert np.array_equal(drawn, np.random.rand(3))


def test_environment_report_prints_aligned_values(capsys):
    from helpers.environment import environment_report, print_environment_report
    print_environment_report()
    lines = capsys.readouterr().out.splitlines()
    report = environment_report()
    width = max(map(len, report))
    assert len(lines) == len(report)
    for line, (key, value) in zip(lines, report.items()):
        assert line == f"{key:<{width}}  {value}"
