"""tools/colab_binder.py: badges and the Colab-only install cell, added, replaced and removed."""
import importlib.util
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
URL = "https://github.com/example-org/self-attention-course"


def load_tool():
    spec = importlib.util.spec_from_file_location("colab_binder", ROOT / "tools" / "colab_binder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = load_tool()


@pytest.fixture
def copies(tmp_path):
    paths = []
    for path in tool.NOTEBOOKS:
        shutil.copy(path, tmp_path / path.name)
        paths.append(tmp_path / path.name)
    return paths


def write(paths, url, branch="main"):
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        tool.apply(nb, path.name, url, branch)
        nbformat.write(nb, path)


def test_the_notebooks_agree_with_pyproject():
    url = tool.repository_url()
    assert tool.disagreements(url) == [], "run `make links` after changing [project.urls] Repository"


def test_badges_and_colab_cell_are_added(copies):
    write(copies, URL)
    assert tool.disagreements(URL, paths=copies) == []
    for path in copies:
        nb = nbformat.read(path, as_version=4)
        title = nb.cells[0].source
        number = path.name[:2]
        assert title.startswith(f"# {number} · ")
        assert f"colab.research.google.com/github/example-org/self-attention-course/blob/main/notebooks/{path.name})" \
            in title
        assert f"mybinder.org/v2/gh/example-org/self-attention-course/main?labpath=notebooks%2F{path.name})" in title
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert nb.cells[1] is code[0]
        assert code[0].metadata["tags"] == [tool.SETUP_TAG]
        assert code[0].metadata["slideshow"] == {"slide_type": "skip"}
        assert "git+https://github.com/example-org/self-attention-course@main" in code[0].source
        assert sum(tool.SETUP_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1


def test_another_address_replaces_and_the_recorded_one_restores_exactly(copies):
    original = [p.read_text(encoding="utf-8") for p in copies]
    write(copies, None)
    assert "colab-badge.svg" not in copies[3].read_text(encoding="utf-8")
    write(copies, URL)
    write(copies, "https://github.com/someone-else/course.git", branch="v1")
    assert tool.disagreements("https://github.com/someone-else/course", branch="v1", paths=copies) == []
    text = copies[3].read_text(encoding="utf-8")
    assert "example-org" not in text and text.count("colab-badge.svg") == 1
    write(copies, tool.repository_url())
    assert [p.read_text(encoding="utf-8") for p in copies] == original


def test_a_stale_notebook_is_reported(copies):
    write(copies, URL)
    assert tool.disagreements(None, paths=copies) == [p.name for p in copies]
    assert tool.disagreements("https://github.com/example-org/other", paths=copies) == [p.name for p in copies]
    write(copies[:1], None)
    assert tool.disagreements(URL, paths=copies) == [copies[0].name]


@pytest.mark.parametrize("bad", ["https://gitlab.com/a/b", "github.com/a/b", "https://github.com/only-owner", ""])
def test_only_github_addresses_are_accepted(bad):
    with pytest.raises(ValueError, match="expected a GitHub address like https://github.com/OWNER/REPO"):
        tool.badge_line(bad, "00_start_here.ipynb")


def test_repository_url_is_read_from_pyproject(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "x"\n\n[project.urls]\nRepository = "{URL}"\n', encoding="utf-8")
    assert tool.repository_url(pyproject) == URL
    pyproject.write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert tool.repository_url(pyproject) is None


def run_setup_cell(monkeypatch, in_colab):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: calls.append((args, kwargs)))
    if in_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(tool.colab_setup_source(URL), {})
    return calls


def test_the_colab_cell_installs_only_in_colab(monkeypatch):
    assert run_setup_cell(monkeypatch, in_colab=False) == []
    (args, kwargs), = run_setup_cell(monkeypatch, in_colab=True)
    assert args[0][-1] == "git+https://github.com/example-org/self-attention-course@main"
    assert args[0][1:4] == ["-m", "pip", "install"] and kwargs == {"check": True}


def test_check_mode_exit_codes(capsys):
    assert tool.main(["--check"]) == 0
    assert "agree" in capsys.readouterr().out
