"""helpers.cost: parameter, FLOP and memory arithmetic, and the cost widget."""
import math
import re

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from helpers import cost
from helpers.attention_torch import SelfAttention, count_parameters
from helpers.widgets.cost import CostWidget, memory_bar_html, table_html


def test_forty_gigabytes_per_head_at_T_100000():
    n = cost.score_matrix_bytes(100_000, "float32")
    assert n == 4 * 10**10
    assert cost.format_bytes(n) == "40.0 GB (37.25 GiB)"
    assert cost.score_matrix_bytes(100_000, "bf16", heads=8) == 8 * 2 * 10**10


@pytest.mark.parametrize("name, size", [("float32", 4), ("fp32", 4), ("bfloat16", 2), ("bf16", 2), ("fp16", 2),
                                        ("half", 2), ("float64", 8), ("float8", 1), (torch.float32, 4),
                                        (torch.bfloat16, 2)])
def test_bytes_per_number(name, size):
    assert cost.bytes_per_number(name) == size


def test_unknown_dtype_is_named():
    with pytest.raises(ValueError, match="Unknown dtype 'int3'"):
        cost.bytes_per_number("int3")


def test_half_names_float16_as_in_torch():
    assert cost.dtype_name("half") == cost.dtype_name(torch.half) == "float16"


def test_parameters_match_the_module():
    counts = cost.projection_parameters(512, 64)
    assert counts == {"W_q": 32768, "W_k": 32768, "W_v": 32768, "total": 3 * 512 * 64}
    assert counts["total"] == count_parameters(SelfAttention(512, 64))


def test_a_product_counts_a_multiply_and_an_add():
    assert cost.projection_flops(2, 3, 4)["Q = X W_q"] == 48   # 2·3·4 = 24 multiply-adds, 2 FLOPs each
    with FlopCounterMode(display=False) as counter:              # PyTorch's own count of the same product
        torch.randn(5, 7) @ torch.randn(7, 11)
    assert counter.get_total_flops() == cost.projection_flops(5, 7, 11)["Q = X W_q"] == 2 * 5 * 7 * 11


def test_attention_flops_is_four_B_H_T_squared_d():
    flops = cost.attention_flops(1024, 64, batch=2, heads=4)
    assert flops["S = Q Kᵀ"] == flops["Y = W V"] == 2 * 2 * 4 * 1024**2 * 64
    assert flops["total"] == 4 * 2 * 4 * 1024**2 * 64
    assert cost.attention_flops(1024, 64, batch=2, heads=4, causal=True)["total"] == flops["total"] // 2


def test_attention_flops_and_memory_for_cross_attention():
    flops = cost.attention_flops(5, 8, T_k=7)
    assert flops["S = Q Kᵀ"] == flops["Y = W V"] == 2 * 5 * 7 * 8
    assert cost.score_matrix_bytes(5, "float32", T_k=7, batch=2, heads=3) == 2 * 3 * 5 * 7 * 4
    assert cost.score_matrix_bytes(5, "bfloat16", T_k=7) == 5 * 7 * 2


def test_projection_flops():
    flops = cost.projection_flops(10, 512, 64, batch=2)
    assert flops["Q = X W_q"] == 2 * 2 * 10 * 512 * 64
    assert flops["total"] == 3 * flops["Q = X W_q"]


def test_format_bytes_and_counts():
    assert cost.format_bytes(512) == "512 B"
    assert cost.format_bytes(2**20) == "1.0 MB (1.00 MiB)"
    assert cost.format_bytes(1.5e12) == "1.5 TB (1.36 TiB)"
    assert cost.format_count(196_608) == "197 thousand"
    assert cost.format_count(1.34e12) == "1.34 trillion"
    assert cost.format_count(12) == "12"


def test_format_bytes_switches_unit_at_exactly_a_thousand():
    assert cost.format_bytes(1e9) == "1.0 GB (0.93 GiB)"          # 10**9 bytes is one gigabyte, not 1000 MB
    assert cost.format_bytes(1000) == "1.0 kB (0.98 KiB)"


def test_largest_T_for_memory_inverts_score_matrix_bytes():
    T = cost.largest_T_for_memory(40e9, "float32")
    assert T == 100_000
    assert cost.largest_T_for_memory(160e9, "float32", heads=2, matrices=2) == 100_000
    assert cost.score_matrix_bytes(T + 1) > 40e9


def test_cost_table_lines_and_text():
    rows = cost.cost_table(100_000, 512, 64)
    by_name = {r["quantity"]: r["value"] for r in rows}
    assert by_name["parameters W_q, W_k, W_v"] == 98_304
    assert by_name["memory (T, T) scores"] == 4 * 10**10
    assert by_name["FLOPs attention (forward)"] == 4 * 100_000**2 * 64
    assert by_name["memory Q, K, V"] == 3 * 100_000 * 64 * 4
    assert by_name["memory K, V cache (generation)"] == 2 * 100_000 * 64 * 4
    batched = {r["quantity"]: r["value"] for r in cost.cost_table(1_000, 512, 64, heads=8, batch=3)}
    assert batched["memory K, V cache (generation)"] == 3 * 8 * 2 * 1_000 * 64 * 4   # every sequence keeps its own
    text = cost.format_cost_table(rows)
    assert "40.0 GB (37.25 GiB)" in text
    assert "3 · d_model · d_k" in text
    assert "T² · 4 bytes · H" in cost.format_cost_table(cost.cost_table(10, 8, 4, heads=2))
    assert "T² · 4 bytes · B·H" in cost.format_cost_table(cost.cost_table(10, 8, 4, heads=2, batch=3))
    assert "quadrillion" in cost.format_cost_table(cost.cost_table(10**6, 512, 256, heads=64))


def test_cost_widget_data():
    data = cost.cost_widget_data(1e5, 64)
    assert data["T"] == 100_000
    assert data["bars"][0][1] == 4 * 10**10
    assert data["fits"] == {"laptop (16 GB RAM)": False, "A100 (80 GB)": True, "H200 (141 GB)": True}
    small = cost.cost_widget_data(1000.4, 64, heads=8, dtype="bfloat16")
    assert small["T"] == 1000
    assert small["bars"][0][1] == 8 * 1000**2 * 2
    assert all(small["fits"].values())


def test_cost_widget_fits_counts_the_scores_alone_as_its_text_says():
    T = 146_542                                                    # T² · 4 bytes = 85.8982 · 10⁹: just under 80 GiB
    data = cost.cost_widget_data(T, 64)
    assert sum(size for _, size in data["bars"]) > 80 * 2**30         # with Q, K, V the A100 would be over
    assert data["fits"]["A100 (80 GB)"]
    assert not cost.cost_widget_data(T + 1, 64)["fits"]["A100 (80 GB)"]   # over 80 GiB, the A100's 81,920 MiB
    assert "the (T, T) scores fit in: A100 (80 GB), H200 (141 GB)" in table_html(data, 512, 64, 1, "float32")
    huge = cost.cost_widget_data(10**6, 64)                          # 4 TB: no device holds it
    assert "the (T, T) scores fit in: none of these devices" in table_html(huge, 512, 64, 1, "float32")


def test_memory_bar_html_places_bars_on_a_log_axis():
    html = memory_bar_html([("scores", 1e9), ("Q, K, V", 1e6)], {"A100 (80 GB)": 80e9})
    assert "width:50.00%" in html  # 1 GB: (9 - 3) / (15 - 3)
    assert "width:25.00%" in html  # 1 MB: (6 - 3) / 12
    largest = cost.cost_widget_data(1e6, 256, heads=64, dtype="float32")["bars"]   # the sliders' far end: 256 TB
    widths = [float(w) for w in re.findall(r"width:([\d.]+)%", memory_bar_html(largest, {}))]
    assert largest[0][1] == 256e12 and 90 < max(widths) < 100   # inside the bar, not clipped at its end
    assert "A100 (80 GB)" in html
    sizes = [int(n) for n in re.findall(r"font-size:(\d+)px", html)]
    assert sizes and min(sizes) >= 14


def test_the_ticks_are_powers_of_1000_and_a_gigabyte_bar_ends_at_its_tick():
    html = memory_bar_html([("scores", 1e9)], {})
    ticks = dict(re.findall(r"left:([\d.]+)%;[^>]*>(1 [kMGT]B)<", html))
    at = {label: float(left) for left, label in ticks.items()}
    assert list(at) == ["1 kB", "1 MB", "1 GB", "1 TB"] and len({round(b - a, 6) for a, b in zip(
        list(at.values()), list(at.values())[1:])}) == 1                  # evenly spaced on the log axis: 10³ apart
    assert f"width:{at['1 GB']:.2f}%" in html                            # 10⁹ bytes reach the 1 GB tick exactly


def test_the_qkv_row_counts_every_head_and_sequence_and_matches_its_bar():
    rows = {r["quantity"]: r["value"] for r in cost.cost_table(1_000, 512, 64, heads=8, batch=3)}
    assert rows["memory Q, K, V"] == 3 * (3 * 8 * 1_000 * 64) * 4        # Q, K, V: (B, H, T, d_k) float32 each
    one = {r["quantity"]: r["value"] for r in cost.cost_table(1_000, 512, 64, heads=8)}
    assert one["memory Q, K, V"] == dict(cost.cost_widget_data(1_000, 64, heads=8)["bars"])["Q, K, V"]


def test_table_html_shows_the_table_in_readable_text():
    data = cost.cost_widget_data(1e5, 64)
    text = table_html(data, 512, 64, 1, "float32")
    assert "T = 100,000" in text and "40.0 GB (37.25 GiB)" in text and "A100 (80 GB), H200 (141 GB)" in text
    assert min(int(n) for n in re.findall(r"font-size:(\d+)px", text)) >= 14


def test_cost_widget_follows_its_sliders():
    w = CostWidget()
    assert w.result["T"] == 100_000
    first = w.result["bars"][0][1]
    w.children[0].value = 1e3
    assert w.result["T"] == 1000
    assert w.result["bars"][0][1] == first / 100**2
    w.children[2].value = 8  # heads
    assert w.result["bars"][0][1] == 8 * 1000**2 * 4
    w.children[3].value = "bfloat16"
    assert w.result["bars"][0][1] == 8 * 1000**2 * 2
    w.children[1].value = 128  # d_k changes the parameters, not the (T, T) memory
    params = {r["quantity"]: r["value"] for r in w.result["table"]}["parameters W_q, W_k, W_v"]
    assert params == 3 * 512 * 128 * 8  # each of the 8 heads has its own W_q, W_k, W_v
    assert math.isclose(w.result["bars"][0][1], 8 * 1000**2 * 2)
    assert w.result["bars"][1][1] == 3 * 8 * 1000 * 128 * 2  # Q, K and V: three (T, d_k) tensors per head


def test_the_crossover_stays_at_one_and_a_half_d_model_with_many_heads():
    for heads, batch in ((1, 1), (8, 1), (8, 4)):
        rows = {r["quantity"]: r["value"] for r in cost.cost_table(768, 512, 64, heads=heads, batch=batch)}
        assert rows["FLOPs attention (forward)"] == 3 * rows["FLOPs Q = X W_q (same for K, V)"]


def test_numpy_integers_count_as_whole_numbers():
    assert cost.format_bytes(np.int64(4)) == "4 B"
    assert cost.format_count(np.int64(196_608)) == "197 thousand"
    assert cost.cost_widget_data(np.int64(1000), np.int64(64)) == cost.cost_widget_data(1000, 64)


def test_cost_widget_text_reads_on_dark_themes_and_never_breaks_words():
    data = cost.cost_widget_data(1e5, 64)
    bar = memory_bar_html(data["bars"], data["devices"])
    assert not re.search(r"(?<![-\w])color\s*:\s*(?!inherit)", bar)   # no fixed text colour: the theme's is inherited
    table = table_html(data, 512, 64, 1, "float32")
    assert "white-space:pre;" in table and "word-break:normal" in table and "overflow-x:auto" in table


def test_the_edges_of_the_cost_functions():
    """A budget of 0 holds no matrix; a matrix that fills a device exactly fits it; the slider's T is rounded, not
    truncated; dtype names in any case; counts below 0 in words too."""
    assert cost.largest_T_for_memory(0) == 0
    data = cost.cost_widget_data(65_536, 64)                        # 65,536² · 4 bytes = 2³⁴: exactly 16 GiB
    assert data["bars"][0][1] == 16 * 2**30 and data["fits"]["laptop (16 GB RAM)"]
    assert not cost.cost_widget_data(65_537, 64)["fits"]["laptop (16 GB RAM)"]
    assert cost.cost_widget_data(99.7, 64)["T"] == 100
    assert cost.bytes_per_number("FP16") == 2 and cost.bytes_per_number("Float32") == 4
    assert cost.format_count(-2_000_000) == "-2 million"


def test_memory_bars_take_the_colours_of_notebook_07s_figure():
    from helpers.plotting import COLORS
    page = memory_bar_html([("scores", 1e9), ("Q, K, V", 1e6)], {"A100 (80 GB)": 80e9})
    assert [page.index(f"background:{COLORS[role]}") for role in ("key", "query")] == sorted(
        page.index(f"background:{COLORS[role]}") for role in ("key", "query"))    # scores in "key", Q, K, V in "query"
