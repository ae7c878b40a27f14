import numpy as np
import pytest

from helpers.attention_torch import attention_weights
from helpers.running_example import (
    EMBEDDINGS,
    SENTENCE_MONEY,
    SENTENCE_RIVER,
    VOCAB,
    embed,
    embedding_table,
    static_vector,
    tokenize,
)
from helpers.similarity import cosine


def test_module_text_vectors():
    np.testing.assert_array_equal(embed(SENTENCE_MONEY), [[1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]])


def test_bank_is_static():
    np.testing.assert_array_equal(embed(SENTENCE_MONEY)[1], embed(SENTENCE_RIVER)[1])
    np.testing.assert_array_equal(static_vector("bank"), [1, 1, 0, 0])


def test_table_covers_the_vocabulary():
    words, table = embedding_table()
    assert words == list(VOCAB) == ["money", "bank", "grows", "river", "flows"]
    np.testing.assert_array_equal(table, [[1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1],    # the module text's three
                                          [0, 1, 0, 1], [0, 1, 0, 2]])                  # river, flows: the course's
    assert all(tuple(row) == EMBEDDINGS[word] for word, row in zip(words, table))


def test_river_and_flows_send_bank_somewhere_clearly_different():
    import torch

    def contextual(sentence):
        E = torch.tensor(embed(sentence))
        return (attention_weights(E, E) @ E).numpy()

    y_money, y_river = contextual(SENTENCE_MONEY), contextual(SENTENCE_RIVER)
    assert cosine(y_money[1], y_river[1]) < 0.8       # bank lands in two clearly different places
    assert cosine(y_river[1], EMBEDDINGS["river"]) > 0.9
    assert cosine(y_money[1], EMBEDDINGS["money"]) > cosine(y_river[1], EMBEDDINGS["money"]) + 0.4


def test_tokenize_accepts_strings_and_lists():
    assert tokenize("Money  BANK grows") == ["money", "bank", "grows"]
    assert tokenize(["river", "bank"]) == ["river", "bank"]


def test_punctuation_between_words_separates_them():
    assert tokenize("money,bank grows") == ["money", "bank", "grows"]


def test_unknown_word_is_named():
    with pytest.raises(ValueError, match="'cash' is not in the course vocabulary"):
        embed("cash bank grows")


def test_empty_and_wrong_type():
    with pytest.raises(ValueError, match="empty"):
        embed("   ")
    with pytest.raises(TypeError, match="should be a string"):
        embed(42)


def test_a_long_unknown_word_is_named_in_a_short_message():
    from helpers.temperature import parse_scores
    for call in (lambda: tokenize("money " + "x" * 5000), lambda: parse_scores("1, " + "x" * 5000)):
        with pytest.raises(ValueError) as error:
            call()
        assert f"'{'x' * 40}' is not" in str(error.value) and len(str(error.value)) < 400   # cut, and quoted


def test_tokenize_lower_cases_a_list_and_takes_a_tuple():
    from helpers.running_example import tokenize
    assert tokenize(["Money", "BANK"]) == ["money", "bank"]
    assert tokenize(("river", "bank")) == ["river", "bank"]


def test_random_table_depends_on_its_seed():
    from helpers.running_example import random_table
    assert np.array_equal(random_table(3, 4, seed=1), np.random.default_rng(1).standard_normal((3, 4)))
    assert not np.array_equal(random_table(3, 4, seed=1), random_table(3, 4, seed=0))


def test_static_vector_reads_a_word_as_tokenize_does():
    from helpers.running_example import EMBEDDINGS, static_vector
    assert static_vector("Bank").tolist() == list(EMBEDDINGS["bank"])
    with pytest.raises(ValueError, match="not in the course vocabulary"):
        static_vector("cat")
