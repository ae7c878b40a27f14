import numpy as np
import pytest

from helpers.mixing import mix, pull_toward, static_and_mixed
from helpers.running_example import SENTENCE_MONEY, SENTENCE_RIVER, embed
from helpers.similarity import cosine

#: bank keeping 0.7 with 0.15 for each neighbour, in both sentences, computed independently of the widget.
EVEN_SPLIT_COSINE = cosine(np.array([0.15, 0.7, 0.15]) @ embed("money bank grows"),
                           np.array([0.15, 0.7, 0.15]) @ embed("river bank flows"))


def test_mix_is_the_weighted_sum_of_rows():
    E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(mix(E, [0.2, 0.7, 0.1]), [0.3, 0.8])


def test_static_and_mixed_keeps_static_bank_and_moves_the_mixture():
    a, b = static_and_mixed(SENTENCE_MONEY), static_and_mixed(SENTENCE_RIVER)
    np.testing.assert_array_equal(a["static"], b["static"])
    np.testing.assert_allclose(a["weights"], [0.15, 0.7, 0.15])
    np.testing.assert_allclose(a["mixed"], [0.85, 0.85, 0.3, 0.15])
    assert not np.allclose(a["mixed"], b["mixed"])
    np.testing.assert_array_equal(static_and_mixed(SENTENCE_MONEY, self_weight=1.0)["mixed"], a["static"])


def test_static_and_mixed_bad_input():
    with pytest.raises(ValueError, match="'bank' is not in the sentence"):
        static_and_mixed("money grows")


def test_pull_toward_goes_from_word_to_target():
    assert pull_toward("bank", "money", 0.0)["cos_to_target"] == pytest.approx(0.5)
    assert pull_toward("bank", "money", 1.0)["cos_to_target"] == pytest.approx(1.0)
    np.testing.assert_allclose(pull_toward("bank", "money", 0.5)["vector"], [1.0, 0.5, 0.5, 0.0])


def test_pulling_bank_toward_money_moves_it_away_from_river():
    start, end = pull_toward("bank", "money", 0.0)["cos_to"], pull_toward("bank", "money", 1.0)["cos_to"]
    assert start["money"] == pytest.approx(0.5) and start["river"] == pytest.approx(0.5)
    assert end["money"] == pytest.approx(1.0) and end["river"] == pytest.approx(0.0)


def test_two_mixtures_of_one_static_vector():
    from helpers.mixing import two_mixtures

    data = two_mixtures(SENTENCE_MONEY, SENTENCE_RIVER)
    assert data["cosine_static"] == pytest.approx(1.0)
    assert data["cosine_mixed"] == pytest.approx(EVEN_SPLIT_COSINE)
    with pytest.raises(ValueError, match="'bank' is not in the sentence"):
        two_mixtures(SENTENCE_MONEY, "river flows")
