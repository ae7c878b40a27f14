"""Open-in-Colab and Binder badges, and a Colab-only install cell, in every notebook.

Both need the course's public GitHub address, recorded in one place: pyproject.toml,

    [project.urls]
    Repository = "https://github.com/OWNER/REPO"

With it set, `make links` runs this script and re-executes the notebooks. Each
notebook then carries, under its title, a badge line that opens it in Colab or on
Binder, and, as its first code cell, one that installs the `helpers` package when
it runs in Colab and does nothing anywhere else. Run again with
another address, it replaces both; with none recorded, it removes them.

    python tools/colab_binder.py            # write the notebooks from pyproject.toml
    python tools/colab_binder.py --check    # only say whether they agree (exit 1 if not)
"""
from __future__ import annotations

import argparse
import copy
import re
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SETUP_TAG = "colab-setup"
BADGE_MARK = "<!-- colab-binder -->"
GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")

COLAB_SETUP = '''\
# In Google Colab only: install the course's helpers package (anywhere else this cell does nothing).
import sys

if "google.colab" in sys.modules:
    import importlib
    import subprocess

    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "{package}"], check=True)
    importlib.invalidate_caches()'''


def repository_url(pyproject: Path = ROOT / "pyproject.toml") -> str | None:
    """The course's public address from pyproject.toml's [project.urls] Repository, or None."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    return project.get("urls", {}).get("Repository")


def github_repository(url: str) -> tuple[str, str]:
    """(owner, name) of a GitHub address; Colab opens notebooks from GitHub only."""
    match = GITHUB.match(url.strip())
    if not match:
        raise ValueError(f"expected a GitHub address like https://github.com/OWNER/REPO, got {url!r}")
    return match.group(1), match.group(2)


def badge_line(url: str, notebook: str, branch: str = "main") -> str:
    """The markdown line of both badges for notebooks/<notebook>."""
    owner, name = github_repository(url)
    colab = f"https://colab.research.google.com/github/{owner}/{name}/blob/{branch}/notebooks/{notebook}"
    binder = f"https://mybinder.org/v2/gh/{owner}/{name}/{branch}?labpath=notebooks%2F{notebook}"
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab}) "
            f"[![Launch on Binder](https://mybinder.org/badge_logo.svg)]({binder}) {BADGE_MARK}")


def colab_setup_source(url: str, branch: str = "main") -> str:
    """The install cell's code: pip-installs the repository's helpers, in Colab only."""
    owner, name = github_repository(url)
    return COLAB_SETUP.format(package=f"git+https://github.com/{owner}/{name}@{branch}")


def _without_links(nb: nbformat.NotebookNode) -> None:
    nb.cells = [c for c in nb.cells if SETUP_TAG not in c.metadata.get("tags", [])]
    title = nb.cells[0]
    lines = title.source.split("\n")
    for i, line in enumerate(lines):
        if line.endswith(BADGE_MARK):
            # the badge line and the blank line after it
            del lines[i:i + 2]
            break
    title.source = "\n".join(lines)


def apply(nb: nbformat.NotebookNode, notebook: str, url: str | None, branch: str = "main") -> None:
    """Put the badges and the Colab cell into one notebook (or take them out when url is None)."""
    _without_links(nb)
    if url is None:
        return
    title = nb.cells[0]
    head, _, rest = title.source.partition("\n\n")
    title.source = f"{head}\n\n{badge_line(url, notebook, branch)}\n\n{rest}"
    cell = nbformat.v4.new_code_cell(colab_setup_source(url, branch))
    cell.id = SETUP_TAG  # fixed, so that writing the same address twice changes nothing
    cell.metadata = {"slideshow": {"slide_type": "skip"}, "tags": [SETUP_TAG]}
    nb.cells.insert(1, cell)  # right under the title: the first code cell


def disagreements(url: str | None, branch: str = "main", paths: list[Path] = NOTEBOOKS) -> list[str]:
    """Names of the notebooks whose badges and Colab cell differ from what `url` calls for."""
    wrong = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        expected = copy.deepcopy(nb)
        apply(expected, path.name, url, branch)
        if [c.source for c in nb.cells] != [c.source for c in expected.cells]:
            wrong.append(path.name)
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if a notebook disagrees")
    parser.add_argument("--branch", default="main", help="the branch the badges open (default: main)")
    args = parser.parse_args(argv)
    url = repository_url()
    if url is not None:
        github_repository(url)  # a clear error before anything is written
    if args.check:
        wrong = disagreements(url, args.branch)
        if wrong:
            print(f"{len(wrong)} notebooks disagree with [project.urls] Repository = {url!r}: "
                  f"{', '.join(wrong)}. Run: make links", file=sys.stderr)
            return 1
        print(f"All {len(NOTEBOOKS)} notebooks agree with [project.urls] Repository = {url!r}.")
        return 0
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        apply(nb, path.name, url, args.branch)
        nbformat.write(nb, path)
    done = "added badges and the Colab cell to" if url else "removed badges and the Colab cell from"
    print(f"{done} {len(NOTEBOOKS)} notebooks; now re-execute them (make execute).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
