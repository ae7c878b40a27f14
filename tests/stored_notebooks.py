"""The stored notebooks as text, for tests that hold the figures the prose quotes to the figures the code printed
(strict nbval holds the printed ones to a fresh run): whitespace folded to single spaces in the prose."""
import json
from functools import cache
from pathlib import Path

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@cache
def cells(number: str) -> tuple:
    """The cells of notebook `number` ("00" … "11")."""
    path = next(p for p in NOTEBOOKS if p.name.startswith(number + "_"))
    return tuple(json.loads(path.read_text(encoding="utf-8"))["cells"])


def prose(number: str) -> str:
    """Every markdown cell of the notebook, joined, with runs of whitespace as one space."""
    return " ".join(" ".join("".join(c["source"]) for c in cells(number) if c["cell_type"] == "markdown").split())


def printed(number: str) -> str:
    """Every stored text output of the notebook, joined by newlines: a cell's printed text whole (the kernel may
    split it into several stream outputs anywhere, mid-line too), and each plain-text result."""
    return "\n".join("".join("".join(o["text"]) if "text" in o else ("".join(o.get("data", {}).get("text/plain", ""))
                                                                    + "\n") for o in c["outputs"])
                     for c in cells(number) if c["cell_type"] == "code")
