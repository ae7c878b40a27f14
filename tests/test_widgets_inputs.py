"""Widgets refuse a bad starting example with a clear message."""
import pytest

from helpers.learning import run_experiment
from helpers.widgets.learning import TrainingWidget


def test_training_widget_lists_the_examples():
    with pytest.raises(ValueError, match=r"example should be a sentence from .* or its index 0 to 3, but got 7"):
        TrainingWidget(run_experiment(steps=10), example=7)
