"""Reproducibility and the environment check: seeds, versions, devices."""
import contextlib
import importlib
import platform
import random
import sys

import numpy as np


def seed_everything(seed: int = 0) -> np.random.Generator:
    """Seed Python, NumPy and (if installed) torch; return a NumPy Generator."""
    random.seed(seed)
    np.random.seed(seed)
    with contextlib.suppress(ImportError):
        import torch
        torch.manual_seed(seed)
    return np.random.default_rng(seed)


def best_device() -> str:
    """'cuda' if an NVIDIA GPU is usable, else 'mps' (Apple silicon), else 'cpu'."""
    import torch
    return "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def environment_report() -> dict[str, str]:
    """What this course runs on: versions and the devices torch can see."""
    import ipywidgets
    import matplotlib
    import torch
    report = {"python": platform.python_version(), "platform": f"{platform.system()} {platform.machine()}",
              "numpy": np.__version__, "matplotlib": matplotlib.__version__, "torch": torch.__version__,
              "ipywidgets": ipywidgets.__version__, "cpu threads (torch)": str(torch.get_num_threads()),
              "cuda": "available" if torch.cuda.is_available() else "not available",
              "mps": "available" if best_device() == "mps" else "not available",
              "device used": "cuda" if best_device() == "cuda" else "cpu"}   # an Apple GPU is not timed
    if torch.cuda.is_available():
        report |= {"gpu": torch.cuda.get_device_name(0), "cuda version (torch build)": str(torch.version.cuda)}
    return report


def print_environment_report() -> None:
    """Print `environment_report()` as an aligned two-column table."""
    report = environment_report()
    width = max(map(len, report))
    for key, value in report.items():
        print(f"{key:<{width}}  {value}")


#: The oldest version of each package the course runs on: pyproject.toml's floors (make test-floor runs them).
MINIMUM_VERSIONS = {"numpy": (1, 24), "matplotlib": (3, 7), "pillow": (9, 3), "ipywidgets": (7, 7), "torch": (2, 3)}


def missing_requirements() -> list[str]:
    """What the course needs but this environment lacks, each by name; an empty list means ready."""
    problems = []
    if sys.version_info < (3, 10):  # noqa: UP036 (a student may run an older Python)
        problems.append(f"Python 3.10 or newer is needed; this is {platform.python_version()}.")
    for package, minimum in MINIMUM_VERSIONS.items():
        try:
            module = importlib.import_module("PIL" if package == "pillow" else package)
        except ImportError:
            problems.append(f"{package} is not installed: run `make course` (or see the README).")
            continue
        if tuple(int(part) for part in module.__version__.split("+")[0].split(".")[:2]) < minimum:
            wanted = ".".join(map(str, minimum))
            problems.append(f"{package} {module.__version__} is too old: the course needs {wanted} or newer "
                            f"(pip install --upgrade \"{package}>={wanted}\", or `make course`).")
    return problems
