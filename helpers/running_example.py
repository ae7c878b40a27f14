"""The course's running example: two sentences that differ in one word.

    money bank grows      (bank = a financial institution)
    river bank flows      (bank = a riverside)

Each word has one static 4-D embedding. money, bank and grows use the module text's vectors; river and flows are chosen
so that, after attention, bank in "river bank flows" lands far from where it lands in "money bank grows"."""
import re

import numpy as np

SENTENCE_MONEY, SENTENCE_RIVER = "money bank grows", "river bank flows"
SENTENCES = (SENTENCE_MONEY, SENTENCE_RIVER)
MAX_WORDS = 10  #: the longest sentence a widget takes: its (T, T) heatmaps and its legends stay readable

#: Static embeddings, d = 4. One row per word, whatever sentence it is in.
EMBEDDINGS: dict[str, tuple[float, ...]] = {"money": (1.0, 0.0, 1.0, 0.0),
                                            "bank": (1.0, 1.0, 0.0, 0.0),
                                            "grows": (0.0, 1.0, 1.0, 1.0),
                                            "river": (0.0, 1.0, 0.0, 1.0),
                                            "flows": (0.0, 1.0, 0.0, 2.0)}
VOCAB: tuple[str, ...] = tuple(EMBEDDINGS)


def tokenize(sentence) -> list[str]:
    """Text or a list of words -> lower-case words, punctuation dropped; an error if empty or a word is not in VOCAB."""
    if isinstance(sentence, str):
        words = re.sub(r"[^\w\s]+", " ", sentence).lower().split()
    elif isinstance(sentence, (list, tuple)) and all(isinstance(w, str) for w in sentence):
        words = [w.lower().strip() for w in sentence]
    else:
        raise TypeError(f"A sentence should be a string such as {SENTENCE_MONEY!r} or a list of words, "
                        f"but got {type(sentence).__name__} ({sentence!r:.40}).")
    if not words:
        raise ValueError("The sentence is empty: type words from the vocabulary.")
    if unknown := [w for w in words if w not in EMBEDDINGS]:
        split = isinstance(sentence, str) and any(unknown[0] in (parts := re.findall(r"\w+", t)) and len(parts) > 1
                                                  for t in sentence.lower().split())   # bank's: bank and s
        raise ValueError(f"{unknown[0][:40]!r} is not in the course vocabulary ({', '.join(VOCAB)}). Build sentences "
                         "from these words" + " (punctuation is dropped and splits a word: bank's is bank s)" * split
                         + ".")
    return words


def embedding_table() -> tuple[list[str], np.ndarray]:
    """The whole table: (words, array of shape (V, d)) with V = len(VOCAB)."""
    return list(VOCAB), np.array([EMBEDDINGS[w] for w in VOCAB])


def embed(sentence) -> np.ndarray:
    """Look up each word: sentence of T words -> E of shape (T, d)."""
    return np.array([EMBEDDINGS[w] for w in tokenize(sentence)])


def random_table(n: int, d: int, seed: int) -> np.ndarray:
    """n random N(0, 1) vectors of dimension d, the same on every machine and NumPy: (n, d). The static
    embeddings of the larger vocabularies of notebooks 04 and 09."""
    return np.random.default_rng(seed).standard_normal((n, d))


def static_vector(word: str) -> np.ndarray:
    """The static embedding of one word: shape (d,)."""
    return embed([word])[0]
