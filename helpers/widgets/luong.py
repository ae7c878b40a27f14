"""Notebook 06's widgets: a dictionary looked up two ways, and switches for the two differences
between Luong attention and self-attention (HTML heatmaps, so they answer at once)."""
import html

import ipywidgets as widgets

from helpers.luong import dictionary_lookup, lineup_data
from helpers.widgets.common import LiveWidget, html_heatmap, offered, px

PROJECTIONS = ("reuse h_j as key and value", "learned W_q, W_k, W_v")
SEQUENCES = ("two: Hindi asks English", "one: English asks itself")


def description_html(data: dict) -> str:
    """The mechanism's name, who asks whom, the shapes and the parameter count, as 15 px text."""
    shapes = " &nbsp; ".join(f"{k} {v}" for k, v in data["shapes"].items())
    return (f"<div style='font-size:{px(15)}px;line-height:1.6;margin-bottom:6px'><b>{html.escape(data['name'])}</b>: "
            f"{html.escape(data['sequences'])}<br><code style='font-size:inherit'>{shapes}</code><br>parameters: "
            f"{data['parameters']} &nbsp; K equals V: {data['K_equals_V']}</div>")


class LineupWidget(LiveWidget):
    """Toggle the two differences; see the mechanism's name, shapes, parameter count and weights W.
    [0] projections, [1] sequences, [2] the reading. `.result`: the latest lineup_data dict."""
    def __init__(self):
        style = {"button_width": "230px"}
        self.projections = widgets.ToggleButtons(options=list(PROJECTIONS), description="difference 1", style=style)
        self.sequences = widgets.ToggleButtons(options=list(SEQUENCES), description="difference 2", style=style)
        super().__init__([self.projections, self.sequences], [])

    def compute(self) -> dict:
        return lineup_data(self.projections.value == PROJECTIONS[1], self.sequences.value == SEQUENCES[1])

    def show(self, data: dict) -> None:
        self.reading.value = description_html(data) + html_heatmap(
            data["W"], data["rows"], data["cols"], vmin=0.0, vmax=1.0,
            title="W ({} × {}): rows are queries, columns are keys".format(*data["shapes"]["W"]))


def lookup_html(data: dict) -> str:
    """The three lookups' weights on a, b, c as a coloured table, and the value each returns for 'b'."""
    weights = [data["weights_luong"], data["weights_query_only"], data["weights_roles"]]
    rows = ["Luong: h_j is key and value", "W_q only, set by hand (K = V = H)", "separate roles: W_q, W_k, W_v"]
    answers = (f"<div style='font-size:{px(15)}px;line-height:1.6;margin-top:6px'>value returned for 'b' (true value "
               f"{data['true']:g}): Luong <b>{data['answer_luong']:.2f}</b>, W_q only "
               f"<b>{data['answer_query_only']:.2f}</b>, separate roles <b>{data['answer_roles']:.2f}</b></div>")
    return html_heatmap(weights, rows, data["keys"], title="weights on the entries a, b, c (the query asks for b)",
                        vmin=0.0, vmax=1.0) + answers


class DictionaryWidget(LiveWidget):
    """Sliders for the value stored under 'c' and the query's noise; the three lookups' weights and answers.
    [0] value of c, [1] query noise, [2] the reading. `.result`: the latest dictionary_lookup dict."""
    def __init__(self, value_c: float = 4.0, noise: float = 1.0):
        style = {"description_width": "90px"}
        self.value_c = offered(widgets.FloatSlider(min=0.0, max=40.0, step=1.0, description="value of c",
                                                   readout_format=".0f", style=style), value_c, "value_c")
        self.noise = offered(widgets.FloatSlider(min=0.0, max=2.0, step=0.1, description="query noise",
                                                 readout_format=".1f", style=style), noise, "noise")
        super().__init__([self.value_c, self.noise], [])

    def compute(self) -> dict:
        return dictionary_lookup(self.value_c.value, self.noise.value)

    def show(self, data: dict) -> None:
        self.reading.value = lookup_html(data)
