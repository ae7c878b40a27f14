"""Notebook 04: what learned queries, keys and values buy, measured.

    soft_lookup(query, keys, values)      a dictionary lookup made soft: (d,), (n, d), (n,) -> (n,), number
    ParameterFreeAttention()              attempt 1, softmax(E Eᵀ/√d) E: (B, T, d) -> (B, T, d), 0 parameters
    make_dataset(task, seed)              the toy idiom task: 1,024 five-word sentences, half for training
    run_experiment(...)                   train parameter-free vs learned attention under one budget
    training_snapshot(experiment, step)   what the widget draws at one training step
    plot_loss_curves(experiment)          the training loss of every model, on one log-scale axis

The task: "piece of cake today ." is an idiom, "piece of leg today ." is not. Each word appears equally in both labels,
so only the head + partner *pair* decides. The models share frozen random embeddings and a linear readout (not the
MLP_READOUT control) and differ only in their attention layer. Everything runs in float64 on the CPU."""
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers import validation as check
from helpers.attention_torch import SelfAttention, attention_weights, count_parameters
from helpers.measure import cpu_threads
from helpers.running_example import random_table
from helpers.similarity import softmax

# ---------------------------------------------------------------- the soft dictionary

def soft_lookup(query, keys, values) -> tuple[np.ndarray, float]:
    """A dictionary lookup made soft: (d,), (n, d), (n,) -> (weights (n,), blend of every value)."""
    query, keys, values = (check.as_array(x, n) for x, n in zip((query, keys, values), ("query", "keys", "values")))
    if query.ndim != 1 or keys.shape != values.shape + query.shape:   # keys (n, d): one per value, d like the query
        raise ValueError(f"query (d,), keys (n, d) and values (n,) should fit, but have shapes {query.shape}, "
                         f"{keys.shape} and {values.shape}.")
    weights = softmax(keys @ query)          # (n,) how well each key matches the query, sum to 1
    return weights, float(weights @ values)  # and the blend: one number


# ---------------------------------------------------------------- attempt 1 as a module
class ParameterFreeAttention(nn.Module):
    """Attempt 1 in PyTorch: Y = softmax(E Eᵀ / √d) E, (..., T, d) -> (..., T, d). No parameters."""
    def forward(self, E: torch.Tensor) -> torch.Tensor:
        if not isinstance(E, torch.Tensor) or E.dim() < 2 or not E.is_floating_point():
            raise TypeError(f"E should be a float torch.Tensor (..., T, d), such as (T, d), but got {check.describe(E)}"
                            f"{f' of {E.dtype}' if hasattr(E, 'dtype') else ''}.")
        self.last_weights = attention_weights(E, E)   # (..., T, T): E is the queries and the keys ...
        return self.last_weights @ self.values(E)     # ... and the values: (..., T, d)

    def values(self, E: torch.Tensor) -> torch.Tensor:
        return E

    def weights(self, E: torch.Tensor) -> torch.Tensor:
        """The (..., T, T) attention weights that forward uses on E."""
        self(E)
        return self.last_weights


class FixedAttentionLearnedValues(ParameterFreeAttention):
    """A control: attempt 1's weights, but mixing learned values e_j W_v. (B, T, d) -> (B, T, d_v)."""
    def __init__(self, d_model: int, d_v: int):
        super().__init__()
        self.W_v = nn.Linear(d_model, d_v, bias=False)

    def values(self, E: torch.Tensor) -> torch.Tensor:
        return self.W_v(E)                            # (B, T, d_v)


class SentenceClassifier(nn.Module):
    """attention -> average over T -> linear readout, or with `hidden` a small MLP: (B, T, d) -> (B, 2)."""
    def __init__(self, attention: nn.Module, d_out: int, n_classes: int = 2, hidden: int | None = None):
        super().__init__()
        self.attention = attention
        self.readout = nn.Linear(d_out, n_classes) if hidden is None else nn.Sequential(
            nn.Linear(d_out, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(self, E: torch.Tensor) -> torch.Tensor:
        Y = self.attention(E)  # (B, T, d) -> (B, T, d_out)
        return self.readout(Y.mean(dim=-2))  # (B, d_out) -> (B, 2)


PARAMETER_FREE, LEARNED = "parameter-free", "learned Q, K, V"
VALUES_ONLY, MLP_READOUT = "fixed attention, learned V", "parameter-free, MLP readout"
MODELS = (PARAMETER_FREE, LEARNED, VALUES_ONLY, MLP_READOUT)
#: Hidden units of MLP_READOUT's readout: 16·44 + 44 + 44·2 + 2 = 838 parameters at d_model = 16,
#: a little more than the learned model's 3·16·16 + 34 = 802.
MLP_HIDDEN = 44


def build_model(name: str, d_model: int) -> SentenceClassifier:
    """One of MODELS, wrapped in the shared readout."""
    return {PARAMETER_FREE: lambda: SentenceClassifier(ParameterFreeAttention(), d_model),
            LEARNED: lambda: SentenceClassifier(SelfAttention(d_model, d_model), d_model),
            VALUES_ONLY: lambda: SentenceClassifier(FixedAttentionLearnedValues(d_model, d_model), d_model),
            MLP_READOUT: lambda: SentenceClassifier(ParameterFreeAttention(), d_model, hidden=MLP_HIDDEN)}[name]()


# ---------------------------------------------------------------- the idiom task
HEADS, PARTNERS = ("piece", "break"), ("cake", "leg")
#: The idioms and what they mean; every other head + partner pair is literal.
IDIOMS = {("piece", "cake"): "very easy", ("break", "leg"): "good luck"}
FILLERS = ("of", "a", "the", "my", "your", "his", "her", "that")
TIMES, ENDINGS = ("today", "now", "again", "please", "tonight", "later", "too", "then"), (".", "!", "?", "...")
VOCAB = HEADS + PARTNERS + FILLERS + TIMES + ENDINGS
T = 5  # head, filler, partner, closing word, ending
#: Sentences the figures use; make_dataset keeps them out of the training set.
EXAMPLES = ("piece of cake today .", "piece of leg today .", "break a leg tonight !", "break a cake tonight !")
_INDEX = {word: i for i, word in enumerate(VOCAB)}


def label_of(words, task: str = "idiom") -> int:
    """1 or 0 for a sentence's five words. 'idiom': is head + partner an idiom? 'keyword': is 'cake' there?"""
    return int((words[0], words[2]) in IDIOMS if task == "idiom" else words[2] == "cake")


@dataclass(frozen=True)
class Dataset:
    """Sentences as word indices into VOCAB: ids (N, T) and labels (N,), for training and for testing."""
    train_ids: np.ndarray
    train_labels: np.ndarray
    test_ids: np.ndarray
    test_labels: np.ndarray

    def sentences(self, split: str = "train") -> list[str]:
        """The sentences of one split ('train' or 'test') as text."""
        return [" ".join(VOCAB[i] for i in row) for row in (self.train_ids if split == "train" else self.test_ids)]


def make_dataset(task: str = "idiom", seed: int = 0) -> Dataset:
    """All 1,024 sentences, split (seeded) 512 train / 512 test, each pair halved; EXAMPLES are in test.
    task: 'idiom' (the pair decides, the experiment) or 'keyword' (the word 'cake' decides)."""
    if task not in ("idiom", "keyword"):   # label_of reads any other text as 'keyword'
        raise ValueError(f"task should be 'idiom' or 'keyword', but got {task!r}.")
    rng, examples, train, test = np.random.default_rng(seed), [s.split() for s in EXAMPLES], [], []
    for head, partner in itertools.product(HEADS, PARTNERS):  # split each pair in half: balanced everywhere
        group = [list(s) for s in itertools.product([head], FILLERS, [partner], TIMES, ENDINGS)]
        group = [group[i] for i in rng.permutation(len(group))]
        held, rest = [s for s in group if s in examples], [s for s in group if s not in examples]
        half = len(group) // 2
        test += held + rest[: half - len(held)]
        train += rest[half - len(held):]
    train = [train[i] for i in rng.permutation(len(train))]
    def encode(sentences):   # -> ids (N, T), labels (N,)
        return (np.array([[_INDEX[w] for w in s] for s in sentences], dtype=np.int64),
                np.array([label_of(s, task) for s in sentences], dtype=np.int64))
    return Dataset(*encode(train), *encode(test))


def idiom_rate_by_word(dataset: Dataset, words: Sequence[str] = HEADS + PARTNERS) -> dict[str, float]:
    """For each word: the fraction of training sentences containing it whose label is 1."""
    return {word: float(dataset.train_labels[(dataset.train_ids == _INDEX[word]).any(axis=1)].mean()) for word in words}


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
    steps: int
    examples: tuple[str, ...]
    runs: dict[str, ModelRun]

    def __getitem__(self, name: str) -> ModelRun:
        return self.runs[name]

    def table(self) -> str:
        """A short text table: parameters, final loss, test accuracy per model."""
        width = max(len(n) for n in self.runs)
        lines = [f"{'model':<{width}}  {'parameters':>10}  {'final loss':>10}  {'test accuracy':>13}"]
        lines += [f"{name:<{width}}  {run.parameters:>10,}  {run.loss[-1]:>10.3f}  {run.test_accuracy:>13.1%}"
                  for name, run in self.runs.items()]
        return "\n".join(lines)


def train_model(name: str, dataset: Dataset, *, steps: int = 150, lr: float = 0.01, d_model: int = 16,
                seed: int = 0, record_every: int = 5) -> ModelRun:
    """Train one model full-batch with Adam for `steps` updates; return its curves and weights."""
    table = torch.from_numpy(random_table(len(VOCAB), d_model, 10_000 + seed))  # (V, d) static embeddings, frozen
    torch.manual_seed(seed)
    model = build_model(name, d_model).double()
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)  # the readout learns in every model
    E_train = table[torch.from_numpy(dataset.train_ids)]  # (N, T, d)
    y_train = torch.from_numpy(dataset.train_labels)  # (N,)
    E_examples = table[torch.tensor([[_INDEX[w] for w in s.split()] for s in EXAMPLES])]  # (4, T, d)
    losses, accuracies, snap_steps, snaps = [], [], [], []
    frozen = count_parameters(model.attention) == 0  # nothing in the attention can change: average it once
    with cpu_threads(1):  # one thread, one order of summing: a re-run gives the same sums
        if frozen:
            with torch.no_grad():
                pooled = model.attention(E_train).mean(dim=-2)  # (N, T, d_out) -> (N, d_out)
        for step in range(steps + 1):
            logits = model.readout(pooled) if frozen else model(E_train)  # (N, 2)
            loss = F.cross_entropy(logits, y_train)
            losses.append(loss.item())
            accuracies.append(float((logits.argmax(dim=-1) == y_train).double().mean()))
            if step % record_every == 0 or step == steps:
                with torch.no_grad():
                    snap_steps.append(step)
                    snaps.append(model.attention.weights(E_examples).numpy().copy())
            if step < steps:
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        with torch.no_grad():
            test_ids = torch.from_numpy(dataset.test_ids)  # (N_test, T)
            correct = model(table[test_ids]).argmax(dim=-1) == torch.from_numpy(dataset.test_labels)  # (N_test,)
            outputs = model.attention(E_examples).numpy().copy()  # (4, T, d_out)
    by_pair = np.array([[float(correct[(test_ids[:, 0] == _INDEX[head]) & (test_ids[:, 2] == _INDEX[partner])]
                               .double().mean()) for partner in PARTNERS] for head in HEADS])   # (heads, partners)
    return ModelRun(name, count_parameters(model), count_parameters(model.attention), np.array(losses),
                    np.array(accuracies), float(correct.double().mean()), by_pair, np.array(snap_steps),
                    np.stack(snaps), outputs)


def run_experiment(task: str = "idiom", models: Sequence[str] = (PARAMETER_FREE, LEARNED), *, steps: int = 150,
                   lr: float = 0.01, d_model: int = 16, seed: int = 0, record_every: int = 5) -> Experiment:
    """Train each of `models` on the same data, embeddings, seed and budget. task: 'idiom' or 'keyword'."""
    models = (models,) if isinstance(models, str) else tuple(models)
    if unknown := [m for m in models if m not in MODELS]:
        raise ValueError(f"model should be one of {MODELS}, but got {unknown[0]!r}.")
    steps, dataset = check.count(steps, "steps", 0), make_dataset(task, check.count(seed, "seed", 0))   # task too
    runs = {name: train_model(name, dataset, steps=steps, lr=lr, d_model=d_model, seed=seed,
                              record_every=record_every) for name in models}
    return Experiment(task, int(steps), EXAMPLES, runs)


# ---------------------------------------------------------------- what the widget draws
def training_snapshot(experiment: Experiment, step: int, example: int = 0) -> dict:
    """What the training widget shows at one step (snapped to a recorded one) for one example sentence."""
    if not 0 <= step <= experiment.steps:  # the edge: a student may open the widget at any step
        raise ValueError(f"step should be between 0 and {experiment.steps} (the training budget), but got {step}.")
    if not isinstance(example, (int, np.integer)) or not 0 <= example < len(experiment.examples):
        raise ValueError(f"example should be the index, 0 to {len(experiment.examples) - 1}, of a sentence of "
                         f"{experiment.examples}, but got {example!r}.")
    sentence = experiment.examples[example]
    out = {"tokens": sentence.split(), "label": label_of(sentence.split(), experiment.task), "models": {}}
    for name, run in experiment.runs.items():
        k = int(np.searchsorted(run.snapshot_steps, step, side="right") - 1)
        at = out["step"] = int(run.snapshot_steps[k])
        out["models"][name] = {"weights": run.snapshot_weights[k, example], "loss": float(run.loss[at]),
                               "train_accuracy": float(run.train_accuracy[at]), "loss_curve": run.loss[: at + 1]}
    return out


def plot_loss_curves(experiment: Experiment, *, title: str = ""):
    """Training loss against step for every model of `experiment`, log scale. Returns the Axes."""
    import matplotlib.pyplot as plt

    from helpers.plotting import COLORS, PALETTE
    colors = {PARAMETER_FREE: (COLORS["static"], "--"), LEARNED: (COLORS["contextual"], "-"),   # colour, line style
              VALUES_ONLY: (PALETTE[5], "-."), MLP_READOUT: (PALETTE[4], ":")}
    _, ax = plt.subplots(figsize=(7.5, 4.2))
    for name, run in experiment.runs.items():
        color, style = colors[name]
        ax.plot(run.loss, style, lw=2.5, color=color, label=f"{name}: test accuracy {run.test_accuracy:.1%}")
    ax.axhline(np.log(2), color="#555555", lw=1.2, ls=":", zorder=3)   # above the curve that sits on it
    ax.text(experiment.steps, np.log(2) / 1.3, "ln 2: guessing", ha="right", va="top", color="#666666",
            fontsize=plt.rcParams["font.size"] - 2)
    ax.set(yscale="log", xlabel="training step (one full pass over the 512 training sentences)",
           ylabel="training loss (log scale)", title=title)
    ax.legend(loc="lower left")
    return ax
