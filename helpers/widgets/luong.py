"""Notebook 06's widgets: a dictionary looked up two ways, and switches for the two differences
between Luong attention and self-attention (HTML heatmaps, so they answer at once).
"""
from __future__ import annotations

import html

import ipywidgets as widgets
from IPython.display import HTML, display

from helpers.luong import dictionary_lookup, lineup_data
from helpers.widgets.common import html_heatmap, interactive_now, px

PROJECTIONS = ("reuse h_j as key and value", "learned W_q, W_k, W_v")
SEQUENCES = ("two: Hindi asks English", "one: English asks itself")


def description_html(data: dict) -> str:
    """The mechanism's name, who asks whom, the shapes and the parameter count, as 15 px text."""
    shapes = " &nbsp; ".join(f"{k} {v}" for k, v in data["shapes"].items())
    return (f"<div style='font-size:{px(15)}px;line-height:1.6;margin-bottom:6px'>"
            f"<b>{html.escape(data['name'])}</b>: {html.escape(data['sequences'])}<br>"
            f"<code style='font-size:inherit'>{shapes}</code><br>"
            f"parameters: {data['parameters']} &nbsp; K equals V: {data['K_equals_V']}</div>")


def lineup_explorer() -> widgets.interactive:
    """Toggle the two differences; see the mechanism's name, shapes, parameter count and weights W."""

    def show(projections=PROJECTIONS[0], sequences=SEQUENCES[0]):
        data = lineup_data(projections == PROJECTIONS[1], sequences == SEQUENCES[1])
        rows_by_cols = f"{data['shapes']['W'][0]} × {data['shapes']['W'][1]}"
        display(HTML(description_html(data) + html_heatmap(
            data["W"], data["rows"], data["cols"], title=f"W ({rows_by_cols}): rows are queries, columns are keys",
            vmin=0.0, vmax=1.0)))
        return data

    projections = widgets.ToggleButtons(options=list(PROJECTIONS), description="difference 1")
    sequences = widgets.ToggleButtons(options=list(SEQUENCES), description="difference 2")
    for toggle in (projections, sequences):
        toggle.style.button_width = "230px"
    return interactive_now(show, projections=projections, sequences=sequences)


def lookup_html(data: dict) -> str:
    """The three lookups' weights on a, b, c as a coloured table, and the value each returns for 'b'."""
    weights = [data["weights_luong"], data["weights_query_only"], data["weights_roles"]]
    rows = ["Luong: h_j is key and value", "learned W_q only (K = V = H)", "separate roles: W_q, W_k, W_v"]
    answers = (f"<div style='font-size:{px(15)}px;line-height:1.6;margin-top:6px'>value returned for 'b' "
               f"(true value {data['true']:g}): Luong <b>{data['answer_luong']:.2f}</b>, "
               f"W_q only <b>{data['answer_query_only']:.2f}</b>, "
               f"separate roles <b>{data['answer_roles']:.2f}</b></div>")
    return html_heatmap(weights, rows, data["keys"], title="weights on the entries a, b, c (the query asks for b)",
                        vmin=0.0, vmax=1.0) + answers


def dictionary_explorer(value_c: float = 4.0, noise: float = 1.0) -> widgets.interactive:
    """Sliders for the value stored under 'c' and the query's noise; the three lookups' weights and answers."""
    def show(value_c=value_c, noise=noise):
        data = dictionary_lookup(value_c, noise)
        display(HTML(lookup_html(data)))
        return data

    value = widgets.FloatSlider(value=value_c, min=0.0, max=40.0, step=1.0, description="value of c",
                                continuous_update=True, readout_format=".0f")
    noise_slider = widgets.FloatSlider(value=noise, min=0.0, max=2.0, step=0.1, description="query noise",
                                       continuous_update=True, readout_format=".1f")
    for slider in (value, noise_slider):
        slider.style.description_width = "90px"
    return interactive_now(show, value_c=value, noise=noise_slider)
