"""The data behind notebook 03's attention playground: one call per update.

    playground_data(sentence, scaled=True) -> dict of everything the widget draws

The widget (helpers.widgets.playground) only wires its controls to this
function and draws what it returns, so everything it shows is tested here."""
import numpy as np

from helpers.attention import self_attention_steps
from helpers.plotting import projection_basis
from helpers.running_example import MAX_WORDS, SENTENCE_MONEY, SENTENCE_RIVER, embed, embedding_table, tokenize

#: Sentences offered in the playground's menu (all built from the course vocabulary).
PLAYGROUND_SENTENCES: tuple[str, ...] = (SENTENCE_MONEY, SENTENCE_RIVER, "river money bank", "bank bank bank",
                                         "money grows flows", "river bank flows money grows")


def playground_basis() -> np.ndarray:
    """One fixed 2-D view (d, 2) of the centred vocabulary: a word starts at the same place in any sentence."""
    table = embedding_table()[1]                          # (V, d)
    return projection_basis(table - table.mean(axis=0))   # (d, 2)


def playground_data(sentence, scaled: bool = True) -> dict:
    """Parameter-free self-attention on a typed sentence (1..MAX_WORDS words), with all the widget draws.
    S is what softmax sees (divided by `divisor`, √d or 1); P_before, P_after are E, Y in playground_basis."""
    words = tokenize(sentence)
    if len(words) > MAX_WORDS:
        raise ValueError(f"The sentence has {len(words)} words; the playground draws (T, T) heatmaps, so keep it to "
                         f"{MAX_WORDS} words or fewer.")
    steps = self_attention_steps(embed(words), scaled=scaled)
    E, W, Y, basis = steps["E"], steps["W"], steps["Y"], playground_basis()
    return {"words": words, "E": E, "S": steps["S_scaled"], "divisor": 1.0 / steps["scale"], "W": W, "Y": Y,
            "top": [" and ".join(dict.fromkeys(words[j] for j in np.flatnonzero(np.isclose(w, w.max())))) for w in W],
            "P_before": E @ basis, "P_after": Y @ basis}
