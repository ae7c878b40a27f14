"""Notebook 11's widget: its data converges to the exact answer, skips causal tiles; the widget answers."""
import numpy as np
import pytest

from helpers.attention_torch import causal_mask, scaled_dot_product_attention
from helpers.widgets.flash import FlashTilesWidget, demo_inputs, flash_widget_data


@pytest.mark.parametrize("causal", [False, True])
def test_after_every_tile_the_output_row_is_attention_over_the_keys_seen_so_far(causal):
    Q, K, V = demo_inputs(32)
    full = scaled_dot_product_attention(Q, K, V, causal_mask(32) if causal else None)   # (32, 4)
    for query in (0, 13, 31):
        data = flash_widget_data(Q, K, V, query, 8, causal, 4)
        for tiles, y in enumerate(data["y"][1:], start=1):   # keys 0 … 4 · tiles − 1, those the query may see
            seen = min(4 * tiles, data["visible"])
            exact = scaled_dot_product_attention(Q[query:query + 1], K[:seen], V[:seen])[0]
            np.testing.assert_allclose(y, exact.numpy(), atol=1e-12, err_msg=f"query {query}, {tiles} tiles")
        np.testing.assert_allclose(data["y"][-1], full[query].numpy(), atol=1e-12)
        np.testing.assert_allclose(data["exact"], full[query].numpy(), atol=1e-12)
        assert data["gap"] < 1e-12 and np.all(np.diff(data["m"][1:]) >= 0)       # m never falls


def test_causal_tiles_in_the_future_change_nothing():
    Q, K, V = demo_inputs(32)
    data = flash_widget_data(Q, K, V, 9, 3, True, 4)      # query 9 sees keys 0 … 9: tiles 0, 1, 2 only
    assert data["computed"] == 3 and data["visible"] == 10
    assert np.all(data["m"][3:] == data["m"][3]) and np.all(data["l"][3:] == data["l"][3])
    assert data["tiles"][2].tolist() == [2, 2, 1, 0, 0, 0, 0, 0]
    early = flash_widget_data(Q, K, V, 9, 1, True, 4)
    assert early["gap"] > 0.01                              # one tile of three: not yet the answer


def test_demo_keys_are_scaled_by_two_and_queries_and_values_are_not():
    Q, K, V = demo_inputs(T=2000)                                    # 8,000 draws each: std within about 2%
    assert K.std().item() == pytest.approx(2.0, rel=0.1)
    assert Q.std().item() == pytest.approx(1.0, rel=0.1) and V.std().item() == pytest.approx(1.0, rel=0.1)


def test_the_widget_redraws_when_each_control_moves():
    w = FlashTilesWidget(tiles_done=2, query=21)
    pictures = {w.picture.value}
    for control, value in ((w.tiles_done, 5), (w.query, 3), (w.causal, True)):
        control.value = value
        assert w.result["tiles_done"] == w.tiles_done.value and w.result["query"] == w.query.value
        pictures.add(w.picture.value)
    assert len(pictures) == 4
    assert "skipped" in w.reading.value and "after <b>5 of 8</b>" in w.reading.value
    w.tiles_done.value = 0
    assert "nothing seen yet" in w.reading.value


def test_the_frame_stays_on_the_last_tile_computed_when_the_rest_are_skipped():
    w = FlashTilesWidget(tiles_done=8, query=3, causal=True)              # query 3 sees tile 0 alone
    assert w.result["computed"] == 1 and w._picture.frame.get_xy()[0] == -0.5   # around tile 0, not tile 7
    w.causal.value = False
    assert w._picture.frame.get_xy()[0] == 8 - 1.5


def test_skipped_tiles_are_marked_and_each_exact_value_carries_its_entrys_marker():
    """Not by colour alone: a × on every skipped tile (none without causal), and each dashed exact line ends in the
    marker of the output entry it belongs to."""
    w = FlashTilesWidget(tiles_done=2, query=21, causal=True)
    marks = {tuple(xy) for xy in w._picture.skipped.get_offsets().tolist()}
    assert marks == {(float(j), float(i)) for i, j in np.argwhere(w.result["tiles"] == 0)} and len(marks) == 28
    w.causal.value = False
    assert len(w._picture.skipped.get_offsets()) == 0
    pairs = [(line.get_marker(), line.get_color(), exact.get_marker(), exact.get_color())
             for line, exact in zip(w._picture.y_lines, w._picture.exact)]
    assert len({m for m, *_ in pairs}) == 4 and all(m == m2 and c == c2 for m, c, m2, c2 in pairs)
