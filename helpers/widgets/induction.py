"""Notebook 10's widget: type letters, pick a query, switch heads off; every head's weights for that query and the
model's next-token probabilities. A thin shell over helpers.induction.prediction_data (tested without a browser).

One FastFigure, blitted: the weights (a row per head, a column per key), the letters under them and the bars are
all dynamic artists over a background drawn once, so a new sequence costs no more than a new query.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.patches import Rectangle

from helpers.induction import CONTEXT, LETTERS, load_trained_model, prediction_data
from helpers.plotting import COLORS
from helpers.widgets.common import FastFigure, LiveWidget, picture, reading_style

#: Font sizes (points), fixed: in presenter mode FastFigure grows the whole picture (higher dpi).
_TEXT, _SMALL = 13, 11
_GREY = matplotlib.colormaps["viridis"].with_extremes(bad="#f2f2f2")   # past the typed letters


class _Picture:
    def __init__(self, names: list[str]):
        rows = len(names)
        self.figure = FastFigure(figsize=(7.4, 4.6), dpi=80)   # 592 px: full size beside the file browser
        fig = self.figure.fig
        self.ax_w, self.ax_p = fig.subplots(2, 1, gridspec_kw={"height_ratios": [rows, 3]})
        fig.subplots_adjust(left=0.1, right=0.98, top=0.93, bottom=0.08, hspace=0.62)
        ax = self.ax_w
        self.image = ax.imshow(np.full((rows, CONTEXT), np.nan), cmap=_GREY, vmin=0, vmax=1, aspect="auto",
                               interpolation="nearest")
        ax.set_yticks(range(rows), names, fontsize=_SMALL)
        ax.set_xticks([])
        self.letters = [ax.text(j, -0.04, "", ha="center", va="top", fontsize=_SMALL, family="monospace",
                                transform=ax.get_xaxis_transform()) for j in range(CONTEXT)]
        self.query = ax.add_patch(Rectangle((-0.5, -0.5), 1, rows, fill=False, lw=2.5, ec=COLORS["key"]))
        self.target = ax.add_patch(Rectangle((-0.5, -0.5), 1, rows, fill=False, lw=2, ls="--", ec="white"))
        self.off = [ax.text(CONTEXT - 0.6, r, "off", ha="right", va="center", fontsize=_SMALL, weight="bold",
                            color=COLORS["key"], bbox={"fc": "white", "ec": "none", "pad": 1}) for r in range(rows)]
        self.title_w = ax.set_title(" ", fontsize=_TEXT)
        ax = self.ax_p
        self.bars = ax.bar(range(len(LETTERS)), np.zeros(len(LETTERS)), color=COLORS["static"])
        ax.set_xticks(range(len(LETTERS)), list(LETTERS), fontsize=_SMALL, family="monospace")
        ax.set_ylim(0, 1)
        ax.set_ylabel("probability", fontsize=_SMALL)
        ax.tick_params(axis="y", labelsize=_SMALL)
        self.title_p = ax.set_title(" ", fontsize=_TEXT)
        self.figure.set_dynamic([self.image, *self.letters, self.query, self.target, *self.off, self.title_w,
                                 *self.bars, self.title_p])

    def png(self, data: dict, off: list[bool]) -> bytes:
        text, p, T = data["letters"], data["position"], len(data["letters"])
        weights = np.full((len(off), CONTEXT), np.nan)
        weights[:, :T] = data["weights"]
        self.image.set_data(weights)
        for j, label in enumerate(self.letters):
            label.set_text(text[j] if j < T else "")
            label.set_color(COLORS["key"] if j == p else "black")
        self.query.set_x(p - 0.5)
        after = None if data["earlier"] is None else data["earlier"] + 1
        self.target.set_visible(after is not None)
        self.target.set_x((after or 0) - 0.5)
        for label, is_off in zip(self.off, off):
            label.set_visible(is_off)
        self.title_w.set_text(f"query {p} ({text[p]!r}): each head's weights over the keys")
        copy = None if after is None else LETTERS.index(text[after])
        for k, (bar, height) in enumerate(zip(self.bars, data["probabilities"])):
            bar.set_height(height)
            bar.set_color(COLORS["contextual"] if k == copy else COLORS["static"])
        self.title_p.set_text(f"next letter: {data['prediction']!r} ({data['probabilities'].max():.0%})")
        return self.figure.png()


class InductionWidget(LiveWidget):
    """[0] the letters, [1] the query position, [2] a switch per head, [3] the picture, [4] the reading.

    `.result`: the latest prediction_data dict.
    """

    def __init__(self, letters: str = "thebankisrichthebankis", position: int | None = None, model=None):
        self.model = load_trained_model() if model is None else model
        self.heads = [(layer, h) for layer in range(self.model.n_layers) for h in range(self.model.n_heads)]
        T = max(1, min(CONTEXT, len(letters.replace(" ", ""))))
        self.text = widgets.Text(value=letters, description="letters", continuous_update=True,
                                 layout=widgets.Layout(width="420px"))
        self.position = widgets.IntSlider(value=T - 1 if position is None else position, min=0, max=T - 1,
                                          description="query", continuous_update=True)
        self.switches = [widgets.Checkbox(value=True, description=f"head {layer}.{h}", indent=False,
                                          layout=widgets.Layout(width="110px")) for layer, h in self.heads]
        self.reading = widgets.HTML()
        self._picture = _Picture([f"head {layer}.{h}" for layer, h in self.heads])
        self.picture = picture(self._picture.figure)
        super().__init__([self.text, self.position, *self.switches], [self.picture, self.reading])
        self.children = [self.text, self.position, widgets.HBox(self.switches), self.picture, self.reading]

    def compute(self) -> dict:
        T = len(self.text.value.replace(" ", ""))
        if 1 <= T <= CONTEXT and self.position.max != T - 1:     # the slider follows the typed length
            at_end = self.position.value == self.position.max
            self.position.unobserve(self._update, names="value")
            self.position.max = T - 1
            self.position.value = T - 1 if at_end else self.position.value
            self.position.observe(self._update, names="value")
        off = [head for head, switch in zip(self.heads, self.switches) if not switch.value]
        return prediction_data(self.model, self.text.value, self.position.value, off)

    def show(self, data: dict) -> None:
        self.picture.value = self._picture.png(data, [not s.value for s in self.switches])
        text, p, e = data["letters"], data["position"], data["earlier"]
        if e is None:
            story = (f"{text[p]!r} has not come before position {p}: there is nothing to copy, and the model can "
                     "only guess.")
        else:
            heads = ", ".join(f"{layer}.{h}: {w[e + 1]:.2f}" for (layer, h), w in zip(self.heads, data["weights"]))
            story = (f"{text[p]!r} came before at position {e}, followed by {text[e + 1]!r} (dashed column): "
                     f"copying predicts {text[e + 1]!r} (orange bar). Weight on that column, head by head: {heads}.")
        off = [s.description for s in self.switches if not s.value]
        state = f"Switched off: {', '.join(off)}." if off else "All heads on: untick one to switch it off."
        self.reading.value = (f"<div style='{reading_style()}'>{html.escape(story)} The model predicts "
                              f"<b>{data['prediction']!r}</b> ({data['probabilities'].max():.0%}). "
                              f"{html.escape(state)}</div>")
