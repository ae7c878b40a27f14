"""Notebook 04's widget: step through training and watch what the attention learns.

A thin shell over helpers.learning.training_snapshot. Slide the training step:
the loss of both models is marked on their curves, the parameter-free weights
stay exactly where they are (there is nothing in them to train), and the
learned weights move until the words of an idiom find each other. Pick another
sentence to compare an idiom with its literal twin.

Drawing uses blitting: the axes, curves, labels and the parameter-free weights
(which no step changes) are drawn once into a background, and a step only
redraws the learned weights, their numbers, two markers and the titles. A new
sentence changes the tick labels and the parameter-free weights, so it redraws
everything once.
"""
from __future__ import annotations

import io
import time

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from helpers.learning import LEARNED, PARAMETER_FREE, Experiment, T, training_snapshot
from helpers.plotting import COLORS

_MODEL_COLOR = {PARAMETER_FREE: COLORS["static"], LEARNED: COLORS["contextual"]}


class _Picture:
    """Three panels: both loss curves with a marker, parameter-free weights, learned weights."""

    def __init__(self, experiment: Experiment):
        self.names = [n for n in (PARAMETER_FREE, LEARNED) if n in experiment.runs]
        with plt.ioff():
            self.fig, axes = plt.subplots(1, 1 + len(self.names), figsize=(4.2 + 3.4 * len(self.names), 3.7),
                                          dpi=72, gridspec_kw={"width_ratios": [1.25] + [1] * len(self.names)})
        self.fig.subplots_adjust(left=0.07, right=0.99, top=0.86, bottom=0.2, wspace=0.45)
        self.ax_loss, self.ax_w = axes[0], list(axes[1:])
        ax = self.ax_loss
        self.markers = {}
        for name in self.names:
            run = experiment[name]
            ax.plot(np.arange(len(run.loss)), run.loss, color=_MODEL_COLOR[name], lw=2, label=name)
            (self.markers[name],) = ax.plot([], [], "o", ms=9, color=_MODEL_COLOR[name], animated=True)
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_ylabel("training loss (log scale)")
        ax.legend(loc="lower left", fontsize=10)
        self.cursor = ax.axvline(0, color="#444444", lw=1, ls="--", animated=True)
        self.title_loss = ax.set_title(" ", animated=True, fontsize=12)
        self.images, self.texts, self.titles = [], [], []
        for ax, name in zip(self.ax_w, self.names):
            moves = name != PARAMETER_FREE  # the parameter-free weights belong to the background
            self.images.append(ax.imshow(np.zeros((T, T)), vmin=0, vmax=1, cmap="viridis", animated=moves))
            self.texts.append([[ax.text(j, i, "", ha="center", va="center", fontsize=9, animated=moves)
                                for j in range(T)] for i in range(T)])
            self.titles.append(ax.set_title(" ", animated=moves, fontsize=12))
            ax.tick_params(length=0)
            for spine in ax.spines.values():
                spine.set_visible(False)
        self.ax_w[0].set_ylabel("each word (row) attends to ...")
        self.background = None
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
            ax.set_xticks(range(T), data["tokens"], rotation=45, fontsize=11)
            ax.set_yticks(range(T), data["tokens"], fontsize=11)
        for image, texts, title, name in zip(self.images, self.texts, self.titles, self.names):
            if name == PARAMETER_FREE:
                self._fill(image, texts, data["models"][name]["weights"])
                title.set_text(f"{name} (never changes)")
        self.tokens = list(data["tokens"])
        self.fig.canvas.draw()  # everything that is not animated
        self.background = self.fig.canvas.copy_from_bbox(self.fig.bbox)

    def png(self, data: dict) -> bytes:
        if data["tokens"] != self.tokens:
            self._set_sentence(data)
        canvas = self.fig.canvas
        canvas.restore_region(self.background)
        step = data["step"]
        self.cursor.set_xdata([step, step])
        self.ax_loss.draw_artist(self.cursor)
        for name in self.names:
            m = data["models"][name]
            self.markers[name].set_data([step], [m["loss"]])
            self.ax_loss.draw_artist(self.markers[name])
        self.title_loss.set_text(f"step {step}: loss " + " vs ".join(
            f"{data['models'][n]['loss']:.3f}" for n in self.names))
        self.ax_loss.draw_artist(self.title_loss)
        for ax, image, texts, title, name in zip(self.ax_w, self.images, self.texts, self.titles, self.names):
            if name == PARAMETER_FREE:
                continue  # already in the background: no step changes it
            self._fill(image, texts, data["models"][name]["weights"])
            ax.draw_artist(image)
            for row in texts:
                for text in row:
                    ax.draw_artist(text)
            title.set_text(f"{name}, step {step}")
            ax.draw_artist(title)
        pixels = np.asarray(canvas.buffer_rgba())
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


class TrainingWidget(widgets.VBox):
    """children: [0] training step (slider), [1] sentence (dropdown), [2] the picture, [3] the numbers.

    `.result` holds the latest training_snapshot dict; `.last_update_ms` how long
    the last update took (computing + drawing).
    """

    def __init__(self, experiment: Experiment, step: int | None = None, example: int = 0):
        if not isinstance(experiment, Experiment):
            raise TypeError("training_widget needs the result of helpers.learning.run_experiment(), "
                            f"but got {type(experiment).__name__}.")
        missing = [n for n in (PARAMETER_FREE, LEARNED) if n not in experiment.runs]
        if missing:
            raise ValueError(f"The experiment has no {missing[0]!r} model: run it with "
                             f"models=({PARAMETER_FREE!r}, {LEARNED!r}).")
        self.experiment = experiment
        every = int(np.diff(experiment[LEARNED].snapshot_steps[:2])[0]) if experiment.steps > 1 else 1
        step = experiment.steps if step is None else step
        training_snapshot(experiment, step, example)  # a bad step or example fails here, clearly
        self.step = widgets.IntSlider(value=step, min=0, max=experiment.steps, step=every,
                                      description="step", continuous_update=True)
        self.sentence = widgets.Dropdown(options=[(s, k) for k, s in enumerate(experiment.examples)],
                                         value=example, description="sentence")
        self.picture = widgets.Image(format="png")
        self.reading = widgets.HTML()
        self.result = None
        self.last_update_ms = float("nan")
        self._picture = _Picture(experiment)
        super().__init__([self.step, self.sentence, self.picture, self.reading])
        self.step.observe(self._update, names="value")
        self.sentence.observe(self._update, names="value")
        self._update()

    def _update(self, _change=None) -> None:
        start = time.perf_counter()
        data = training_snapshot(self.experiment, self.step.value, self.sentence.value)
        self.picture.value = self._picture.png(data)
        self.result = data
        self.last_update_ms = 1000 * (time.perf_counter() - start)
        tokens = data["tokens"]
        verdict = "an idiom" if data["label"] else "literal"
        learned = data["models"][LEARNED]["weights"]
        head, partner = tokens[0], tokens[2]
        self.reading.value = (
            f"“{' '.join(tokens)}” is <b>{verdict}</b>. At step {data['step']}, in the learned model "
            f"<i>{head}</i> gives <b>{learned[0, 2]:.2f}</b> of its attention to <i>{partner}</i> and "
            f"<i>{partner}</i> gives <b>{learned[2, 0]:.2f}</b> to <i>{head}</i> "
            f"(parameter-free: {data['models'][PARAMETER_FREE]['weights'][0, 2]:.2f} and "
            f"{data['models'][PARAMETER_FREE]['weights'][2, 0]:.2f}, at every step). "
            f"Training accuracy: parameter-free {data['models'][PARAMETER_FREE]['train_accuracy']:.0%}, "
            f"learned {data['models'][LEARNED]['train_accuracy']:.0%}."
            f"<br><small>update took {self.last_update_ms:.0f} ms</small>"
        )


def training_widget(experiment: Experiment, step: int | None = None, example: int = 0) -> TrainingWidget:
    """Build the widget over a finished experiment (display it by making it the last line of a cell)."""
    return TrainingWidget(experiment, step, example)
