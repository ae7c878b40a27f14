"""Notebook 03's attention playground: pick a sentence, toggle √d, watch S, W and the vectors."""
import html

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import FancyArrowPatch, Polygon

from helpers import validation as check
from helpers.attention_plots import convex_hull
from helpers.playground import MAX_WORDS, PLAYGROUND_SENTENCES, playground_basis, playground_data
from helpers.plotting import COLORS
from helpers.running_example import VOCAB, embedding_table
from helpers.widgets.common import SMALL, TEXT, FastFigure, LiveWidget, html_heatmap, reading_style


class _VectorPicture:
    """One persistent figure of the vectors in the fixed 2-D view; updates redraw only what moves."""
    def __init__(self):
        words, table = embedding_table()
        P = table @ playground_basis()                          # (V, 2) every word's static position
        lo, hi = P.min(axis=0), P.max(axis=0)
        pad = 0.12 * (hi - lo).max()
        self.figure = FastFigure(figsize=(5.2, 3.9), dpi=100)   # large enough to read from the back of a room
        fig, ax = self.figure.fig, self.figure.fig.add_subplot()
        fig.subplots_adjust(left=0.07, right=0.98, top=0.91, bottom=0.17)
        ax.set(xlim=(lo[0] - pad, hi[0] + 2.5 * pad), ylim=(lo[1] - pad, hi[1] + pad), aspect="equal", xticks=[],
               yticks=[])
        ax.set_xlabel("view axis 1", fontsize=SMALL)
        ax.set_ylabel("view axis 2", fontsize=SMALL)
        ax.set_title("Each vector moves to a weighted average", fontsize=TEXT)
        ax.scatter(P[:, 0], P[:, 1], s=25, color="#bbbbbb", zorder=1)
        for (x, y), word in zip(P, words):
            ax.annotate(word, (x, y), xytext=(6, 5), textcoords="offset points", color="#555555", fontsize=SMALL)
        self.hull = ax.add_patch(Polygon(np.zeros((3, 2)), closed=True, facecolor=COLORS["static"], alpha=0.12, lw=0))
        self.arrows = [ax.add_patch(FancyArrowPatch((0, 0), (0, 0), arrowstyle="-|>", mutation_scale=14,
                                                    color=COLORS["accent"], lw=1.6, shrinkA=3, shrinkB=3))
                       for _ in range(MAX_WORDS)]   # one per word at most; the unused ones are hidden
        self.starts = ax.scatter([], [], s=60, color=COLORS["static"], label="static e (start)", zorder=3)
        self.ends = ax.scatter([], [], s=60, c=COLORS["contextual"], marker="D", label="contextual y (end)", zorder=3)
        fig.legend(loc="lower center", ncol=2, fontsize=SMALL, frameon=False)
        self.figure.set_dynamic([self.hull, *self.arrows, self.starts, self.ends])

    def png(self, data: dict) -> bytes:
        Pb, Pa = data["P_before"], data["P_after"]
        corners = convex_hull(Pb)
        self.hull.set_visible(len(corners) >= 3)
        if len(corners) >= 3:
            self.hull.set_xy(corners)
        for k, arrow in enumerate(self.arrows):
            arrow.set_visible(k < len(Pb))
            if k < len(Pb):
                arrow.set_positions(tuple(Pb[k]), tuple(Pa[k]))
        self.starts.set_offsets(Pb)
        self.ends.set_offsets(Pa)
        return self.figure.png()


class PlaygroundWidget(LiveWidget):
    """The attention playground: sentence menu, typed words, √d toggle, S and W (.matrices) beside .picture,
    a reading. sentence: a menu entry or your own words from the vocabulary. `.result`: a playground_data dict."""
    def __init__(self, sentence: str = PLAYGROUND_SENTENCES[0], scaled: bool = True):
        typed = ""
        if sentence not in PLAYGROUND_SENTENCES:   # your own words: checked now, shown in the "or type" box
            typed, sentence = _own_sentence(sentence), None
        self.menu = widgets.Dropdown(options=list(PLAYGROUND_SENTENCES), value=sentence, description="sentence")
        self.typed = widgets.Text(value=typed, description="or type",
                                  placeholder=f"words from: {', '.join(VOCAB)}", continuous_update=False)
        self.menu.observe(lambda c: c.new is None or setattr(self.typed, "value", ""), names="value")   # a pick wins
        self.typed.observe(lambda c: setattr(self.menu, "value", None if c.new.strip() else self.menu.value or
                                             PLAYGROUND_SENTENCES[0]), names="value")   # typed: the menu blank
        self.scaled = widgets.Checkbox(value=scaled, description="divide the scores by √d", indent=False)
        self.matrices, self._vectors = widgets.HTML(), _VectorPicture()
        width, height = self._vectors.figure.canvas.get_width_height()   # 1:1 pixels, larger when presenting
        self.picture = widgets.Image(format="png", layout=widgets.Layout(width=f"{width}px", height=f"{height}px"))
        outputs = widgets.HBox([self.matrices, self.picture], layout=widgets.Layout(align_items="flex-start"))
        super().__init__([self.menu, self.typed, self.scaled], [outputs])

    def sentence(self) -> str:
        """What the playground shows: the typed words if any, else the menu's sentence."""
        return self.typed.value.strip() or self.menu.value

    def compute(self) -> dict:
        return playground_data(self.sentence(), scaled=self.scaled.value)

    def show(self, data: dict) -> None:
        words = data["words"]
        S = f"S / √d = E Eᵀ / {data['divisor']:g}" if data["divisor"] != 1 else "S = E Eᵀ (not scaled)"
        self.matrices.value = ("<div style='display:flex;flex-direction:column;gap:14px'>"
                               + html_heatmap(data["S"], words, words, title=S, fmt="{:.2f}")
                               + html_heatmap(data["W"], words, words, title=f"W = softmax({S.split(' =')[0]}), rows "
                                              "sum to 1", vmin=0.0, vmax=1.0) + "</div>")
        self.picture.value = self._vectors.png(data)
        tops = "; ".join(f"{w} → {t} ({row.max():.2f})" for w, t, row in zip(words, data["top"], data["W"]))
        self.reading.value = f"<div style='{reading_style()}'><b>attends most to:</b> {html.escape(tops)}</div>"


def _own_sentence(sentence) -> str:
    """A sentence that is not on the menu: text made of vocabulary words (at most MAX_WORDS), else a clear error."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence should be text such as {PLAYGROUND_SENTENCES[0]!r} (words from: "
                        f"{', '.join(VOCAB)}), but got {check.describe(sentence)} ({sentence!r:.40}).")
    try:
        playground_data(sentence)
    except ValueError as error:
        raise ValueError(f"sentence {sentence!r:.60}: {error}") from None
    return sentence
