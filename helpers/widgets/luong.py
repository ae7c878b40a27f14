"""Notebook 06's widget: two switches, the two differences between Luong attention and self-attention.

The weights are drawn as an HTML table coloured like the course's heatmaps
(viridis), so that the widget answers at once (a matplotlib redraw takes longer).
"""
from __future__ import annotations

import html

import ipywidgets as widgets
from IPython.display import HTML, display
from matplotlib import colormaps
from matplotlib.colors import to_hex

from helpers.luong import lineup_data

PROJECTIONS = ("reuse h_j as key and value", "learned W_q, W_k, W_v")
SEQUENCES = ("two: decoder asks the encoder", "one: the sequence asks itself")


def weights_html(W, rows, cols, title: str = "") -> str:
    """A (T_q, T_k) weight matrix as an HTML table: row and column labels, values in coloured cells."""
    cmap = colormaps["viridis"]
    head = "".join(f"<th style='padding:4px 10px'>{html.escape(c)}</th>" for c in cols)
    body = []
    for label, row in zip(rows, W):
        cells = []
        for w in row:
            colour = to_hex(cmap(float(w)))
            text = "black" if w > 0.55 else "white"
            cells.append(f"<td style='background:{colour};color:{text};padding:6px 14px;text-align:center'>"
                         f"{w:.2f}</td>")
        body.append(f"<tr><th style='padding:4px 10px;text-align:right'>{html.escape(label)}</th>{''.join(cells)}</tr>")
    caption = f"<caption style='caption-side:top;font-weight:bold'>{html.escape(title)}</caption>" if title else ""
    return (f"<table style='border-collapse:collapse;font-size:1.05em'>{caption}<tr><th></th>{head}</tr>"
            f"{''.join(body)}</table>")


def lineup_explorer() -> widgets.interactive:
    """Toggle the two differences; see the mechanism's name, shapes, parameter count and weights W."""

    def show(projections=PROJECTIONS[0], sequences=SEQUENCES[0]):
        data = lineup_data(projections == PROJECTIONS[1], sequences == SEQUENCES[1])
        shapes = "   ".join(f"{k} {v}" for k, v in data["shapes"].items())
        print(f"{data['name']}\n{shapes}\nparameters: {data['parameters']}   K equals V: {data['K_equals_V']}")
        rows_by_cols = f"{data['shapes']['W'][0]} × {data['shapes']['W'][1]}"
        display(HTML(weights_html(data["W"], data["rows"], data["cols"],
                                  f"W ({rows_by_cols}): rows are queries, columns are keys")))
        return data

    projections = widgets.ToggleButtons(options=list(PROJECTIONS), description="difference 1")
    sequences = widgets.ToggleButtons(options=list(SEQUENCES), description="difference 2")
    for toggle in (projections, sequences):
        toggle.style.button_width = "230px"
    return widgets.interactive(show, projections=projections, sequences=sequences)
