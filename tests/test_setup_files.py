"""The set-up files agree: requirements.txt, environment.yml (conda, Binder) and pyproject.toml."""
import platform
import re
import runpy
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}  # the same package under conda-forge's name


def pins(text, separator):
    pattern = rf"^\s*(?:- )?([A-Za-z0-9_.-]+){re.escape(separator)}([0-9][^\s#]*)"
    return dict(re.findall(pattern, text, flags=re.MULTILINE))


def test_environment_yml_pins_what_requirements_txt_pins():
    requirements = pins((ROOT / "requirements.txt").read_text(encoding="utf-8"), "==")
    conda = pins((ROOT / "environment.yml").read_text(encoding="utf-8"), "=")
    assert len(requirements) >= 10
    expected = {CONDA_NAMES.get(name, name): version for name, version in requirements.items()}
    assert {name: conda.get(name) for name in expected} == expected


def test_environment_yml_installs_the_helpers_and_the_oldest_supported_python():
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    check = (ROOT / "tools" / "check_python.py").read_text(encoding="utf-8")
    oldest = re.search(r"OLDEST, NEWEST = \((\d+), (\d+)\)", check).groups()
    assert pins(text, "=")["python"] == ".".join(oldest)
    assert re.search(r"^\s+- -e \.\s*$", text, flags=re.MULTILINE), "the pip section installs the helpers"


def test_pyproject_keeps_the_helpers_loose_and_requirements_exact():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    loose = {re.match(r"[A-Za-z0-9_.-]+", dep).group(): dep for dep in project["dependencies"]}
    requirements = pins((ROOT / "requirements.txt").read_text(encoding="utf-8"), "==")
    assert set(loose) <= set(requirements), "every helpers dependency is pinned for the course"
    assert all(">=" in dep for dep in loose.values()), "Colab installs the helpers over its own versions"
    assert pins((ROOT / "requirements-browser.txt").read_text(encoding="utf-8"), "==")


def test_the_python_check_refuses_what_the_pins_cannot_install_on(monkeypatch):
    script = str(ROOT / "tools" / "check_python.py")
    runpy.run_path(script)                                   # this Python installs the course: no exit
    monkeypatch.setattr(sys, "version_info", (3, 15, 0))
    with pytest.raises(SystemExit, match="Python 3.11 to 3.14.*make PYTHON=python3.12 course"):
        runpy.run_path(script)
    monkeypatch.setattr(sys, "version_info", (3, 12, 0))
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    with pytest.raises(SystemExit, match="Intel Macs.*Colab"):
        runpy.run_path(script)
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    runpy.run_path(script)
