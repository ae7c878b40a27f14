"""Notebook 07's widget: sliders for T, d_k, heads and dtype; the cost table and an HTML log-scale memory bar."""
import html
import math

import ipywidgets as widgets

from helpers.cost import cost_widget_data, format_bytes
from helpers.plotting import COLORS
from helpers.widgets.common import LiveWidget, px

LOG_MIN, LOG_MAX = 3, 15  # the bar's axis: 1 kB to 1 PB, past the sliders' 256 TB (ticks up to 1 TB)


def _x(n_bytes: float) -> float:
    """Position of n_bytes on the log axis, in percent of the bar's width."""
    return 100 * (min(math.log10(max(n_bytes, 10**LOG_MIN)), LOG_MAX) - LOG_MIN) / (LOG_MAX - LOG_MIN)


def memory_bar_html(bars, devices) -> str:
    """Horizontal log-scale bars (label, bytes) with a dashed mark at each device's memory."""
    marks = "".join(f"<div title='{html.escape(name)}' style='position:absolute;left:{_x(size):.2f}%;top:0;"
                    f"bottom:0;border-left:2px dashed currentColor'></div>" for name, size in devices.items())
    lines = [f"<div style='display:flex;align-items:center;margin:3px 0'>"
             f"<div style='width:230px;text-align:right;padding-right:8px'>{html.escape(label)}</div>"
             f"<div style='position:relative;flex:1;height:24px;background:rgba(128,128,128,0.2)'>"
             f"<div style='width:{_x(n_bytes):.2f}%;height:100%;background:{colour}'></div>{marks}</div>"
             f"<div style='width:200px;padding-left:8px'>{format_bytes(n_bytes)}</div></div>"
             for (label, n_bytes), colour in zip(bars, (COLORS["key"], COLORS["query"]))]
    legend = " · ".join(html.escape(name) for name in sorted(devices, key=devices.get))   # left to right
    ticks = "".join(f"<span style='position:absolute;left:{_x(value):.2f}%;transform:translateX(-50%);"
                    f"white-space:nowrap'>{label}</span>"
                    for label, value in (("1 kB", 1e3), ("1 MB", 1e6), ("1 GB", 1e9), ("1 TB", 1e12)))
    axis = ("<div style='display:flex'><div style='width:238px'></div><div style='position:relative;flex:1;"
            f"height:1.4em;opacity:0.75'>{ticks}</div><div style='width:208px'></div></div>")
    return (f"<div style='font-family:sans-serif;font-size:{px(15)}px;max-width:980px'>" + "".join(lines) + axis +
            f"<div style='opacity:0.75;margin-top:4px'>dashed lines, left to right: {legend}</div></div>")


def table_html(data: dict, d_model: int, d_k: int, heads: int, dtype: str) -> str:
    """The setting, the cost table and where the scores fit (15 px); a narrow cell scrolls, never breaks words."""
    fits = [name for name, ok in data["fits"].items() if ok]
    setting = f"T = {data['T']:,}   d_model = {d_model}   d_k = {d_k}   heads = {heads}   {dtype}"
    return (f"<pre style='font-size:{px(15)}px;line-height:1.45;margin:0 0 6px 0;white-space:pre;word-break:normal;"
            f"overflow-wrap:normal;overflow-x:auto;max-width:100%'>{html.escape(setting)}\n{html.escape(data['text'])}"
            f"\nthe (T, T) scores fit in: {html.escape(', '.join(fits) if fits else 'none of these devices')}</pre>")


class CostWidget(LiveWidget):
    """T on a log slider (10² to 10⁶), d_k, heads and dtype over cost_widget_data: the table and the memory bar.
    [0] T, [1] d_k, [2] heads, [3] dtype, [4] the reading. `.result`: the latest cost_widget_data dict."""
    def __init__(self, d_model: int = 512):
        self.d_model = d_model
        self.T = widgets.FloatLogSlider(value=1e5, base=10, min=2, max=6, step=0.25, description="T",
                                        readout_format=",.0f", continuous_update=False)
        self.d_k = widgets.SelectionSlider(options=[16, 32, 64, 128, 256], value=64, description="d_k")
        self.heads = widgets.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64], value=1, description="heads")
        self.dtype = widgets.Dropdown(options=["float32", "bfloat16", "float8"], value="float32", description="dtype")
        super().__init__([self.T, self.d_k, self.heads, self.dtype], [])

    def compute(self) -> dict:
        return cost_widget_data(self.T.value, self.d_k.value, d_model=self.d_model, heads=self.heads.value,
                                dtype=self.dtype.value)

    def show(self, data: dict) -> None:
        self.reading.value = (table_html(data, self.d_model, self.d_k.value, self.heads.value, self.dtype.value)
                              + memory_bar_html(data["bars"], data["devices"]))
