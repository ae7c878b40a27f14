"""The figures the notebooks' prose quotes agree with the outputs their code printed, as rounded in the prose.

Strict nbval holds every stored output to a fresh run; these tests hold the prose to the stored outputs, so a
change that moves a number fails here until the sentence quoting it is rewritten.
"""
import importlib.util
import re
from pathlib import Path

import pytest
from stored_notebooks import NOTEBOOKS, printed, prose

from helpers.exercises.flash import LONG, check_running_softmax
from helpers.fast_attention import KEPT_SUM, tile_map

ROOT = Path(__file__).resolve().parents[1]

#: (notebook, the prose as typed, the printed output it quotes: a pattern with one group per number, the numbers as
#: the prose gives them, in the groups' order). ">80" means "over 80".
QUOTES = [
    ("01", "in 4-D they are 18° apart", r"flows-river: true angle ([\d.]+)°", "18"),
    ("01", "draws *flows* exactly on top of *river*", r"flows-river: true angle [^\n]*, drawn ([\d.]+)°", "0"),
    ("01", "2. 1.0000, the static baseline", r"static bank vs static bank: cos = ([\d.]+)", "1.0000"),
    ("01", r"$2 \cdot [0.9, 0.8, 0.3, 0.1] = [1.8, 1.6, 0.6, 0.2]$, and the cosine stays 0.9192",
     r"y_bank, money sentence: \[([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)\]\n.*?mixed bank  vs mixed bank:  cos = ([\d.]+)",
     "0.9", "0.8", "0.3", "0.1", "0.9192"),
    ("02", "so `river · flows` = 3 beats `river · river` = 2", r"river · flows = (\S+), river · river = (\S+)",
     "3", "2"),
    ("02", "(same cosine, 0.956), but its dot product doubles to 52", r"\n +2b +(\d+) +[\d.]+ +([\d.]+)",
     "52", "0.956"),
    ("02", r"$\cos(a, b) = 0.956$", r"\n +b +26 +[\d.]+ +([\d.]+)", "0.956"),
    ("03", "it gives *flows* 0.5065 and itself only 0.3072", r"weights W:\n.*?\nriver +([\d.]+) +[\d.]+ +([\d.]+)",
     "0.3072", "0.5065"),
    ("03", "score with itself is about $64 / 8 = 8$, its scores with other tokens about $0 \\pm 1$",
     r"with itself ([\d.]+) on average; with another, mean \S+ and spread ([\d.]+)", "8", "1"),
    ("03", "keep all its weight at $T$ = 3 and only 0.41 of it at $T$ = 3,000",
     r"T = +3: .*?itself: ([\d.]+) on average\n+T = 3000: .*?itself: ([\d.]+) on average", "1", "0.41"),
    ("03", "their cosine, 0.8165, is twice", r"cos\(grows, river\) = ([\d.]+), cos\(grows, money\) = [\d.]+", "0.8165"),
    ("05", "*bank* keeps 0.45 for itself instead of 0.58", r"softmax\(s\) += \[[\d.]+ ([\d.]+).*?"
                                                       r"softmax\(s / 2\) = \[[\d.]+ ([\d.]+)", "0.58", "0.45"),
    ("05", r"dropped from about 0.53 to about $6\times10^{-9}$", r"scale   1: [^\n]*‖∂L/∂z‖ = (\S+).*?"
                                                               r"scale 100: [^\n]*‖∂L/∂z‖ = (\S+)", "0.53", "6e-9"),
    ("03", "The recurrent network's 15 hops are 15 steps that run one after another; the convolution's 8 are 8",
     r"t − 1\) +token 0 reaches position \d+ in +(\d+) hops\nconvolution of width \d +token 0 reaches "
     r"position \d+ in +(\d+) hops", "15", "8"),
    ("05", "leaves every weight where it was: on average 0.84 on one key of 16", r"output / √d_k \(a slip\) +([\d.]+)",
     "0.84"),
    ("05", "(the rule's $y$ is shorter too, 3.07,", r"scores / √d_k \(the rule\) +[\d.]+ +([\d.]+)", "3.07"),
    ("06", "(256 MiB against the dot product's 4 MiB at $T$ = 1,024, $d_a$ = 64)",
     r"the additive features ([\d,]+) MiB, the dot product's scores ([\d,]+) MiB", "256", "4"),
    ("04", "2. 0.2119 (the log's line `y_grows VALUE`)", r"y_grows +VALUE +e_bank gives content: \+ ([\d.]+)",
     "0.2119"),
    ("04", "Section 2 left *piece*'s \"ease\" at 0.000", r"ease: +static piece [\d.]+ +-> +after attention ([\d.]+)",
     "0.000"),
    ("04", "moved to the key that matches: $[0.2119, 0.5761, 0.2119]$",
     r"query 'a' +: weights \[([\d.]+) ([\d.]+) ([\d.]+)\]", "0.5761", "0.2119", "0.2119"),
    ("05", r"and $\partial L/\partial z = [+4.12 \cdot 10^{-9}, -4.12 \cdot 10^{-9}, +1.40 \cdot 10^{-13}]$",
     r"scale 100: [^\n]*∂L/∂z = \[\+([\d.e-]+), -([\d.e-]+), \+([\d.e-]+)\]", "4.12e-9", "4.12e-9", "1.40e-13"),
    ("05", "gradient of 0.00348 without the division and 0.264 with it, yet $\\lVert\\partial L/\\partial W_q",
     r"over 1024 queries[^\n]*\n(?:[^\n]*\n)*? +256 +([\d.]+) +[\d.e-]+ +([\d.]+) ", "0.00348", "0.264"),
    ("05", "is 720 without it and 76.8 with it", r"\n +256 +\d+% +\d+% +\d+% +\d+% +([\d.]+) +([\d.]+)", "720", "76.8"),
    ("05", "supply 60 % of the total (18 % with it)", r"\n +256 +\d+% +\d+% +(\d+)% +(\d+)%", "60", "18"),
    ("05", "(section 4's table of $\\alpha$: 0.003898)", r"alpha = 1\.0 +c = d\^1\.0 +\S+ +\S+ +(\S+)", "0.003898"),
    ("05", "About $\\sigma^4 = 16$ (16.150 in section 4's table)",
     r"Var\(q·k/√d\), σ=2\n(?:[^\n]*\n)*? +1024 +[\d.]+ +([\d.]+)\n", "16.150"),
    ("04", "(width 0.5 fits best, error 0.45)", r"error by width: 0\.1: [\d.]+, 0\.5: ([\d.]+), 2: [\d.]+", "0.45"),
    ("05", "(its largest score, 245,760, is far past",
     r"bfloat16, product first: largest \|score\| ([\d,]+), any inf: False", "245,760"),
    ("05", "it returns NaN too, on the same 14 of 16 rows",
     r"(\d+) of 16 rows of weights are NaN\n(?:[^\n]*\n)*?[^\n]*attention on float16 inputs: (\d+) of",
     "14", "14"),
    ("05", "The installed PyTorch's function returns no NaN row (the last",
     r"PyTorch's F.scaled_dot_product_attention on the same inputs: (\d+) of 16 rows NaN", "0"),
    ("05", "In float16, whose largest number is 65,504", r"float16 holds numbers up to ([\d,]+)", "65,504"),
    ("05", r"$\sigma^2\sqrt{d_k}$ = 80,000 before the division, and at $\sigma^2$ = 10,000 after it",
     r"\(σ²√d_k = ([\d,]+)\), [\d,]+ after \(σ² = ([\d,]+)\)", "80,000", "10,000"),
    ("05", "a standard deviation of about 32, the line above", r"the scores' standard deviation is ([\d.]+)", "32"),
    ("05", "about 96 % of the gradient reaching the scores lands on each query's two highest-scoring keys",
     r"\n +1024 +(\d+)% +\d+% +\d+% +\d+%", "96"),
    ("05", "10 % of the queries supply over 80 % of the gradient", r"\n +1024 +\d+% +\d+% +(\d+)%", ">80"),
    ("05", "their two largest scores are about 1.3 apart, against about 13.5 for the rest",
     r"a median ([\d.]+) apart, the other 90 % ([\d.]+) apart", "1.3", "13.5"),
    ("05", "With scaling, the top 10 % of queries supply about 19 %", r"\n +1024 +\d+% +\d+% +\d+% +(\d+)%", "19"),
    ("05", "the variance is about 1025 ($\\sigma = 1$) and about 16,500 ($\\sigma = 2$)",
     r"\n +1024 +(\S+) +1024 .*?\n +1024 +(\S+) +16384 ", "1025", "16,500"),
    ("05", "the fitted slopes are about 1.00 and 16.2",
     r"sigma = 1: fitted Var ≈ ([\d.]+).*?sigma = 2: fitted Var ≈ ([\d.]+)", "1.00", "16.2"),
    ("05", "mean top weight of about 0.95 (a query spreads over about 1.1 keys)",
     r"\n +1024 +[\d.]+ +([\d.]+) +[\d.]+ +([\d.]+) ", "0.95", "1.1"),
    ("05", "falls from about 0.25 ($d_k = 1$) to about $10^{-5}$ ($d_k = 1024$)",
     r"10th pct.*?\n +1 +(\S+) .*?\n +1024 +(\S+) ", "0.25", "1e-5"),
    ("05", "the two top keys (96 %) of a few nearly tied queries (10 % of them supply 83 % of the gradient on $W_q$)",
     r"\n +1024 +(\d+)% +\d+% +(\d+)%", "96", "83"),
    ("05", "(0.137 against 0.265), and $\\sqrt{32} \\approx 5.7$ times that half is 2.9, close to the measured 2.8",
     r"√32 × \(scores: ([\d.]+) / ([\d.]+)\) = ([\d.]+)", "0.137", "0.265", "2.9"),
    ("05", "close to the measured 2.8", r"W_q, unscaled / scaled at d_k = 32: [\d.]+ / [\d.]+ = ([\d.]+)", "2.8"),
    ("07", "while its inputs are 76.8 MB", r"Q, K and V together \(d_k = 64\): +([\d.]+) MB", "76.8"),
    ("07", "while $Q, K, V$ are 77 MB", r"Q, K and V together \(d_k = 64\): +([\d.]+) MB", "77"),
    ("08", "(9,647 · 2π at $d = 512$)", r"the last is ([\d,]+) · 2π", "9,647"),
    ("08", "(786,432 for GPT-2 small)", r"T_max = 1,024 and d = 768: ([\d,]+) parameters", "786,432"),
    ("10", "1. 37,376 − 32,768 / 2 = 20,992",
     r"2 × MultiHeadAttention \(4 · d_model² each\) +([\d,]+)\n.*?total +([\d,]+)", "32,768", "37,376"),
    ("10", "(the embedding's 1,280 = 20 letters × 64", r"embed \(vocab × d_model\) +([\d,]+)", "1,280"),
    ("10", "the fixed-offset model's loss on the copy is 5.63 nats, worse than guessing (3.00)",
     r"tested on offset 12: loss on the copy ([\d.]+) nats: worse than guessing \(([\d.]+)\)", "5.63", "3.00"),
    ("10", "(0.94 of its weight, even on a sequence that never repeats)",
     r"no repeat at all +weight on key i − 15: ([\d.]+)", "0.94"),
    ("10", "the earlier *b*, 12 positions back", r"the earlier 'b' is \d+ back; the letter after it, (\d+) back: 'a'",
     "12"),
    ("10", "the fixed-offset model's \"elsewhere\", 2.91, is the only one below ln 20",
     r"one layer, fixed offset [^\n]*elsewhere ([\d.]+)", "2.91"),
    ("02", "as for $[1.0, 1.2, 0.9]$, $[0.320, 0.391, 0.289]$", r"\nweights = \[([\d.]+) ([\d.]+) ([\d.]+)\]",
     "0.320", "0.391", "0.289"),
    ("02", "$e^{5 \\cdot 0.2} = e^1$, about 2.718", r"exp\(s\) += \[([\d.]+) ", "2.718"),
    ("03", "went 1.7321, 0.4939, 0.0124, 0.0000", r"passes: 0 +largest distance between two tokens: ([\d.]+) [^\n]*\n"
     r"passes: 1 [^\n]*?tokens: ([\d.]+) [^\n]*\npasses: 2 [^\n]*?tokens: ([\d.]+) [^\n]*\n"
     r"passes: 3 [^\n]*?tokens: ([\d.]+)",
     "1.7321", "0.4939", "0.0124", "0.0000"),
    ("03", "among 3,000 tokens the others dilute it, to 0.41", r"T = 3000: [^\n]*itself: ([\d.]+) on average", "0.41"),
    ("03", "0.67 at $d$ = 4, 0.91 at 16, 1.00 at 64 for 3 tokens", r"d = +4: each token's weight on itself ([\d.]+).*?"
     r"d = +16: [^\n]*itself ([\d.]+).*?d = +64: [^\n]*itself ([\d.]+)", "0.67", "0.91", "1.00"),
    ("06", "a rectangular $W$ of shape (2, 3),", r"\ncross-attention [^\n]*W \((\d), (\d)\)",
     "2", "3"),
    ("06", "and one gives a square (3, 3)", r"\nself-attention [^\n]*W \((\d), (\d)\)",
     "3", "3"),
    ("06", "have $3 \\cdot d_{model} \\cdot d_k$ = 48 here", r"parameters: (\d+) = 3 · d_model · d_k", "48"),
    ("08", "printed $PE(p)\\cdot PE(p+1)$ = 3.5353 and $PE(p)\\cdot PE(p+5)$ = 3.1600",
     r"offset 1: PE\(p\)·PE\(p\+1\) = ([\d.]+).*?offset 5: PE\(p\)·PE\(p\+5\) = ([\d.]+)", "3.5353", "3.1600"),
    ("08", "(section 3 prints its spread over every $p$: 0.0000000000)", r"offset 1: [^\n]*spread over all p: ([\d.]+)",
     "0.0000000000"),
    ("09", "under such a mask: `[0.49 0. 0.5 0.01 0.]`",
     r"under the added mask: \[([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) *\]",
     "0.49", "0.", "0.5", "0.01", "0."),
    ("09", "4× less with 8 key-value heads for 32 query heads", r"grouped-query[^\n]*context, (\d+)× less", "4"),
    ("11", "(0.501 of them above)", r"causal computes ([\d.]+) of the tiles", "0.501"),
    ("11", "512 KiB whatever $T$ is", r"in [\d.]+ kB \(([\d.]+) KiB\) of scores at a time", "512"),
    ("11", "flash holds more (1.13 MiB against 1.03 at 1,024); from 2,048 on it holds less (1.64 against 2.03)",
     r"\n +1024 +[\d.]+ +([\d.]+) +([\d.]+) .*?\n +2048 +[\d.]+ +([\d.]+) +([\d.]+) ", "1.03", "1.13", "2.03", "1.64"),
]


def agrees(typed: str, value: float) -> bool:
    """`value` as the prose gives it: rounded to the typed number's significant digits, or above it for '>80'."""
    if typed.startswith(">"):
        return value > float(typed[1:])
    mantissa = typed.replace(",", "").split("e")[0]
    digits = mantissa.replace(".", "").lstrip("0")
    digits = digits if "." in mantissa else digits.rstrip("0")
    return float(f"{value:.{len(digits)}g}") == float(typed.replace(",", ""))


def test_the_rounding_rule():
    assert agrees("1010", 1013) and agrees("16,600", 1.659e4) and agrees("6e-9", 5.83e-9) and agrees("0.53", 0.528)
    assert not agrees("1010", 1016) and not agrees("0.53", 0.5351) and not agrees(">80", 79.5)


@pytest.mark.parametrize("notebook, words, pattern, typed", [(q[0], q[1], q[2], q[3:]) for q in QUOTES],
                         ids=[f"{q[0]}: {q[1][:40]}" for q in QUOTES])
def test_the_prose_quotes_what_the_code_printed(notebook, words, pattern, typed):
    assert words in prose(notebook)
    found = re.search(pattern, printed(notebook), re.S)
    assert found, f"notebook {notebook}'s outputs no longer print {pattern!r}"
    values = [float(group.replace(",", "")) for group in found.groups()]
    assert [agrees(t, v) for t, v in zip(typed, values)] == [True] * len(typed), (typed, values)


def test_the_start_page_counts_the_notebooks_after_it():
    words = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen".split()
    after = words[len(NOTEBOOKS) - 1]
    assert f"In {after} short notebooks" in prose("00") and f"the course is {after} notebooks" in prose("00")


def test_notebook_05_total_gradient_ratio():
    """'grows (about 14 times the scaled value at d_k = 1024)': the last two columns of the table's last row."""
    unscaled, scaled = re.search(r"\n +1024 +\d+% +\d+% +\d+% +\d+% +(\S+) +(\S+)", printed("05")).groups()
    assert round(float(unscaled) / float(scaled)) == 14 and "about 14 times the scaled value" in prose("05")


def test_notebook_10_head_claims():
    """Head 1.0 carries more of the copying than 1.1; head 0.0 looks two letters back; two of the 16 pieces carry
    the same share of each induction head's advantage (88 %), position × position 18 % and 12 %."""
    text = printed("10")
    off = dict(re.findall(r"head (1\.[01]) off, induction head: +([\d.]+)", text))
    assert float(off["1.0"]) > float(off["1.1"]) and "Head 1.0 carries more of the copying than head 1.1" in prose("10")
    back = re.search(r"mean weight on key i − k \(queries 4 on\):((?: +k=\d: [\d.]+)+)", text)[1].split()[1::2]
    back = [float(w) for w in back]
    assert max(range(len(back)), key=back.__getitem__) == 2 and "Head 0.0 looks **two** letters back" in prose("10")
    rows = re.findall(r"\n +(?:token|position|head 0\.[01]) +((?:-?[\d.]+ +){3}-?[\d.]+)", text)   # 4 rows a head
    totals = re.findall(r"the 16 pieces add up to ([\d.]+)", text)
    assert len(rows) == 4 * len(totals) == 8
    shares = []
    for head, total in enumerate(totals):
        table = [[float(v) for v in row.split()] for row in rows[4 * head:4 * head + 4]]   # query part × key part
        pieces = sorted((v for row in table for v in row), reverse=True)
        shares.append((round(100 * sum(pieces[:2]) / float(total)), table[1][1] / float(total)))   # position × position
    own = re.findall(r"head 0\.1 and head 0\.1 × head 0\.0: (\d+)%", text)   # the cell's own, from unrounded pieces
    assert own[0] == own[1] and all(abs(share - int(own[0])) <= 1 for share, _ in shares)   # the table's, rounded
    assert int(own[0]) > 75 and f"At n = 12, two pieces carry most of it, {own[0]} % in both heads" in prose("10")
    first, second = (round(100 * position) for _, position in shares)
    assert re.findall(r"position × position: (\d+)%", text) == [str(first), str(second)]
    assert (f"**position × position** ({first} % of the advantage in head 1.0, {second} % in head 1.1"
            in prose("10"))


def test_notebook_10_fixed_offset_claims():
    """'at offsets 4 and 8 it does barely better than guessing, at 10 and 12 worse; only at its own 16 does it copy'."""
    losses = {int(offset): (float(loss), float(guess)) for offset, loss, guess in re.findall(
        r"tested on offset +(\d+): loss on the copy ([\d.]+) nats: \w+ than guessing \(([\d.]+)\)", printed("10"))}
    assert sorted(losses) == [4, 8, 10, 12, 16]
    assert all(0.8 * guess < loss < guess for loss, guess in (losses[4], losses[8]))          # barely better
    assert all(loss > guess for loss, guess in (losses[10], losses[12])) and losses[16][0] < 0.1 * losses[16][1]
    assert "at offsets 4 and 8 it does barely better than guessing, at 10 and 12 worse" in prose("10")
    plans = " ".join((ROOT / "notebooks" / "LESSON_PLANS.md").read_text(encoding="utf-8").split())
    assert (f"at 10 and 12 worse, {losses[10][0]:.2f} and {losses[12][0]:.2f}, at its own 16 it copies, "
            f"{losses[16][0]:.2f}" in plans)


def test_notebook_05_scaled_gradient_stays_near_its_quoted_value():
    """"With scaling it stays near 0.26 at every d_k": the scaled median of every row of the gradient table, ±0.02."""
    medians = [float(m) for m in re.findall(r"\n +\d+ +\S+ +\S+ +([\d.]+) +\S+ +\S+(?=\n)", printed("05"))]
    assert len(medians) == 11 and all(abs(m - 0.26) <= 0.02 for m in medians), medians
    assert "with scaling it stays near 0.26 at every $d_k$" in prose("05")


def test_notebook_10_says_when_its_heads_formed_as_its_output_printed():
    """Cell 29's steps: the two scores cross 0.4 one check (25 steps) apart, previous-token first; the loss follows."""
    text = printed("10")
    drop = int(re.search(r"falls halfway from ln 20 to its final value at step (\d+)", text)[1])
    formed = {kind: int(re.search(rf"best {kind} score first reaches 0.4 at step (\d+)", text)[1])
              for kind in ("previous-token", "induction")}
    assert formed["induction"] - formed["previous-token"] == 25 and 0 < drop - formed["induction"] <= 50
    assert "the two scores cross 0.4 within one check of each other (they are read every 25 steps; the " \
           "previous-token head one check first) and the loss falls right after" in prose("10")


def test_notebook_11_quotes_its_constants():
    text = prose("11")
    longs = sum(bool(getattr(draw, "keywords", {}).get("long")) for draw in check_running_softmax.draws)
    assert f"{['a stream', 'two streams'][longs - 1]} of {LONG:,} keys on which it watches memory" in text
    assert f"`KEPT_SUM` = {KEPT_SUM} per key (no weight above {KEPT_SUM * 512:,} with 512 keys" in text
    assert f"$1/({KEPT_SUM} \\cdot 512) \\approx 7.6 \\cdot 10^{{-6}}$" in text
    assert agrees("7.6e-6", 1 / (KEPT_SUM * 512))
    short, long = (tile_map(T, T, 256, 512, causal=True) for T in (2048, 4096))   # the benchmark's tiles
    assert (f"{int(short.gt(0).sum())} of the {short.numel()} tiles at $T$ = 2,048 and {int(long.gt(0).sum())} of the "
            f"{long.numel()} at 4,096") in text


def test_the_readme_and_the_lesson_plans_quote_the_stored_run_s_timings():
    """The cell times `make execute` stored (benchmarks/notebook_cells.py reads them) keep the bounds the README and
    the lesson plans give: the first cells (the imports), every other cell, a whole notebook (how long slides take to
    open), and the total, within 15 % (a re-run moves each time by a few tenths)."""
    spec = importlib.util.spec_from_file_location("notebook_cells", ROOT / "benchmarks" / "notebook_cells.py")
    cells = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cells)
    seconds = [[s for _, s, _ in cells.cell_times(path)] for path in NOTEBOOKS]
    readme, plans = (" ".join(path.read_text(encoding="utf-8").split()) for path in
                     (ROOT / "README.md", ROOT / "notebooks" / "LESSON_PLANS.md"))
    total = sum(map(sum, seconds))
    assert abs(total - int(re.search(r"\(all twelve in about (\d+) s\)", readme)[1])) <= 0.15 * total
    first = re.search(r"the first imports torch and matplotlib, in under ([\d.]+) s", readme)[1]
    assert max(times[0] for times in seconds) < float(first) and f"matplotlib in under {first} s" in readme
    other = re.search(r"no cell but the first takes more than ([\d.]+) s", readme)[1]
    assert max(s for times in seconds for s in times[1:]) < float(other) and f"first runs in under {other} s" in readme
    whole = int(re.search(r"in under (\d+) s of cell time", readme)[1])
    assert max(map(sum, seconds)) < whole and f"the kernel's start (under {whole} s of cell time" in readme
    assert f"(under {whole} s on a quiet 2-core CPU" in plans


def test_notebook_11_explains_the_memory_crossover_per_token():
    """'Tiled's peak grows by about 1 KiB a token …; flash's grows by half that, on top of its fixed 0.63 MiB. So up to
    about T = 1,200 flash holds more': read from the stored table, from T = 1,024 to 4,096."""
    rows = {int(T): (float(tiled), float(flash)) for T, tiled, flash in re.findall(
        r"\n +(\d+) +[\d.]+ +([\d.]+) +([\d.]+) +[\d.]+ +[\d.]+ KiB", printed("11"))}
    per_token = [(rows[4096][k] - rows[1024][k]) * 1024 / (4096 - 1024) for k in (0, 1)]   # KiB a token
    assert abs(per_token[0] - 1) < 0.05 and abs(per_token[1] - 0.5) < 0.05
    fixed = rows[4096][1] - 4096 * per_token[1] / 1024                                  # MiB at T = 0
    crossing = 1024 + (rows[1024][1] - rows[1024][0]) * 1024 / (per_token[0] - per_token[1])
    assert f"{fixed:.2f}" == "0.63" and round(crossing, -2) == 1200
    assert ("Tiled's peak grows by about 1 KiB a token" in prose("11") and "on top of its fixed 0.63 MiB. So up "
            "to about $T$ = 1,200 flash holds more" in prose("11"))


def test_notebook_07_stored_run_keeps_the_order_its_prose_reads():
    """'Your numbers will differ, but the order of the versions tells the story: fewer (T, T) tensors, less time':
    in the stored run too (a run stored on a busy machine, where tiled came out slower than lean, fails here)."""
    ratios = re.search(r"T=1024 float32: naive ([\d.]+)x, lean ([\d.]+)x, tiled ([\d.]+)x the time of sdpa",
                       printed("07")).groups()
    naive, lean, tiled = map(float, ratios)
    assert naive > lean > tiled > 1, ratios
    assert "the order of the versions tells the story: fewer $(T, T)$ tensors, less time" in prose("07")


def test_the_notebook_11_plan_quotes_the_stored_run_s_ratios():
    """Plan 11 warns that sections 4's and 6's ratios move with the machine's load, and quotes the stored run's."""
    stored = re.search(r"\nflash +[\d.]+ ms [^\n]* ([\d.]+)x the time of sdpa", printed("11"))[1]
    causal = re.search(r"causal / all tiles: ([\d.]+) \(the tiles: 20 / 32 = 0.625\)", printed("11"))[1]
    plans = " ".join((ROOT / "notebooks" / "LESSON_PLANS.md").read_text(encoding="utf-8").split())
    assert f"(the stored run: {stored} with $B \\cdot H$ = 4 on 2 cores;" in plans
    assert f"about 0.65 to 0.9 on a 2-core laptop, the stored run {causal}, above the tiles' 20 / 32 = 0.625" in plans


def test_the_notebook_05_plan_quotes_the_float16_aside_as_printed():
    pct, rows = re.search(r"product, then divide: (\d+)% of the scores are inf; (\d+) of 16", printed("05")).groups()
    plans = " ".join((ROOT / "notebooks" / "LESSON_PLANS.md").read_text(encoding="utf-8").split())
    assert f"65,504 ({pct} % of the scores inf, {rows} of 16 rows NaN)" in plans


def test_the_misconceptions_table_quotes_the_stored_outputs():
    """The lesson plans' table of misconceptions quotes notebooks 04, 05 and 09 as they printed."""
    plans = " ".join((ROOT / "notebooks" / "LESSON_PLANS.md").read_text(encoding="utf-8").split())
    money, bank = re.search(r"money asks bank : q·k = (\S+) +bank asks money: q·k = (\S+)", printed("04")).groups()
    assert f"*money* asks *bank* {money}, *bank* asks *money* {bank.replace('-', '−')}" in plans
    top = re.search(r"output / √d_k \(a slip\) +([\d.]+)", printed("05"))[1]
    assert f"leaves the top weight at {top}" in plans
    sums = re.search(r"rows after zeroing sum to: \[([\d.]+) +([\d.]+) +([\d.]+) *\]", printed("09")).groups()
    assert "the rows sum to {}, {} and {}".format(*(f"{float(x):g}" for x in sums)) in plans
    for layers, typed in (("one layer", "the earlier outputs move (off by up to {:.2f})"),
                          ("two layers", "wrong at every position (off by up to {:.2f}), the newest too ({:.2f})")):
        gaps = [float(g) for g in re.search(layers + r", no mask +positions 0 to 4: \[([^\]]+)\]", printed("09"))[1]
                .split()]
        assert typed.format(max(gaps), gaps[-1]) in plans


def test_prose_that_quotes_another_notebook_quotes_it_as_printed():
    """04's 'money gives grows 0.2741 and grows gives money 0.2119' (notebook 03's W, a row and a column); 05's
    weight of notebook 10's previous-token head."""
    money_to_grows, grows_to_money = re.search(r"\nmoney +0\.\d{4} +0\.\d{4} +(0\.\d{4})\nbank .*\n"
                                               r"grows +(0\.\d{4}) ", printed("03")).groups()   # 03's first W
    assert f"*money* gives *grows* {money_to_grows} and *grows* gives *money* {grows_to_money}" in prose("04")
    previous = re.search(r"head 0\.1: previous-token ([\d.]+)", printed("10"))[1]
    assert f"previous-token head puts {previous} of its weight, on average, on the previous token" in prose("05")


def test_notebook_07_says_how_the_stored_fills_went():
    """The text says a fresh 8 MiB fill took far fewer faults than its 2,048 pages in the stored run, and that the
    32 MiB line shows a fault for every page (the cell's output varies, so the claims are held against what it
    stored: a run on a system that does not count page faults would not do)."""
    faults, fresh, reused = re.search(r" 8 MiB, 2,048 pages of 4 KiB: a fresh fill takes ([\d,]+) page faults on "
                                      r"average and ([\d.]+) ms, a reused one ([\d.]+) ms", printed("07")).groups()
    assert int(faults.replace(",", "")) < 2048 / 4 and 0 <= float(fresh) - float(reused) < 0.5
    assert ("in the run saved with this notebook a fresh 8 MiB fill took far fewer faults than its 2,048 pages (the "
            "calls were handed back the block the call before had freed), and under half a millisecond more than "
            "the reused fill") in prose("07")
    faults, fresh, reused = re.search(r"32 MiB, 8,192 pages of 4 KiB: a fresh fill takes ([\d,]+) page faults on "
                                      r"average and ([\d.]+) ms, a reused one ([\d.]+) ms", printed("07")).groups()
    assert int(faults.replace(",", "")) >= 8192 and float(fresh) > 2 * float(reused)
    assert "a fault for every page, as the second line shows" in prose("07")
