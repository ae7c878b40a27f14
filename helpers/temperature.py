"""Softmax at a chosen scale: the data behind notebook 02's temperature widget.

    softmax_at_scale(scores, scale) -> dict   weights of softmax(scale · scores), and how peaked they are
    parse_scores("1.0, 1.2, 0.9")   -> array  a typed row of scores, checked
    weights_bars(rows, titles)                 rows of weights as bar charts side by side
    label_y(weight, uniform, gap)              where a bar's value label goes: clear of the dashed line at 1/n

Multiplying scores by a scale λ is the same as dividing by a temperature τ = 1/λ: λ > 1 (cold) hardens the distribution
toward one-hot, λ < 1 (hot) softens it toward uniform. The order of the weights never changes."""
import matplotlib.pyplot as plt
import numpy as np

from helpers import validation as check
from helpers.plotting import COLORS
from helpers.similarity import entropy_bits, softmax, softmax_naive

#: Most scores the widget accepts in one row (one bar each).
MAX_SCORES = 8


def parse_scores(text) -> np.ndarray:
    """Turn typed text such as "1.0, 1.2, 0.9" into a (n,) array of 2..MAX_SCORES finite numbers."""
    values = []
    for part in filter(str.strip, text.split(",") if "," in text else text.split()):   # commas, else spaces
        try:
            values.append(float(part))   # "1 000, 2" and "0,5 1,2" (decimal commas): refused
        except ValueError:
            raise ValueError(f"{part.strip()[:40]!r} is not one number. Type numbers separated by commas, with a point "
                             "for decimals, e.g. 1.0, 1.2, 0.9") from None
    if not 2 <= len(values) <= MAX_SCORES:
        raise ValueError(f"Type between 2 and {MAX_SCORES} scores (softmax compares them); got {len(values)}.")
    return check.vector(values, "scores")


def softmax_at_scale(scores, scale: float = 1.0) -> dict:
    """softmax(scale · scores) and how peaked it is, as a dict: scores, scale, scaled, weights, naive (no max
    subtracted: NaN once exp overflows or every exp underflows), naive_overflows, naive_why (why naive is NaN or off,
    "" if it is neither), top (the tokens with the top weight: ties share it), top_weight, entropy_bits (0 for one-hot,
    log2(n) for uniform) and effective_choices (2 ** entropy_bits). ValueError if scale · scores overflows a float64."""
    scores = check.vector(scores, "scores")                     # one row of scores: (n,)
    with np.errstate(over="ignore", under="ignore"):           # both are explained, never warned about
        scaled = float(scale) * scores                         # (n,)
        if not np.isfinite(scaled).all():
            raise ValueError(f"the scores × scale λ overflow: {np.abs(scores).max():g} × {abs(scale):g} is beyond "
                             "the largest float64 (about 1.8e308). Type smaller scores or lower the scale.")
        weights, e = softmax(scaled), np.exp(scaled)
    overflows = bool(np.isinf(e).any())
    why = (f"exp({scaled.max():.4g}) overflowed to inf (too big for a float64), and inf / inf = NaN" if overflows
           else f"every exp underflowed to 0 (the largest is exp({scaled.max():.4g})), and 0 / 0 = NaN"
           if not e.any() else f"wrong: exp({scaled.min():.4g}) underflowed (below about exp(-708) a float64 loses "
           "digits, below exp(-745) it is 0)" if (np.round(e / e.sum(), 3) != np.round(weights, 3)).any() else "")
    entropy = float(entropy_bits(weights))
    return {"scores": scores, "scale": float(scale), "scaled": scaled, "weights": weights,
            "naive": softmax_naive(scaled), "naive_overflows": overflows, "naive_why": why,
            "top": np.flatnonzero(np.isclose(weights, weights.max(), rtol=1e-12, atol=0)).tolist(),
            "top_weight": float(weights.max()), "entropy_bits": entropy, "effective_choices": float(2.0 ** entropy)}


def label_y(weight: float, uniform: float, gap: float) -> float:
    """Where a bar's value label goes: `gap` above it, or above the dashed line at `uniform` if it would sit on it."""
    return uniform + gap if weight + gap < uniform < weight + gap + 0.1 else weight + gap   # a label is 0.1 tall


def weights_bars(rows, titles, *, suptitle: str = ""):
    """Rows of weights (one row, or a list) as bar charts side by side, a title each, values on the bars, a dashed
    line at 1/n. Returns (fig, axes)."""
    rows, given = [rows] if np.ndim(rows[0]) == 0 else rows, titles   # one row of weights, or a list of rows
    if len(titles := [titles] if isinstance(titles, str) else titles) != len(rows):   # a panel would have no title
        raise ValueError(f"{len(rows)} rows of weights need {len(rows)} titles, but got {len(titles)}: {given!r:.60}.")
    grow = plt.rcParams["font.size"] / 13   # larger fonts (presenter mode) get a larger figure
    fig, axes = plt.subplots(1, len(rows), figsize=(4.2 * grow * len(rows), 3.9 * grow), sharey=True, squeeze=False)
    for ax, w, title in zip(axes[0], rows, titles):
        uniform = 1 / len(w)
        ax.bar(range(len(w)), w, color=COLORS["contextual"], width=0.6)
        for k, v in enumerate(w):
            ax.text(k, label_y(v, uniform, 0.02), f"{v:.3f}", ha="center", va="bottom",
                    fontsize=plt.rcParams["font.size"] - 1)
        line = ax.axhline(uniform, color="#888888", ls="--", lw=1)   # also the legend's sample
        ax.set(xticks=range(len(w)), xticklabels=[f"token {k}" for k in range(len(w))], ylim=(0, 1.12), title=title)
    axes[0][0].set_ylabel("weight")
    n_text = "/".join(str(n) for n in sorted({len(w) for w in rows}))
    fig.legend([line], [f"uniform weight 1/{n_text}: every token the same"], loc="lower center", frameon=False)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig, axes[0]
