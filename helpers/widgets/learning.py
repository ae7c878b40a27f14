"""Notebook 04's widget: step through training (helpers.learning.training_snapshot) and watch the attention.

The loss curves are blitted (a step moves only the cursor, the markers and the title); the attention weights are
HTML heatmaps, so a new sentence or step costs no matplotlib drawing. The slider offers exactly the recorded steps."""
import ipywidgets as widgets

from helpers.learning import LEARNED, PARAMETER_FREE, Experiment, training_snapshot
from helpers.plotting import COLORS
from helpers.widgets.common import SMALL, TEXT, FastFigure, LiveWidget, html_heatmap, reading_style

_MODEL_COLOR = {PARAMETER_FREE: COLORS["static"], LEARNED: COLORS["contextual"]}


class _LossPicture:
    """Both loss curves, drawn once; a step redraws only the cursor, the markers and the title."""
    def __init__(self, experiment: Experiment):
        self.names, self.markers = (PARAMETER_FREE, LEARNED), {}
        self.figure = FastFigure(figsize=(6.6, 3.4), dpi=90)   # 594 px: full size beside the file browser
        ax = self.figure.fig.subplots(gridspec_kw=dict(left=0.12, right=0.98, top=0.88, bottom=0.17))
        for name in self.names:
            ax.plot(experiment[name].loss, "-" if name == LEARNED else "--", c=_MODEL_COLOR[name], lw=2.5, label=name)
            (self.markers[name],) = ax.plot([], [], "o" if name == LEARNED else "s", ms=10, color=_MODEL_COLOR[name])
        ax.set_yscale("log")
        ax.set_xlabel("training step", fontsize=TEXT)
        ax.set_ylabel("training loss (log scale)", fontsize=TEXT)
        ax.tick_params(labelsize=SMALL)
        ax.legend(loc="center right", fontsize=SMALL)
        self.cursor, self.title = ax.axvline(0, color="#444444", lw=1.5, ls="--"), ax.set_title(" ", fontsize=TEXT)
        self.figure.set_dynamic([self.cursor, *self.markers.values(), self.title])

    def png(self, data: dict) -> bytes:
        step = data["step"]
        self.cursor.set_xdata([step, step])
        for name in self.names:
            self.markers[name].set_data([step], [data["models"][name]["loss"]])
        self.title.set_text(f"step {step}: " + " vs ".join(f"{n} {data['models'][n]['loss']:.3f}" for n in self.names))
        return self.figure.png()


class TrainingWidget(LiveWidget):
    """Step through training over a finished experiment: [0] training step, [1] sentence, [2] the loss curves,
    [3] both models' weights and the reading. example: the first sentence's index. `.result`: training_snapshot's."""
    def __init__(self, experiment: Experiment, step: int | None = None, example: int = 0):
        if missing := [name for name in (PARAMETER_FREE, LEARNED) if name not in experiment.runs]:
            raise ValueError(f"the widget shows {LEARNED!r} beside {PARAMETER_FREE!r}, but this experiment did not "
                             f"train {missing[0]!r}: run_experiment(models=...) needs both.")
        self.experiment, step = experiment, experiment.steps if step is None else step
        first = training_snapshot(experiment, step, example)  # snaps the step to a recorded one
        recorded = [int(s) for s in experiment[LEARNED].snapshot_steps]  # 0, 5, ..., and the last step
        self.step = widgets.SelectionSlider(options=recorded, value=first["step"], description="step",
                                            layout=widgets.Layout(width="60%"))
        self.sentence = widgets.Dropdown(options=[(s, k) for k, s in enumerate(experiment.examples)],
                                         value=example, description="sentence")
        self.picture, self._picture = widgets.Image(format="png"), _LossPicture(experiment)
        super().__init__([self.step, self.sentence], [self.picture])

    def compute(self) -> dict:
        return training_snapshot(self.experiment, self.step.value, self.sentence.value)

    def show(self, data: dict) -> None:
        self.picture.value = self._picture.png(data)
        tokens, step, verdict = data["tokens"], data["step"], "an idiom" if data["label"] else "literal"
        learned, free = data["models"][LEARNED]["weights"], data["models"][PARAMETER_FREE]
        head, partner = tokens[0], tokens[2]
        tables = "".join(html_heatmap(data["models"][name]["weights"], tokens, tokens, vmin=0, vmax=1,
                                      title=f"{name}, step {step}" if name == LEARNED else f"{name} (never changes)")
                         for name in self._picture.names)
        self.reading.value = (
            f"<div style='{reading_style()}'><div style='display:flex;flex-wrap:wrap'>{tables}</div>Each row is a "
            f"word; it says how much that word takes from each word (columns). “{' '.join(tokens)}” is "
            f"<b>{verdict}</b>. At step {step}, in the learned model <i>{head}</i> gives <b>{learned[0, 2]:.2f}</b> of "
            f"its attention to <i>{partner}</i> and <i>{partner}</i> gives <b>{learned[2, 0]:.2f}</b> to <i>{head}</i> "
            f"(parameter-free: {free['weights'][0, 2]:.2f} and {free['weights'][2, 0]:.2f}, at every step). Training "
            f"accuracy: parameter-free {free['train_accuracy']:.1%}, learned "
            f"{data['models'][LEARNED]['train_accuracy']:.1%}.</div>")
