"""The helpers package keeps its shape: one home per name, a map that lists every module, a line budget."""
import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted((ROOT / "helpers").rglob("*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: The modules of each notebook after 07 (topic, checker and widget, by file name): about 600 lines each.
LATER_NOTEBOOK_FILES = {"08": {"positions.py"}, "09": {"heads.py", "heads_masks.py"}, "10": {"induction.py"}}


def public_names(path):
    """Top-level functions, classes and constants that do not start with an underscore."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


def test_no_public_name_has_two_homes():
    homes = defaultdict(list)
    for path in MODULES:
        for name in public_names(path):
            homes[name].append(str(path.relative_to(ROOT)))
    assert {n: h for n, h in homes.items() if len(h) > 1} == {}


def test_the_map_lists_every_module():
    text = (ROOT / "helpers" / "__init__.py").read_text(encoding="utf-8")
    listed = set(re.findall(r"^    (\w+/?)\s", text, re.M))
    top = {p.stem for p in MODULES if p.parent.name == "helpers" and p.stem != "__init__"}
    assert top | {"exercises/", "widgets/"} == listed


def test_helpers_stay_inside_the_budget():
    """5,000 lines for notebooks 00 to 07, about 600 more for each later notebook (COURSE.md)."""
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES}
    per_notebook = {nb: sum(n for p, n in lines.items() if p.name in files) for nb, files in LATER_NOTEBOOK_FILES.items()}
    later = sum(per_notebook.values())
    assert sum(lines.values()) - later <= 5_000, f"helpers/ for notebooks 00-07 has {sum(lines.values()) - later} lines"
    assert {nb: n for nb, n in per_notebook.items() if n > 650} == {}, "a later notebook's modules: about 600 lines"
    assert sum(lines.values()) <= 5_000 + 600 * (len(NOTEBOOKS) - 8), f"helpers/ has {sum(lines.values())} lines"
