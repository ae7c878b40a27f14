"""The helpers package keeps its shape: one home per name, a map that lists every module, a line budget."""
import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted((ROOT / "helpers").rglob("*.py"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: The modules of each notebook after 07 (topic, checker and widget, by file name): about 600 lines each.
LATER_NOTEBOOK_FILES = {"08": {"positions.py"}, "09": {"heads.py", "heads_masks.py"}, "10": {"induction.py"},
                        "11": {"flash.py"}}


def section_lines(path, notebook: str) -> int:
    """The lines of a later notebook's section of an earlier module: from '# ---- Notebook NN' to the end."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next((len(lines) - i for i, line in enumerate(lines) if line.startswith(f"# ---- Notebook {notebook}")), 0)


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


def _imported_by_notebooks() -> dict:
    """{top-level helpers module: the notebooks ("03", …) whose code imports it by name}."""
    import json
    uses = defaultdict(set)
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        names = re.findall(r"\bhelpers\.(\w+)", code) + [n for group in re.findall(
            r"^from helpers import \(?([\w, ]+)", code, re.M) for n in re.findall(r"\w+", group)]
        for widget in re.findall(r"\bhelpers\.widgets\.(\w+)", code):   # a widget teaches with what it imports
            names += re.findall(r"^from helpers\.(\w+)", (ROOT / "helpers" / "widgets" / f"{widget}.py").read_text(
                encoding="utf-8"), re.M)
        for name in names:
            uses[name].add(path.name[:2])
    return uses


def test_the_map_names_the_notebooks_that_import_each_module():
    text = (ROOT / "helpers" / "__init__.py").read_text(encoding="utf-8")
    everyone = {p.name[:2] for p in NOTEBOOKS}
    claimed = {}
    for name, column in re.findall(r"^    (\w+) .*?  ((?:all|\d\d(?:-\d\d)?)(?:, (?:\d\d(?:-\d\d)?|benchmarks/))*)$",
                                   text, re.M):
        spans = [span.split("-") for span in column.split(", ") if span != "benchmarks/"]
        claimed[name] = everyone if column == "all" else {f"{n:02d}" for a, *b in spans
                                                          for n in range(int(a), int((b or [a])[0]) + 1)}
    uses = _imported_by_notebooks()
    assert {name: sorted(uses[name]) for name in claimed} == {name: sorted(nbs) for name, nbs in claimed.items()}


def test_helpers_stay_inside_the_budget():
    """5,000 lines for notebooks 00 to 07, about 600 more for each later notebook (COURSE.md); the modules a
    later notebook adds for itself alone (its topic, checker and widget) stay near its 600."""
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in MODULES}
    total = sum(lines.values())
    assert total <= 5_000 + 600 * (len(NOTEBOOKS) - 8), f"helpers/ has {total} lines"
    own = {nb: sum(n if p.name in files else section_lines(p, nb) for p, n in lines.items())
           for nb, files in LATER_NOTEBOOK_FILES.items()}
    assert {nb: n for nb, n in own.items() if n > 700} == {}, f"lines of each later notebook's own modules: {own}"
