"""Notebook 04: what learned queries, keys and values buy, measured.

    soft_lookup(query, keys, values)      a dictionary lookup made soft: (d,), (n, d), (n,) -> (n,), scalar
    ParameterFreeAttention()              attempt 1, softmax(E Eᵀ/√d) E: (B, T, d) -> (B, T, d), 0 parameters
    make_dataset(task, seed)              the toy idiom task: 1,024 five-word sentences, half for training
    run_experiment(...)                   train parameter-free vs learned attention under one budget
    training_snapshot(experiment, step)   what the widget draws at one training step
    plot_loss_curves(experiment)          the training loss of every model, on one log-scale axis

The experiment. Every sentence has five words: a head word (piece, break), a
filler, a partner word (cake, leg), a filler and a punctuation mark, e.g.
"piece of cake today ." The label says whether the sentence uses an idiom:
yes for piece+cake ("very easy") and break+leg ("good luck"), no for the
literal pairs piece+leg and break+cake. No single word decides: each head and
each partner appears in idioms exactly as often as in literal sentences. Only
the *pair* decides, so a word must find the right partner, a task-specific
question that similarity between static vectors does not answer.

Two models differ only in their attention layer: the static embeddings are
the same frozen random table, the readout is the same (average the T
contextual vectors, then one linear layer to two scores), and data, seed,
optimiser and number of steps are the same. The readout is held linear on
purpose, to isolate the attention layer; two controls say what that choice
means: learned values with fixed weights (W_v folds into the linear readout,
so it is parameter-free attention again) and parameter-free attention with a
small MLP readout (which can detect the pair from the sentence's average, so a
nonlinear readout solves this toy task too). Everything runs in float64 on the
CPU, so the numbers are reproducible to the printed digits.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers import validation as check
from helpers.attention_torch import SelfAttention, attention_weights

# ---------------------------------------------------------------- the soft dictionary


def soft_lookup(query, keys, values) -> tuple[np.ndarray, float]:
    """Look up `query` softly: weights = softmax(keys @ query), result = weights @ values.

    query (d,), keys (n, d), values (n,) -> (weights (n,), result). A Python
    dict returns the value of the one key equal to the query; this returns a
    blend of every value, weighted by how well each key matches.
    """
    q = check.vector(query, "query")
    K = check.matrix(keys, "keys", "(n, d)")
    v = check.vector(values, "values")
    if K.shape[1] != len(q):
        raise ValueError(f"keys have length {K.shape[1]} but the query has length {len(q)}: "
                         "a query is compared with each key by a dot product, so they need the same length.")
    if K.shape[0] != len(v):
        raise ValueError(f"There are {K.shape[0]} keys but {len(v)} values: every key needs exactly one value.")
    with np.errstate(over="ignore", invalid="ignore"):
        scores = K @ q  # (n,)
    if not np.isfinite(scores).all():
        raise ValueError(f"The scores keys @ query overflow (beyond {np.finfo(np.float64).max:.3g}): the query "
                         "and keys are too large to compare by dot products. Scale them down, e.g. divide both "
                         "by their largest entry.")
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    with np.errstate(over="ignore", invalid="ignore"):
        result = float(weights @ v)
    if not np.isfinite(result):
        raise ValueError("The blend weights @ values overflows float64: the values are too large to add up. "
                         "Scale them down.")
    return weights, result


# ---------------------------------------------------------------- attempt 1 as a module


class ParameterFreeAttention(nn.Module):
    """Attempt 1 in PyTorch: Y = softmax(E Eᵀ / √d) E, (B, T, d) -> (B, T, d).

    It has no parameters: every number it uses comes from E itself.
    """

    def forward(self, E: torch.Tensor) -> torch.Tensor:
        return self.weights(E) @ E  # (B, T, d)

    def weights(self, E: torch.Tensor) -> torch.Tensor:
        """The (B, T, T) attention weights: E is both the queries and the keys."""
        return attention_weights(E, E)


class FixedAttentionLearnedValues(nn.Module):
    """A control: attempt 1's weights, but mixing learned values W_v e_j. (B, T, d) -> (B, T, d_v).

    It has d · d_v parameters, all on the value side: it can change *what*
    each word contributes, not *which* words a word attends to.
    """

    def __init__(self, d_model: int, d_v: int):
        super().__init__()
        self.W_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, E: torch.Tensor) -> torch.Tensor:
        return self.weights(E) @ self.W_v(E)  # (B, T, d_v)

    def weights(self, E: torch.Tensor) -> torch.Tensor:
        return attention_weights(E, E)


class SentenceClassifier(nn.Module):
    """attention layer -> average over the T tokens -> readout: (B, T, d) -> (B, 2) scores.

    The readout is one linear layer (d_out -> 2), or with `hidden` a small MLP
    (d_out -> hidden -> ReLU -> 2).
    """

    def __init__(self, attention: nn.Module, d_out: int, n_classes: int = 2, hidden: int | None = None):
        super().__init__()
        self.attention = attention
        if hidden is None:
            self.readout = nn.Linear(d_out, n_classes)
        else:
            self.readout = nn.Sequential(nn.Linear(d_out, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(self, E: torch.Tensor) -> torch.Tensor:
        return self.head(self.attention(E))  # (B, T, d) -> (B, T, d_out) -> (B, 2)

    def head(self, Y: torch.Tensor) -> torch.Tensor:
        """The readout on the contextual vectors: (B, T, d_out) -> (B, 2)."""
        return self.readout(Y.mean(dim=-2))


PARAMETER_FREE = "parameter-free"
LEARNED = "learned Q, K, V"
VALUES_ONLY = "fixed attention, learned V"
MLP_READOUT = "parameter-free, MLP readout"
MODELS = (PARAMETER_FREE, LEARNED, VALUES_ONLY, MLP_READOUT)
#: Hidden units of MLP_READOUT's readout: 16·44 + 44 + 44·2 + 2 = 838 parameters at d_model = 16,
#: a little more than the learned model's 3·16·16 + 34 = 802.
MLP_HIDDEN = 44


def build_model(name: str, d_model: int, d_k: int | None = None) -> SentenceClassifier:
    """One of MODELS, wrapped in the shared readout. d_k defaults to d_model."""
    d_model = check.positive_int(d_model, "d_model")
    d_k = d_model if d_k is None else check.positive_int(d_k, "d_k")
    if name == PARAMETER_FREE:
        return SentenceClassifier(ParameterFreeAttention(), d_model)
    if name == LEARNED:
        return SentenceClassifier(SelfAttention(d_model, d_k), d_k)
    if name == VALUES_ONLY:
        return SentenceClassifier(FixedAttentionLearnedValues(d_model, d_k), d_k)
    if name == MLP_READOUT:
        return SentenceClassifier(ParameterFreeAttention(), d_model, hidden=MLP_HIDDEN)
    raise ValueError(f"Unknown model {name!r}: choose one of {', '.join(repr(m) for m in MODELS)}.")


# ---------------------------------------------------------------- the idiom task

HEADS = ("piece", "break")
PARTNERS = ("cake", "leg")
#: The idioms and what they mean; every other head + partner pair is literal.
IDIOMS = {("piece", "cake"): "very easy", ("break", "leg"): "good luck"}
FILLERS = ("of", "a", "the", "my", "your", "his", "her", "that")
TIMES = ("today", "now", "again", "please", "tonight", "later", "too", "then")
ENDINGS = (".", "!", "?", "...")
VOCAB = HEADS + PARTNERS + FILLERS + TIMES + ENDINGS
T = 5  # head, filler, partner, time word, ending
TASKS = ("idiom", "keyword")
#: Sentences the figures use; make_dataset keeps them out of the training set.
EXAMPLES = ("piece of cake today .", "piece of leg today .", "break a leg tonight !", "break a cake tonight !")
_INDEX = {word: i for i, word in enumerate(VOCAB)}


def tokens_of(sentence) -> list[str]:
    """'piece of cake today .' (or a list of words) -> its T = 5 words, checked against VOCAB."""
    if isinstance(sentence, str):
        words = sentence.split()
    elif isinstance(sentence, (list, tuple)) and all(isinstance(w, str) for w in sentence):
        words = list(sentence)
    else:
        raise TypeError(f"A sentence should be a string such as {EXAMPLES[0]!r} or a list of words, "
                        f"but got {type(sentence).__name__}.")
    unknown = [w for w in words if w not in _INDEX]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not in the idiom task's vocabulary: {' '.join(VOCAB)}.")
    if len(words) != T or words[0] not in HEADS or words[2] not in PARTNERS:
        raise ValueError(f"A sentence of this task has {T} words: a head ({'/'.join(HEADS)}), a filler, "
                         f"a partner ({'/'.join(PARTNERS)}), a time word and an ending, like {EXAMPLES[0]!r}; "
                         f"got {' '.join(words)!r}.")
    return words


def label_of(sentence, task: str = "idiom") -> int:
    """1 or 0. 'idiom': does the head go with this partner as an idiom? 'keyword': is 'cake' there?"""
    words = tokens_of(sentence)
    _check_task(task)
    if task == "idiom":
        return int((words[0], words[2]) in IDIOMS)
    return int(words[2] == "cake")


def _check_task(task) -> str:
    if task not in TASKS:
        raise ValueError(f"Unknown task {task!r}: choose 'idiom' (the pair decides) or 'keyword' "
                         "(one word decides).")
    return task


@dataclass(frozen=True)
class Dataset:
    """Sentences as word indices into VOCAB: ids (N, T) and labels (N,), for training and for testing."""

    task: str
    train_ids: np.ndarray
    train_labels: np.ndarray
    test_ids: np.ndarray
    test_labels: np.ndarray

    def sentences(self, split: str = "train") -> list[str]:
        """The sentences of one split ('train' or 'test') as text."""
        split = check.one_of(split, "split", ("train", "test"))
        ids = {"train": self.train_ids, "test": self.test_ids}[split]
        return [" ".join(VOCAB[i] for i in row) for row in ids]


def make_dataset(task: str = "idiom", seed: int = 0) -> Dataset:
    """All 2·2·8·8·4 = 1,024 sentences, split at random (seeded) into 512 to train and 512 to test.

    Each head + partner pair is split in half (128 + 128), so each half holds 256 sentences of each
    label and every head and partner appears equally often in both labels. The EXAMPLES are always
    in the test half.
    """
    _check_task(task)
    rng = np.random.default_rng(check.seed(seed))
    all_sentences = [list(s) for s in itertools.product(HEADS, FILLERS, PARTNERS, TIMES, ENDINGS)]
    examples = [s.split() for s in EXAMPLES]
    train, test = [], []
    for head, partner in itertools.product(HEADS, PARTNERS):  # split each pair in half: balanced everywhere
        group = [s for s in all_sentences if s[0] == head and s[2] == partner]
        order = rng.permutation(len(group))
        group = [group[i] for i in order]
        held = [s for s in group if s in examples]
        rest = [s for s in group if s not in examples]
        half = len(group) // 2
        test += held + rest[: half - len(held)]
        train += rest[half - len(held):]
    train = [train[i] for i in rng.permutation(len(train))]

    def encode(sentences):
        ids = np.array([[_INDEX[w] for w in s] for s in sentences], dtype=np.int64)
        labels = np.array([label_of(s, task) for s in sentences], dtype=np.int64)
        return ids, labels

    return Dataset(task, *encode(train), *encode(test))


def _require_dataset(dataset, name: str) -> Dataset:
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{name} should be the Dataset that make_dataset() returns, but got "
                        f"{check.describe(dataset)}.")
    return dataset


def idiom_rate_by_word(dataset: Dataset, words: Sequence[str] = HEADS + PARTNERS) -> dict[str, float]:
    """For each word (one word, or a list): the fraction of training sentences containing it whose label is 1."""
    _require_dataset(dataset, "dataset")
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, (list, tuple)):
        raise TypeError(f"words should be a list of words such as ['piece', 'cake'], but got "
                        f"{check.describe(words)} ({words!r:.40}).")
    rates = {}
    for word in words:
        if word not in _INDEX:
            raise ValueError(f"{word!r} is not in the vocabulary: {' '.join(VOCAB)}.")
        has = (dataset.train_ids == _INDEX[word]).any(axis=1)
        rates[word] = float(dataset.train_labels[has].mean()) if has.any() else float("nan")
    return rates


def static_table(d_model: int = 16, seed: int = 0) -> np.ndarray:
    """The frozen static embeddings: one random N(0, 1) vector per word. (len(VOCAB), d_model)

    They stand in for pretrained word vectors: random, so no pair of words is
    related in advance, and frozen, so the attention layer is the only thing
    that differs between the models.
    """
    d_model = check.positive_int(d_model, "d_model")
    return np.random.default_rng(10_000 + check.seed(seed)).standard_normal((len(VOCAB), d_model))


# ---------------------------------------------------------------- training


@dataclass(frozen=True)
class ModelRun:
    """One model's training, as plain numbers."""

    name: str
    parameters: int  # learnable numbers in the whole model
    attention_parameters: int  # of which in the attention layer
    loss: np.ndarray  # (steps + 1,) cross-entropy on the training set after 0, 1, ..., steps updates
    train_accuracy: np.ndarray  # (steps + 1,)
    test_accuracy: float  # after the last step, on the 512 held-out sentences
    accuracy_by_pair: np.ndarray  # (len(HEADS), len(PARTNERS)) test accuracy of each head + partner pair
    snapshot_steps: np.ndarray  # (n_snapshots,) the steps at which the weights were recorded
    snapshot_weights: np.ndarray  # (n_snapshots, len(EXAMPLES), T, T) attention weights on the EXAMPLES
    outputs: np.ndarray  # (len(EXAMPLES), T, d_out) the final contextual vectors Y of the EXAMPLES

    @property
    def weights(self) -> np.ndarray:
        """The final attention weights on the EXAMPLES: (len(EXAMPLES), T, T)."""
        return self.snapshot_weights[-1]


@dataclass(frozen=True)
class Experiment:
    """Several models trained on one dataset with one budget. experiment[name] -> ModelRun."""

    task: str
    seed: int
    steps: int
    lr: float
    d_model: int
    examples: tuple[str, ...]
    runs: dict[str, ModelRun]

    def __getitem__(self, name: str) -> ModelRun:
        if name not in self.runs:
            raise KeyError(f"No model {name!r} in this experiment; it has {', '.join(map(repr, self.runs))}.")
        return self.runs[name]

    def table(self) -> str:
        """A short text table: parameters, final loss, test accuracy per model."""
        width = max(len(n) for n in self.runs)
        lines = [f"{'model':<{width}}  {'parameters':>10}  {'final loss':>10}  {'test accuracy':>13}"]
        for name, run in self.runs.items():
            lines.append(f"{name:<{width}}  {run.parameters:>10,}  {run.loss[-1]:>10.3f}  "
                         f"{run.test_accuracy:>13.1%}")
        return "\n".join(lines)


def _accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return float((logits.argmax(dim=-1) == labels).double().mean())


def train_model(name: str, dataset: Dataset, *, steps: int = 150, lr: float = 0.01, d_model: int = 16,
                seed: int = 0, record_every: int = 5) -> ModelRun:
    """Train one model full-batch with Adam for `steps` updates; return its curves and weights."""
    _require_dataset(dataset, "dataset")
    seed = check.seed(seed)
    steps = check.positive_int(steps, "steps")
    lr = check.positive_number(lr, "lr")
    record_every = check.positive_int(record_every, "record_every")
    table = torch.tensor(static_table(d_model, seed))  # (V, d) float64, frozen
    torch.manual_seed(seed)
    model = build_model(name, d_model).double()
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)  # the readout learns in every model
    E_train = table[torch.from_numpy(dataset.train_ids)]  # (N, T, d)
    y_train = torch.from_numpy(dataset.train_labels)
    E_examples = table[torch.tensor([[_INDEX[w] for w in s.split()] for s in EXAMPLES])]  # (4, T, d)
    losses, accuracies, snap_steps, snaps = [], [], [], []
    frozen_attention = not any(p.requires_grad for p in model.attention.parameters())
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread is fastest and gives the same sums everywhere
    try:
        if frozen_attention:  # nothing in the attention can change: compute its averaged output once
            with torch.no_grad():
                pooled = model.attention(E_train).mean(dim=-2)  # (N, T, d_out) -> (N, d_out)
        for step in range(steps + 1):
            logits = model.readout(pooled) if frozen_attention else model(E_train)  # (N, 2)
            loss = F.cross_entropy(logits, y_train)
            losses.append(loss.item())
            accuracies.append(_accuracy(logits, y_train))
            if step % record_every == 0 or step == steps:
                with torch.no_grad():
                    snap_steps.append(step)
                    snaps.append(model.attention.weights(E_examples).numpy().copy())
            if step < steps:
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        with torch.no_grad():
            test_ids = torch.from_numpy(dataset.test_ids)
            y_test = torch.from_numpy(dataset.test_labels)
            correct = model(table[test_ids]).argmax(dim=-1) == y_test  # (N_test,)
            outputs = model.attention(E_examples).numpy().copy()  # (4, T, d_out)
    finally:
        torch.set_num_threads(previous_threads)
    by_pair = np.zeros((len(HEADS), len(PARTNERS)))
    for h, head in enumerate(HEADS):
        for p, partner in enumerate(PARTNERS):
            rows = (test_ids[:, 0] == _INDEX[head]) & (test_ids[:, 2] == _INDEX[partner])
            by_pair[h, p] = float(correct[rows].double().mean())
    n_attention = sum(p.numel() for p in model.attention.parameters())
    return ModelRun(
        name=name,
        parameters=sum(p.numel() for p in model.parameters()),
        attention_parameters=n_attention,
        loss=np.array(losses),
        train_accuracy=np.array(accuracies),
        test_accuracy=float(correct.double().mean()),
        accuracy_by_pair=by_pair,
        snapshot_steps=np.array(snap_steps),
        snapshot_weights=np.stack(snaps),
        outputs=outputs,
    )


def run_experiment(task: str = "idiom", models: Sequence[str] = (PARAMETER_FREE, LEARNED), *, steps: int = 150,
                   lr: float = 0.01, d_model: int = 16, seed: int = 0, record_every: int = 5) -> Experiment:
    """Train each of `models` on the same data, embeddings, seed and budget (a fraction of a second each).

    task: 'idiom' (the pair decides, the experiment) or 'keyword' (the word 'cake' decides).
    """
    _check_task(task)
    if isinstance(models, str):
        models = (models,)
    if not isinstance(models, (list, tuple)):
        raise TypeError(f"models should be a list of model names from {', '.join(map(repr, MODELS))}, but got "
                        f"{check.describe(models)} ({models!r:.40}).")
    if not models:
        raise ValueError(f"Give at least one model to train, from {', '.join(map(repr, MODELS))}.")
    for name in models:
        if name not in MODELS:
            raise ValueError(f"Unknown model {name!r}: choose from {', '.join(map(repr, MODELS))}.")
    seed = check.seed(seed)
    dataset = make_dataset(task, seed)
    runs = {name: train_model(name, dataset, steps=steps, lr=lr, d_model=d_model, seed=seed,
                              record_every=record_every) for name in models}
    return Experiment(task, seed, int(steps), float(lr), int(d_model), EXAMPLES, runs)


# ---------------------------------------------------------------- what the widget draws


def training_snapshot(experiment: Experiment, step: int, example: int | str = 0) -> dict:
    """Everything the training widget shows at one step, for one example sentence.

    Returns a dict: step (the recorded step at or before `step`), tokens (T words),
    label, and for each model name: weights (T, T) at that step, loss and
    train_accuracy at that step, and the loss curve up to it.
    """
    if not isinstance(experiment, Experiment):
        raise TypeError(f"training_snapshot needs the result of run_experiment(), but got "
                        f"{check.describe(experiment)}.")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"step should be a whole number, but got {type(step).__name__} ({step!r}).")
    if not 0 <= step <= experiment.steps:
        raise ValueError(f"step should be between 0 and {experiment.steps} (the training budget), but got {step}.")
    if isinstance(example, str):
        if example not in experiment.examples:
            raise ValueError(f"{example!r} is not one of the recorded examples: {', '.join(experiment.examples)}.")
        example = experiment.examples.index(example)
    if isinstance(example, bool) or not isinstance(example, (int, np.integer)) \
            or not 0 <= example < len(experiment.examples):
        raise ValueError(f"example should be a sentence from {experiment.examples} or its index 0 to "
                         f"{len(experiment.examples) - 1}, but got {example!r}.")
    sentence = experiment.examples[example]
    out = {"tokens": sentence.split(), "label": label_of(sentence, experiment.task), "models": {}}
    for name, run in experiment.runs.items():
        k = int(np.searchsorted(run.snapshot_steps, step, side="right") - 1)
        out["step"] = int(run.snapshot_steps[k])
        out["models"][name] = {
            "weights": run.snapshot_weights[k, example],
            "loss": float(run.loss[out["step"]]),
            "train_accuracy": float(run.train_accuracy[out["step"]]),
            "loss_curve": run.loss[: out["step"] + 1],
        }
    return out


def plot_loss_curves(experiment: Experiment, *, ax=None, title: str = ""):
    """Training loss against step for every model of `experiment`, log scale. Returns the Axes."""
    import matplotlib.pyplot as plt

    from helpers.plotting import COLORS, PALETTE

    if not isinstance(experiment, Experiment):
        raise TypeError(f"plot_loss_curves needs the result of run_experiment(), but got {type(experiment).__name__}.")
    colors = {PARAMETER_FREE: COLORS["static"], LEARNED: COLORS["contextual"], VALUES_ONLY: PALETTE[5],
              MLP_READOUT: PALETTE[4]}
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2))
    for name, run in experiment.runs.items():
        ax.plot(np.arange(len(run.loss)), run.loss, lw=2.5, color=colors[name],
                label=f"{name}: test accuracy {run.test_accuracy:.1%}")
    ax.axhline(np.log(2), color="#888888", lw=1, ls=":")
    ax.text(experiment.steps, np.log(2) * 1.08, "ln 2: guessing", ha="right", va="bottom", color="#666666",
            fontsize=plt.rcParams["font.size"] - 2)
    ax.set_yscale("log")
    ax.set_xlabel("training step (one full pass over the 512 training sentences)")
    ax.set_ylabel("training loss (log scale)")
    ax.set_title(title)
    ax.legend(loc="lower left")
    return ax
