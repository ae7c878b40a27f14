"""helpers.learning (notebook 04's lookup and experiment) and its widget, helpers.widgets.learning."""
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from helpers import learning
from helpers.attention_torch import count_parameters
from helpers.learning import (
    EXAMPLES,
    LEARNED,
    MODELS,
    PARAMETER_FREE,
    VALUES_ONLY,
    FixedAttentionLearnedValues,
    ParameterFreeAttention,
    build_model,
    idiom_rate_by_word,
    label_of,
    make_dataset,
    plot_loss_curves,
    run_experiment,
    soft_lookup,
    static_table,
    tokens_of,
    training_snapshot,
)
from helpers.running_example import SENTENCE_MONEY, embed
from helpers.widgets.learning import TrainingWidget, training_widget


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def experiment():
    """The notebook's run: seed 5, all three models."""
    return run_experiment("idiom", MODELS, seed=5)


# ----------------------------------------------------------------------------- the soft dictionary

def test_soft_lookup_blends_every_value():
    weights, blend = soft_lookup([1.0, 0.0, 0.0], np.eye(3), [1.0, 2.0, 4.0])
    np.testing.assert_allclose(weights, [0.5761, 0.2119, 0.2119], atol=1e-4)
    assert blend == pytest.approx(0.5761169 * 1 + 0.2119416 * 2 + 0.2119416 * 4, abs=1e-6)
    assert blend == pytest.approx(1.8478, abs=1e-4)
    assert weights.sum() == pytest.approx(1.0)


def test_a_sharp_soft_lookup_becomes_the_hard_one():
    _, blend = soft_lookup([10.0, 0.0, 0.0], np.eye(3), [1.0, 2.0, 4.0])
    assert blend == pytest.approx(1.0002, abs=1e-4)
    _, blend = soft_lookup([1000.0, 0.0, 0.0], np.eye(3), [1.0, 2.0, 4.0])   # no overflow
    assert blend == pytest.approx({"a": 1, "b": 2, "c": 4}["a"])


def test_soft_lookup_rejects_inputs_that_do_not_fit():
    with pytest.raises(ValueError, match="keys have length 3 but the query has length 2"):
        soft_lookup([1.0, 0.0], np.eye(3), [1.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="3 keys but 2 values"):
        soft_lookup([1.0, 0.0, 0.0], np.eye(3), [1.0, 2.0])
    with pytest.raises(ValueError, match="query contains nan"):
        soft_lookup([math.nan, 0.0, 0.0], np.eye(3), [1.0, 2.0, 4.0])
    with pytest.raises(TypeError, match="keys should be numbers"):
        soft_lookup([1.0, 0.0, 0.0], "abc", [1.0, 2.0, 4.0])


# ----------------------------------------------------------------------------- the modules

def test_attempt_1_has_no_parameters_and_notebook_03s_numbers():
    attention = ParameterFreeAttention()
    assert count_parameters(attention) == 0 and list(attention.parameters()) == []
    E = torch.tensor(embed(SENTENCE_MONEY))
    np.testing.assert_allclose(attention.weights(E)[1], [0.2741, 0.4519, 0.2741], atol=1e-4)
    np.testing.assert_allclose(attention(E)[1], [0.7259, 0.7259, 0.5481, 0.2741], atol=1e-4)
    batch = torch.stack([E, E.flip(0)])                                 # (2, 3, 4)
    assert attention(batch).shape == (2, 3, 4)
    torch.testing.assert_close(attention.weights(batch).sum(-1), torch.ones(2, 3, dtype=torch.float64))


def test_values_only_control_keeps_attempt_1s_weights():
    torch.manual_seed(0)
    control = FixedAttentionLearnedValues(4, 3).double()
    E = torch.tensor(embed(SENTENCE_MONEY))
    assert count_parameters(control) == 12
    torch.testing.assert_close(control.weights(E), ParameterFreeAttention().weights(E))
    torch.testing.assert_close(control(E), ParameterFreeAttention()(E) @ control.W_v.weight.T)


def test_build_model_counts():
    counts = {name: count_parameters(build_model(name, 16)) for name in MODELS}
    assert counts == {PARAMETER_FREE: 34, LEARNED: 3 * 16 * 16 + 34, VALUES_ONLY: 16 * 16 + 34}
    assert count_parameters(build_model(LEARNED, 16, d_k=8)) == 3 * 16 * 8 + 8 * 2 + 2
    scores = build_model(LEARNED, 16).double()(torch.zeros(3, 5, 16, dtype=torch.float64))
    assert scores.shape == (3, 2)
    with pytest.raises(ValueError, match="Unknown model 'magic'"):
        build_model("magic", 16)
    with pytest.raises(ValueError, match="d_model should be at least 1"):
        build_model(LEARNED, 0)


# ----------------------------------------------------------------------------- the task

def test_labels_follow_the_idiom_table():
    assert [label_of(s) for s in EXAMPLES] == [1, 0, 1, 0]
    assert [label_of(s, "keyword") for s in EXAMPLES] == [1, 0, 0, 1]
    assert tokens_of("break a leg tonight !") == ["break", "a", "leg", "tonight", "!"]
    assert tokens_of(["piece", "of", "cake", "now", "?"])[2] == "cake"


def test_bad_sentences_and_tasks_are_named():
    with pytest.raises(ValueError, match="'banana' is not in the idiom task's vocabulary"):
        tokens_of("piece of banana today .")
    with pytest.raises(ValueError, match="has 5 words"):
        tokens_of("piece of cake")
    with pytest.raises(ValueError, match="has 5 words"):
        tokens_of("cake of piece today .")
    with pytest.raises(TypeError, match="should be a string"):
        tokens_of(42)
    with pytest.raises(ValueError, match="Unknown task 'sarcasm'"):
        label_of(EXAMPLES[0], "sarcasm")


def test_dataset_is_balanced_disjoint_and_seeded():
    data = make_dataset("idiom", seed=5)
    assert data.train_ids.shape == (512, 5) and data.test_ids.shape == (512, 5)
    assert data.train_labels.sum() == 256 and data.test_labels.sum() == 256
    train, test = set(data.sentences("train")), set(data.sentences("test"))
    assert len(train) == 512 and len(test) == 512 and not train & test
    assert set(EXAMPLES) <= test
    assert idiom_rate_by_word(data) == {"piece": 0.5, "break": 0.5, "cake": 0.5, "leg": 0.5}
    for sentence, label in zip(data.sentences("test"), data.test_labels):
        assert label == label_of(sentence)
    again = make_dataset("idiom", seed=5)
    np.testing.assert_array_equal(again.train_ids, data.train_ids)
    assert not np.array_equal(make_dataset("idiom", seed=6).train_ids, data.train_ids)
    keyword = make_dataset("keyword", seed=5)
    assert all(label == ("cake" in s.split()) for s, label in zip(keyword.sentences(), keyword.train_labels))
    with pytest.raises(ValueError, match="'zebra' is not in the vocabulary"):
        idiom_rate_by_word(data, ["zebra"])


def test_static_table_is_frozen_random_and_seeded():
    table = static_table(16, seed=5)
    assert table.shape == (len(learning.VOCAB), 16)
    np.testing.assert_array_equal(table, static_table(16, seed=5))
    assert not np.allclose(table, static_table(16, seed=6))
    assert 0.7 < table.std() < 1.3


# ----------------------------------------------------------------------------- the experiment

def test_learned_qkv_beat_parameter_free_by_a_wide_margin(experiment):
    free, learned, control = experiment[PARAMETER_FREE], experiment[LEARNED], experiment[VALUES_ONLY]
    assert learned.test_accuracy >= 0.95
    assert free.test_accuracy <= 0.65 and control.test_accuracy <= 0.65
    assert learned.test_accuracy - free.test_accuracy >= 0.3
    assert learned.loss[-1] < 0.01 < 0.6 < free.loss[-1]
    # the numbers the notebook quotes
    assert round(100 * free.test_accuracy, 1) == 57.8
    assert round(100 * learned.test_accuracy, 1) == 98.6


@pytest.mark.parametrize("seed", range(12))
def test_the_gap_holds_for_every_seed_the_notebook_mentions(seed):
    result = run_experiment("idiom", seed=seed)
    assert result[LEARNED].test_accuracy >= 0.95
    assert result[PARAMETER_FREE].test_accuracy <= 0.65


def test_one_deciding_word_does_not_separate_them():
    result = run_experiment("keyword", seed=5)
    assert result[PARAMETER_FREE].test_accuracy > 0.95
    assert result[LEARNED].test_accuracy > 0.95


def test_runs_are_reproducible_and_well_formed(experiment):
    again = run_experiment("idiom", (PARAMETER_FREE, LEARNED), seed=5)
    for name in (PARAMETER_FREE, LEARNED):
        run = experiment[name]
        np.testing.assert_array_equal(run.loss, again[name].loss)
        assert run.loss.shape == run.train_accuracy.shape == (151,)
        assert run.loss[0] == pytest.approx(math.log(2), abs=0.05)        # untrained: a coin toss
        np.testing.assert_array_equal(run.snapshot_steps, np.arange(0, 151, 5))
        assert run.snapshot_weights.shape == (31, len(EXAMPLES), 5, 5)
        np.testing.assert_allclose(run.snapshot_weights.sum(-1), 1.0)
        assert run.accuracy_by_pair.mean() == pytest.approx(run.test_accuracy)   # 128 test sentences per pair
    free, learned = experiment[PARAMETER_FREE], experiment[LEARNED]
    np.testing.assert_array_equal(free.snapshot_weights[0], free.snapshot_weights[-1])   # nothing to train
    assert np.abs(learned.snapshot_weights[0] - learned.weights).max() > 0.5
    assert learned.weights[0, 0, 2] > 0.9 and learned.weights[0, 2, 0] > 0.9          # piece <-> cake
    assert free.weights[0, 0, 2] < 0.1
    assert free.attention_parameters == 0 and learned.attention_parameters == 768


def test_experiment_table_and_lookup(experiment):
    table = experiment.table()
    assert "57.8%" in table and "98.6%" in table and "802" in table
    with pytest.raises(KeyError, match="No model 'oracle'"):
        experiment["oracle"]


def test_run_experiment_rejects_bad_settings():
    with pytest.raises(ValueError, match="Unknown task"):
        run_experiment("poetry")
    with pytest.raises(ValueError, match="Unknown model 'transformer'"):
        run_experiment(models=("transformer",))
    with pytest.raises(ValueError, match="at least one model"):
        run_experiment(models=())
    with pytest.raises(ValueError, match="steps should be at least 1"):
        run_experiment(steps=0)
    with pytest.raises(ValueError, match="lr should be a finite number greater than 0"):
        run_experiment(lr=-0.1)
    assert list(run_experiment(models=PARAMETER_FREE, steps=2).runs) == [PARAMETER_FREE]


def test_plot_loss_curves_draws_one_line_per_model(experiment):
    ax = plot_loss_curves(experiment)
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == [f"{n}: test accuracy {experiment[n].test_accuracy:.1%}" for n in MODELS]
    with pytest.raises(TypeError, match="needs the result of run_experiment"):
        plot_loss_curves({"loss": [1, 2]})


# ----------------------------------------------------------------------------- the widget's data

def test_training_snapshot_follows_the_step(experiment):
    start, end = training_snapshot(experiment, 0), training_snapshot(experiment, 150)
    assert start["tokens"] == EXAMPLES[0].split() and start["label"] == 1
    assert (start["step"], end["step"]) == (0, 150)
    np.testing.assert_array_equal(start["models"][PARAMETER_FREE]["weights"],
                                  end["models"][PARAMETER_FREE]["weights"])
    assert end["models"][LEARNED]["weights"][0, 2] > 0.9 > 0.5 > start["models"][LEARNED]["weights"][0, 2]
    assert end["models"][LEARNED]["loss"] == experiment[LEARNED].loss[150]
    between = training_snapshot(experiment, 33, "break a leg tonight !")
    assert between["step"] == 30 and between["tokens"][0] == "break"
    assert len(between["models"][LEARNED]["loss_curve"]) == 31


def test_training_snapshot_rejects_bad_requests(experiment):
    with pytest.raises(ValueError, match="between 0 and 150"):
        training_snapshot(experiment, 151)
    with pytest.raises(TypeError, match="whole number"):
        training_snapshot(experiment, 2.5)
    with pytest.raises(ValueError, match="not one of the recorded examples"):
        training_snapshot(experiment, 0, "piece of bread today .")
    with pytest.raises(ValueError, match="index 0 to 3"):
        training_snapshot(experiment, 0, 4)


# ----------------------------------------------------------------------------- the widget

def test_widget_follows_its_controls(experiment):
    w = training_widget(experiment, step=0)
    assert isinstance(w, TrainingWidget)
    assert w.picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert w.result["step"] == 0
    before = w.result["models"][LEARNED]["weights"].copy()
    w.children[0].value = 150                                           # slide to the end of training
    assert w.result["step"] == 150
    assert np.abs(w.result["models"][LEARNED]["weights"] - before).max() > 0.5
    assert "step 150" in w.children[3].value
    w.children[1].value = 1                                             # the literal twin
    assert w.result["tokens"] == EXAMPLES[1].split() and w.result["label"] == 0
    assert "literal" in w.children[3].value
    assert math.isfinite(w.last_update_ms)


def test_widget_rejects_what_it_cannot_show(experiment):
    with pytest.raises(TypeError, match="needs the result of helpers.learning.run_experiment"):
        training_widget({"runs": {}})
    with pytest.raises(ValueError, match="has no 'learned Q, K, V' model"):
        training_widget(run_experiment(models=PARAMETER_FREE, steps=2))
    with pytest.raises(ValueError, match="between 0 and 150"):
        training_widget(experiment, step=500)
