"""What every widget shares: presenter sizes, the HTML heatmap, a fast figure, a first state at once.

    px(15)                    a CSS font size in pixels, grown in presenter mode
    reading_style()           CSS for the text under a widget's picture
    html_heatmap(M, rows, cols)  a matrix as an HTML table coloured like the course's heatmaps (viridis_css)
    FastFigure(figsize)       a matplotlib figure that re-renders to PNG fast (blitting)
    picture(figure)           the Image a FastFigure is shown in: 1:1 pixels, never wider than the cell
    offered(control, value, name)  a control set to a value it offers, or a ValueError that says what it offers
    LiveWidget(controls, outputs)  a VBox that recomputes and redraws whenever one of its controls moves"""
import base64
import html
import io
import numbers
import time

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from helpers.plotting import is_presenter_mode

#: How much larger widget pictures and text are in presenter mode.
PRESENTER_SCALE = 1.4
#: Font sizes (points) in widget pictures, fixed: in presenter mode FastFigure grows the whole picture (higher dpi).
TEXT, SMALL = 13, 12
#: Red for what went wrong: JupyterLab's, which keeps 5:1 in its light and dark themes; elsewhere the course's own.
ALARM = "var(--jp-error-color1,#b3261e)"
_VIRIDIS = matplotlib.colormaps["viridis"]


def px(size: float) -> int:
    """A size in pixels (a CSS font size, a figure's dots per inch), grown in presenter mode."""
    return round(size * (PRESENTER_SCALE if is_presenter_mode() else 1))


def reading_style() -> str:
    """CSS for the text under a picture: readable from the back of a room, larger when presenting."""
    return f"font-size:{px(15)}px;line-height:1.5"


def viridis_css(t: float) -> str:
    """The course's heatmap colour for t in [0, 1], as CSS: 'rgb(68,1,84)' at 0."""
    return "rgb({:.0f},{:.0f},{:.0f})".format(*(255 * np.array(_VIRIDIS(t)[:3])))


def html_heatmap(M, row_labels, col_labels, *, title: str = "", fmt: str = "{:.2f}",
                 vmin: float | None = None, vmax: float | None = None) -> str:
    """A matrix as an HTML table coloured with viridis; vmin, vmax default to M's min and max."""
    M = np.asarray(M, dtype=float)
    lo, hi = (M.min() if vmin is None else vmin), (M.max() if vmax is None else vmax)
    span = (hi - lo) or 1.0
    cell = f"padding:6px 9px;text-align:center;font-family:monospace;font-size:{px(15)}px;"
    head = f"padding:4px 8px;font-size:{px(15)}px;color:inherit;"   # the theme's text colour, light or dark
    rows = [f"<tr><th style='{head}'></th>"
            + "".join(f"<th style='{head}'>{html.escape(str(c))}</th>" for c in col_labels) + "</tr>"]
    for label, values in zip(row_labels, M):
        tds = [f"<td style='{cell}background:{viridis_css((v - lo) / span)};"
               f"color:{'white' if (v - lo) / span < 0.43 else 'black'}'>{fmt.format(v)}</td>" for v in values]
        rows.append(f"<tr><th style='{head}text-align:right'>{html.escape(str(label))}</th>{''.join(tds)}</tr>")
    caption = (f"<div style='font-weight:bold;margin-bottom:4px;font-size:{px(16)}px'>{html.escape(title)}</div>"
               if title else "")
    table = f"<table style='border-collapse:collapse'>{''.join(rows)}</table>"
    return f"<div style='margin-right:18px'>{caption}{table}</div>"


class FastFigure:
    """A figure outside pyplot that re-renders to PNG fast by blitting: draw on `fig`,
    name what changes with `set_dynamic(artists)`, render with `png()` (`png(key)`: one background per key)."""
    def __init__(self, figsize: tuple[float, float], dpi: int = 80):
        self.fig = Figure(figsize=figsize, dpi=px(dpi))   # presenting: the whole picture, text included, grows
        self.canvas = FigureCanvasAgg(self.fig)
        self.dynamic, self._backgrounds = [], {}   # the artists redrawn on update, the picture behind them

    def set_dynamic(self, artists) -> None:
        """Mark the artists that change between updates (and redraw the background next time)."""
        self.dynamic = list(artists)
        for artist in self.dynamic:
            artist.set_animated(True)
        self._backgrounds = {}

    def png(self, key=None) -> bytes:
        if key not in self._backgrounds:
            self.canvas.draw()                                   # everything not animated
            self._backgrounds[key] = self.canvas.copy_from_bbox(self.fig.bbox)
        else:
            self.canvas.restore_region(self._backgrounds[key])
        for artist in self.dynamic:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        image = Image.frombuffer("RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        image.save(buffer := io.BytesIO(), format="PNG", compress_level=1)
        return buffer.getvalue()


def fit_width(widget) -> None:
    """Let every Image inside `widget` shrink to the cell's width (aspect kept) and every HBox wrap its row."""
    if isinstance(widget, widgets.Image):
        widget.layout.max_width = "100%"
        if is_presenter_mode() or not widget.layout.height:
            widget.layout.height = "auto"             # the height follows the width: no stretching
        widget.layout.object_fit = "contain"          # a fixed height kept: shrinks without stretching
    elif isinstance(widget, widgets.Box):
        if isinstance(widget, widgets.HBox) and not widget.layout.flex_flow:
            widget.layout.flex_flow = "row wrap"
        for child in widget.children:
            fit_width(child)


def offered(control, value, name: str):
    """`control` set to `value`, or a ValueError naming what it offers: a menu would raise a TraitError that does not
    say, a slider would move to its end without a word."""
    options = [o[1] if isinstance(o, tuple) else o for o in getattr(control, "options", ())]
    low, high = (control.base ** control.min, control.base ** control.max) if hasattr(control, "base") else (
        getattr(control, "min", None), getattr(control, "max", None))
    whole = isinstance(control.value, int)   # an IntSlider's: 2.5 would silently become 2
    if not (value in options if options else isinstance(value, numbers.Integral if whole else numbers.Real)
            and not isinstance(value, bool) and low <= value <= high):   # True is an int to Python, not here
        kind = "whole number" if whole else "number"
        span = f"one of {', '.join(map(repr, options))}" if options else f"a {kind} from {low:g} to {high:g}"
        raise ValueError(f"{name} should be {span}, but got {value!r:.60}.")
    control.value = value
    return control


def picture(figure: FastFigure) -> widgets.Image:
    """An Image for `figure`: its own pixel width (larger when presenting), at most the cell's width."""
    return widgets.Image(format="png", layout=widgets.Layout(width=f"{figure.canvas.get_width_height()[0]}px"))


class LiveWidget(widgets.VBox):
    """Controls above outputs; moving a control runs `compute()` -> data, then `show(data)`. Pictures never grow wider
    than the cell (fit_width). Under them, `reading` (HTML): what `show` writes, or compute()'s TypeError or ValueError
    (a typed input it cannot read), the outputs hidden then. `.result`: the latest data, None after such an error;
    `.last_update_ms`: the last update's time (for tests)."""
    def __init__(self, controls: list, outputs: list):
        self.result, self.last_update_ms, self.outputs, self.reading = None, float("nan"), outputs, widgets.HTML()
        super().__init__([*controls, *outputs, self.reading])
        for output in outputs:
            fit_width(output)
        for control in controls:
            control.observe(self._update, names="value")
        self._update()

    def _update(self, _change=None) -> None:
        start, failure = time.perf_counter(), None
        try:
            data = self.compute()
        except (TypeError, ValueError) as error:
            failure = error
        for output in self.outputs:   # taken out beside the error: no picture of the last input, the error up top
            output.layout.display = "none" if failure else None
        if failure is not None:
            self.result, self.reading.value = None, (f"<div style='{reading_style()}'><b style='color:{ALARM}'>"
                                                     f"{html.escape(str(failure))}</b></div>")
            return
        self.show(data)
        self.result, self.last_update_ms = data, 1000 * (time.perf_counter() - start)

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """The live widget; for viewers that cannot run it, its picture (else its reading or error) as last drawn."""
        shown = [w for box in self.outputs for w in (box, *getattr(box, "children", ())) if self.result is not None]
        png = next((w.value for w in shown if isinstance(w, widgets.Image) and w.value), None)   # in a row, too
        still = {"image/png": base64.b64encode(png).decode()} if png else {"text/html": self.reading.value}
        return getattr(super(), "_repr_mimebundle_", lambda **_: {})(**kwargs) | still   # ipywidgets 7: not called
