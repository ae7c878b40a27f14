"""The data behind notebook 03's attention playground: one call per update.

    playground_data(sentence, scaled=True) -> dict of everything the widget draws

The widget (helpers.widgets.playground) only wires its controls to this
function and draws what it returns, so everything it shows is tested here.
"""
from __future__ import annotations

import numpy as np

from helpers.attention import self_attention_steps
from helpers.plotting import projection_basis
from helpers.running_example import SENTENCE_MONEY, SENTENCE_RIVER, embed, embedding_table, tokenize
from helpers.similarity import cosine_matrix

#: Sentences offered in the playground's menu (all built from the course vocabulary).
PLAYGROUND_SENTENCES: tuple[str, ...] = (
    SENTENCE_MONEY,
    SENTENCE_RIVER,
    "river money bank",
    "bank bank bank",
    "money grows flows",
    "river bank flows money grows",
)

#: Longest sentence the playground accepts: a (T, T) heatmap stays readable.
MAX_WORDS = 10


def playground_basis() -> np.ndarray:
    """One fixed 2-D view (d, 2) of the whole vocabulary, so a word starts at the same
    place whatever the sentence: only where it lands changes.

    It is the plane that best spreads the five words around their mean (projection_basis
    of the centred table). Five points in 4-D cannot all keep their distances in 2-D, so
    some sentences look flatter than they are; the heatmaps hold the exact numbers.
    """
    table = embedding_table()[1]                          # (V, d)
    return projection_basis(table - table.mean(axis=0))   # (d, 2)


def playground_data(sentence, scaled: bool = True) -> dict:
    """Parameter-free self-attention on a sentence, with everything needed to draw it.

    sentence: a string of words from the course vocabulary, or a list of them (1..MAX_WORDS).
    scaled:   True divides the scores by √d (= 2 for d = 4); False uses E Eᵀ as it is.

    Returns a dict:
        words        list of T words
        E, Y         (T, d) static and contextual embeddings
        S            (T, T) the scores actually fed to softmax (E Eᵀ, divided by √d if scaled)
        divisor      the number S was divided by (2.0 or 1.0)
        W            (T, T) attention weights, rows sum to 1
        top          list of T words: the word each token attends to most
        cos_before   (T, T) cosines between the static vectors
        cos_after    (T, T) cosines between the contextual vectors
        moved        (T,) how far each vector moved, |y_i - e_i|
        P_before     (T, 2) static vectors in the fixed 2-D view (playground_basis)
        P_after      (T, 2) contextual vectors in the same view
    """
    words = tokenize(sentence)
    if len(words) > MAX_WORDS:
        raise ValueError(
            f"The sentence has {len(words)} words; the playground draws (T, T) heatmaps, so keep it to "
            f"{MAX_WORDS} words or fewer."
        )
    steps = self_attention_steps(embed(words), scaled=scaled)
    E, W, Y = steps["E"], steps["W"], steps["Y"]
    basis = playground_basis()
    return {
        "words": words,
        "E": E,
        "S": steps["S_scaled"],
        "divisor": 1.0 / steps["scale"],
        "W": W,
        "Y": Y,
        "top": [words[j] for j in W.argmax(axis=1)],
        "cos_before": cosine_matrix(E),
        "cos_after": cosine_matrix(Y),
        "moved": np.linalg.norm(Y - E, axis=1),
        "P_before": E @ basis,
        "P_after": Y @ basis,
    }
