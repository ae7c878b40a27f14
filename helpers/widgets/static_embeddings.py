"""Notebook 01's widget: choose a sentence, see bank's static vector stay put while its mixture moves."""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from helpers.mixing import static_and_mixed
from helpers.plotting import COLORS
from helpers.running_example import SENTENCES


def sentence_explorer() -> widgets.interactive:
    """Dropdown of sentences (or type your own from the vocabulary) and a self-weight slider."""

    def show(sentence=SENTENCES[0], self_weight=0.7):
        try:
            data = static_and_mixed(sentence, "bank", self_weight)
        except (TypeError, ValueError) as error:  # a typed sentence the vocabulary cannot cover
            print(error)
            return None
        d = len(data["static"])
        x = np.arange(d)
        fig, ax = plt.subplots(figsize=(7, 3.4))
        ax.bar(x - 0.2, data["static"], width=0.4, color=COLORS["static"], label="static bank (never changes)")
        ax.bar(x + 0.2, data["mixed"], width=0.4, color=COLORS["contextual"], label="bank as a mixture")
        ax.set_xticks(x, [f"dim {i}" for i in range(d)])
        ax.set_ylim(0, 1.6)
        ax.set_ylabel("value")
        weights = ", ".join(f"{w:.2f}·{t}" for w, t in zip(data["weights"], data["tokens"]))
        ax.set_title(f"“{' '.join(data['tokens'])}”:  bank = {weights}", fontsize=12)
        ax.legend(loc="upper right", fontsize=10)
        plt.show()
        return data

    sentence = widgets.Combobox(value=SENTENCES[0], options=list(SENTENCES), description="sentence",
                                ensure_option=False, continuous_update=False)
    weight = widgets.FloatSlider(value=0.7, min=0.0, max=1.0, step=0.05, description="bank keeps",
                                 readout_format=".2f")
    return widgets.interactive(show, sentence=sentence, self_weight=weight)
