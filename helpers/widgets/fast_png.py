"""A matplotlib figure that re-renders to PNG fast, for widgets that must answer at once.

The figure lives outside pyplot (it is never shown by itself). Its static parts
(axes, ticks, labels, legend) are drawn once and kept as a background; each
update restores that background and draws only the artists marked dynamic
(the classic blitting technique), then encodes a PNG with light compression.
"""
from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from helpers.plotting import is_presenter_mode

#: How much larger widget pictures are drawn in presenter mode.
PRESENTER_SCALE = 1.4


class FastFigure:
    """`fig` to draw on; `set_dynamic(artists)` names what changes; `png()` renders."""

    def __init__(self, figsize: tuple[float, float], dpi: int = 80):
        if is_presenter_mode():  # the whole picture, text included, grows for a projector
            dpi = round(dpi * PRESENTER_SCALE)
        self.fig = Figure(figsize=figsize, dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self.dynamic: list = []
        self._background = None

    def set_dynamic(self, artists) -> None:
        """Mark the artists that change between updates (and redraw the background next time)."""
        self.dynamic = list(artists)
        for artist in self.dynamic:
            artist.set_animated(True)
        self._background = None

    def png(self) -> bytes:
        if self._background is None:
            self.canvas.draw()                                   # everything not animated
            self._background = self.canvas.copy_from_bbox(self.fig.bbox)
        else:
            self.canvas.restore_region(self._background)
        for artist in self.dynamic:
            if artist.get_visible():
                self.fig.draw_artist(artist)
        width, height = self.canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()
