"""helpers.widgets.common.interactive_now: the first state is computed at once, exactly once."""
import ipywidgets as widgets

from helpers.widgets.common import interactive_now


def test_the_function_has_run_once_when_the_widget_is_built():
    calls = []

    def show(x=2):
        calls.append(x)
        return x * 10

    w = interactive_now(show, x=widgets.IntSlider(value=2, min=0, max=5))
    assert w.result == 20 and calls == [2]
    w.children[0].value = 3
    assert w.result == 30 and calls == [2, 3]


def test_a_function_that_returns_nothing_is_run_again_only_once():
    calls = []
    w = interactive_now(lambda x=1: calls.append(x), x=widgets.IntSlider(value=1))
    assert w.result is None and 1 <= len(calls) <= 2
