"""One look for every figure in the course: labelled heatmaps and vector arrows.

    use_course_style()          large, readable defaults (call once per notebook)
    presenter_mode(True)        bigger still, for a projector
    heatmap(M, rows, cols)      a matrix with its values written in the cells
    heatmaps([...])             several side by side (one colour scale for all: shared_scale=True)
    projection_basis(X)         a fixed 2-D view of d-dimensional vectors
    arrows(X, labels)           vectors drawn as arrows from the origin"""
import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.font_manager import FontProperties

from helpers import validation as check

#: One colour per role, used by every figure: Okabe and Ito's, told apart by the red-green colour-blind too.
COLORS = {"static": "#0072b2", "contextual": "#e69f00", "query": "#009e73", "key": "#d55e00", "value": "#cc79a7",
          "accent": "#555555"}
#: The same colours 35 % darker, for text: 4.9:1 or more on white (the orange itself is 2.2:1).
INK = {r: plt.matplotlib.colors.to_hex(0.65 * np.array(plt.matplotlib.colors.to_rgb(c))) for r, c in COLORS.items()}
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#882255", "#8c8c8c")
_BASE = {"figure.figsize": (7.0, 4.5), "figure.dpi": 90, "savefig.dpi": 90, "font.size": 13, "axes.titlesize": 14,
         "axes.labelsize": 13, "xtick.labelsize": 12, "ytick.labelsize": 12, "legend.fontsize": 12,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": False, "image.cmap": "viridis",
         "axes.prop_cycle": plt.cycler(color=PALETTE)}   # a line without a colour of its own: the course's too
_PRESENTER = {"figure.figsize": (9.0, 5.8), "font.size": 17, "axes.titlesize": 19, "axes.labelsize": 17,
              "xtick.labelsize": 16, "ytick.labelsize": 16, "legend.fontsize": 16, "lines.linewidth": 2.5}
_state = {"presenter": False}
#: Inches: at 90 dpi about 800 px, the width of a notebook cell on a 1024-px projector (sidebar hidden).
MAX_FIGURE_WIDTH = 8.8


def use_course_style(presenter: bool | None = None) -> None:
    """Apply the course's matplotlib defaults, and the presenter sizes if on (presenter=None keeps the setting)."""
    if presenter is not None:
        _state["presenter"] = check.flag(presenter, "presenter")
    plt.rcParams.update(_BASE | _PRESENTER if _state["presenter"] else _BASE)


def presenter_mode(on: bool = True) -> None:
    """Switch larger figures and fonts on or off for presenting live (widget pictures still fit their cell)."""
    use_course_style(presenter=on)


def is_presenter_mode() -> bool:
    """Whether presenter sizes are in force."""
    return _state["presenter"]


def heatmap(M, row_labels=None, col_labels=None, *, title: str = "", ax=None,
            fmt: str = "{:.2f}", vmin=None, vmax=None, xlabel: str = "", ylabel: str = ""):
    """Draw a (rows, cols) matrix as a heatmap with each value written in its cell; returns the Axes.
    vmin, vmax: the colour scale's ends (None: the matrix's own min and max)."""
    M = check.matrix(M, "M", "(rows, cols): one matrix (W[0] of a batch; M[None] for a row)", finite=False)
    rows, cols = M.shape
    row_labels = range(rows) if row_labels is None else list(row_labels)
    col_labels = range(cols) if col_labels is None else list(col_labels)
    if (len(row_labels), len(col_labels)) != (rows, cols):
        raise ValueError(f"M has shape {M.shape}, but {len(row_labels)} row and {len(col_labels)} column labels came.")
    vmin, vmax = (M.min() if vmin is None else vmin), (M.max() if vmax is None else vmax)
    ax = plt.subplots(figsize=(1.1 * cols + 2.2, 0.8 * rows + 1.4))[1] if ax is None else ax
    ax.imshow(M, cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto")
    ax.set(xticks=range(cols), xticklabels=col_labels, yticks=range(rows), yticklabels=row_labels)
    room = ax.get_position().width * ax.figure.get_figwidth() * 72 / cols            # points per column
    longest = max(len(line) for label in col_labels for line in str(label).split("\n"))   # characters
    size = FontProperties(size=plt.rcParams["xtick.labelsize"]).get_size_in_points()
    ax.tick_params(length=0)
    ax.tick_params(axis="x", labelrotation=90 * (0.6 * size * longest > room), labelsize=min(size, room))
    ax.tick_params(axis="y", labelsize=min(size, ax.get_position().height * ax.figure.get_figheight() * 72 / rows))
    ax.spines[:].set_visible(False)
    if rows * cols <= 144:
        span = (vmax - vmin) or 1.0
        for (i, j), value in np.ndenumerate(M):
            ax.text(j, i, fmt.format(value) if "{" in fmt else format(value, fmt), ha="center", va="center",
                    color="white" if (value - vmin) / span < 0.43 else "black", fontsize=plt.rcParams["font.size"] - 1)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return ax


def heatmaps(matrices: Sequence, titles: Sequence[str], row_labels=None, col_labels=None, *,
             suptitle: str = "", shared_scale: bool = False, fmt="{:.2f}", xlabel: str = "", ylabel: str = ""):
    """Several heatmaps side by side, one title (or None) and fmt (or one for all) each, labels shared: (fig, axes)."""
    arrays = [check.matrix(M, f"matrices[{i}]", "(rows, cols)", finite=False) for i, M in enumerate(matrices)]
    titles = [titles] * len(arrays) if isinstance(titles, str) and len(arrays) == 1 else titles   # one title, one panel
    if isinstance(titles, str) or titles is not None and len(titles) != len(arrays) or (  # a panel without a title
            not isinstance(fmt, str) and len(fmt) != len(arrays)):                     # would stay blank
        raise ValueError(f"one panel per matrix: give {len(arrays)} titles (or titles=None) and {len(arrays)} fmts (or "
                         f"one for all), but got titles {titles!r:.60} and fmt {fmt!r:.40}.")
    vmin, vmax = (min(a.min() for a in arrays), max(a.max() for a in arrays)) if shared_scale else (None, None)
    width, height = sum(1.0 * a.shape[1] + 1.6 for a in arrays), max(0.75 * a.shape[0] + 1.6 for a in arrays)
    shrink = min(1.0, MAX_FIGURE_WIDTH / width)
    fig, axes = plt.subplots(1, len(arrays), figsize=(width * shrink, height * max(shrink, 0.8)), squeeze=False)
    points = FontProperties(size=plt.rcParams["axes.titlesize"]).get_size_in_points()
    chars = int((width * shrink / len(arrays) - 0.8) * 72 / (0.6 * points))   # what fits above one panel
    fmts = [fmt] * len(arrays) if isinstance(fmt, str) else fmt
    for ax, M, title, f in zip(axes[0], arrays, [""] * len(arrays) if titles is None else titles, fmts):   # wrapped
        heatmap(M, row_labels, col_labels, ax=ax, fmt=f, vmin=vmin, vmax=vmax, xlabel=xlabel, ylabel=ylabel,
                title="\n".join(textwrap.fill(line, chars) for line in (title or "").split("\n")))
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig, axes[0]


def projection_basis(X) -> np.ndarray:
    """A fixed 2-D view of (n, d) vectors: the basis (d, 2) of X's top two right singular vectors.
    Not centred, so the origin stays put; signs are fixed; for d = 2 it is the identity."""
    X = np.asarray(X, dtype=float)
    d = X.shape[1]
    if d == 2:
        return np.eye(2)
    basis = np.linalg.svd(X, full_matrices=False)[2][:2].T.copy()   # (d, 2): the top two right singular vectors
    if basis.shape[1] < 2:  # a single vector: complete the plane with any orthogonal direction
        basis = np.hstack([basis, np.linalg.svd(np.eye(d) - np.outer(basis[:, 0], basis[:, 0]))[0][:, :1]])
    return basis * np.sign(basis[np.abs(basis).argmax(axis=0), [0, 1]])   # each column's largest entry positive


def arrows(X, labels: Sequence[str], *, ax=None, basis=None, title: str = ""):
    """Draw each row of X (n, d) as a labelled arrow from the origin, projected with `basis` (d, 2)."""
    X = np.asarray(X, dtype=float)
    P = X @ (projection_basis(X) if basis is None else basis)   # (n, 2)
    ax = plt.subplots(figsize=(6, 6))[1] if ax is None else ax
    for (x, y), text, c in zip(P, labels, PALETTE * len(P)):
        ax.annotate("", xy=(x, y), xytext=(0, 0),
                    arrowprops=dict(arrowstyle="-|>", color=c, lw=2.2, shrinkA=0, shrinkB=0))
        ax.text(x + 0.04, y + 0.04, text, color=0.65 * np.array(plt.matplotlib.colors.to_rgb(c)))   # darker, as INK
    ax.axhline(0, color="#cccccc", lw=0.8, zorder=0)
    ax.axvline(0, color="#cccccc", lw=0.8, zorder=0)
    lo, hi = P.min(axis=0, initial=0.0), P.max(axis=0, initial=0.0)   # the origin in view too
    pad = 0.15 * max((hi - lo).max(), 1e-9)
    ax.set(aspect="equal", title=title, xlim=(lo[0] - pad, hi[0] + pad), ylim=(lo[1] - pad, hi[1] + pad))
    return ax


def function_box(inputs: Sequence[str], outputs: Sequence[str], *, label: str = "?",
                 input_note: str = "", output_note: str = "", title: str = ""):
    """Draw the goal as a box: one arrow in per input token, one arrow out per output. Returns the Axes."""
    n = len(inputs)
    fig, ax = plt.subplots(figsize=(MAX_FIGURE_WIDTH, 1.0 + 0.8 * n))
    ys = np.linspace(n - 1, 0, n) * 0.8
    mid, box_h = ys.mean(), max(ys.max() - ys.min(), 0.8) + 0.6
    ax.add_patch(plt.Rectangle((3.6, mid - box_h / 2), 2.8, box_h, facecolor="#f3efe6", edgecolor="#444444", lw=2))
    ax.text(5.0, mid, label, ha="center", va="center", fontsize=plt.rcParams["font.size"] + 2, weight="bold")
    for y, text_in, text_out in zip(ys, inputs, outputs):
        ax.text(1.4, y, text_in, ha="right", va="center", color=INK["static"])
        for start, end, role in ((1.6, 3.6, "static"), (6.4, 8.4, "contextual")):   # the arrow in, the arrow out
            ax.annotate("", xy=(end, y), xytext=(start, y), arrowprops=dict(arrowstyle="-|>", color=COLORS[role], lw=2))
        ax.text(8.6, y, text_out, ha="left", va="center", color=INK["contextual"])
    for x, note, role in ((2.6, input_note, "static"), (7.4, output_note, "contextual")):   # "": nothing shows
        ax.text(x, ys.max() + 0.65, note, ha="center", color=INK[role])
    ax.set(xlim=(-0.6, 10.6), ylim=(ys.min() - 0.7, ys.max() + 1.1), title=title)
    ax.axis("off")
    return ax
