"""Notebook 04's widget: step through training (helpers.learning.training_snapshot) and watch the attention.

FastFigure blitting: a step redraws only the learned weights, their numbers, the markers and the titles;
a new sentence redraws everything once. The slider offers exactly the recorded steps.
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from helpers.learning import LEARNED, PARAMETER_FREE, Experiment, T, training_snapshot
from helpers.plotting import COLORS
from helpers.widgets.common import FastFigure, LiveWidget, reading_style

_MODEL_COLOR = {PARAMETER_FREE: COLORS["static"], LEARNED: COLORS["contextual"]}
#: Font sizes (points), fixed: in presenter mode FastFigure grows the whole picture (higher dpi).
_TEXT, _NUMBER = 13, 12
_DPI = 90


class _Picture:
    """Three panels: both loss curves with a marker, parameter-free weights, learned weights."""

    def __init__(self, experiment: Experiment):
        self.names = [n for n in (PARAMETER_FREE, LEARNED) if n in experiment.runs]
        self.figure = FastFigure(figsize=(4.6 + 3.6 * len(self.names), 4.3), dpi=_DPI)
        fig = self.figure.fig
        axes = fig.subplots(1, 1 + len(self.names), gridspec_kw={"width_ratios": [1.3] + [1] * len(self.names)})
        fig.subplots_adjust(left=0.075, right=0.99, top=0.88, bottom=0.22, wspace=0.4)
        self.ax_loss, self.ax_w = axes[0], list(axes[1:])
        ax = self.ax_loss
        self.markers = {}
        for name in self.names:
            run = experiment[name]
            ax.plot(np.arange(len(run.loss)), run.loss, color=_MODEL_COLOR[name], lw=2.5, label=name)
            (self.markers[name],) = ax.plot([], [], "o", ms=10, color=_MODEL_COLOR[name])
        ax.set_yscale("log")
        ax.set_xlabel("training step", fontsize=_TEXT)
        ax.set_ylabel("training loss (log scale)", fontsize=_TEXT)
        ax.tick_params(labelsize=_NUMBER)
        ax.legend(loc="lower left", fontsize=_NUMBER)
        self.cursor = ax.axvline(0, color="#444444", lw=1.5, ls="--")
        self.title_loss = ax.set_title(" ", fontsize=_TEXT)
        self.images, self.texts, self.titles = [], [], []
        dynamic = [self.cursor, *self.markers.values(), self.title_loss]
        for ax, name in zip(self.ax_w, self.names):
            image = ax.imshow(np.zeros((T, T)), vmin=0, vmax=1, cmap="viridis")
            texts = [[ax.text(j, i, "", ha="center", va="center", fontsize=_NUMBER) for j in range(T)]
                     for i in range(T)]
            title = ax.set_title(" ", fontsize=_TEXT)
            self.images.append(image)
            self.texts.append(texts)
            self.titles.append(title)
            if name != PARAMETER_FREE:  # the parameter-free weights belong to the background
                dynamic += [image, *(t for row in texts for t in row), title]
            ax.tick_params(length=0)
            for spine in ax.spines.values():
                spine.set_visible(False)
        self.ax_w[0].set_ylabel("each word (row) attends to ...", fontsize=_TEXT)
        self.dynamic = dynamic
        self.tokens = None

    @staticmethod
    def _fill(image, texts, W) -> None:
        image.set_data(W)
        for i in range(T):
            for j in range(T):
                texts[i][j].set_text(f"{W[i, j]:.2f}")
                texts[i][j].set_color("white" if W[i, j] < 0.55 else "black")

    def _set_sentence(self, data: dict) -> None:
        for ax in self.ax_w:
            ax.set_xticks(range(T), data["tokens"], rotation=45, fontsize=_NUMBER)
            ax.set_yticks(range(T), data["tokens"], fontsize=_NUMBER)
        for image, texts, title, name in zip(self.images, self.texts, self.titles, self.names):
            if name == PARAMETER_FREE:
                self._fill(image, texts, data["models"][name]["weights"])
                title.set_text(f"{name} (never changes)")
        self.tokens = list(data["tokens"])
        self.figure.set_dynamic(self.dynamic)  # the background changed: draw it again on the next png()

    def png(self, data: dict) -> bytes:
        if data["tokens"] != self.tokens:
            self._set_sentence(data)
        step = data["step"]
        self.cursor.set_xdata([step, step])
        for name in self.names:
            self.markers[name].set_data([step], [data["models"][name]["loss"]])
        self.title_loss.set_text(f"step {step}: loss " + " vs ".join(
            f"{data['models'][n]['loss']:.3f}" for n in self.names))
        for image, texts, title, name in zip(self.images, self.texts, self.titles, self.names):
            if name != PARAMETER_FREE:
                self._fill(image, texts, data["models"][name]["weights"])
                title.set_text(f"{name}, step {step}")
        return self.figure.png()


class TrainingWidget(LiveWidget):
    """Step through training over a finished experiment: [0] training step, [1] sentence, [2] the picture,
    [3] the numbers. example: the index of the first sentence shown. `.result`: a training_snapshot dict.
    """

    def __init__(self, experiment: Experiment, step: int | None = None, example: int = 0):
        self.experiment = experiment
        step = experiment.steps if step is None else step
        first = training_snapshot(experiment, step, example)  # snaps the step to a recorded one
        recorded = [int(s) for s in experiment[LEARNED].snapshot_steps]  # 0, 5, ..., and the last step
        self.step = widgets.SelectionSlider(options=recorded, value=first["step"], description="step",
                                            continuous_update=True, layout=widgets.Layout(width="60%"))
        self.sentence = widgets.Dropdown(options=[(s, k) for k, s in enumerate(experiment.examples)],
                                         value=example, description="sentence")
        self.picture, self.reading = widgets.Image(format="png"), widgets.HTML()
        self._picture = _Picture(experiment)
        super().__init__([self.step, self.sentence], [self.picture, self.reading])

    def compute(self) -> dict:
        return training_snapshot(self.experiment, self.step.value, self.sentence.value)

    def show(self, data: dict) -> None:
        self.picture.value = self._picture.png(data)
        tokens = data["tokens"]
        verdict = "an idiom" if data["label"] else "literal"
        learned = data["models"][LEARNED]["weights"]
        free = data["models"][PARAMETER_FREE]
        head, partner = tokens[0], tokens[2]
        self.reading.value = (
            f"<div style='{reading_style()}'>"
            f"“{' '.join(tokens)}” is <b>{verdict}</b>. At step {data['step']}, in the learned model "
            f"<i>{head}</i> gives <b>{learned[0, 2]:.2f}</b> of its attention to <i>{partner}</i> and "
            f"<i>{partner}</i> gives <b>{learned[2, 0]:.2f}</b> to <i>{head}</i> "
            f"(parameter-free: {free['weights'][0, 2]:.2f} and {free['weights'][2, 0]:.2f}, at every step). "
            f"Training accuracy: parameter-free {free['train_accuracy']:.0%}, "
            f"learned {data['models'][LEARNED]['train_accuracy']:.0%}.</div>"
        )

