"""Notebook 11's widget: key tiles arrive one by one; one query's m, ℓ and output row converge to the exact answer.

A thin shell over helpers.fast_attention.running_softmax_trace and tile_map. Left, the map of tiles (computed
whole, on the diagonal, skipped under causal; this query's row, done so far); right, m and ℓ, then the output row
beside its exact value (dashed). FastFigure blitting: the axes are drawn once, with limits that fit every query."""
import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Rectangle

from helpers.fast_attention import running_softmax_trace, tile_map
from helpers.plotting import COLORS, INK
from helpers.validation import count
from helpers.widgets.common import SMALL, TEXT, FastFigure, LiveWidget, offered, reading_style

#: Tile colours: skipped, computed (another query's row), on the diagonal, this row to come, this row done.
_TILES = ListedColormap(["#f2f2f2", "#c9d6ea", "#f3d9bf", "#56b4e9", COLORS["static"]])
_ENTRIES = list(zip([COLORS["static"], COLORS["contextual"], COLORS["query"], COLORS["value"]], "os^D"))   # + marker


def demo_inputs(T: int = 32, d: int = 4, seed: int = 0):
    """The widget's sequence: Q, K, V, each (T, d) float64, seeded; keys scaled by 2 so that the scores spread."""
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(T, d, generator=g, dtype=torch.float64) for _ in range(3))
    return Q, 2 * K, V


def flash_widget_data(Q, K, V, query: int, tiles_done: int, causal: bool, block: int) -> dict:
    """One query's running softmax after `tiles_done` key tiles, and the map of tiles: plain data for the widget."""
    T_q, T_k = Q.shape[0], K.shape[0]
    visible = query + 1 + T_k - T_q if causal else T_k               # bottom-right, like causal_mask
    trace = running_softmax_trace(Q[query], K, V, block, visible)
    tiles = tile_map(T_q, T_k, block, block, causal).numpy()
    return {**{k: v.numpy() for k, v in trace.items()}, "tiles": tiles, "query": query, "block": block,
            "tiles_done": tiles_done, "computed": int(np.count_nonzero(tiles[query // block])), "visible": visible,
            "gap": float((trace["y"][tiles_done] - trace["exact"]).abs().max()) if tiles_done else float("nan")}


class _Picture:
    def __init__(self, limits: dict, n_tiles: int, d_v: int):
        self.figure = FastFigure(figsize=(7.4, 4.1), dpi=80)   # 592 px: full size beside JupyterLab's file browser
        fig = self.figure.fig
        grid = fig.add_gridspec(2, 2, width_ratios=[1, 1.2], left=0.07, right=0.88, top=0.9, bottom=0.12,
                                wspace=0.32, hspace=0.55)
        self.ax_map, self.ax_ml, self.ax_y = (fig.add_subplot(grid[i]) for i in (np.s_[:, 0], np.s_[0, 1], np.s_[1, 1]))
        self.ax_l, ax = self.ax_ml.twinx(), self.ax_map
        self.image = ax.imshow(np.zeros((n_tiles, n_tiles)), cmap=_TILES, vmin=-0.5, vmax=4.5, interpolation="nearest")
        edges, span = np.arange(0.5, n_tiles - 1), (-0.5, n_tiles - 0.5)   # white lines between tiles, drawn over them
        self.grid = [ax.hlines(edges, *span, color="white"), ax.vlines(edges, *span, color="white")]
        ax.set(xticks=range(n_tiles), yticks=range(n_tiles))
        ax.tick_params(labelsize=SMALL)   # fixed, like every size here: presenter mode grows the whole picture
        ax.set_xlabel("key tile", fontsize=SMALL), ax.set_ylabel("query tile", fontsize=SMALL)
        self.frame = ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, lw=2.5, ec="black"))
        self.skipped = ax.scatter([], [], s=40, marker="x", color="#777777")   # not by its pale colour alone
        for axis, key, label, color in ((self.ax_ml, "m", "m", INK["key"]), (self.ax_y, "y", "o / ℓ", "black"),
                                        (self.ax_l, "l", "ℓ", INK["contextual"])):   # ℓ shares m's x axis
            axis.set(xlim=(-0.3, n_tiles + 0.3), xticks=np.arange(n_tiles + 1), ylim=limits[key])
            axis.tick_params(labelsize=SMALL), axis.spines["right"].set(visible=axis is self.ax_l, ec=color)
            axis.set_ylabel(label, fontsize=SMALL, color=color, labelpad=6)
        self.ax_l.tick_params(colors=INK["contextual"])
        self.ax_y.set_xlabel("key tiles processed", fontsize=SMALL)
        (self.m_line,) = self.ax_ml.plot([], [], "o-", color=COLORS["key"], lw=2, ms=7)
        (self.l_line,) = self.ax_l.plot([], [], "s--", color=COLORS["contextual"], lw=2, ms=7)
        self.y_lines = [self.ax_y.plot([], [], "-", marker=k, color=c, lw=2, ms=6)[0] for c, k in _ENTRIES[:d_v]]
        self.exact = [self.ax_y.plot([0, n_tiles], [0, 0], "--", c=c, lw=1.5, marker=k, markevery=[1])[0]
                      for c, k in _ENTRIES[:d_v]]   # each exact value dashed, marked at the end like its entry
        self.cursors = [axis.axvline(0, color="#444444", lw=1, ls=":") for axis in (self.ax_ml, self.ax_y)]
        self.ax_map.set_title("tiles: this query's row, done dark", fontsize=TEXT)
        self.ax_ml.set_title("m (left) and ℓ (right)", fontsize=TEXT)
        self.ax_y.set_title("output row, exact dashed", fontsize=TEXT)
        self.figure.set_dynamic([self.image, *self.grid, self.frame, self.skipped, self.m_line, self.l_line,
                                 *self.y_lines, *self.exact, *self.cursors])

    def png(self, data: dict) -> bytes:
        done, row = data["tiles_done"], data["query"] // data["block"]
        shade = np.where(data["tiles"] == 0, 0, np.where(data["tiles"] == 1, 2, 1))   # skipped, diagonal, whole
        shade[row] = np.where(data["tiles"][row] == 0, 0, np.where(np.arange(shade.shape[1]) < done, 4, 3))
        self.image.set_data(shade)
        self.skipped.set_offsets(np.argwhere(shade == 0)[:, ::-1])
        self.frame.set_xy((min(done, data["computed"]) - 1.5, row - 0.5) if done else (-10, -10))   # not a skipped one
        steps = np.arange(done + 1)
        self.m_line.set_data(steps[1:], data["m"][1:done + 1])
        self.l_line.set_data(steps, data["l"][:done + 1])
        for line, exact, column, value in zip(self.y_lines, self.exact, data["y"].T, data["exact"]):
            line.set_data(steps[1:], column[1:done + 1])
            exact.set_ydata([value, value])
        for cursor in self.cursors:
            cursor.set_xdata([done, done])
        return self.figure.png()


class FlashTilesWidget(LiveWidget):
    """[0] key tiles processed, [1] the query, [2] causal or not, [3] the picture, [4] the numbers.
    `.result`: the latest flash_widget_data dict."""
    def __init__(self, tiles_done: int = 2, query: int = 21, causal: bool = False, T: int = 32, block: int = 4):
        self.Q, self.K, self.V = demo_inputs(T)
        self.block, n_tiles = count(block, "block (keys per tile)"), -(-T // block)
        self.tiles_done = offered(widgets.IntSlider(min=0, max=n_tiles, description="key tiles done", style={
            "description_width": "initial"}), tiles_done, "tiles_done")
        self.query = offered(widgets.IntSlider(min=0, max=T - 1, description="query"), query, "query")
        self.causal = offered(widgets.ToggleButtons(options=[("all keys", False), ("causal", True)],
                                                    description="mask"), causal, "causal")
        traces = [flash_widget_data(self.Q, self.K, self.V, i, n_tiles, c, block) for i in range(T) for c in (0, 1)]
        limits = {}   # each curve's range over every query, causal or not, padded; ℓ from 0
        for key, values in ((k, np.concatenate([t[k][1:].ravel() for t in traces])) for k in ("m", "l", "y")):
            pad = 0.08 * (float(values.max() - values.min()) or 1.0)
            limits[key] = (0 if key == "l" else float(values.min()) - pad, float(values.max()) + pad)
        self.picture, self._picture = widgets.Image(format="png"), _Picture(limits, n_tiles, self.V.shape[1])
        super().__init__([self.tiles_done, self.query, self.causal], [self.picture])

    def compute(self) -> dict:
        return flash_widget_data(self.Q, self.K, self.V, self.query.value, self.tiles_done.value, self.causal.value,
                                 self.block)

    def show(self, data: dict) -> None:
        self.picture.value = self._picture.png(data)
        done, n_tiles, block = data["tiles_done"], data["tiles"].shape[1], data["block"]
        row = ", ".join(f"{v:+.3f}" for v in data["y"][done]) if done else "0 / 0: nothing seen yet"
        exact, skipped = ", ".join(f"{v:+.3f}" for v in data["exact"]), n_tiles - data["computed"]
        note = (f" Under causal this query sees key{'s 0 …' * (data['visible'] > 1)} {data['visible'] - 1}: it skips "
                f"{skipped} of its {n_tiles} tiles, all in the future, so the answer is final after {data['computed']}."
                if skipped else "")
        gap = f"largest gap {data['gap']:.3f}" if done else "no gap to measure yet"
        self.reading.value = (
            f"<div style='{reading_style()}'>Query {data['query']} (tile row {data['query'] // block}), after "
            f"<b>{done} of {n_tiles}</b> key tiles ({block} keys each): m = <b>{data['m'][done]:.3f}</b>, ℓ = "
            f"<b>{data['l'][done]:.3f}</b>. Output row o / ℓ = [{row}]; exact [{exact}]: {gap}.{note} When m grows, ℓ "
            "and o are first multiplied by exp(m_old − m_new). Map: light blue, computed whole" + "; orange, on the "
            "diagonal (masked inside); ×, skipped" * self.causal.value + "; mid blue, this query's tiles to come; "
            "dark, its tiles so far; the frame, the latest computed.</div>")
