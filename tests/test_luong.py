"""helpers.luong (notebook 06): Luong, cross- and self-attention through one function, and the line-up widget."""
import math
import re

import numpy as np
import pytest
import torch

from helpers import luong
from helpers.attention_torch import SelfAttention, scaled_dot_product_attention
from helpers.widgets.common import html_heatmap
from helpers.widgets.luong import PROJECTIONS, SEQUENCES, LineupWidget, description_html


def test_toy_sequences():
    H, S_dec = luong.encoder_states(), luong.decoder_states()
    assert H.shape == (3, 4) and S_dec.shape == (2, 4)
    assert H[1].tolist() == [1.0, 1.0, 0.0, 0.0]  # bank, the running example's static vector
    assert S_dec[0].tolist() == pytest.approx([1.0, 0.2, 0.8, 0.0])


def test_luong_dot_attention_by_hand():
    context, weights = luong.luong_dot_attention(luong.decoder_states()[0], luong.encoder_states())
    scores = torch.tensor([1.8, 1.2, 1.0])  # paisa · money, paisa · bank, paisa · grows
    torch.testing.assert_close(weights, torch.softmax(scores, 0))
    torch.testing.assert_close(context, torch.softmax(scores, 0) @ luong.encoder_states())
    torch.testing.assert_close(weights, torch.tensor([0.5005, 0.2747, 0.2249]), atol=1e-4, rtol=0)


def test_luong_equals_the_course_function_with_the_scale_undone():
    S_dec, H = luong.decoder_states(), luong.encoder_states()
    d = H.shape[1]
    contexts = torch.stack([luong.luong_dot_attention(s, H)[0] for s in S_dec])
    torch.testing.assert_close(scaled_dot_product_attention(math.sqrt(d) * S_dec, H, H), contexts)


def test_projections_are_seeded_and_shaped():
    W = luong.projections(4, 3, seed=1)
    assert set(W) == {"W_q", "W_k", "W_v"} and all(w.shape == (4, 3) for w in W.values())
    torch.testing.assert_close(W["W_q"], luong.projections(4, 3, seed=1)["W_q"])
    assert not torch.equal(W["W_q"], luong.projections(4, 3, seed=2)["W_q"])   # the seed is used
    assert not torch.equal(W["W_q"], W["W_k"])


def test_projections_have_standard_deviation_one_over_root_d_model():
    W = luong.projections(64, 4)                                      # d_k ≠ d_model: 1/√64, not 1/√4
    assert torch.stack(list(W.values())).std().item() == pytest.approx(1 / 8, rel=0.15)


def test_qkv_attention_cross_and_self():
    S_dec, H = luong.decoder_states(), luong.encoder_states()
    W = luong.projections()
    cross = luong.qkv_attention(S_dec, H, W)
    assert cross["W"].shape == (2, 3) and cross["Y"].shape == (2, 4)
    torch.testing.assert_close(cross["W"].sum(-1), torch.ones(2))
    torch.testing.assert_close(cross["Y"], cross["W"] @ (H @ W["W_v"]))
    plain = luong.qkv_attention(S_dec, H)
    assert torch.equal(plain["K"], plain["V"])
    own = luong.qkv_attention(S_dec, S_dec, W)
    assert own["W"].shape == (2, 2)
    layer = SelfAttention(4, 4)
    with torch.no_grad():
        for name in ("W_q", "W_k", "W_v"):
            getattr(layer, name).weight.copy_(W[name].T)  # nn.Linear stores the transpose
    torch.testing.assert_close(layer(S_dec[None])[0], own["Y"])


@pytest.mark.parametrize("learned, same, name, W_shape, params", [
    (False, False, "Luong-style", (2, 3), 0),
    (False, True, "parameter-free self-attention", (3, 3), 0),
    (True, False, "cross-attention", (2, 3), 48),
    (True, True, "self-attention (learned", (3, 3), 48),
])
def test_lineup_data(learned, same, name, W_shape, params):
    data = luong.lineup_data(learned, same)
    assert data["name"].startswith(name)
    assert data["W"].shape == W_shape and data["shapes"]["W"] == W_shape
    assert data["parameters"] == params
    assert data["K_equals_V"] is (not learned)
    assert data["cols"] == list(luong.ENCODER_TOKENS)
    assert data["rows"] == (list(luong.ENCODER_TOKENS) if same else list(luong.DECODER_TOKENS))
    assert data["sequences"] == ("the English sentence asks itself" if same
                                 else "the Hindi decoder asks the English encoder")


def test_lineup_self_attention_is_notebook_06s_english_example():
    """The widget's 'one sequence' setting shows the same weights as the notebook's figure: English asks itself."""
    H, W = luong.encoder_states(), luong.projections()
    np.testing.assert_allclose(luong.lineup_data(True, True)["W"], luong.qkv_attention(H, H, W)["W"].numpy())
    np.testing.assert_allclose(luong.lineup_data(False, True)["W"], luong.qkv_attention(H, H)["W"].numpy())


def test_html_heatmap_has_labels_and_values():
    html = html_heatmap([[0.25, 0.75]], ["paisa"], ["money", "bank"], title="W")
    assert "paisa" in html and "money" in html and "0.75" in html and "W</div>" in html
    sizes = [int(n) for n in re.findall(r"font-size:(\d+)px", html)]
    assert sizes and min(sizes) >= 14


def test_description_html_is_readable_and_says_who_asks_whom():
    text = description_html(luong.lineup_data(True, False))
    assert "cross-attention" in text and "the Hindi decoder asks the English encoder" in text
    assert "parameters: 48" in text
    assert min(int(n) for n in re.findall(r"font-size:(\d+)px", text)) >= 14


def test_lineup_widget_follows_its_switches():
    w = LineupWidget()
    assert w.result["name"].startswith("Luong-style")
    w.children[0].value = PROJECTIONS[1]
    assert w.result["name"].startswith("cross-attention") and w.result["parameters"] == 48
    w.children[1].value = SEQUENCES[1]
    assert w.result["name"].startswith("self-attention") and w.result["W"].shape == (3, 3)
    w.children[0].value = PROJECTIONS[0]
    assert w.result["name"].startswith("parameter-free")


def test_dictionary_lookup_is_notebook_06s_example_and_shows_the_shouting_value():
    base = luong.dictionary_lookup()
    np.testing.assert_allclose(base["weights_luong"], [0.0132, 0.7214, 0.2654], atol=1e-4)
    np.testing.assert_allclose(base["weights_roles"], [0.0453, 0.9094, 0.0453], atol=1e-4)
    assert round(base["answer_luong"], 2) == 2.52 and round(base["answer_roles"], 2) == 2.05
    loud = luong.dictionary_lookup(value_c=40.0)
    assert loud["weights_luong"][2] > 0.99                                          # the value shouts in the matching
    np.testing.assert_allclose(loud["weights_roles"], base["weights_roles"])       # the matching never moves
    clean = luong.dictionary_lookup(value_c=40.0, noise=0.0)
    np.testing.assert_allclose(clean["weights_luong"], clean["weights_roles"])     # a clean query: no difference


@pytest.mark.parametrize("value_c", [0.0, 1.0, 4.0, 40.0])
def test_in_the_dictionary_the_query_projection_alone_fixes_the_matching(value_c):
    """What removes the shouting value here is W_q dropping the query's noise, not separate keys and values."""
    data = luong.dictionary_lookup(value_c)
    np.testing.assert_allclose(data["weights_query_only"], data["weights_roles"])
    assert data["answer_query_only"] == pytest.approx(data["answer_roles"])


def test_a_small_value_under_c_lets_luong_answer_closer():
    """The noise helps 'b' when c's value is small: the shouting value can help as well as hurt."""
    quiet = luong.dictionary_lookup(value_c=0.0)
    assert abs(quiet["answer_luong"] - 2) < abs(quiet["answer_roles"] - 2)


def test_dictionary_widget_redraws_from_its_sliders():
    from helpers.widgets.luong import DictionaryWidget, lookup_html

    w = DictionaryWidget()
    assert round(w.result["answer_luong"], 2) == 2.52
    w.children[0].value = 40.0
    assert w.result["weights_luong"][2] > 0.99
    text = lookup_html(w.result)
    assert "Luong <b>40.00</b>" in text and "separate roles <b>3.68</b>" in text


@pytest.mark.parametrize("s, H", [(torch.ones(3), torch.ones(5, 4)),                        # d differs
                                  (torch.ones(4, dtype=torch.float64), torch.ones(3, 4))])  # dtype differs
def test_luong_names_a_state_that_does_not_fit_the_encoder(s, H):
    with pytest.raises(ValueError, match="s should be one decoder state"):
        luong.luong_dot_attention(s, H)
