"""Pictures, tables and 2-D geometry for parameter-free attention (notebook 03).

    labelled_table(M, rows, cols)  a matrix as aligned text with token names, for printing
    convex_hull(P)                 (n, 2) points -> (h, 2) hull corners, counter-clockwise
    inside_hull(points, hull)      (m, 2), (h, 2) -> (m,) bool: inside or on the edge
    gravity_plot(E, Y, labels)     static points, the hull they span, arrows to where attention moves them
    timing_plot(results)           seconds against T on log-log axes, one line per method

Vectors with d > 2 are drawn in a linear 2-D view `basis` (d, 2), which keeps weighted averages inside the hull."""
import matplotlib.pyplot as plt
import numpy as np

from helpers.plotting import COLORS, PALETTE, projection_basis


def labelled_table(M, row_labels, col_labels, *, fmt: str = "{:.4f}") -> str:
    """A (rows, cols) matrix as aligned text with a header of column names and a name per row."""
    strings = isinstance(row_labels, str) or isinstance(col_labels, str)
    row_labels, col_labels = list(row_labels), list(col_labels)   # a string: one label per character
    if np.shape(M) != (len(row_labels), len(col_labels)):
        raise ValueError(f"M has shape {np.shape(M)}, but {len(row_labels)} row and {len(col_labels)} column labels "
                         "came" + (" (a string counts its characters: give a list of words)" if strings else "") + ".")
    cells = [[fmt.format(v) if "{" in fmt else format(v, fmt) for v in row] for row in M]   # "{:.2f}" or ".2f"
    width = max(max(len(c) for row in cells for c in row), max(len(str(c)) for c in col_labels))
    first = max(len(str(r)) for r in row_labels)
    lines = [" " * first + "".join(f"  {str(c):>{width}}" for c in col_labels)]
    lines += [f"{str(r):<{first}}" + "".join(f"  {c:>{width}}" for c in row) for r, row in zip(row_labels, cells)]
    return "\n".join(lines)


def convex_hull(P) -> np.ndarray:
    """Corners of the convex hull of 2-D points, counter-clockwise (Andrew's monotone chain; collinear dropped)."""
    points = sorted({(round(float(x), 12), round(float(y), 12)) for x, y in P})
    if len(points) <= 2:
        return np.array(points)
    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    def half(ordered):  # the lower hull for points left to right, the upper for right to left
        chain = []
        for p in ordered:
            while len(chain) >= 2 and cross(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        return chain[:-1]
    return np.array(half(points) + half(reversed(points)))


def inside_hull(points, hull, tol: float = 1e-9) -> np.ndarray:
    """Whether each 2-D point lies inside or on a convex polygon (>= 3 corners, either orientation)."""
    points, hull = np.asarray(points, dtype=float), np.asarray(hull, dtype=float)
    a, b = hull, np.roll(hull, -1, axis=0)                       # (h, 2) each edge a -> b
    edge, to_point = b - a, points[:, None, :] - a[None, :, :]   # (h, 2), (m, h, 2)
    cross = edge[None, :, 0] * to_point[..., 1] - edge[None, :, 1] * to_point[..., 0]   # (m, h)
    if (a[:, 0] * b[:, 1] - b[:, 0] * a[:, 1]).sum() < 0:        # twice the signed area: < 0 when clockwise
        cross = -cross                                           # inside is then to the right of every edge
    return (cross >= -tol).all(axis=1)


def gravity_plot(E, Y, labels, *, basis=None, ax=None, title: str = "", color=None, hull: bool = True,
                 start_label: str | None = "static e", end_label: str | None = "contextual y", end_marker: str = "D"):
    """Static points e_i, their hull, an arrow e_i -> y_i each; call twice on one Axes (other color, end_marker)."""
    E, Y = np.asarray(E, dtype=float), np.asarray(Y, dtype=float)
    if not len(E) == len(Y) == len(labels := list(labels)):
        raise ValueError(f"E, Y and labels should have one row per token, but have {len(E)}, {len(Y)}, {len(labels)}.")
    basis = projection_basis(np.vstack([E, Y])) if basis is None else basis
    Pe, Py = E @ basis, Y @ basis                  # (T, 2) each
    ax, end_color = (plt.subplots(figsize=(6.5, 6))[1] if ax is None else ax), color or COLORS["contextual"]
    corners = convex_hull(Pe)
    if hull and len(corners) >= 3:
        ax.fill(corners[:, 0], corners[:, 1], color=end_color, alpha=0.12, lw=0)
        ax.plot(*np.vstack([corners, corners[:1]]).T, color=end_color, lw=1.5, ls="--")   # outline, closed
    for (x0, y0), (x1, y1) in zip(Pe, Py):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="-|>", color=end_color, lw=2, shrinkA=4, shrinkB=4))
    ax.scatter(Pe[:, 0], Pe[:, 1], s=80, color=COLORS["static"], zorder=3, label=start_label or "_nolegend_")
    ax.scatter(Py[:, 0], Py[:, 1], s=80, color=end_color, marker=end_marker, zorder=3, label=end_label or "_nolegend_")
    for (x, y), up, word in zip(Pe, Pe[:, 1] >= Pe[:, 1].mean(), labels):   # above or below: away from the arrows
        if not any(t.get_text() == word and np.allclose(t.xy, (x, y)) for t in ax.texts if hasattr(t, "xy")):   # once
            ax.annotate(word, (x, y), xytext=(6, 6 if up else -6), textcoords="offset points", color=COLORS["static"],
                        va="bottom" if up else "top")
    ax.margins(x=0.1, y=0.14)   # room for the word labels (right of each point, above or below it) below the title
    ax.set(aspect="equal", xlabel="view axis 1", ylabel="view axis 2", title=title)
    return ax


def timing_plot(results: dict, *, ax=None, title: str = ""):
    """Seconds against T on log-log axes: results = {method name: (Ts, seconds)}. Returns the Axes."""
    ax = plt.subplots(figsize=(7.5, 4.8))[1] if ax is None else ax
    for k, (name, (Ts, secs)) in enumerate(results.items()):
        ax.loglog(Ts, 1e3 * np.asarray(secs), marker="os^Dv"[k % 5], color=PALETTE[k % len(PALETTE)], lw=2, label=name)
    ax.set(xlabel="sentence length T (tokens)", ylabel="time per call (ms)", title=title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax
