"""helpers.widgets.common: a LiveWidget computes and shows at once and on every move; themes and widths."""
import re

import ipywidgets as widgets


def test_heatmap_labels_take_the_theme_text_colour():
    from helpers.widgets.common import html_heatmap

    table = html_heatmap([[1.0, 2.0]], ["a"], ["x", "y"], title="t")
    labels = re.findall(r"<th style='([^']*)'", table)                # the column and the row labels
    assert len(labels) == 4 and all(re.findall(r"(?<![-\w])color\s*:\s*([^;']+)", style)[-1:] == ["inherit"]
                                    for style in labels), labels


def test_html_heatmap_writes_white_on_the_darkest_cell_and_black_on_the_lightest():
    from helpers.widgets.common import html_heatmap

    table = html_heatmap([[0.0, 1.0]], ["a"], ["dark", "light"])
    assert "background:rgb(68,1,84);color:white" in table           # viridis' dark purple end
    assert "background:rgb(253,231,37);color:black" in table        # its yellow end


def test_live_widget_pictures_never_grow_wider_than_the_cell(presenting):
    from helpers.widgets.common import FastFigure, LiveWidget, picture

    class Demo(LiveWidget):
        def __init__(self):
            self.slider = widgets.IntSlider(value=1)
            self.figure = FastFigure((4, 3))
            self.figure.fig.add_subplot()
            self.own = widgets.Image(format="png", layout=widgets.Layout(width="900px", height="600px"))
            row = widgets.HBox([widgets.HTML("matrices"), self.own])
            super().__init__([self.slider], [picture(self.figure), row])

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


def test_a_live_widget_computes_once_when_built_and_once_per_move():
    from helpers.widgets.common import LiveWidget

    class Counter(LiveWidget):
        def __init__(self):
            self.calls, self.slider, self.picture = [], widgets.IntSlider(value=2, min=0, max=5), widgets.Image()
            super().__init__([self.slider], [self.picture])

        def compute(self):
            self.calls.append(self.slider.value)
            if self.slider.value == 0:
                raise ValueError("zero is not allowed here")
            return 10 * self.slider.value

        def show(self, data):
            self.reading.value = str(data)

    w = Counter()
    assert w.calls == [2] and w.result == 20 and w.reading.value == "20"
    w.slider.value = 3
    assert w.calls == [2, 3] and w.result == 30 and w.reading.value == "30"
    w.slider.value = 0                                        # a typed input it cannot read: said, not raised
    assert w.result is None and "zero is not allowed here" in w.reading.value
    assert w.picture.layout.display == "none"            # no picture of the last good input beside the error
    w.slider.value = 4
    assert w.result == 40 and w.picture.layout.display is None and w.children[-1] is w.reading


def test_a_live_widget_shows_its_last_picture_or_reading_where_widgets_cannot_run():
    import base64

    from helpers.widgets.common import LiveWidget

    class Demo(LiveWidget):
        def __init__(self, nested: bool, picture: bool):
            self.slider, self.picture = widgets.IntSlider(value=1), widgets.Image(format="png")
            outputs = [widgets.HBox([widgets.HTML("matrices"), self.picture])] if nested else [self.picture]
            super().__init__([self.slider], outputs if picture else [])

        def compute(self):
            if self.slider.value == 0:
                raise ValueError("zero is not allowed here")
            return self.slider.value

        def show(self, data):
            self.picture.value, self.reading.value = bytes([data]) * 3, f"<b>{data}</b>"

    view = "application/vnd.jupyter.widget-view+json"   # ipywidgets 8's bundle; 7 displays itself without one
    for nested in (False, True):
        w = Demo(nested, picture=True)
        w.slider.value = 7                                           # the picture as last drawn, not as first
        bundle = w._repr_mimebundle_()
        assert bundle.get(view, {"model_id": w.model_id})["model_id"] == w.model_id
        assert (view in bundle) == (int(widgets.__version__.split(".")[0]) >= 8)   # the live widget, where shown
        assert base64.b64decode(bundle["image/png"]) == bytes([7]) * 3 and "text/html" not in bundle
    w.slider.value = 0                                               # a failed update: its error, not the old picture
    assert "zero is not allowed" in w._repr_mimebundle_()["text/html"] and "image/png" not in w._repr_mimebundle_()
    bundle = Demo(False, picture=False)._repr_mimebundle_()         # no picture among its outputs: its reading
    assert bundle["text/html"] == "<b>1</b>" and "image/png" not in bundle


def test_log_sliders_read_out_plain_numbers():
    """The readout is formatted by d3-format in the browser, where '.3g' writes T = 100,000 as '1.00e+5': no 'g' or
    'e' type on a log slider (',.0f' writes 100,000; ',.3r' writes 1,000, 12.6 and 0.0100)."""
    from helpers.widgets.cost import CostWidget
    from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget

    for slider in (CostWidget().T, SoftmaxTemperatureWidget().scale):
        assert isinstance(slider, widgets.FloatLogSlider) and slider.readout_format[-1] not in "eg"
