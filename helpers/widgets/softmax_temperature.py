"""Notebook 02's widget: scores, a scale slider, and helpers.temperature.softmax_at_scale as bars."""
import html

import ipywidgets as widgets
import numpy as np

from helpers.plotting import COLORS
from helpers.temperature import MAX_SCORES, label_y, parse_scores, softmax_at_scale
from helpers.widgets.common import ALARM, SMALL, TEXT, FastFigure, LiveWidget, offered, reading_style


def _line(label: str, value: str) -> str:
    """One aligned line of monospace text: the labels are padded to the same width."""
    return f"<code style='font-size:inherit'>{html.escape(label.ljust(19)).replace(' ', '&nbsp;')} = {value}</code>"


def _fmt(x, spec: str = ".3f") -> str:
    return "[" + ", ".join("nan" if np.isnan(v) else f"{v:{spec}}" for v in np.asarray(x)) + "]"


class _Bars:
    """A persistent bar chart for 2 to MAX_SCORES scores. Everything that depends on the scores, their
    number included (bars, labels, token names, the uniform line), is redrawn over a fixed background."""
    def __init__(self):
        self.figure = FastFigure(figsize=(6.0, 3.4), dpi=80)
        ax = self.ax = self.figure.fig.subplots(gridspec_kw=dict(left=0.13, right=0.98, top=0.88, bottom=0.14))
        ax.set(xlim=(0, 1), ylim=(0, 1.25), xticks=[])       # bar k of n sits at x = (k + 0.5) / n
        ax.tick_params(labelsize=SMALL)
        ax.set_ylabel("weight", fontsize=TEXT)
        below = ax.get_xaxis_transform()                     # x in data, y in axes fractions
        self.bars = ax.bar(range(MAX_SCORES), np.zeros(MAX_SCORES), color=COLORS["contextual"])
        self.labels = [ax.text(0, 0, "", ha="center", va="bottom", fontsize=SMALL) for _ in range(MAX_SCORES)]
        self.names = [ax.text(0, -0.02, "", ha="center", va="top", fontsize=SMALL, transform=below)
                      for _ in range(MAX_SCORES)]
        self.axis_name = ax.text(0.5, -0.09, "token", ha="center", va="top", fontsize=SMALL, transform=below)
        self.uniform = ax.axhline(0.5, color="#888888", ls="--", lw=1)
        self.uniform_text = ax.text(0.98, 1.17, "", color="#666666", fontsize=SMALL, ha="right")
        self.title = ax.set_title("", fontsize=TEXT)
        self.figure.set_dynamic([*self.bars, *self.labels, *self.names, self.axis_name, self.uniform,
                                 self.uniform_text, self.title])

    def png(self, data: dict) -> bytes:
        n = len(data["weights"])
        uniform = 1 / n
        self.uniform.set_ydata([uniform, uniform])
        self.uniform_text.set_text(f"dashed line: uniform 1/{n}")
        self.axis_name.set_visible(n > 5)
        for k, (bar, label, name) in enumerate(zip(self.bars, self.labels, self.names)):
            for artist in (bar, label, name):
                artist.set_visible(k < n)
            if k >= n:
                continue
            x, w = (k + 0.5) / n, data["weights"][k]
            bar.set_bounds(x - 0.3 / n, 0, 0.6 / n, w)   # left, bottom, width, height
            label.set_position((x, label_y(w, uniform, 0.01)))
            label.set_text(f"{w:.3f}" if n <= 5 else f"{w:.2f}")
            name.set_x(x)
            name.set_text(f"token {k}" if n <= 5 else str(k))
        self.title.set_text(f"scale λ = {data['scale']:,.4g}: spread over ≈ {data['effective_choices']:.2f} tokens")
        return self.figure.png()


class SoftmaxTemperatureWidget(LiveWidget):
    """Scores typed as text and a log slider for the scale λ: [0] scores, [1] scale λ, [2] the bars,
    [3] the numbers. `.result`: the latest softmax_at_scale dict, None after unreadable scores."""
    def __init__(self, scores: str = "1.0, 1.2, 0.9", scale: float = 1.0):
        self.scores = widgets.Text(value=scores, description="scores", continuous_update=False)
        self.scale = offered(widgets.FloatLogSlider(base=10, min=-2, max=3, step=0.05, description="scale λ",
                                                    readout_format=",.3r"), scale, "scale")
        self._bars = _Bars()
        width, height = self._bars.figure.canvas.get_width_height()   # 1:1 pixels, larger when presenting
        self.picture = widgets.Image(format="png", layout=widgets.Layout(width=f"{width}px", height=f"{height}px"))
        super().__init__([self.scores, self.scale], [self.picture])

    def compute(self) -> dict:
        return softmax_at_scale(parse_scores(self.scores.value), self.scale.value)

    def show(self, data: dict) -> None:
        self.picture.value = self._bars.png(data)
        naive = _fmt(data["naive"]) + (f" <b style='color:{ALARM}'>{html.escape(data['naive_why'])}</b>"
                                       if data["naive_why"] else "")   # NaN on the naive line: say why
        self.reading.value = (
            f"<div style='{reading_style()}'>" + _line("λ · scores", _fmt(data["scaled"], ".7g")) + "<br>"
            + _line("softmax(λ · scores)", _fmt(data["weights"])) + " (stable: max subtracted first)<br>"
            + _line("naive exp / sum", naive) + "<br>"
            + f"top weight {data['top_weight']:.3f} on token{'s' * (len(data['top']) > 1)} "
            + " and ".join(map(str, data["top"])) + "; "
            f"entropy {data['entropy_bits']:.3f} bits, spread over ≈ {data['effective_choices']:.2f} tokens</div>")
