"""Notebook 05's widget: a d_k slider and a scaling toggle over helpers.scaling.attention_snapshot."""
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from helpers.plotting import COLORS
from helpers.scaling import POWERS_OF_TWO, attention_snapshot, saturation_table
from helpers.validation import count
from helpers.widgets.common import FastFigure, LiveWidget, offered, reading_style

_MODE_COLOR, _MODE_NAME = {True: COLORS["query"], False: COLORS["key"]}, {True: "divide by √d_k", False: "no scaling"}
_TEXT, _SMALL = 14, 12   # this picture's own fixed sizes (see common.TEXT)


class _Picture:
    """Two panels; an update redraws only the bars, the marker and the titles (FastFigure blitting)."""
    def __init__(self, curves: dict, T: int):
        self.figure = FastFigure(figsize=(7.4, 4.0), dpi=80)   # 592 px: full size beside JupyterLab's file browser
        self.ax_w, self.ax_g = self.figure.fig.subplots(1, 2, gridspec_kw=dict(left=0.1, right=0.99, top=0.87,
                                                                                bottom=0.16, wspace=0.42))
        ax = self.ax_w
        self.bars = ax.bar(range(1, T + 1), np.zeros(T), width=0.7)
        ax.axhline(1 / T, color="#888888", ls="--", lw=1)
        ax.text(T + 0.4, 1 / T + 0.03, f"uniform: 1/{T} each", color="#666666", fontsize=_SMALL, ha="right")
        ax.set(xlim=(0.3, T + 0.7), xticks=[1, *range(4, T + 1, 4)], ylim=(0, 1.0))
        ax = self.ax_g
        for scaled, (d, grad) in curves.items():
            ax.plot(d, grad, "o-" if scaled else "s--", ms=5, lw=2, color=_MODE_COLOR[scaled], label=_MODE_NAME[scaled])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(POWERS_OF_TWO[::2], [str(t) for t in POWERS_OF_TWO[::2]])
        ax.minorticks_off()
        ax.autoscale(False)
        (self.marker,) = ax.plot([], [], "o", ms=16, mfc="none", mew=2.5, color="black")
        ax.legend(loc="lower left", fontsize=_SMALL)
        for axis, xlabel, ylabel in ((self.ax_w, "key, by weight", "mean weight"),
                                     (self.ax_g, "d_k", "gradient (median)")):
            axis.set_xlabel(xlabel, fontsize=_SMALL)
            axis.set_ylabel(ylabel, fontsize=_SMALL)
            axis.tick_params(labelsize=_SMALL)
            axis.spines[["top", "right"]].set_visible(False)
        self.title_w, self.title_g = (axis.set_title(" ", fontsize=_TEXT, pad=14) for axis in (self.ax_w, self.ax_g))
        self.figure.set_dynamic([*self.bars, self.marker, self.title_w, self.title_g])

    def png(self, data: dict) -> bytes:
        color = _MODE_COLOR[data["scaled"]]
        for bar, w in zip(self.bars, data["mean_sorted_weights"], strict=True):
            bar.set_height(w)
            bar.set_color(color)
        self.title_w.set_text(f"{_MODE_NAME[data['scaled']]}: spread ≈ {data['effective_keys']:.1f} keys")  # mean 2^H
        self.marker.set_data([data["d_k"]], [data["grad_median"]])
        self.title_g.set_text(f"gradient to scores: {data['grad_median']:.2g}")
        return self.figure.png()


@lru_cache(maxsize=4)
def _gradient_curves(T: int, n_queries: int, seed: int) -> dict:
    """{scaled: (d_k values, median gradient)} over POWERS_OF_TWO: the widget's background, computed once."""
    table = saturation_table(T=T, n_queries=n_queries, seed=seed)
    return {mode: (table["d"], table["scaled" if mode else "unscaled"]["grad_median"]) for mode in (True, False)}


class ScalingWidget(LiveWidget):
    """A d_k slider and a scaling toggle over attention_snapshot: [0] d_k, [1] scores, [2] the picture,
    [3] the numbers. `.result`: the latest attention_snapshot dict."""
    def __init__(self, d_k: int = 64, scaled: bool = True, *, T: int = 16, n_queries: int = 512, seed: int = 0):
        self._options = {"T": count(T, "T (keys)"), "n_queries": count(n_queries, "n_queries"), "seed": seed}
        self.d_k = offered(widgets.SelectionSlider(options=list(POWERS_OF_TWO), description="d_k"), d_k, "d_k")
        self.scaled = offered(widgets.ToggleButtons(options=[(_MODE_NAME[True], True), (_MODE_NAME[False], False)],
                                                    description="scores"), scaled, "scaled")
        self.picture, self._picture = widgets.Image(format="png"), None   # _picture: drawn at the first update
        super().__init__([self.d_k, self.scaled], [self.picture])
        self.reading.layout.margin = "0 0 0 8px"

    def compute(self) -> dict:
        snapshot = attention_snapshot(self.d_k.value, self.scaled.value, **self._options)
        return snapshot | {"curves": _gradient_curves(**self._options)}

    def show(self, data: dict) -> None:
        if self._picture is None:
            self._picture = _Picture(data["curves"], data["T"])
        self.picture.value = self._picture.png(data)
        self.reading.value = (
            f"<div style='{reading_style()}'>d_k = {data['d_k']}, {_MODE_NAME[data['scaled']]} (divisor c = "
            f"{data['divisor']:.3g}): the scores softmax sees have variance <b>{data['score_var']:,.2f}</b><br>mean top"
            f" weight <b>{data['max_weight']:.3f}</b>, mean entropy H {data['entropy_bits']:.2f} bits (uniform: "
            f"{np.log2(data['T']):.0f}; the title's spread is the mean of each query's 2^H)<br>gradient reaching "
            "the scores per query: median "
            f"<b>{data['grad_median']:.3g}</b> (10th to 90th percentile {data['grad_p10']:.2g} to "
            f"{data['grad_p90']:.2g}); {data['top2_share']:.0%} of it lands on each query's two top-scoring keys</div>")
