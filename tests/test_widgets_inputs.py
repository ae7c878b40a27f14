"""Widgets refuse a bad starting example with a clear message."""
import pytest

from helpers.learning import PARAMETER_FREE, VALUES_ONLY, run_experiment
from helpers.widgets.learning import TrainingWidget


def test_training_widget_lists_the_examples():
    with pytest.raises(ValueError, match=r"example should be the index, 0 to 3, of a sentence of .*, but got 7"):
        TrainingWidget(run_experiment(steps=10), example=7)
    with pytest.raises(ValueError, match=r"example should be the index, 0 to 3, .* but got 'piece of cake today \.'"):
        TrainingWidget(run_experiment(steps=10), example="piece of cake today .")
    with pytest.raises(ValueError, match=r"example should be the index, 0 to 3, .* but got 1\.0"):
        TrainingWidget(run_experiment(steps=10), example=1.0)


def test_training_widget_names_a_model_it_needs():
    with pytest.raises(ValueError, match="did not train 'learned Q, K, V': run_experiment"):
        TrainingWidget(run_experiment(steps=10, models=(PARAMETER_FREE, VALUES_ONLY)))
