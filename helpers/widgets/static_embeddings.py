"""Notebook 01's widget: two sentences side by side, bank's static vector the same, its mixtures not."""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from helpers.mixing import two_mixtures
from helpers.plotting import COLORS
from helpers.running_example import SENTENCES
from helpers.widgets.common import interactive_now


def sentence_explorer() -> widgets.interactive:
    """Two sentences (from the menu or typed from the vocabulary) and a self-weight slider."""

    def show(sentence_a=SENTENCES[0], sentence_b=SENTENCES[1], self_weight=0.7):
        try:
            data = two_mixtures(sentence_a, sentence_b, "bank", self_weight)
        except (TypeError, ValueError) as error:  # a typed sentence the vocabulary cannot cover
            print(error)
            return None
        d = len(data["static"])
        x = np.arange(d)
        fig, ax = plt.subplots(figsize=(7.5, 3.6))
        ax.bar(x - 0.27, data["static"], width=0.27, color=COLORS["static"], label="static bank (both sentences)")
        for shift, key, colour in ((0.0, "a", COLORS["contextual"]), (0.27, "b", COLORS["query"])):
            ax.bar(x + shift, data[key]["mixed"], width=0.27, color=colour,
                   label=f"bank mixed in “{' '.join(data[key]['tokens'])}”")
        ax.set_xticks(x, [f"dim {i}" for i in range(d)])
        ax.set_ylim(0, 1.9)
        ax.set_ylabel("value")
        ax.set_title(f"cos(static, static) = {data['cosine_static']:.3f};  "
                     f"cos(mixture, mixture) = {data['cosine_mixed']:.3f}", fontsize=12)
        ax.legend(loc="upper right", fontsize=10)
        plt.show()
        return data

    boxes = [widgets.Combobox(value=value, options=list(SENTENCES), description=label, ensure_option=False,
                              continuous_update=False)
             for value, label in ((SENTENCES[0], "sentence 1"), (SENTENCES[1], "sentence 2"))]
    weight = widgets.FloatSlider(value=0.7, min=0.0, max=1.0, step=0.05, description="bank keeps",
                                 readout_format=".2f")
    return interactive_now(show, sentence_a=boxes[0], sentence_b=boxes[1], self_weight=weight)
