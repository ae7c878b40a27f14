"""Notebook 00's widget: one slider that proves widgets work (and previews the mixing idea)."""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from helpers.mixing import pull_toward
from helpers.plotting import COLORS
from helpers.widgets.common import interactive_now


def pull_slider(word: str = "bank", target: str = "money", other: str = "river") -> widgets.interactive:
    """A slider from 0 to 1 mixing `word` toward `target` (the title also shows the cosine with `other`)."""

    def show(amount=0.0):
        data = pull_toward(word, target, amount)
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        ax.bar(range(len(data["vector"])), data["vector"], color=COLORS["contextual"])
        ax.set_ylim(0, 1.05)
        ax.set_xticks(range(len(data["vector"])), [f"dim {i}" for i in range(len(data["vector"]))])
        ax.set_ylabel("value")
        ax.set_title(f"{1 - amount:.2f}·{word} + {amount:.2f}·{target}:  "
                     f"cos to {target} = {data['cos_to_target']:.3f}, to {other} = {data['cos_to'][other]:.3f}")
        plt.show()
        return data

    slider = widgets.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.05, description="amount",
                                 continuous_update=True, readout_format=".2f")
    return interactive_now(show, amount=slider)
