"""helpers.learning (notebook 04's lookup and experiment) and its widget, helpers.widgets.learning."""
import dataclasses
import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from stored_notebooks import printed, prose

from helpers import learning
from helpers.attention_torch import count_parameters
from helpers.learning import (
    EXAMPLES,
    LEARNED,
    MLP_READOUT,
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
    training_snapshot,
)
from helpers.running_example import SENTENCE_MONEY, embed, random_table
from helpers.similarity import cosine
from helpers.widgets.learning import TrainingWidget


@pytest.fixture(scope="module")
def experiment():
    """The notebook's run: seed 5, all the models."""
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


def test_learned_values_fold_into_the_linear_readout():
    """readout(mean(W E W_vᵀ)) = mean(W E) (R W_v)ᵀ + b: the values-only control is a linear readout of attempt 1."""
    torch.manual_seed(3)
    model = build_model(VALUES_ONLY, 16).double()
    table = torch.tensor(random_table(len(learning.VOCAB), 16, 10_005))   # train_model's static table at seed 5
    E = table[torch.from_numpy(make_dataset("idiom", 5).test_ids)]  # (512, 5, 16)
    with torch.no_grad():
        R, b, W_v = model.readout.weight, model.readout.bias, model.attention.W_v.weight
        folded = ParameterFreeAttention()(E).mean(dim=-2) @ (R @ W_v).T + b
        torch.testing.assert_close(model(E), folded)


def test_build_model_counts():
    counts = {name: count_parameters(build_model(name, 16)) for name in MODELS}
    assert counts == {PARAMETER_FREE: 34, LEARNED: 3 * 16 * 16 + 34, VALUES_ONLY: 16 * 16 + 34,
                      MLP_READOUT: 16 * 44 + 44 + 44 * 2 + 2}
    assert counts[MLP_READOUT] == 838 > counts[LEARNED] == 802
    assert count_parameters(build_model(MLP_READOUT, 16).attention) == 0
    scores = build_model(LEARNED, 16).double()(torch.zeros(3, 5, 16, dtype=torch.float64))
    assert scores.shape == (3, 2)


# ----------------------------------------------------------------------------- the task

def test_labels_follow_the_idiom_table():
    assert [label_of(s.split()) for s in EXAMPLES] == [1, 0, 1, 0]
    assert [label_of(s.split(), "keyword") for s in EXAMPLES] == [1, 0, 0, 1]


def test_dataset_is_balanced_disjoint_and_seeded():
    data = make_dataset("idiom", seed=5)
    assert data.train_ids.shape == (512, 5) and data.test_ids.shape == (512, 5)
    assert data.train_labels.sum() == 256 and data.test_labels.sum() == 256
    train, test = set(data.sentences("train")), set(data.sentences("test"))
    assert len(train) == 512 and len(test) == 512 and not train & test
    assert set(EXAMPLES) <= test
    assert idiom_rate_by_word(data) == {"piece": 0.5, "break": 0.5, "cake": 0.5, "leg": 0.5}
    for sentence, label in zip(data.sentences("test"), data.test_labels):
        assert label == label_of(sentence.split())
    again = make_dataset("idiom", seed=5)
    np.testing.assert_array_equal(again.train_ids, data.train_ids)
    assert not np.array_equal(make_dataset("idiom", seed=6).train_ids, data.train_ids)
    keyword = make_dataset("keyword", seed=5)
    assert all(label == ("cake" in s.split()) for s, label in zip(keyword.sentences(), keyword.train_labels))


def test_the_static_table_is_random_and_seeded():
    table = random_table(len(learning.VOCAB), 16, 10_005)
    assert table.shape == (len(learning.VOCAB), 16)
    np.testing.assert_array_equal(table, random_table(len(learning.VOCAB), 16, 10_005))
    assert not np.allclose(table, random_table(len(learning.VOCAB), 16, 10_006))
    assert 0.7 < table.std() < 1.3


# ----------------------------------------------------------------------------- the experiment

def test_learned_qkv_beat_parameter_free_by_a_wide_margin(experiment):
    free, learned, control = experiment[PARAMETER_FREE], experiment[LEARNED], experiment[VALUES_ONLY]
    assert learned.test_accuracy >= 0.95
    assert free.test_accuracy <= 0.65 and control.test_accuracy <= 0.65
    assert learned.test_accuracy - free.test_accuracy >= 0.3
    assert learned.loss[-1] < 0.01 < 0.6 < free.loss[-1]
    # the parameter-free model does train (its readout is not stuck at the start): the gap is not an accident
    assert free.loss[-1] < math.log(2) - 0.02 and free.loss[-1] < free.loss[0] - 0.02
    assert free.train_accuracy[-1] > 0.55
    # the numbers the notebook quotes
    assert round(100 * free.test_accuracy, 1) == 57.8
    assert round(100 * free.train_accuracy[-1], 1) == 59.2
    assert round(100 * learned.test_accuracy, 1) == 98.6
    assert round(100 * control.test_accuracy, 1) == 57.8
    assert int(np.flatnonzero(learned.loss < 0.01)[0]) == 57


def test_an_mlp_readout_solves_the_toy_task_but_leaves_the_words_general(experiment):
    free, learned, mlp = experiment[PARAMETER_FREE], experiment[LEARNED], experiment[MLP_READOUT]
    assert mlp.parameters == 838 and mlp.attention_parameters == 0
    assert round(100 * mlp.test_accuracy, 1) == 99.0
    np.testing.assert_array_equal(mlp.outputs, free.outputs)          # its attention is attempt 1
    assert free.outputs.shape == (len(EXAMPLES), 5, 16) and learned.outputs.shape == (len(EXAMPLES), 5, 16)
    piece = [cosine(run.outputs[0, 0], run.outputs[1, 0]) for run in (free, learned)]
    assert round(piece[0], 2) == 0.98 and round(piece[1], 2) == -0.74  # the numbers the notebook quotes
    assert [round(c, 2) for c in _head_cosines(learned)] == [-0.74, -0.48]


@pytest.mark.parametrize("seed", [0, 5])
def test_the_mlp_readout_control_holds_on_other_seeds(seed):
    assert run_experiment("idiom", MLP_READOUT, seed=seed)[MLP_READOUT].test_accuracy >= 0.95


@pytest.mark.parametrize("lr", [0.01, 0.1])
def test_a_longer_budget_does_not_rescue_parameter_free(lr):
    run = run_experiment("idiom", PARAMETER_FREE, steps=2000, lr=lr, seed=5, record_every=100)[PARAMETER_FREE]
    assert run.test_accuracy <= 0.65
    assert run.train_accuracy[-1] > 0.6                                   # it trained, to its best
    assert run.loss[-1] == pytest.approx(0.6526, abs=1e-4)               # the same optimum for both rates
    assert round(100 * run.test_accuracy, 1) == 57.6 and round(100 * run.train_accuracy[-1], 1) == 62.3


def _head_cosines(run):
    """Cosine of piece's y across the twins 0/1 and of break's y across 2/3 (they differ only in the partner)."""
    return [cosine(run.outputs[a, 0], run.outputs[b, 0]) for a, b in ((0, 1), (2, 3))]


def _notebook_row(name: str) -> list[int]:
    """One row of notebook 04's table of seeds 0 to 15, in percent."""
    return [int(v) for v in re.search(rf"\| {re.escape(name)} ((?:\| \d+ % )+)\|", prose("04"))[1].split()[1::3]]


def test_notebook_04_quotes_the_ranges_of_its_table():
    train, test = _notebook_row("parameter-free, training"), _notebook_row("parameter-free, test")
    others = test[:5] + test[6:]                                          # seed 5 is the exception
    assert len(train) == len(test) == len(_notebook_row("learned Q, K, V, test")) == 16
    assert f"below 50 % on 15 of 16 ({min(others)}–{max(others)} %; seed 5 is the exception;" in prose("04")
    assert f"({min(train)}–{max(train)} % training accuracy)" in prose("04")


#: Where the head words (piece, break) look after training, seeds 0 to 15: at their partner only in the idioms,
#: only in the literal pairs, or neither pattern (piece looks at neither partner); each seed checked by the test below.
HEAD_PATTERN = dict(enumerate(["literal"] * 5 + ["idiom", "idiom", "literal", "literal", "literal", "idiom", "neither",
                                                 "idiom", "neither", "idiom", "idiom"]))


@pytest.mark.parametrize("seed", range(16))
def test_the_gap_holds_for_every_seed_the_notebook_mentions(seed):
    result = run_experiment("idiom", seed=seed)
    free, learned = result[PARAMETER_FREE], result[LEARNED]
    measured = [f"{a:.0%}" for a in (free.train_accuracy[-1], free.test_accuracy, learned.test_accuracy)]
    rows = ("parameter-free, training", "parameter-free, test", "learned Q, K, V, test")
    assert [f"{_notebook_row(row)[seed]}%" for row in rows] == measured    # the notebook's table, as measured
    assert learned.test_accuracy >= 0.98                                   # the notebook: "at least 98 %"
    assert free.test_accuracy <= 0.58                                      # "at most 58 %"
    assert free.loss[-1] < free.loss[0] and free.train_accuracy[-1] > 0.5   # it trains; it just cannot generalise
    # below chance on the test half, a coin toss on all 1,024 sentences: seed 5 is the one exception
    everything = (free.train_accuracy[-1] + free.test_accuracy) / 2
    if seed == 5:
        assert free.test_accuracy > 0.5 and round(100 * everything, 1) == 58.5
    else:
        low, high = map(int, re.search(r"a coin toss \((\d+)–(\d+) %\) on 15 of 16 seeds", prose("04")).groups())
        assert free.test_accuracy < 0.5 and low <= float(f"{100 * everything:.0f}") <= high
        if f"{free.test_accuracy:.0%}" == "50%":   # the table's rounding, said in the prose
            assert (f"seed {seed}'s 50 % is {round(512 * free.test_accuracy)} of 512 test sentences, "
                    f"{100 * free.test_accuracy:.1f} %") in prose("04")
    # the per-token claim as the notebook states it: some head word turns around, parameter-free keeps both
    assert min(_head_cosines(free)) > 0.9
    assert min(_head_cosines(learned)) < 0
    # "in all of them the pattern depends on the pair": a word's weight on its partner turns around between twins
    w = learned.weights                                                    # (4, T, T): the idioms and their twins
    assert max(abs(w[a][i, j] - w[a + 1][i, j]) for a in (0, 2) for i, j in ((0, 2), (2, 0))) > 0.5
    idiom, literal = (all(w[a][0, 2] > 0.5 for a in pairs) for pairs in ((0, 2), (1, 3)))   # head word -> partner
    pattern = "idiom" if idiom and not literal else "literal" if literal and not idiom else "neither"
    assert pattern == HEAD_PATTERN[seed] and (pattern != "neither" or max(w[0][0, 2], w[1][0, 2]) < 0.5)
    if seed == 0:   # the prose's counter-example: piece -> cake, piece -> leg
        assert f"piece → cake {w[0][0, 2]:.2f}, piece → leg {w[1][0, 2]:.2f}" in prose("04")


def test_notebook_04_counts_the_seeds_by_where_the_head_words_look():
    counts = {kind: sum(p == kind for p in HEAD_PATTERN.values()) for kind in ("idiom", "literal", "neither")}
    assert (f"only in the idioms on {counts['idiom']} of seeds 0 to 15 (seed 5 among them) and only in the literal "
            f"pairs on {counts['literal']}") in prose("04")
    assert f"on the other {counts['neither']}, *piece* looks at neither" in prose("04")


@pytest.mark.parametrize("seed, lr", [(5, 0.1), (11, 0.1), (7777, 0.01)])
def test_the_per_token_claim_holds_off_the_default_settings(seed, lr):
    result = run_experiment("idiom", seed=seed, lr=lr)
    assert min(_head_cosines(result[PARAMETER_FREE])) > 0.9
    assert min(_head_cosines(result[LEARNED])) < 0


def test_before_training_a_head_word_turns_around_on_one_seed_only():
    """The notebook's row 'before training': random W_q, W_k already move the words, but a head word turns around
    on one seed of 0 to 15 only, seed 5's break, by chance (its accuracy is a coin toss)."""
    below = {}
    for seed in range(16):
        untrained = run_experiment("idiom", LEARNED, steps=0, seed=seed)[LEARNED]
        assert 0.45 <= untrained.test_accuracy <= 0.55
        if turned := [round(c, 2) for c in _head_cosines(untrained) if c < 0]:
            below[seed] = turned
    assert below == {5: [-0.21]}
    assert "on one seed only, this seed 5's *break* (−0.21)" in prose("04")
    assert re.search(r"before training +break -0\.21", printed("04"))              # the notebook's own row


def test_piece_alone_is_not_where_every_run_puts_the_pair():
    """Why the notebook does not promise a *piece* that changes: seeds 11 and 13 leave it where it was."""
    for seed, lr in ((11, 0.01), (13, 0.01), (5, 0.1)):
        piece, brk = _head_cosines(run_experiment("idiom", LEARNED, seed=seed, lr=lr)[LEARNED])
        assert round(piece, 2) == 1.0 and brk < -0.5                     # the notebook: "piece stays put (1.00)"


@pytest.mark.parametrize("seed", range(16))
def test_the_split_mirrors_every_accident(seed):
    """Every non-deciding word's surplus of idioms in the training half is its deficit in the test half."""
    data = make_dataset("idiom", seed)
    for word in learning.FILLERS + learning.TIMES + learning.ENDINGS:
        surplus = []
        for ids, labels in ((data.train_ids, data.train_labels), (data.test_ids, data.test_labels)):
            has = (ids == learning.VOCAB.index(word)).any(axis=1)
            surplus.append(int(2 * labels[has].sum() - has.sum()))
        assert surplus[1] == -surplus[0]


def test_one_deciding_word_does_not_separate_them():
    result = run_experiment("keyword", seed=5)
    assert result[PARAMETER_FREE].test_accuracy > 0.95
    assert result[LEARNED].test_accuracy > 0.95
    assert round(100 * result[PARAMETER_FREE].test_accuracy, 1) == 99.4


@pytest.mark.parametrize("seed", range(16))
def test_parameter_free_can_learn_a_keyword_task_on_any_seed(seed):
    """The positive control, and the notebook's assert (> 0.9) on every seed it might be rerun with."""
    run = run_experiment("keyword", PARAMETER_FREE, seed=seed)[PARAMETER_FREE]
    assert run.test_accuracy > 0.94 and run.train_accuracy[-1] > 0.9   # the notebook: "at least 94 %"


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
    assert "57.8%" in table and "98.6%" in table and "802" in table      # notebook 04's stored table
    rows = table.splitlines()[1:]
    assert [row.split("  ")[0].strip() for row in rows] == list(MODELS)   # a row per model, in order
    for name, row in zip(MODELS, rows):
        run = experiment[name]                                            # the lookup: by name, each its own run
        assert run is experiment.runs[name] and run.name == name
        assert row.split()[-3:] == [f"{run.parameters:,}", f"{run.loss[-1]:.3f}", f"{run.test_accuracy:.1%}"]
    ended = dataclasses.replace(experiment[LEARNED], loss=np.array([0.9, 0.25]))   # the last loss, not one before it
    assert dataclasses.replace(experiment, runs={LEARNED: ended}).table().splitlines()[1].split()[-2] == "0.250"
    with pytest.raises(KeyError):
        experiment["no such model"]


def test_accuracy_by_pair_counts_each_head_and_partner_pair_alone():
    """Untrained (steps=0), the model is its seeded initialisation: each cell is the accuracy on the test sentences
    with that head AND that partner (the cells' mean alone cannot tell: a union of rows and columns averages alike)."""
    run = run_experiment("idiom", LEARNED, steps=0, seed=5)[LEARNED]
    data, table = make_dataset("idiom", 5), torch.from_numpy(random_table(len(learning.VOCAB), 16, 10_005))
    torch.manual_seed(5)
    model = build_model(LEARNED, 16).double()
    with torch.no_grad():
        right = (model(table[data.test_ids]).argmax(-1) == torch.from_numpy(data.test_labels)).numpy()
    words = np.array(learning.VOCAB)[data.test_ids]                                   # (N_test, T) as text
    expected = [[right[(words[:, 0] == h) & (words[:, 2] == p)].mean() for p in learning.PARTNERS]
                for h in learning.HEADS]
    np.testing.assert_allclose(run.accuracy_by_pair, expected)
    assert np.ptp(expected) > 0.05                                                    # the cells differ


def test_run_experiment_takes_one_model_name():
    assert list(run_experiment(models=PARAMETER_FREE, steps=2).runs) == [PARAMETER_FREE]


def test_plot_loss_curves_draws_one_line_per_model(experiment):
    ax = plot_loss_curves(experiment)
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == [f"{n}: test accuracy {experiment[n].test_accuracy:.1%}" for n in MODELS]
    for name, line in zip(MODELS, ax.get_lines()):                  # step 0 (untrained) at x = 0, every step after
        np.testing.assert_array_equal(line.get_xdata(), np.arange(experiment.steps + 1))
        np.testing.assert_array_equal(line.get_ydata(), experiment[name].loss)
    guessing = [line for line in ax.get_lines() if line.get_label().startswith("_")]
    assert [tuple(line.get_ydata()) for line in guessing] == [(np.log(2), np.log(2))]   # the dotted "ln 2" line


# ----------------------------------------------------------------------------- the widget's data

def test_the_learned_weights_find_the_pair_within_about_30_steps(experiment):
    """Notebook 04's widget opens at step 10, before the pair is found: piece -> cake passes 0.9 by step 30."""
    piece_cake = {int(s): training_snapshot(experiment, int(s))["models"][LEARNED]["weights"][0, 2]
                  for s in experiment[LEARNED].snapshot_steps}
    assert piece_cake[10] < 0.5 and min(s for s, w in piece_cake.items() if w > 0.9) <= 30
    assert "The widget opens at step 10; slide right and watch the learned weights find the pair within about 30 "\
           "steps" in prose("04")


def test_notebook_04_answers_its_twenty_step_question(experiment):
    """'With STEPS = 20, is the pair found?': the step-20 snapshot of the 150-step run is the 20-step run's end."""
    at_20 = training_snapshot(experiment, 20)["models"][LEARNED]["weights"][0, 2]
    short = run_experiment("idiom", LEARNED, steps=20, seed=5)[LEARNED]
    assert np.isclose(short.weights[0][0, 2], at_20) and short.weights[1][0, 2] < 0.01
    assert f"*piece* already puts {at_20:.2f} of its weight on *cake*" in prose("04")
    assert f"a 20-step run tests at {100 * short.test_accuracy:.1f} % (training loss {short.loss[-1]:.3f})" in prose(
        "04")


def test_training_snapshot_follows_the_step(experiment):
    start, end = training_snapshot(experiment, 0), training_snapshot(experiment, 150)
    assert start["tokens"] == EXAMPLES[0].split() and start["label"] == 1
    assert (start["step"], end["step"]) == (0, 150)
    np.testing.assert_array_equal(start["models"][PARAMETER_FREE]["weights"],
                                  end["models"][PARAMETER_FREE]["weights"])
    assert end["models"][LEARNED]["weights"][0, 2] > 0.9 > 0.5 > start["models"][LEARNED]["weights"][0, 2]
    assert end["models"][LEARNED]["loss"] == experiment[LEARNED].loss[150]
    between = training_snapshot(experiment, 33, 2)
    assert between["step"] == 30 and between["tokens"][0] == "break"
    assert len(between["models"][LEARNED]["loss_curve"]) == 31


def test_training_snapshot_rejects_bad_requests(experiment):
    with pytest.raises(ValueError, match="between 0 and 150"):
        training_snapshot(experiment, 151)


# ----------------------------------------------------------------------------- the widget

def test_a_redraw_changes_the_picture(experiment):
    """Blitting redraws only what changes, and a step move still changes the picture and the heatmaps."""
    w = TrainingWidget(experiment, step=0)
    picture, reading = w.picture.value, w.reading.value
    w.step.value = 50
    assert w.picture.value != picture and w.reading.value != reading
    w.step.value = 0
    assert w.picture.value == picture and w.reading.value == reading      # back where it was, pixel for pixel
    w.sentence.value = 3
    assert w.picture.value == picture                      # the loss curves belong to the models, not the sentence
    assert w.reading.value != reading and "break a cake tonight" in w.reading.value


def test_widget_follows_its_controls(experiment):
    w = TrainingWidget(experiment, step=0)
    assert isinstance(w, TrainingWidget)
    assert w.picture.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert w.result["step"] == 0
    before = w.result["models"][LEARNED]["weights"].copy()
    w.children[0].value = 150                                           # slide to the end of training
    assert w.result["step"] == 150
    assert np.abs(w.result["models"][LEARNED]["weights"] - before).max() > 0.5
    assert "step 150" in w.children[3].value
    for step in range(0, 151, 5):                                       # a step where the two directions differ
        w.children[0].value = step
        W = w.result["models"][LEARNED]["weights"]                      # head -> partner, then partner -> head
        if f"{W[0, 2]:.2f}" != f"{W[2, 0]:.2f}":
            break
    assert f"gives <b>{W[0, 2]:.2f}</b> of" in w.children[3].value and f"gives <b>{W[2, 0]:.2f}</b> to" in \
        w.children[3].value and f"{W[0, 2]:.2f}" != f"{W[2, 0]:.2f}"
    w.children[1].value = 1                                             # the literal twin
    assert w.result["tokens"] == EXAMPLES[1].split() and w.result["label"] == 0
    assert "literal" in w.children[3].value
    assert math.isfinite(w.last_update_ms) and "ms" not in w.children[3].value   # measured, not shown


def test_widget_reaches_the_last_step_of_any_budget():
    odd = run_experiment(steps=12)                                      # 12 is not a multiple of 5
    w = TrainingWidget(odd, step=7)
    assert w.result["step"] == 5 and w.children[0].value == 5          # snapped to a recorded step
    assert list(w.children[0].options) == [0, 5, 10, 12]
    w.children[0].value = 12
    assert w.result["step"] == 12 and "step 12" in w.children[3].value


def test_widget_is_readable_in_a_room(experiment):
    w = TrainingWidget(experiment)
    fig = w._picture.figure.fig
    assert fig.dpi >= 90
    sizes = [t.get_fontsize() for t in fig.findobj(plt.Text) if t.get_text().strip()]
    assert sizes and min(sizes) >= 11


def test_widget_rejects_a_step_past_training(experiment):
    with pytest.raises(ValueError, match="between 0 and 150"):
        TrainingWidget(experiment, step=500)
