"""helpers.induction and its widget: the model's shapes, parameters and causality, the scores on matrices built by
hand, switching heads off, and the committed weights against the code."""
import math
import re

import numpy as np
import pytest
import torch
from stored_notebooks import prose

from helpers import induction
from helpers.attention_torch import attention_weights, causal_mask, count_parameters
from helpers.heads import split_heads
from helpers.induction import (
    LETTERS,
    AttentionOnlyTransformer,
    attention_patterns,
    heads_off,
    induction_score,
    load_trained_model,
    previous_token_score,
)
from helpers.measure import cpu_threads
from helpers.widgets.induction import InductionWidget


@pytest.fixture(scope="module")
def record():
    return induction.load_record()


@pytest.fixture(scope="module")
def model():
    return load_trained_model()


def random_tokens(B=3, T=32, seed=0):
    return torch.randint(0, 20, (B, T), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- the model

def test_the_trained_model_maps_tokens_to_logits(model):
    assert not model.training
    assert (model.vocab_size, model.context_length, model.n_layers, model.n_heads) == (20, 32, 2, 2)
    with torch.no_grad():
        assert model(random_tokens()).shape == (3, 32, 20)
        assert model(random_tokens(T=5)).shape == (3, 5, 20)


def test_parameter_count_is_the_formula():
    for n_layers in (1, 2, 3):
        model = AttentionOnlyTransformer(n_layers=n_layers)
        counted = {name: p.numel() for name, p in model.named_parameters()}
        assert count_parameters(model) == sum(counted.values()) == induction.parameter_count(20, 32, 64, n_layers)
        assert sum(n for name, n in counted.items() if name.startswith("layers.")) == n_layers * 4 * 64 ** 2
    assert induction.parameter_count(20, 32, 64, 2) == 20 * 64 + 32 * 64 + 2 * 4 * 64 ** 2 + 64 * 20 == 37_376
    one = [count_parameters(load_trained_model(name)) for name in (induction.ONE_LAYER, induction.FIXED_OFFSET)]
    assert one == [induction.parameter_count(20, 32, 64, 1)] * 2
    assert f"= {one[0]:,}: one `MultiHeadAttention`" in prose("10")   # Check yourself, section 5


def test_notebook_10_answers_its_widget_questions(model):
    """Section 11's folded answers: no key stands out where nothing repeats; a copy at the very start is less sure."""
    def last_query(text):   # layer 1's largest weights for the last query, and the surest next letter
        tokens = induction.encode(text)
        with torch.no_grad():
            p = torch.softmax(model(tokens)[0, -1], dim=-1)
        return attention_patterns(model, tokens)[1, 0, :, -1].amax(-1).tolist(), LETTERS[int(p.argmax())], p.max()
    (w0, w1), _, sure = last_query("abcdefghijklmnopqrst")
    assert f"is {w0:.2f} in head 1.0 and {w1:.2f} in head 1.1" in prose("10") and max(w0, w1) < 0.4
    assert f"surest next letter gets {sure:.0%}".replace("%", " %") in prose("10")
    (w0, w1), letter, sure = last_query("thebankisrichthebankis")
    assert letter == "r" and f"put {w0:.2f} and {w1:.2f} on one key, and the model gives the copied letter, " \
                             f"*{letter}*, {sure:.0%}".replace("%", " %") in prose("10")
    for text, copied in (("abcdabc", "d"), ("bankban", "k")):
        _, letter, sure = last_query(text)
        assert letter == copied and f'"{text}" the model gives *{letter}* {sure:.0%}'.replace("%", " %") in prose("10")


def test_a_later_token_changes_no_earlier_logit(model):
    tokens = random_tokens(B=2)
    changed = tokens.clone()
    changed[:, 20] = (changed[:, 20] + 7) % 20
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    assert torch.equal(before[:, :20], after[:, :20])
    assert (before[:, 20:] - after[:, 20:]).abs().max() > 1e-3        # and the change does reach the later ones


def test_tokens_the_model_cannot_read_get_a_named_error(model):
    for bad in (torch.tensor([[0, 20]]), torch.tensor([[-1, 3]]), torch.zeros(1, 33, dtype=torch.long),
                torch.zeros(1, 4), torch.tensor([1, 2, 3]), [[1, 2]], torch.tensor([[1, 2]], dtype=torch.uint8),
                torch.tensor([[True, False]])):   # the record's probes are uint8: nn.Embedding takes int64 or int32
        with pytest.raises(ValueError, match=r"tokens should be a \(B, T\) tensor of whole numbers 0 … 19"):
            model(bad)
    with pytest.raises(ValueError, match=r"tokens should be a \(B, T\) tensor"):   # one sentence without its batch
        induction.layer_input_parts(model, torch.tensor([1, 2, 3]))


def test_encode_reads_letters_and_names_what_it_cannot():
    assert induction.encode("ab c").tolist() == [[0, 1, 2]]
    with pytest.raises(ValueError, match=r"'z' \(position 2, spaces aside\) is not one of the model's 20 tokens"):
        induction.encode("abz")
    for bad in ("", "   ", "a" * 33):
        with pytest.raises(ValueError, match="between 1 and 32 letters"):
            induction.encode(bad)


# ---------------------------------------------------------------- the data

def test_the_marked_copy_repeats_the_segment_from_L_to_b_tokens_back():
    tokens, copy = induction.repeated_batch(256, torch.Generator().manual_seed(0))
    assert tokens.shape == (256, 32) and copy.shape == (256, 31)
    for row, marks in zip(tokens, copy):
        positions = torch.nonzero(marks).flatten()
        L = len(positions) + 1                                        # the segment, less its first token
        assert induction.SEGMENT[0] <= L <= induction.SEGMENT[1]
        start = int(positions[0])                                     # the copy's first token
        offsets = [D for D in range(L, 32) if start - D >= 0 and torch.equal(row[start:start + L],
                                                                              row[start - D:start - D + L])]
        assert offsets, "the copy repeats an earlier segment"


def test_the_copy_can_end_on_the_last_token():
    """b in [L, T − L]: some copies fill the sequence to its end (b + L = T), for short and long segments alike."""
    tokens, copy = induction.repeated_batch(512, torch.Generator().manual_seed(0))
    ends = {len(marks.nonzero()) + 1 for marks in copy if marks[-1]}    # L of each copy that reaches token T − 1
    assert ends and min(ends) < 8 and max(ends) > 12


def test_the_training_log_splits_each_batchs_loss_into_copy_and_other_positions():
    torch.manual_seed(induction.SEED)
    model = induction.AttentionOnlyTransformer(n_layers=1)                # the model train() starts from
    tokens, copy = induction.repeated_batch(induction.BATCH, torch.Generator().manual_seed(induction.SEED))
    with torch.no_grad():
        losses = induction.next_token_losses(model, tokens)                  # its first batch, before any update
    _, log = induction.train(n_layers=1, steps=1)
    assert log["copy"][0].item() == pytest.approx(losses[copy].mean().item(), rel=1e-5)
    assert log["other"][0].item() == pytest.approx(losses[~copy].mean().item(), rel=1e-5)


def test_the_drawn_offset_reaches_its_largest_value_b():
    """D in [L, b]: some copies start right after a source at position 0, D = b, also where b > L."""
    tokens, copy = induction.repeated_batch(512, torch.Generator().manual_seed(0))
    longest = 0
    for row, marks in zip(tokens, copy):
        positions = torch.nonzero(marks).flatten()
        b, L = int(positions[0]), len(positions) + 1
        if b > L and torch.equal(row[b:b + L], row[:L]):
            longest += 1
    assert longest > 5


def test_a_fixed_offset_repeats_the_first_half():
    tokens, copy = induction.repeated_batch(8, torch.Generator().manual_seed(1), offset=16)
    assert torch.equal(tokens[:, 16:], tokens[:, :16])
    assert copy.all(0).tolist() == [False] * 16 + [True] * 15
    for offset in (6, 24):                                            # L = min(offset, T − offset): 6, then 8
        tokens, copy = induction.repeated_batch(8, torch.Generator().manual_seed(1), offset=offset)
        L = min(offset, 32 - offset)
        assert torch.equal(tokens[:, offset:offset + L], tokens[:, :L]) and copy.sum(1).tolist() == [L - 1] * 8


def test_the_record_s_probes_are_the_probes_the_code_draws(record):
    """The committed record's scores were measured on probes(): an older record (a letter twice in a half) fails."""
    assert sorted(record["probes"]) == list(induction.PROBE_HALVES)
    assert all(torch.equal(tokens.long(), induction.probe_tokens(n)) for n, tokens in record["probes"].items())


def test_probes_repeat_a_first_half_of_different_letters():
    """No letter twice in a half: for each query of the second half, key i − n + 1 is the one right key."""
    for n, tokens in induction.probes(batch_size=4).items():
        assert tokens.shape == (4, 2 * n) and torch.equal(tokens[:, n:], tokens[:, :n])
        assert all(len(set(row.tolist())) == n for row in tokens[:, :n]), n
    assert len({tuple(row) for row in induction.probe_tokens(16, batch_size=50).tolist()}) == 50   # drawn, not fixed
    with pytest.raises(ValueError, match=r"n \(distinct letters in a half\) should be a whole number from 1 to 20"):
        induction.probe_tokens(21)


# ---------------------------------------------------------------- scores on hand-built weights

def shifted(T, k):
    """(T, T) weights: query i puts all its weight on key i − k (or on key 0 where i < k)."""
    W = torch.zeros(T, T)
    i = torch.arange(T)
    W[i, (i - k).clamp(min=0)] = 1
    return W


def test_scores_of_a_perfect_previous_token_head_and_a_perfect_induction_head():
    n = 5
    assert previous_token_score(shifted(2 * n, 1)) == 1
    assert induction_score(shifted(2 * n, 1), n) == 0
    assert induction_score(shifted(2 * n, n - 1), n) == 1             # key i − n + 1, after the earlier copy
    assert previous_token_score(shifted(2 * n, n - 1)) == pytest.approx(1 / 9)   # only query 1, whose key 0 is i − 1
    assert induction_score(shifted(2 * n, n), n) == 0                 # the earlier copy itself: one off


def test_scores_of_uniform_causal_weights():
    n, T = 4, 8
    W = causal_mask(T).float() / torch.arange(1, T + 1)[:, None]      # query i: 1/(i+1) on keys 0 … i
    assert torch.isclose(previous_token_score(W), torch.tensor([1 / (i + 1) for i in range(1, T)]).mean())
    assert torch.isclose(induction_score(W, n), torch.tensor([1 / (i + 1) for i in range(n, T)]).mean())
    stacked = torch.stack([W, shifted(T, 1)])                         # (2, T, T): one score per leading index
    assert previous_token_score(stacked).shape == (2,) and previous_token_score(stacked)[1] == 1


def test_heads_are_named_from_their_scores():
    scores = torch.tensor([[[0.9, 0.1], [0.0, 0.2]], [[0.0, 0.1], [0.7, 0.3]]])    # (2, n_layers, H)
    assert induction.head_names(scores) == {(0, 0): "previous-token head", (0, 1): "neither",
                                            (1, 0): "induction head", (1, 1): "neither"}


def test_a_score_of_exactly_named_at_names_the_head():
    at, below = induction.NAMED_AT, induction.NAMED_AT - 0.01
    scores = torch.tensor([[[at, below]], [[0.0, 0.0]]], dtype=torch.float64)   # (2 kinds, 1 layer, 2 heads)
    assert induction.head_names(scores) == {(0, 0): "previous-token head", (0, 1): "neither"}


# ---------------------------------------------------------------- patterns, switches, parts

def test_attention_patterns_are_the_weights_each_layer_computed(model):
    tokens = random_tokens(B=2, T=10)
    W = attention_patterns(model, tokens)
    assert W.shape == (2, 2, 2, 10, 10)
    torch.testing.assert_close(W.sum(-1), torch.ones(2, 2, 2, 10))
    assert (W.triu(1) == 0).all()                                     # causal: no weight on a later key
    layer = model.layers[0]
    with torch.no_grad():
        x = model.embed(tokens) + model.positions(10)
        Q, K = split_heads(layer.W_q(x), 2), split_heads(layer.W_k(x), 2)
        torch.testing.assert_close(W[0], attention_weights(Q, K, causal_mask(10)))


def test_switching_heads_off_removes_exactly_their_output(model):
    tokens = random_tokens(B=2, T=12)
    every_head = [(layer, h) for layer in range(2) for h in range(2)]
    with torch.no_grad():
        before = model(tokens)
        with heads_off(model, every_head):
            bare = model(tokens)                                      # only the direct path is left
        torch.testing.assert_close(bare, model.unembed(model.embed(tokens) + model.positions(12)))
        with heads_off(model, [(1, 0)]):
            one_off = model(tokens)
        assert torch.equal(model(tokens), before)                     # the hooks are gone after the block
    assert (one_off - before).abs().max() > 1e-3


def test_layer_1_input_is_the_sum_of_its_parts(model):
    tokens = random_tokens(B=2, T=16)
    parts = induction.layer_input_parts(model, tokens)
    assert list(parts) == ["token", "position", "head 0.0", "head 0.1"]
    with torch.no_grad():
        x = model.embed(tokens) + model.positions(16)
        x = x + model.layers[0](x, causal_mask(16))
    torch.testing.assert_close(sum(parts.values()), x, rtol=0, atol=1e-5)


# ---------------------------------------------------------------- the committed weights

def test_the_committed_weights_still_give_the_stored_scores(record):
    probe_set = record["probes"]
    assert sorted(probe_set) == list(induction.PROBE_HALVES)
    for name in induction.RECIPES:
        with cpu_threads(1):                                          # as train() runs: one order of summing
            scores = induction.head_scores(load_trained_model(name, record), probe_set)
        torch.testing.assert_close(scores, record["logs"][name]["final_scores"], rtol=0, atol=1e-4)


def test_notebook_10_reads_the_loss_curves_as_the_record_has_them(record):
    """'elsewhere' (smoothed over 25 steps, as plotted) never goes below ln 20; a second, slower drop near step 1,100
    while the previous-token head sharpens; the fixed-offset model's is the only final 'elsewhere' below ln 20."""
    two, k, w = record["logs"][induction.TWO_LAYERS], 25, 150          # the plot's smoothing; a 150-step window
    assert two["other"].unfold(0, k, 1).mean(1).min() > math.log(20)
    copy = two["copy"].unfold(0, k, 1).mean(1)          # entry i: the mean of steps i … i + 24, drawn at i + 12
    first = 500 + int((copy[500:-w] - copy[500 + w:]).argmax()) + k // 2   # the steepest 150 steps after step 500
    assert 1000 <= first + w // 2 <= 1200 and "slower drop follows near step 1,100" in prose("10")
    previous = two["scores"][:, 0, 0].max(-1).values[(two["score_steps"] >= first) & (two["score_steps"] <= first + w)]
    assert previous[-1] > previous[0] + 0.02                             # "as the previous-token head sharpens"
    below = [name for name, log in record["logs"].items() if log["other"][-100:].mean() < math.log(20)]
    assert below == [induction.FIXED_OFFSET]


def test_the_committed_two_layer_model_has_its_heads_and_copies(record, model):
    names = induction.head_names(record["logs"][induction.TWO_LAYERS]["final_scores"])
    assert sorted(names.values()).count("induction head") >= 1
    assert [layer for (layer, _), name in names.items() if name == "previous-token head"] == [0]
    assert all(layer == 1 for (layer, _), name in names.items() if name == "induction head")
    for name in (induction.ONE_LAYER, induction.FIXED_OFFSET):
        assert set(induction.head_names(record["logs"][name]["final_scores"]).values()) == {"neither"}
    tokens, copy = induction.repeated_batch(256, torch.Generator().manual_seed(7))
    assert induction.copy_loss(model, tokens, copy) < 1.0 < 2.0 < induction.copy_loss(
        load_trained_model(induction.ONE_LAYER), tokens, copy)


def test_the_record_loads_with_weights_only_and_says_which_torch_made_it(record):
    assert isinstance(record["torch"], str) and record["torch"][0].isdigit()
    for name, (_, _, steps) in induction.RECIPES.items():
        log = record["logs"][name]
        assert log["copy"].shape == log["other"].shape == (steps,) and log["seconds"] > 0
        assert log["scores"].shape[1:3] == (2, induction.RECIPES[name][0])
    assert induction.WEIGHTS.stat().st_size < 500_000


def test_load_trained_model_names_what_it_has():
    with pytest.raises(ValueError, match="name should be one of"):
        load_trained_model("three layers")


# ---------------------------------------------------------------- the widget's data and the widget

def test_prediction_data_copies_and_breaks_without_the_previous_token_head(model, record):
    names = induction.head_names(record["logs"][induction.TWO_LAYERS]["final_scores"])
    previous = next(head for head, name in names.items() if name == "previous-token head")
    letters = "qfmajcbkrdhsnlpo" * 2
    data = induction.prediction_data(model, letters, 20)             # 'j' came at 4, followed by 'c'
    assert data["earlier"] == 4 and data["prediction"] == "c"
    assert data["weights"].shape == (4, 32) and abs(data["probabilities"].sum() - 1) < 1e-5
    assert induction.prediction_data(model, letters, 20, off=[previous])["probabilities"][2] < 0.5
    repeated = induction.prediction_data(model, "thebankisrichthebankis", 20)   # 'i' came at 7 and at 10
    assert repeated["earlier"] == 7 and repeated["prediction"] == "s"          # 7 follows the same 'k'


def test_prediction_data_picks_the_latest_of_equally_matched_earlier_copies(model):
    data = induction.prediction_data(model, "cadaea", 5)      # 'a' came at 1 (after 'c') and 3 (after 'd'): a tie
    assert data["earlier"] == 3


def test_the_widget_follows_its_controls(model):
    w = InductionWidget(model=model)
    assert w.result["letters"] == "thebankisrichthebankis" and w.position.value == w.position.max == 21
    w.text.value = "abcdabcd"
    assert w.position.max == 7 and w.position.value == 7 and w.result["prediction"] == "a"
    w.position.value = 5
    assert w.result["position"] == 5 and w.result["earlier"] == 1
    on = w.result["probabilities"].copy()
    w.switches[1].value = False                                        # head 0.1 off
    assert w.result["weights"].shape == (4, 8) and "Switched off: head 0.1" in w.reading.value
    off = induction.prediction_data(model, "abcdabcd", 5, off=[(0, 1)])["probabilities"]
    assert np.allclose(w.result["probabilities"], off) and not np.allclose(w.result["probabilities"], on)
    w.text.value = "abcz"
    assert w.result is None and "&#x27;z&#x27; (position 3, spaces aside) is not one of the model" in w.reading.value
    assert w.position.max == 7 and w.position.value == 5               # a refused text leaves the slider alone
    w.text.value = "abcabc"
    assert w.result is not None and w.position.max == 5
    w.position.value = 2                                               # 'c' has not come before position 2
    assert w.result["earlier"] is None and "nothing to copy" in w.reading.value


def test_a_head_the_model_lacks_is_named_not_skipped(model):
    for heads, message in (([(0, 5)], "head should be a whole number from 0 to 1, but got 5"),
                           ([(2, 0)], "layer should be a whole number from 0 to 1, but got 2")):
        with pytest.raises(ValueError, match=re.escape(message)), heads_off(model, heads):
            pass
