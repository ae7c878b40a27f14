"""Notebook 01's widget: two sentences side by side, bank's static vector the same, its mixtures not."""
import ipywidgets as widgets
import numpy as np

from helpers.mixing import two_mixtures
from helpers.plotting import COLORS
from helpers.running_example import SENTENCES, VOCAB
from helpers.widgets.common import FastFigure, LiveWidget, offered, picture, reading_style

_WIDTH = 0.27   # of each of the three bars per dimension


class SentenceExplorer(LiveWidget):
    """[0], [1] two sentences (menu or typed; punctuation ignored), [2] how much bank keeps, [3] bars, [4] cosines.
    `.result`: the latest helpers.mixing.two_mixtures dict, None after a sentence it cannot read."""
    def __init__(self, sentence_a: str = SENTENCES[0], sentence_b: str = SENTENCES[1], self_weight: float = 0.7):
        self.boxes = [widgets.Combobox(value=value, options=list(SENTENCES), description=label, ensure_option=False,
                                       continuous_update=False, placeholder="words from: " + ", ".join(VOCAB))
                      for value, label in ((sentence_a, "sentence 1"), (sentence_b, "sentence 2"))]
        self.weight = offered(widgets.FloatSlider(min=0.0, max=1.0, step=0.05, description="bank keeps",
                                                  readout_format=".2f"), self_weight, "self_weight")
        self.figure = FastFigure(figsize=(7.2, 4.0))
        fig, ax = self.figure.fig, self.figure.fig.add_subplot()
        fig.subplots_adjust(left=0.1, right=0.98, top=0.76, bottom=0.09)   # the legend sits above the axes
        x = np.arange(4)   # d = 4
        self.static = ax.bar(x - _WIDTH, np.zeros(4), width=_WIDTH, color=COLORS["static"],
                             label="static bank (both sentences)")
        self.mixed = [ax.bar(x + shift, np.zeros(4), width=_WIDTH, color=colour, hatch=hatch, label=" ")
                      for shift, colour, hatch in ((0.0, COLORS["contextual"], None), (_WIDTH, COLORS["query"], "//"))]
        ax.set(xticks=x, xticklabels=[f"dim {i}" for i in x], ylim=(0, 2.1))   # the vocabulary's largest entry is 2
        ax.tick_params(labelsize=12)   # fixed sizes: in presenter mode FastFigure grows the whole picture
        ax.set_ylabel("value", fontsize=13)
        self.legend = fig.legend(loc="upper left", bbox_to_anchor=(0.1, 0.99), fontsize=12, frameon=False)
        self.figure.set_dynamic([*self.static, *self.mixed[0], *self.mixed[1], self.legend])   # redrawn each time
        self.picture = picture(self.figure)
        super().__init__([*self.boxes, self.weight], [self.picture])

    def compute(self) -> dict:
        return two_mixtures(self.boxes[0].value, self.boxes[1].value, "bank", self.weight.value)

    def show(self, data: dict) -> None:
        for text, words in zip(self.legend.get_texts()[1:], (data["a"]["tokens"], data["b"]["tokens"])):
            text.set_text(label := f"bank mixed in “{' '.join(words)}”")
            text.set_fontsize(min(12.0, 660 / len(label)))   # 12 pt, smaller for a label that would run past the edge
        for bars, values in ((self.static, data["static"]), (self.mixed[0], data["a"]["mixed"]),
                             (self.mixed[1], data["b"]["mixed"])):
            for bar, value in zip(bars, values):
                bar.set_height(value)
        self.picture.value = self.figure.png()
        self.reading.value = (f"<div style='{reading_style()}'>cos(static, static) = <b>{data['cosine_static']:.3f}"
                              f"</b>; cos(mixture 1, mixture 2) = <b>{data['cosine_mixed']:.3f}</b>"
                              " (1: the same direction)</div>")
