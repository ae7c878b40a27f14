import numpy as np
import torch

from helpers.environment import best_device, environment_report, missing_requirements, seed_everything


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
    assert report["device used"] == best_device() in {"cpu", "cuda", "mps"}
    assert report["cuda"] == ("available" if torch.cuda.is_available() else "not available")


def test_this_environment_has_everything():
    assert missing_requirements() == []


def test_missing_requirements_reports_an_old_package(monkeypatch):
    monkeypatch.setattr(np, "__version__", "1.19.0")
    assert missing_requirements() == ["numpy 1.19.0 is too old: the course needs 1.24 or newer."]

