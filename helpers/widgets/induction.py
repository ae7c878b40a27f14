"""Notebook 10's widget: type letters, pick a query, switch heads off; every head's weights for that query and the
model's next-letter probabilities. A thin shell over helpers.induction.prediction_data (tested without a browser).

The weights are an HTML table (a row per head, a column per key, the letters above), so a new sequence costs no
drawing; the probabilities are bars in a FastFigure whose heights and colours are blitted over a fixed background."""
import html

import ipywidgets as widgets
import numpy as np

from helpers.induction import CONTEXT, LETTERS, encode, load_trained_model, prediction_data
from helpers.plotting import COLORS, INK
from helpers.widgets.common import FastFigure, LiveWidget, offered, picture, px, reading_style, viridis_css


def weights_table(data: dict, heads: list[str], off: list[bool]) -> str:
    """Each head's weights for the query as one row of coloured cells under the typed letters (HTML)."""
    text, p, e = data["letters"], data["position"], data["earlier"]
    cell = f"width:{px(15)}px;height:{px(22)}px;padding:0;"
    def edge(j):   # the query's column outlined, the letter after its earlier copy dashed
        return (f"outline:3px solid {COLORS['key']}" if j == p
                else "outline:2px dashed #888" if e is not None and j == e + 1 else "")
    top = "".join(f"<th style='{cell}font-family:monospace;font-size:{px(14)}px;color:"
                  f"{INK['key'] if j == p else 'inherit'}'>{html.escape(c)}</th>" for j, c in enumerate(text))
    rows = []
    for name, w, is_off in zip(heads, data["weights"], off):
        tds = "".join(f"<td style='{cell}background:{viridis_css(v)};{edge(j)}'></td>" for j, v in enumerate(w))
        rows.append(f"<tr><th style='text-align:right;padding-right:8px;font-size:{px(14)}px;white-space:nowrap'>"
                    f"{name}{' (off)' if is_off else ''}</th>{tds}</tr>")
    return (f"<div style='font-weight:bold;font-size:{px(15)}px;margin-bottom:4px'>query {p} ({text[p]!r}): each "
            f"head's weights over the keys (dark 0, yellow 1)</div><table style='border-collapse:separate;"
            f"border-spacing:1px'><tr><th></th>{top}</tr>{''.join(rows)}</table>")


class _Bars:
    """The next-letter probabilities: the axes drawn once; an update redraws only the bars and the title."""
    def __init__(self):
        self.figure = FastFigure(figsize=(7.4, 2.3), dpi=80)   # 592 px: full size beside the file browser
        ax = self.figure.fig.subplots(gridspec_kw=dict(left=0.1, right=0.98, top=0.84, bottom=0.16))
        self.bars = ax.bar(range(len(LETTERS)), np.zeros(len(LETTERS)), color=COLORS["static"])
        ax.set_xticks(range(len(LETTERS)), list(LETTERS), fontsize=12, family="monospace")
        ax.set_ylim(0, 1)
        ax.set_ylabel("probability", fontsize=12)
        ax.tick_params(axis="y", labelsize=12)
        self.title = ax.set_title(" ", fontsize=13)
        self.figure.set_dynamic([*self.bars, self.title])

    def png(self, data: dict) -> bytes:
        e, text = data["earlier"], data["letters"]
        copy = None if e is None else LETTERS.index(text[e + 1])
        for k, (bar, height) in enumerate(zip(self.bars, data["probabilities"])):
            bar.set_height(height)
            bar.set(fc=COLORS["contextual" if k == copy else "static"], ec="black" if k == copy else "none",
                    hatch="//" * (k == copy))   # the copied letter: not by its colour alone
        self.title.set_text(f"next letter: {data['prediction']!r} ({data['probabilities'].max():.0%})")
        return self.figure.png()


class InductionWidget(LiveWidget):
    """[0] the letters, [1] the query position, [2] a switch per head, [3] the weights, [4] the bars, [5] the
    reading. `.result`: the latest prediction_data dict."""
    def __init__(self, letters: str = "thebankisrichthebankis", position: int | None = None, model=None):
        self.model = load_trained_model() if model is None else model
        self.heads = [(layer, h) for layer in range(self.model.n_layers) for h in range(self.model.n_heads)]
        T = max(1, min(CONTEXT, len(letters.replace(" ", ""))))
        self.text = widgets.Text(value=letters, description="letters", layout=widgets.Layout(width="420px"))
        self.position = offered(widgets.IntSlider(min=0, max=T - 1, description="query"),
                                T - 1 if position is None else position, "position")
        self.switches = [widgets.Checkbox(value=True, description=f"head {layer}.{h}", indent=False,
                                          layout=widgets.Layout(width="110px")) for layer, h in self.heads]
        self.table, self._bars = widgets.HTML(), _Bars()
        self.picture = picture(self._bars.figure)
        super().__init__([self.text, self.position, *self.switches], [self.table, self.picture])
        self.children = [self.text, self.position, widgets.HBox(self.switches), *self.children[-3:]]

    def compute(self) -> dict:
        T = encode(self.text.value).size(1)        # mistyped letters: a named error, and the slider stays
        if self.position.max != T - 1:             # the slider follows the typed length
            at_end = self.position.value == self.position.max
            self.position.unobserve(self._update, names="value")
            self.position.max = T - 1
            self.position.value = T - 1 if at_end else self.position.value
            self.position.observe(self._update, names="value")
        off = [head for head, switch in zip(self.heads, self.switches) if not switch.value]
        return prediction_data(self.model, self.text.value, self.position.value, off)

    def show(self, data: dict) -> None:
        off, self.picture.value = [not s.value for s in self.switches], self._bars.png(data)
        self.table.value = weights_table(data, [s.description for s in self.switches], off)
        text, p, e = data["letters"], data["position"], data["earlier"]
        if e is None:
            story = f"{text[p]!r} has not come before position {p}: there is nothing to copy."
        else:
            heads = ", ".join(f"{layer}.{h}: " + ("off" if o else f"{w[e + 1]:.2f}")   # an off head adds nothing
                              for (layer, h), w, o in zip(self.heads, data["weights"], off))
            story = (f"{text[p]!r} came before at position {e}, followed by {text[e + 1]!r} (dashed): copying "
                     f"predicts {text[e + 1]!r} (the orange, hatched bar). Weight on it, head by head: {heads}.")
        names = [s.description for s, is_off in zip(self.switches, off) if is_off]
        state = f"Switched off: {', '.join(names)}." if names else "All heads on: untick one to switch it off."
        self.reading.value = (f"<div style='{reading_style()}'>{html.escape(story)} The model predicts "
                              f"<b>{data['prediction']!r}</b> ({data['probabilities'].max():.0%}). "
                              f"{html.escape(state)}</div>")
