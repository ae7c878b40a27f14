"""Contextual vectors as mixtures of a sentence's static vectors (notebooks 00 and 01).

    y_i = Σ_j w_ij e_j        one row of weights w_i (T,) and E (T, d) -> y_i (d,)

Notebook 01 picks the weights by hand; notebook 03 computes them."""
import numpy as np

from helpers.running_example import MAX_WORDS, VOCAB, embed, static_vector, tokenize
from helpers.similarity import cosine


def mix(E, weights) -> np.ndarray:
    """Weighted sum of the rows of E: E (T, d), weights (T,) >= 0 summing to 1 -> (d,)."""
    return np.asarray(weights, dtype=float) @ np.asarray(E, dtype=float)


def static_and_mixed(sentence, word: str = "bank", self_weight: float = 0.7) -> dict:
    """`word`'s static vector and a mixture in `sentence` where it keeps `self_weight`, the rest shared equally."""
    tokens = tokenize(sentence)
    if word not in tokens:
        raise ValueError(f"{word!r} is not in the sentence {' '.join(tokens)!r}.")
    if not 2 <= (T := len(tokens)) <= MAX_WORDS:      # another word to mix in; a sentence the legend can hold
        raise ValueError(f"the sentence {' '.join(tokens)!r} has {T} word{'s' * (T > 1)}: give 2 to {MAX_WORDS} words.")
    weights = np.full(T, (1.0 - self_weight) / (T - 1))
    weights[tokens.index(word)] = self_weight
    E = embed(tokens)
    return {"tokens": tokens, "E": E, "weights": weights, "static": static_vector(word), "mixed": mix(E, weights)}


def two_mixtures(sentence_a, sentence_b, word: str = "bank", self_weight: float = 0.7) -> dict:
    """`word` mixed into two sentences with the same weights (notebook 01's widget): both dicts and cosines."""
    a, b = (static_and_mixed(sentence, word, self_weight) for sentence in (sentence_a, sentence_b))
    return {"a": a, "b": b, "static": a["static"], "cosine_static": cosine(a["static"], b["static"]),
            "cosine_mixed": cosine(a["mixed"], b["mixed"])}


def pull_toward(word: str, target: str, amount: float) -> dict:
    """(1 - amount)·e_word + amount·e_target (notebook 00's widget), with its cosine to every word."""
    a, b = static_vector(word), static_vector(target)
    moved = mix(np.stack([a, b]), [1.0 - amount, amount])
    return {"vector": moved, "cos_to_target": cosine(moved, b),
            "cos_to": {w: cosine(moved, static_vector(w)) for w in VOCAB}}
