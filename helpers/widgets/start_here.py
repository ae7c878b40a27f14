"""Notebook 00's widget: one slider that proves widgets work (and previews the mixing idea)."""
import ipywidgets as widgets
import numpy as np

from helpers.mixing import pull_toward
from helpers.plotting import COLORS
from helpers.running_example import tokenize
from helpers.widgets.common import FastFigure, LiveWidget, picture, reading_style


class PullSliderWidget(LiveWidget):
    """[0] amount, [1] bars of (1 - amount)·e_word + amount·e_target, [2] the cosines with target and other.
    `.result`: the latest helpers.mixing.pull_toward dict."""
    def __init__(self, word: str = "bank", target: str = "money", other: str = "river"):
        self.word, self.target, (self.other,) = word, target, tokenize([other])   # a word of the table, or named
        self.amount = widgets.FloatSlider(min=0.0, max=1.0, step=0.05, description="amount", readout_format=".2f")
        self.figure = FastFigure(figsize=(6.5, 3.0))
        ax = self.figure.fig.subplots(gridspec_kw=dict(left=0.12, right=0.98, top=0.86, bottom=0.12))
        self.bars = ax.bar(range(4), np.zeros(4), color=COLORS["contextual"])   # d = 4
        ax.set(ylim=(0, 1.05), xticks=range(4), xticklabels=[f"dim {i}" for i in range(4)])
        ax.tick_params(labelsize=12)   # fixed sizes: in presenter mode FastFigure grows the whole picture
        ax.set_ylabel("value", fontsize=13)
        self.title = ax.set_title("", fontsize=14)
        self.figure.set_dynamic([*self.bars, self.title])
        self.picture = picture(self.figure)
        super().__init__([self.amount], [self.picture])

    def compute(self) -> dict:
        return pull_toward(self.word, self.target, self.amount.value)

    def show(self, data: dict) -> None:
        for bar, value in zip(self.bars, data["vector"]):
            bar.set_height(value)
        self.title.set_text(f"{1 - self.amount.value:.2f}·{self.word} + {self.amount.value:.2f}·{self.target}")
        self.picture.value = self.figure.png()
        self.reading.value = (f"<div style='{reading_style()}'>cosine with <i>{self.target}</i> "
                              f"<b>{data['cos_to_target']:.3f}</b>, with <i>{self.other}</i> "
                              f"<b>{data['cos_to'][self.other]:.3f}</b> (1 means the same direction)</div>")
