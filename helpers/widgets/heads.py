"""Notebook 09's widget: a sentence, a head and a mask; that head's weights as an HTML heatmap.

A thin shell over helpers.heads.head_pattern_data (tested without a browser)."""
import html

import ipywidgets as widgets

from helpers.heads import BATCH_SENTENCES, MASK_TYPES, PAD, demo_model, head_pattern_data
from helpers.widgets.common import LiveWidget, html_heatmap, offered, reading_style


class HeadsWidget(LiveWidget):
    """Pick a sentence, a head and a mask type; see that head's attention weights. [0] sentence, [1] head slider,
    [2] mask buttons, [3] the heatmap and its reading. `.result`: the latest head_pattern_data dict."""
    def __init__(self, sentence: str = BATCH_SENTENCES[1], head: int = 0, mask_type: str = "none", model=None):
        self.model = demo_model() if model is None else model
        self.sentence = offered(widgets.Dropdown(options=BATCH_SENTENCES, description="sentence",
                                                 layout=widgets.Layout(width="420px")), sentence, "sentence")
        self.head = offered(widgets.IntSlider(min=0, max=self.model.n_heads - 1, description="head"), head, "head")
        self.mask = offered(widgets.ToggleButtons(options=MASK_TYPES, description="mask"), mask_type, "mask_type")
        super().__init__([self.sentence, self.head, self.mask], [])

    def compute(self) -> dict:
        return head_pattern_data(self.sentence.value, self.head.value, self.mask.value, self.model)

    def show(self, data: dict) -> None:
        tokens, n = data["tokens"], data["length"]
        picture = html_heatmap(data["W"], tokens, tokens, vmin=0, vmax=1,
                               title=f"head {data['head']} (heads 0–{self.model.n_heads - 1}), mask: {self.mask.value}")
        hidden, pads = int((~data["mask"]).sum()), len(tokens) - n
        reading = (f"Rows are queries, columns keys. {hidden} of {len(tokens) ** 2} pairs hidden (weight 0). "
                   + (f"The {n} real words give {data['on_padding']:.0%} of their attention (on average) to "
                      f"the {pads} {html.escape(PAD)} keys." if pads else "This sentence is the longest: no padding."))
        self.reading.value = (f"<div style='display:flex;flex-wrap:wrap;align-items:flex-start'>{picture}"
                              f"<div style='{reading_style()};max-width:300px'>{reading}</div></div>")
