"""What every notebook must carry (COURSE.md), checked on the stored notebooks.

Strict nbval re-executes the notebooks and compares outputs; these tests check
what it cannot: that the stored run is a clean top-to-bottom one, and that the
teaching parts (navigation, exercises, figures, widgets, summary) are there.
"""
import ast
import base64
import builtins
import importlib
import json
import re
import struct
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IGNORE_TAG = "nbval-ignore-output"


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell):
    return "".join(cell["source"])


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code" and source(c).strip()]


def ids(paths):
    return [p.stem for p in paths]


def test_the_path_is_complete_and_numbered():
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert numbers == [f"{i:02d}" for i in range(len(NOTEBOOKS))]
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_stored_outputs_come_from_one_clean_run(path):
    cells = code_cells(load(path))
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1)), \
        "re-execute the notebook top to bottom (make execute NB=...)"
    errors = [i for i, c in enumerate(cells) for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, f"stored error output in code cells {errors}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_stored_in_nbformats_own_layout(path):
    """As nbconvert and tools/colab_binder.py write it (sorted keys), so that their rewrites change nothing else."""
    import nbformat

    text = path.read_text(encoding="utf-8")
    assert nbformat.writes(nbformat.reads(text, as_version=4)) + "\n" == text, \
        "save the notebook with nbformat (nbformat.write), or re-execute it (make execute NB=...)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_title_goals_navigation_and_summary(path):
    nb = load(path)
    first = source(nb["cells"][0])
    number = path.name[:2]
    assert first.startswith(f"# {number} · "), "the first cell starts with the numbered title"
    assert "After this notebook you can" in first
    links = set(re.findall(r"\]\(([^)]+\.ipynb)\)", first))
    previous_nb = [p.name for p in NOTEBOOKS if p.name[:2] == f"{int(number) - 1:02d}"]
    next_nb = [p.name for p in NOTEBOOKS if p.name[:2] == f"{int(number) + 1:02d}"]
    assert set(previous_nb + next_nb) <= links, "the first cell links back and forward in the path"
    markdown = "\n".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert re.search(r"^## Summary", markdown, re.M), "a '## Summary' section"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_links_between_notebooks_resolve(path):
    text = path.read_text(encoding="utf-8")
    for target in set(re.findall(r"\]\(([0-9][0-9]_[^)#]+\.ipynb)", text)):
        assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


@pytest.mark.parametrize("path", [*NOTEBOOKS, ROOT / "notebooks" / "LESSON_PLANS.md"],
                         ids=[*ids(NOTEBOOKS), "LESSON_PLANS"])
def test_math_survives_viewers_that_read_markdown_first(path):
    """GitHub's viewer runs markdown over the math: \\, \\! \\; become ',' '!' ';' and \\\\ one backslash, so the
    math spells them \\thinspace, \\negthinspace, \\ (a space) and \\cr (JupyterLab renders both spellings alike)."""
    text = path.read_text(encoding="utf-8") if path.suffix == ".md" else "\n\n".join(
        source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    assert re.findall(r".{0,30}\\[,!;\\].{0,10}", text) == []
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)", text)         # paragraphs, list items, table cells
    cells = [c for b in blocks for c in (re.split(r"(?<!\\)\|", b) if b.lstrip().startswith("|") else [b])]
    assert [pair for cell in cells for pair in _italics_made_of_math(cell)] == []


def _italics_made_of_math(block: str) -> list[str]:
    """The _…_ pairs that CommonMark's rules for '_' would turn into italics, one of whose underscores is inside
    $…$ math: `\\mathrm{head}_0, …, \\mathrm{head}_{H-1}` on a viewer that reads the markdown first (write `}_ 0`)."""
    def punctuation(ch):
        return ch == "" or unicodedata.category(ch)[0] in "PS"
    block = re.sub(r"`[^`]*`", lambda m: "c" * len(m.group()), block)            # code spans hold no emphasis
    math = [m.span() for m in re.finditer(r"\$\$.+?\$\$|\$[^$]+\$", block, re.S)]
    openers, pairs = [], []
    for run in re.finditer(r"(?<!\\)_+", block):
        (i, j), before, after = run.span(), block[run.start() - 1:run.start()], block[run.end():run.end() + 1]
        left = after.strip() != "" and (not punctuation(after) or before.strip() == "" or punctuation(before))
        right = before.strip() != "" and (not punctuation(before) or after.strip() == "" or punctuation(after))
        if right and (not left or punctuation(after)) and openers:
            start = openers.pop()
            if any(a <= k < b for a, b in math for k in (start, i)):
                pairs.append(block[start:j])
        elif left and (not right or punctuation(before)):
            openers.append(i)
    return pairs


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_exercises_figures_and_widgets(path):
    nb = load(path)
    cells = code_cells(nb)
    checks = [c for c in cells if re.search(r"^check_\w+\(", source(c), re.M)]
    solutions = [c for c in cells if re.search(r"^check_\w+\.solution\(\)", source(c), re.M)]
    assert len(checks) >= 2, "at least two exercises with a checker"
    assert len(solutions) >= 2, "a revealable solution for each exercise"
    outputs = [o for c in cells for o in c["outputs"]]
    assert any("image/png" in o.get("data", {}) for o in outputs), "at least one figure"
    widgets = [o["data"] for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widgets, "at least one widget"
    assert all({"image/png", "text/html"} & set(data) for data in widgets), "each widget stored with a still of it"
    for c in checks:
        texts = [o.get("data", {}).get("text/plain", "") for o in c["outputs"]]
        assert any("Correct" in "".join(t) or "Not yet" in "".join(t) for t in texts), \
            "a checker cell shows its feedback"


def bound_names(tree) -> set[str]:
    """The names a piece of code imports, assigns or defines (its functions' parameters too)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
            names.add(node.arg if isinstance(node, ast.arg) else node.id)
    return names


#: names a solution uses that its notebook does not have, each explained in the solution's own text
EXPLAINED_NAMES = {"check_self_attention_module": {"check_tokens"}}   # "leave it out in yours, or import it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_solutions_use_only_the_notebooks_names(path):
    """A revealed solution pasted into its notebook runs: every name it reads is the notebook's, or its own."""
    trees = [ast.parse(source(c)) for c in code_cells(load(path))]
    known = set(dir(builtins)).union(*map(bound_names, trees))
    modules = {alias.asname or alias.name: node.module for tree in trees for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) for alias in node.names}
    names = [n for tree in trees for n in re.findall(r"^(check_\w+)\.solution\(\)", ast.unparse(tree), re.M)]
    assert names, "the notebook shows its solutions"
    for name in names:
        solution = getattr(importlib.import_module(modules[name]), name).solution()
        code = ast.parse(solution.code)
        read = {n.id for n in ast.walk(code) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        unknown = read - known - bound_names(code)
        assert unknown <= EXPLAINED_NAMES.get(name, set()), f"{name}'s solution reads {sorted(unknown)}"
        assert all(n in solution.explanation for n in EXPLAINED_NAMES.get(name, ()))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_a_revealed_function_passes_its_own_checker(path):
    """Where the answer is a function (or class), the one its solution defines, run with only the notebook's
    imports, is marked correct by the notebook's own call of the checker."""
    trees = [ast.parse(source(c)) for c in code_cells(load(path))]
    imports = ast.Module([n for tree in trees for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], [])
    stubs = {n.name for tree in trees for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    calls = [n for tree in trees for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id.startswith("check_") and n.args and getattr(n.args[0], "id", None) in stubs]
    for call in calls:
        namespace = {}
        exec(compile(imports, path.name, "exec"), namespace)
        exec(namespace[call.func.id].solution().code, namespace)
        solved = [n.name for n in ast.parse(namespace[call.func.id].solution().code).body
                  if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        namespace[call.args[0].id] = namespace[solved[-1]]                # pasted in place of the student's stub
        if all(a.id in namespace for a in call.args[1:]):                 # (worst_head's reason is told in words)
            feedback = eval(compile(ast.Expression(call), path.name, "eval"), namespace)
            assert feedback.passed, f"{call.func.id}: {feedback.message}"
    assert calls or path.name < "02", "the notebook has an exercise whose answer is a function"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_stored_figures_fit_a_projectors_cell(path):
    """At most about 800 px wide (plotting.MAX_FIGURE_WIDTH at 90 dpi), a title that overflows included."""
    for index, cell in enumerate(load(path)["cells"]):
        for output in cell.get("outputs", []):
            if png := output.get("data", {}).get("image/png"):
                width = struct.unpack(">I", base64.b64decode(png)[16:20])[0]    # the PNG header's IHDR width
                assert width <= 800, f"cell {index}: a figure {width} px wide"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_every_uncompared_output_says_why(path):
    for cell in code_cells(load(path)):
        tags = cell.get("metadata", {}).get("tags", [])
        text = source(cell)
        assert "nbval-skip" not in tags and "NBVAL_SKIP" not in text, "every cell runs under the tests"
        if IGNORE_TAG in tags or "NBVAL_IGNORE_OUTPUT" in text:
            assert text.startswith("# Output varies:"), f"say why this output is not compared:\n{text[:200]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_no_machine_specific_paths_and_small_files(path):
    text = path.read_text(encoding="utf-8")
    for prefix in ("/work/", "/home/", "/root/", "/tmp/", "C:\\\\Users"):
        assert prefix not in text, f"{path.name} contains a machine-specific path ({prefix})"
    assert path.stat().st_size < 1_500_000, "keep notebooks small: fewer or smaller figures"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_slides_one_per_section(path):
    cells = load(path)["cells"]
    kinds = [c.get("metadata", {}).get("slideshow", {}).get("slide_type") for c in cells]
    assert None not in kinds, "every cell carries slideshow metadata"
    for cell, kind in zip(cells, kinds):
        if cell["cell_type"] == "markdown" and re.match(r"#{1,2} ", source(cell)):
            assert kind == "slide", f"a section heading starts a slide: {source(cell)[:60]!r}"


def test_readme_links_every_notebook():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        assert f"notebooks/{path.name}" in readme
    for target in re.findall(r"\]\((notebooks/[^)]+)\)", readme):
        assert (ROOT / target).exists(), f"README links to missing {target}"


def test_every_digression_is_folded_and_the_readme_names_their_notebooks():
    """A '### Going deeper' or '### Aside' heading opens folded in JupyterLab; the README lists where they are."""
    where = []
    for path in NOTEBOOKS:
        headings = [c for c in load(path)["cells"] if c["cell_type"] == "markdown"
                    and re.match(r"### (Going deeper|Aside)\b", source(c))]
        assert all(c["metadata"].get("jp-MarkdownHeadingCollapsed") for c in headings), path.name
        where += [path.name[:2]] * bool(headings)
    listed = ", ".join(where[:-1]) + f" and {where[-1]}"
    assert f"*Aside* headings (notebooks {listed}):" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_notebook_after_the_first_asks_check_yourself_questions_with_folded_answers():
    """The README's promise: questions answered from the page, each set on its own sub-slide, its answer folded;
    and the notebook's lesson plan says how many there are."""
    plans = (ROOT / "notebooks" / "LESSON_PLANS.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS[1:]:
        checks = [c for c in load(path)["cells"] if source(c).startswith("**Check yourself.**")]
        assert checks, f"{path.name} has no Check yourself"
        for cell in checks:
            assert cell["cell_type"] == "markdown" and cell["metadata"]["slideshow"]["slide_type"] == "subslide"
            folded = r"\n\n<details><summary><b>Show the answer</b></summary>\n\n.+\n\n</details>$"
            assert re.search(r"\*\*Check yourself\.\*\* .+" + folded, source(cell), re.S), \
                f"{path.name}: questions, then their folded answer"
        plan = plans.split(f"## {path.name[:2]} · ")[1].split("\n## ")[0]
        assert ("**Check yourself** (two:" in plan) == (len(checks) == 2) and "**Check yourself** (" in plan
    assert "Every notebook after the first also has a **Check yourself**" in (ROOT / "README.md").read_text(
        encoding="utf-8")
