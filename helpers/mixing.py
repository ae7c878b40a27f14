"""Contextual vectors as mixtures of a sentence's static vectors (notebooks 00 and 01).

    y_i = Σ_j w_ij e_j        one row of weights w_i (T,) and E (T, d) -> y_i (d,)

Notebook 01 picks the weights by hand; notebook 03 computes them.
"""
from __future__ import annotations

import numpy as np

from helpers.running_example import VOCAB, embed, static_vector, tokenize
from helpers.similarity import cosine


def mix(E, weights) -> np.ndarray:
    """Weighted sum of the rows of E: E (T, d), weights (T,) >= 0 summing to 1 -> (d,)."""
    return np.asarray(weights, dtype=float) @ np.asarray(E, dtype=float)


def static_and_mixed(sentence, word: str = "bank", self_weight: float = 0.7) -> dict:
    """`word`'s static vector and a hand-made mixture in `sentence` (a typed sentence: checked).

    `word` keeps `self_weight`; the rest is shared equally by the other tokens.
    Returns a dict with the tokens, E (T, d), the weights (T,), the static and
    mixed vectors (d,), and the cosine between them.
    """
    tokens = tokenize(sentence)
    if word not in tokens:
        raise ValueError(f"{word!r} is not in the sentence {' '.join(tokens)!r}.")
    T = len(tokens)
    weights = np.full(T, (1.0 - self_weight) / (T - 1)) if T > 1 else np.ones(1)
    weights[tokens.index(word)] = self_weight if T > 1 else 1.0
    E, static = embed(tokens), static_vector(word)
    mixed = mix(E, weights)
    return {"tokens": tokens, "E": E, "weights": weights, "static": static, "mixed": mixed,
            "cosine_static_mixed": cosine(static, mixed)}


def two_mixtures(sentence_a, sentence_b, word: str = "bank", self_weight: float = 0.7) -> dict:
    """`word` mixed into two sentences with the same hand-made weights: notebook 01's widget.

    Returns {"a", "b"} (each a static_and_mixed dict), "static" (d,), and the cosines
    between the two static vectors (always 1) and between the two mixtures.
    """
    a = static_and_mixed(sentence_a, word, self_weight)
    b = static_and_mixed(sentence_b, word, self_weight)
    return {"a": a, "b": b, "static": a["static"], "cosine_static": cosine(a["static"], b["static"]),
            "cosine_mixed": cosine(a["mixed"], b["mixed"])}


def pull_toward(word: str, target: str, amount: float) -> dict:
    """Move `word`'s static vector a fraction `amount` (0..1) of the way to `target`'s: notebook 00's widget.

    Returns the moved vector (1 - amount)·e_word + amount·e_target (d,), its cosine with
    both words, and with every word of the vocabulary ("cos_to": {word: cosine}).
    """
    a, b = static_vector(word), static_vector(target)
    moved = mix(np.stack([a, b]), [1.0 - amount, amount])
    return {"vector": moved, "cos_to_word": cosine(moved, a), "cos_to_target": cosine(moved, b),
            "cos_to": {w: cosine(moved, static_vector(w)) for w in VOCAB}}
