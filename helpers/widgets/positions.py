"""Notebook 08's widget: sliders for a position p and the dimension d over helpers.positions.position_snapshot.

Left, the (T, d) encoding as a heatmap with row p outlined; right, p's dot product with every position.
FastFigure blitting: an update redraws only the outline, the curve, its marker and a title, over a background
drawn once per d when the widget is built."""
import ipywidgets as widgets
import numpy as np

from helpers.plotting import COLORS
from helpers.positions import position_snapshot
from helpers.widgets.common import SMALL, TEXT, FastFigure, LiveWidget, offered, reading_style

DIMENSIONS = (4, 8, 16, 32, 64, 128)


class _Picture:
    def __init__(self, T: int):
        self.T = T
        self.figure = FastFigure(figsize=(7.4, 3.9), dpi=80)   # 592 px: full size beside the file browser
        self.ax_pe, self.ax_sim = self.figure.fig.subplots(1, 2, gridspec_kw=dict(
            width_ratios=[1, 1.15], left=0.09, right=0.985, top=0.88, bottom=0.15, wspace=0.34))
        self.image = self.ax_pe.imshow(np.zeros((T, 4)), cmap="viridis", vmin=-1, vmax=1, aspect="auto",
                                       interpolation="nearest")
        self.row = self.ax_pe.axhline(0, color="white", lw=2.5)
        ax = self.ax_sim
        (self.curve,) = ax.plot(range(T), np.zeros(T), "-", lw=2, color=COLORS["static"])
        (self.marker,) = ax.plot([], [], "o", ms=9, color=COLORS["key"])
        self.cursor = ax.axvline(0, color="#444444", lw=1.2, ls="--")
        ax.set_xlim(-0.5, T - 0.5)
        for axis, xlabel, ylabel in ((self.ax_pe, "dimension (2m: sin, 2m+1: cos)", "position"),
                                     (self.ax_sim, "position p′", "PE(p) · PE(p′)")):
            axis.set_xlabel(xlabel, fontsize=SMALL)
            axis.set_ylabel(ylabel, fontsize=SMALL)
            axis.tick_params(labelsize=SMALL)
        self.title_pe, self.title_sim = (axis.set_title(" ", fontsize=TEXT) for axis in (self.ax_pe, self.ax_sim))
        self.figure.set_dynamic([self.row, self.curve, self.marker, self.cursor, self.title_sim])
        self.d = None

    def png(self, data: dict) -> bytes:
        if data["d"] != self.d:                                    # the background's part: once per d
            d, T = data["d"], self.T
            self.image.set_data(data["PE"])
            self.image.set_extent((-0.5, d - 0.5, T - 0.5, -0.5))
            self.title_pe.set_text(f"PE: {T} positions × d = {d}")
            low, high = data["range"]
            pad = 0.08 * (high - low)
            self.ax_sim.set_ylim(low - pad, high + pad)
            self.d = d
        p = data["p"]
        self.row.set_ydata([p, p])
        self.curve.set_ydata(data["similarity"])
        self.marker.set_data([p], [data["self"]])
        self.cursor.set_xdata([p, p])
        self.title_sim.set_text(f"position {p} against all")
        return self.figure.png(data["d"])   # one background per d: changing d is a blit too


class PositionsWidget(LiveWidget):
    """Sliders for p and d over position_snapshot: [0] position p, [1] dimension d, [2] the picture,
    [3] the numbers. `.result`: the latest position_snapshot dict."""
    def __init__(self, p: int = 10, d: int = 16, T: int = 48):
        self.T = T
        self.p = offered(widgets.IntSlider(min=0, max=T - 1, description="position p", style={
            "description_width": "initial"}, layout=widgets.Layout(width="60%")), p, "p")
        self.d = offered(widgets.SelectionSlider(options=list(DIMENSIONS), description="dimension d", style={
            "description_width": "initial"}, layout=widgets.Layout(width="60%")), d, "d")
        self.picture, self._picture = widgets.Image(format="png"), _Picture(T)
        for other in DIMENSIONS:   # draw each d's background now, so that every later update is a blit
            self._picture.png(position_snapshot(self.p.value, other, T))   # p as the slider keeps it: 0 … T − 1
        super().__init__([self.p, self.d], [self.picture])

    def compute(self) -> dict:
        return position_snapshot(self.p.value, self.d.value, self.T)

    def show(self, data: dict) -> None:
        self.picture.value = self._picture.png(data)
        nearest, plural = " and ".join(str(q) for q in data["nearest"]), "s" if len(data["nearest"]) > 1 else ""
        waves = data["wavelengths"]
        self.reading.value = (
            f"<div style='{reading_style()}'>PE({data['p']}) · PE({data['p']}) = <b>{data['self']:.1f}</b> = d/2: each "
            f"of the {data['d'] // 2} (sin, cos) pairs is a point on the unit circle. Closest other position{plural}: "
            f"<b>{nearest}</b> (dot product {data['nearest_value']:.2f}). The curve depends only on the offset p′ − p: "
            f"slide p and it moves without changing shape. Wavelengths from {waves[0]:.2f} (columns 0, 1) to "
            f"{waves[-1]:,.0f} positions (columns {data['d'] - 2}, {data['d'] - 1}).</div>")
