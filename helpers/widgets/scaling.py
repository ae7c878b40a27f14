"""Notebook 05's widget: a d_k slider and a scaling toggle, the weights and the gradient live.

A thin shell over helpers.scaling.attention_snapshot. Slide d_k up with
"no scaling" and the bars collapse onto one key while the gradient reaching
the scores falls off a cliff; switch to "divide by √d_k" and both stay put
for every d_k.
"""
from __future__ import annotations

import io
import time

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from helpers.plotting import COLORS
from helpers.scaling import POWERS_OF_TWO, attention_snapshot

_MODE_COLOR = {True: COLORS["query"], False: COLORS["key"]}
_MODE_NAME = {True: "divide by √d_k", False: "no scaling"}


class _Picture:
    """A persistent two-panel figure, redrawn by blitting.

    Axes, ticks, labels and the two gradient curves are drawn once into a
    background; an update restores it and draws only what changes (the bars,
    one marker, the two titles), then encodes the pixels as PNG. That keeps an
    update to a few milliseconds instead of redrawing every tick label.
    """

    def __init__(self, curves: dict, T: int):
        with plt.ioff():
            self.fig, (self.ax_w, self.ax_g) = plt.subplots(1, 2, figsize=(9.6, 3.6), dpi=72)
        self.fig.subplots_adjust(left=0.08, right=0.98, top=0.86, bottom=0.17, wspace=0.32)
        ax = self.ax_w
        self.bars = ax.bar(range(1, T + 1), np.zeros(T), width=0.7, animated=True)
        ax.axhline(1 / T, color="#888888", ls="--", lw=1)
        ax.text(T + 0.4, 1 / T + 0.02, f"uniform 1/{T}", color="#888888", fontsize=10, ha="right")
        ax.set_xlim(0.3, T + 0.7)
        ax.set_xticks([1, *range(4, T + 1, 4)])
        ax.set_ylim(0, 1.0)
        ax.set_xlabel("key, ranked by its weight")
        ax.set_ylabel("mean weight")
        ax = self.ax_g
        for scaled, (d, grad) in curves.items():
            ax.plot(d, grad, "o-", ms=4, color=_MODE_COLOR[scaled], label=_MODE_NAME[scaled])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = list(POWERS_OF_TWO[::2])
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.autoscale(False)
        (self.marker,) = ax.plot([], [], "o", ms=14, mfc="none", mew=2.5, color="black", animated=True)
        ax.set_xlabel("d_k")
        ax.set_ylabel("median ‖∂L/∂scores‖ per query")
        ax.legend(loc="lower left", fontsize=10)
        self.title_w = self.ax_w.set_title(" ", animated=True)
        self.title_g = self.ax_g.set_title(" ", animated=True)
        self.fig.canvas.draw()                                  # everything that never changes, once
        self.background = self.fig.canvas.copy_from_bbox(self.fig.bbox)

    def png(self, data: dict) -> bytes:
        canvas = self.fig.canvas
        canvas.restore_region(self.background)
        color = _MODE_COLOR[data["scaled"]]
        for bar, w in zip(self.bars, data["mean_sorted_weights"], strict=True):
            bar.set_height(w)
            bar.set_color(color)
            self.ax_w.draw_artist(bar)
        self.title_w.set_text(f"top key takes {data['max_weight']:.0%}; "
                              f"spread over ≈ {data['effective_keys']:.1f} of {data['T']} keys")
        self.ax_w.draw_artist(self.title_w)
        self.marker.set_data([data["d_k"]], [data["grad_median"]])
        self.ax_g.draw_artist(self.marker)
        self.title_g.set_text(f"gradient reaching the scores: {data['grad_median']:.3g}")
        self.ax_g.draw_artist(self.title_g)
        pixels = np.asarray(canvas.buffer_rgba())
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


class ScalingWidget(widgets.VBox):
    """children: [0] d_k (slider over 1, 2, 4, ..., 1024), [1] scaling on/off, [2] the picture, [3] the numbers.

    `.result` holds the latest attention_snapshot dict; `.last_update_ms` how
    long the last update took (computing + drawing).
    """

    def __init__(self, d_k: int = 64, scaled: bool = True, *, T: int = 16, n_queries: int = 512, seed: int = 0):
        if d_k not in POWERS_OF_TWO:
            raise ValueError(f"d_k should be one of the slider's values {POWERS_OF_TWO}, but got {d_k!r}.")
        self._options = {"T": T, "n_queries": n_queries, "seed": seed}
        self.d_k = widgets.SelectionSlider(options=list(POWERS_OF_TWO), value=d_k, description="d_k",
                                           continuous_update=True)
        self.scaled = widgets.ToggleButtons(options=[(_MODE_NAME[True], True), (_MODE_NAME[False], False)],
                                            value=bool(scaled), description="scores")
        self.picture = widgets.Image(format="png")
        self.reading = widgets.HTML()
        self.result = None
        self._quiet = False
        self.last_update_ms = float("nan")
        curves = {mode: (np.array(POWERS_OF_TWO),
                         np.array([attention_snapshot(d, mode, **self._options)["grad_median"] for d in POWERS_OF_TWO]))
                  for mode in (True, False)}
        self._picture = _Picture(curves, T)
        super().__init__([self.d_k, self.scaled, self.picture, self.reading])
        self.d_k.observe(self._update, names="value")
        self.scaled.observe(self._update, names="value")
        self._update()

    def _update(self, _change=None) -> None:
        if self._quiet:
            return
        start = time.perf_counter()
        data = attention_snapshot(self.d_k.value, self.scaled.value, **self._options)
        self.picture.value = self._picture.png(data)
        self.result = data
        self.last_update_ms = 1000 * (time.perf_counter() - start)
        self.reading.value = (
            f"d_k = {data['d_k']}, {_MODE_NAME[data['scaled']]} (divisor c = {data['scale']:.3g}): "
            f"the scores softmax sees have variance <b>{data['score_var']:.3g}</b><br>"
            f"mean top weight <b>{data['max_weight']:.3f}</b>, entropy {data['entropy_bits']:.2f} bits "
            f"(uniform: {np.log2(data['T']):.0f})<br>"
            f"gradient reaching the scores per query: median <b>{data['grad_median']:.3g}</b> "
            f"(10th to 90th percentile {data['grad_p10']:.2g} to {data['grad_p90']:.2g}); "
            f"{data['top2_share']:.0%} of it lands on each query's two top-scoring keys"
            f"<br><small>update took {self.last_update_ms:.0f} ms</small>"
        )

    def update(self, d_k: int, scaled: bool) -> dict:
        """Move the controls (as a student would) and return the new data; for timing and tests."""
        self._quiet = True          # move both controls, then redraw once
        try:
            self.d_k.value = d_k
            self.scaled.value = bool(scaled)
        finally:
            self._quiet = False
        self._update()
        return self.result


def scaling_widget(d_k: int = 64, scaled: bool = True) -> ScalingWidget:
    """Build the widget (display it by making it the last line of a cell)."""
    return ScalingWidget(d_k, scaled)
