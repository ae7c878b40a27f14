"""How long each notebook's widget takes to answer a move of one of its controls.

Builds every widget the way its notebook does, moves each control through its
values (sliders: 8 evenly spaced stops; drop-downs and toggles: every option;
text boxes: a few typed sentences or scores), and times each whole update in the kernel: the
computation and the redrawn picture or table. Target: under 50 ms each, on a
2-core laptop CPU, so that a slider dragged in front of a class keeps up.

    python benchmarks/widget_updates.py
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

# Run as `python benchmarks/widget_updates.py`, Python puts benchmarks/ first on the path, not the
# repository root: add the root so that `helpers` is found without an installed package too.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402

SENTENCES = ["money bank grows", "river bank flows", "river bank flows money grows", "money, bank"]
LETTERS = ["thebankisrichthebank", "abcdabcdabcd", "qfmajcbkrdhsnlpoqfmajcbkrdhsnlpo", "abc", "the bank"]
SCORES = ["2, 1, 0", "10, 0, -3, 5", "1, 2, 3, 4, 5, 6, 7, 8", "1e306, 0", "0.5, 0.5"]
TARGET_MS = 50


def notebook_widgets():
    """(notebook, name, widget) for each widget cell, built with its notebook's arguments."""
    from helpers import learning
    from helpers.widgets.cost import CostWidget
    from helpers.widgets.flash import FlashTilesWidget
    from helpers.widgets.heads import HeadsWidget
    from helpers.widgets.induction import InductionWidget
    from helpers.widgets.learning import TrainingWidget
    from helpers.widgets.luong import DictionaryWidget, LineupWidget
    from helpers.widgets.playground import PlaygroundWidget
    from helpers.widgets.positions import PositionsWidget
    from helpers.widgets.scaling import ScalingWidget
    from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget
    from helpers.widgets.start_here import PullSliderWidget
    from helpers.widgets.static_embeddings import SentenceExplorer

    experiment = learning.run_experiment("idiom", (learning.PARAMETER_FREE, learning.LEARNED),
                                         steps=150, lr=0.01, seed=5)   # notebook 04's settings
    yield "00", "PullSliderWidget", PullSliderWidget()
    yield "01", "SentenceExplorer", SentenceExplorer()
    yield "02", "SoftmaxTemperatureWidget", SoftmaxTemperatureWidget()
    yield "03", "PlaygroundWidget", PlaygroundWidget()
    yield "04", "TrainingWidget", TrainingWidget(experiment, step=10)
    yield "05", "ScalingWidget", ScalingWidget(d_k=64, scaled=False)
    yield "06", "DictionaryWidget", DictionaryWidget()
    yield "06", "LineupWidget", LineupWidget()
    yield "07", "CostWidget", CostWidget()
    yield "08", "PositionsWidget", PositionsWidget(p=10, d=16)
    yield "09", "HeadsWidget", HeadsWidget("money bank grows", head=0, mask_type="none")
    yield "10", "InductionWidget", InductionWidget("thebankisrichthebankis")
    yield "11", "FlashTilesWidget", FlashTilesWidget(tiles_done=2, query=21, causal=False)


def controls(widget):
    """The widgets a person moves or types into, found anywhere inside `widget`."""
    if isinstance(widget, (widgets.Box, widgets.interactive)):
        for child in widget.children:
            yield from controls(child)
    elif hasattr(widget, "value") and not isinstance(widget, (widgets.HTML, widgets.Image, widgets.Output,
                                                                widgets.Label)):
        yield widget


def stops(control):
    """The values one control is moved through, ending where it started."""
    start = control.value
    if isinstance(control, widgets.Text):          # also a Combobox
        values = {"scores": SCORES, "letters": LETTERS}.get(control.description, SENTENCES)
    elif isinstance(control, widgets.Checkbox):
        values = [not start]
    elif hasattr(control, "_options_values"):       # drop-downs, toggles, selection sliders
        values = list(control._options_values)
    elif isinstance(control, widgets.FloatLogSlider):
        values = list(control.base ** np.linspace(control.min, control.max, 8))
    else:
        values = [type(start)(round(v, 6)) for v in np.linspace(control.min, control.max, 8)]
    return [v for v in dict.fromkeys(values) if v != start] + [start]   # each a real move: no value twice


def time_updates(widget) -> list[float]:
    """Milliseconds for each move of each control (the observer runs before the assignment returns)."""
    times = []
    with contextlib.redirect_stdout(io.StringIO()):   # outside a kernel, displayed HTML would be printed
        for control in controls(widget):
            for value in stops(control):
                start = time.perf_counter()
                control.value = value
                times.append(1000 * (time.perf_counter() - start))
    return times


def main() -> None:
    print(f"{'notebook':<9}{'widget':<26}{'moves':>6}{'median ms':>11}{'max ms':>8}")
    worst = 0.0
    with contextlib.redirect_stdout(io.StringIO()):
        built = list(notebook_widgets())
    for notebook, name, widget in built:
        time_updates(widget)                          # first pass: caches, fonts, figure backgrounds
        times = time_updates(widget)
        worst = max(worst, max(times))
        print(f"{notebook:<9}{name:<26}{len(times):>6}{statistics.median(times):>11.1f}{max(times):>8.1f}")
    print(f"\nslowest update: {worst:.1f} ms ({'within' if worst <= TARGET_MS else 'over'} the {TARGET_MS} ms target)")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()   # --help, and no options to take
    main()
