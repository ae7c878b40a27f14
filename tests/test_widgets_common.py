"""helpers.widgets.common: interactive_now runs its function at once, exactly once; themes and widths."""
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


def test_heatmap_labels_take_the_theme_text_colour():
    from helpers.widgets.common import html_heatmap

    table = html_heatmap([[1.0, 2.0]], ["a"], ["x", "y"], title="t")
    assert "#333" not in table and "color:inherit" in table


def test_live_widget_pictures_never_grow_wider_than_the_cell(presenting):
    from helpers.widgets.common import FastFigure, LiveWidget, picture

    class Demo(LiveWidget):
        def __init__(self):
            self.slider, self.reading = widgets.IntSlider(value=1), widgets.HTML()
            self.figure = FastFigure((4, 3))
            self.figure.fig.add_subplot()
            self.own = widgets.Image(format="png", layout=widgets.Layout(width="900px", height="600px"))
            row = widgets.HBox([widgets.HTML("matrices"), self.own])
            super().__init__([self.slider], [picture(self.figure), row, self.reading])

        def compute(self):
            return self.slider.value

        def show(self, data):
            self.children[1].value = self.figure.png()

    w = Demo()
    assert w.result == 1
    assert w.children[1].layout.width == "320px"                 # 4 inches at 80 dpi: 1:1 pixels
    for image in (w.children[1], w.own):
        assert image.layout.max_width == "100%"
    assert w.children[1].layout.height == "auto"
    assert w.own.layout.height == "600px" and w.own.layout.object_fit == "contain"   # shrinks, never stretched
    assert w.children[2].layout.flex_flow == "row wrap"          # the picture goes under the matrices if need be
    assert presenting(Demo).own.layout.height == "auto"          # presenting: the height follows the width
