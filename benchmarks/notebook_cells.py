"""How long each notebook cell took in its last clean run, slowest first.

`make execute` stores, for every code cell, when the kernel started and
finished it. This script reads those times (no re-run) so an instructor can
see which cells to expect to wait for. Target: every cell but the first (the
imports) under 2 s, every notebook under 15 s on a 2-core laptop CPU.

    python benchmarks/notebook_cells.py            # the 5 slowest cells, and each notebook's total
    python benchmarks/notebook_cells.py --top 15
    python benchmarks/notebook_cells.py --sections # per slide section: cells, seconds, words (the lesson plans)
"""
from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def cell_times(path: Path) -> list[tuple[int, float, str]]:
    """(cell number, seconds, first line) for each executed code cell of one notebook."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    rows = []
    for number, cell in enumerate((c for c in cells if c["cell_type"] == "code"), start=1):
        stamps = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in stamps and "shell.execute_reply" in stamps:
            seconds = (_time(stamps["shell.execute_reply"]) - _time(stamps["iopub.execute_input"])).total_seconds()
            first = "".join(cell["source"]).strip().splitlines()[0][:70]
            rows.append((number, seconds, first))
    return rows


def section_times(path: Path) -> list[tuple[str, int, float, int]]:
    """(heading, code cells, seconds, words of text) for each section: a markdown cell that starts a slide
    (slide metadata "slide") begins one, and its sub-slides belong to it."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    seconds = iter(row[1] for row in cell_times(path))
    sections: list[list] = []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and cell["metadata"].get("slideshow", {}).get("slide_type") == "slide":
            sections.append([source.lstrip("# ").splitlines()[0].strip(), 0, 0.0, 0])
        if not sections:
            continue
        if cell["cell_type"] == "markdown":
            sections[-1][3] += len(source.split())
        elif "execution" in cell["metadata"] and "iopub.execute_input" in cell["metadata"]["execution"]:
            sections[-1][1] += 1
            sections[-1][2] += next(seconds)
    return [tuple(section) for section in sections]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="how many of the slowest cells to list")
    parser.add_argument("--sections", action="store_true", help="each notebook's sections: cells, seconds, words")
    args = parser.parse_args()
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if args.sections:
        for path in notebooks:
            print(f"\n{path.stem}\n  {'cells':>5} {'s':>6} {'words':>6}  section")
            for heading, count, seconds, words in section_times(path):
                print(f"  {count:>5} {seconds:>6.2f} {words:>6}  {heading}")
        return
    everything = []
    print(f"{'notebook':<36} {'cells':>5} {'total s':>8} {'slowest s':>9} {'size KB':>8}")
    for path in notebooks:
        rows = cell_times(path)
        everything += [(path.stem, *row) for row in rows]
        total = sum(r[1] for r in rows)
        slowest = max((r[1] for r in rows), default=0.0)
        print(f"{path.stem:<36} {len(rows):>5} {total:>8.2f} {slowest:>9.2f} {path.stat().st_size / 1024:>8.0f}")
    size = sum(p.stat().st_size for p in notebooks) / 1024
    print(f"{'all notebooks':<36} {len(everything):>5} {sum(r[2] for r in everything):>8.2f} {'':>9} {size:>8.0f}")
    print(f"\nThe {args.top} slowest cells:")
    for stem, number, seconds, first in sorted(everything, key=lambda r: -r[2])[: args.top]:
        print(f"  {seconds:6.2f} s  {stem} cell {number}: {first}")


if __name__ == "__main__":
    main()
