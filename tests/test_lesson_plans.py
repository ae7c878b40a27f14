"""notebooks/LESSON_PLANS.md: a plan for every notebook, its sections the notebook's own in order, its minutes
adding up to its stated total, the totals to the course's, and two questions for the room with their answers.

A notebook added to notebooks/ without a plan, or a section renamed, added or moved, fails here.
"""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "notebooks" / "LESSON_PLANS.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def section_times():
    spec = importlib.util.spec_from_file_location("notebook_cells", ROOT / "benchmarks" / "notebook_cells.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.section_times


def plans() -> dict[str, str]:
    """{"03": the text of notebook 03's plan} from the headings '## 03 · Title (65 min)'."""
    parts = re.split(r"^## (?=\d\d · )", PLANS.read_text(encoding="utf-8"), flags=re.M)
    return {part[:2]: part for part in parts[1:]}


def table(plan: str) -> tuple[list[tuple[str, int]], int]:
    """The plan's (section, minutes) rows and the total its table states."""
    rows = re.findall(r"^\| (.+?) \| (\d+) \|$", plan, flags=re.M)
    total = re.search(r"^\| \*\*Total\*\* \| \*\*(\d+)\*\* \|$", plan, flags=re.M)
    assert total, "the plan's table has no '| **Total** | **N** |' row"
    return [(name, int(minutes)) for name, minutes in rows], int(total.group(1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_notebook_has_a_plan_whose_sections_and_minutes_add_up(path):
    plan = plans().get(path.stem[:2])
    assert plan, f"notebooks/LESSON_PLANS.md has no plan for {path.name} (a '## {path.stem[:2]} · ...' heading)"
    stated = int(re.match(r".*\((\d+) min\)", plan).group(1))
    rows, total = table(plan)
    headings = [heading for heading, *_ in section_times()(path)]
    assert [name for name, _ in rows] == headings, "the plan's sections are not the notebook's, in order"
    assert all(minutes > 0 for _, minutes in rows)
    assert sum(minutes for _, minutes in rows) == total == stated
    questions = re.search(r"\*\*Questions for the room\*\*\n(.*?)\n\n", plan, flags=re.S)
    assert questions and re.findall(r"^\d\. ", questions.group(1), flags=re.M) == ["1. ", "2. "]
    assert questions.group(1).count("*Answer:*") == 2
    for part in ("**The class will be able to**", "**Run live**", "**Widget moves**", "**Misconceptions met here:**"):
        assert part in plan, f"the plan for {path.name} has no {part}"


def test_the_course_total_is_the_sum_of_the_plans_and_of_the_summary_table():
    text = PLANS.read_text(encoding="utf-8")
    stated = int(re.search(r"\*\*Course total: (\d+) minutes\*\*", text).group(1))
    per_plan = {key: int(re.match(r".*\((\d+) min\)", plan).group(1)) for key, plan in plans().items()}
    head = text.split("\n## ")[0]                                       # the summary table, before the first plan
    rows = re.findall(r"^\| (\d\d) · .+? \| (\d+) \|$", head, flags=re.M)
    summary = {number: int(minutes) for number, minutes in rows}
    assert summary == per_plan, "the table at the top and the plans' headings disagree"
    assert sum(per_plan.values()) == stated
    assert f"twelve sessions of {min(per_plan.values())} to {max(per_plan.values())} minutes" in text
    hours, minutes = divmod(stated, 60)                         # 640 -> "about ten hours and forty minutes"
    number = dict(enumerate("zero one two three four five six seven eight nine ten eleven twelve".split()))
    number |= {20: "twenty", 30: "thirty", 40: "forty", 50: "fifty"}
    assert f"(about {number[hours]} hours and {number[minutes]} minutes:" in text
