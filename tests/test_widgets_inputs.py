"""Widgets refuse bad arguments when they are built, with the argument's name, what was expected and what came."""
import pytest

from helpers.learning import EXAMPLES, run_experiment
from helpers.widgets.cost import cost_explorer
from helpers.widgets.learning import training_widget
from helpers.widgets.scaling import scaling_widget


@pytest.fixture(scope="module")
def experiment():
    return run_experiment(steps=10)


def test_scaling_widget_takes_only_true_or_false():
    with pytest.raises(TypeError, match=r"scaled should be True or False, but got str \('yes'\)"):
        scaling_widget(64, "yes")
    with pytest.raises(TypeError, match=r"d_k should be a whole number >= 1, but got bool"):
        scaling_widget(True)
    with pytest.raises(ValueError, match=r"d_k should be one of the slider's values \(1, 2, 4"):
        scaling_widget(100)


def test_scaling_widget_update_checks_like_the_constructor():
    w = scaling_widget(64, False)
    with pytest.raises(TypeError, match=r"scaled should be True or False, but got int"):
        w.update(64, 1)
    with pytest.raises(ValueError, match=r"d_k should be one of the slider's values"):
        w.update(65, True)
    assert w.update(128, True)["d_k"] == 128


def test_training_widget_takes_an_example_sentence_or_lists_the_options(experiment):
    w = training_widget(experiment, example=EXAMPLES[2])        # the sentence itself, as training_snapshot allows
    assert w.sentence.value == 2 and w.result["tokens"] == EXAMPLES[2].split()
    with pytest.raises(ValueError, match=r"'piece of bread today .' is not one of the recorded examples: "
                                         r"piece of cake today ., piece of leg today ."):
        training_widget(experiment, example="piece of bread today .")
    with pytest.raises(ValueError, match=r"example should be a sentence from .* or its index 0 to 3, but got 7"):
        training_widget(experiment, example=7)


def test_cost_explorer_refuses_a_d_model_that_is_not_a_whole_number():
    with pytest.raises(TypeError, match=r"d_model should be a whole number, but got str \('512'\)"):
        cost_explorer("512")
    with pytest.raises(ValueError, match=r"d_model should be at least 1, but got 0"):
        cost_explorer(0)
