"""Exercises of notebook 07: mask polarity, the memory of the (T, T) matrix, achieved TFLOP/s."""
from functools import partial

import numpy as np
import torch

from helpers.attention_torch import causal_mask
from helpers.exercises import engine
from helpers.exercises.engine import Case, Exercise, Feedback, correct, one_number, raised, rounded, solved_by, wrong


# --- Exercise 1: the course's mask -> PyTorch's additive float mask --------------------------------
def reference_additive_mask(mask):
    """Course mask (mask == 0: may not attend) -> float mask to ADD to the scores: 0 allowed, -inf hidden."""
    additive = torch.zeros(mask.shape)  # (T_q, T_k), float32
    return additive.masked_fill(mask == 0, float("-inf"))


def _mask_cases():
    random01 = (torch.rand(5, 6, generator=torch.Generator().manual_seed(1)) > 0.5).float()
    random01[:, 0] = 1.0  # every query may see at least key 0
    counts = torch.tensor([[2, 0, 1, 0], [1, -1, 0, 0], [0, 0, 2, 1]])  # 2, -1 "may attend" too: any nonzero
    fractions = torch.tensor([[0.1, 0.5, 0.0], [0.25, -0.5, 0.0], [0.0, 3.0, 1.0]])   # and so do 0.1, -0.5 and 3
    return [causal_mask(4), random01, counts, fractions]


def _draw_mask(rng, kind, page=False) -> Case:
    """A bool, int (-1 to 3) or float (-1, 0, 0.5, 1, one below 10⁻⁶) mask: a key seen by every query; a 0, a 2 (0.5),
    a -1, a 3 (1 to 9 · 10⁻⁷: |mask| < ε is no test for 0). `page`: 4 × 4, the size of the page's causal mask."""
    T_q, T_k = (4, 4) if page else (int(rng.integers(2, 9)), int(rng.integers(3, 9)))
    mask = torch.from_numpy(rng.integers(-1, 3, size=(T_q, T_k)))
    mask[:, seen := rng.integers(1, T_k)] = 1   # a key every query may see, never key 0 (never causal_mask(4))
    where = rng.choice([p for p in range(T_q * T_k) if p % T_k != seen], 4, replace=False)   # ... a 0, 2, -1, 3
    mask.view(-1)[where] = torch.tensor([0, 2, -1, 3])
    floats = mask.float().masked_fill(mask == 2, 0.5).masked_fill(mask == 3, float(rng.uniform(1, 9)) * 1e-7)
    mask = mask.bool() if kind == "bool" else floats if kind == "float" else mask
    return Case(mask, what=f"{'an' if kind == 'int' else 'a'} {kind} mask of shape ({T_q}, {T_k}), drawn at random")


def _mask_error(case, error):
    mask, = case.args   # only torch's wording would say which cause it was: both are named
    no_inf = "" if mask.is_floating_point() else "; an integer tensor, such as zeros_like(mask), cannot hold -inf"
    if mask.dtype == torch.bool and type(error) in (RuntimeError, NotImplementedError):   # arithmetic on bools
        return (f"{raised(error).rstrip('.')}. Arithmetic such as 1 - mask is not defined on booleans (causal_mask "
                "is torch.bool), and an integer tensor cannot hold -inf: compare, mask == 0, and fill a float tensor "
                "such as torch.zeros(mask.shape).")
    if type(error) is RuntimeError or type(error) is TypeError and mask.is_floating_point():   # where, masked_fill, ~
        return (f"{raised(error).rstrip('.')}. torch.where and masked_fill take a bool condition (and ~ inverts only "
                f"bools and integers), and this mask is {mask.dtype}: compare first, mask == 0{no_inf}." + (
                f" If sizes clash: this mask is {tuple(mask.shape)}, not square." * (len(set(mask.shape)) > 1)))
    return None


def _read_additive(result, case):
    mask, = case.args
    if isinstance(result, torch.Tensor) and result.dtype == torch.bool:   # zeros_like(a bool mask) stays bool
        hidden = " with True = hidden (or zeros_like(mask) kept the bool dtype and stored -inf as True)" * bool(
            torch.equal(result, mask == 0))   # nn.MultiheadAttention's polarity
        return None, (f"your result is a boolean mask{hidden}. SDPA takes one (True = may attend), but this "
                      "exercise asks for the additive float form: 0.0 where allowed, -inf where hidden, in a float "
                      "tensor such as torch.zeros(mask.shape).")
    low = isinstance(result, torch.Tensor) and result.dtype in (torch.float16, torch.bfloat16)
    got, problem = engine.as_numbers(result.float() if low else result, "the additive mask")   # 0 and -inf are exact
    if problem is not None:
        return None, problem.message
    if not np.array_equal(got, reference_additive_mask(mask).numpy()):
        return got, None                           # the judge names what is off
    if not isinstance(result, torch.Tensor):
        kind = "a NumPy array" if isinstance(result, np.ndarray) else f"a {type(result).__name__}"
        return None, (f"the values are right, but you returned {kind}: "
                      "F.scaled_dot_product_attention takes attn_mask only as a torch tensor. Build it with torch: "
                      "torch.zeros(mask.shape).masked_fill(mask == 0, float('-inf')).")
    if result.dtype != (default := torch.get_default_dtype()):   # SDPA: a float mask must have the queries' dtype
        return None, (f"the values are right, but the mask is {result.dtype}: SDPA adds a float mask only if it has "
                      f"the queries' dtype, and the notebook's queries are {default} (torch's default). Start "
                      f"from torch.zeros(mask.shape), which is {str(default)[6:]}.")
    return got, None


def _judge_additive(case, got, expected):
    """Polarity, 0 · (-inf), 0/1 masks, masks of 2s, finite stand-ins for -inf: each named."""
    (mask,), kind = case.args, str(case.args[0].dtype).removeprefix("torch.")
    article = "an" if kind.startswith("int") else "a"
    if got.shape != tuple(mask.shape):
        return (f"the mask has shape {got.shape}, expected {tuple(mask.shape)}: one entry per "
                "(query, key) pair, like the input mask.")
    allowed, values = (mask != 0).numpy(), mask.numpy().astype(np.float64)
    if (values[allowed] != 1).any() and np.allclose(got[allowed], np.log(values[allowed]), equal_nan=True):
        return (f"on {article} {kind} mask, where the mask is 2 you give log 2 ≈ 0.693 (and NaN where it is -1), but "
                "any nonzero value means 'may attend': compare with 0 instead of taking the log.")
    if np.isnan(got).any():
        if np.isnan(got[allowed]).all() and np.all(got[~allowed] == float("-inf")):
            return (f"NaN where attention is allowed ({article} {kind} mask): 0 · (-inf) is NaN, not 0. "
                    "Choose instead of multiplying: torch.where or masked_fill puts -inf or 0 in each place.")
        if (values[np.isnan(got)] < 0).all():
            return (f"on {article} {kind} mask, NaN where the mask is -1: any nonzero value means 'may attend', "
                    "negative ones too. Compare with 0 (mask == 0) instead of computing with the mask's values.")
        return "the mask contains NaN. Use 0.0 and float('-inf') only."
    if np.all(got[allowed] == float("-inf")) and np.all(got[~allowed] == 0):
        return "the polarity is flipped: mask == 0 means 'may NOT attend', so -inf goes there."
    if np.isin(got, (0.0, 1.0)).all():
        return (f"the values are {' and '.join(f'{v:g}' for v in np.unique(got))} only, but the mask is ADDED to the "
                "scores: hidden pairs need -inf.")
    if not np.all(got[allowed] == 0):
        off = allowed & (got != 0)                       # allowed pairs that got something other than 0
        if np.all(values[off] != 1) and np.all(np.isneginf(got[off])):
            return (f"on {article} {kind} mask, the pairs where the mask is {values[off][0]:g} are hidden, but any "
                    "nonzero value means 'may attend'. Test mask == 0 (hidden), not mask == 1, mask >= 1, mask > 0 or "
                    "|mask| < a small number.")
        return f"on {article} {kind} mask, an allowed pair has a nonzero value: put exactly 0.0 wherever mask != 0."
    if not np.all(got[~allowed] <= -1e4):
        return "a hidden pair is not pushed to -inf, so softmax still gives it weight."
    finite = got[~allowed][np.isfinite(got[~allowed])]   # some: all -inf would be the right mask, passed already
    return (f"hidden pairs get {finite[0]:g}, not -inf. exp(-inf) = 0 in every dtype; a finite stand-in "
            "depends on the dtype (-1e9 does not fit in float16), and a query whose keys are ALL hidden "
            "still attends to them evenly. Put float('-inf') where mask == 0.")


check_additive_mask = Exercise(reference_additive_mask, title="the course's mask as an additive float mask",
    expects="additive_mask(mask) -> float tensor of the same shape", where="",
    cases=lambda: [Case(mask, what="") for mask in _mask_cases()], errors=_mask_error,
    draw=(*(partial(_draw_mask, kind=kind) for kind in ("bool", "int", "float")),
          partial(_draw_mask, kind="bool", page=True)),
    read=_read_additive, reads="the additive mask", judge=_judge_additive, name="the additive mask", atol=0.0,
    success="0 where allowed, -inf where hidden: added to the scores, softmax gives the hidden pairs "
            "weight exp(-inf) = 0. The same polarity question, answered in numbers.",
    explanation="torch.where(mask == 0, float('-inf'), 0.0) does the same in one line.")


# --- Exercise 2: how many GB are the (T, T) scores of one layer? -----------------------------------
@solved_by("the memory of one layer's score matrices", """
    heads, T, bytes_per_number = 32, 8192, 2       # bfloat16: 16 bits = 2 bytes
    scores_gb = heads * T**2 * bytes_per_number / 1e9
    # or: cost.score_matrix_bytes(8192, "bfloat16", heads=32) / 1e9   -> 4.29
    """, read=partial(one_number, name="scores_gb", what="your number of GB"))
def check_scores_gb(value) -> Feedback:
    """Exercise 2: the GB of (T, T) scores for 32 heads, T = 8,192, bfloat16."""
    expected = 32 * 8192**2 * 2 / 1e9   # 32 heads · T² scores · 2 bytes (bfloat16), in GB (10⁹ bytes): 4.294967296
    if abs(value - expected) <= 0.004 * expected:   # within 0.4 %: 4.29, 4.3 and bfloat16's 4.28125, not 4.26
        return correct(f"{expected:.2f} GB for one layer's scores at T = 8,192. Double T and it is four "
                       "times as much: that is the T² in the cost table.")
    slips = [
        (expected * 1e9, "that is the number of bytes. Divide by 10⁹ for GB."),
        (expected * 1e9 / 2**30, f"{value:g} is the size in GiB (2³⁰ bytes){', or GB rounded off' * (value % 1 == 0)}: "
                                 "GB are 10⁹ bytes, so divide the bytes by 1e9 (and keep two decimals)."),
        (expected * 1e3, "that is MB (10⁶ bytes). GB are 10⁹ bytes: divide the bytes by 1e9."),
        (expected * 1e9 / 2**20, "that is MiB (2²⁰ bytes). GB are 10⁹ bytes: divide the bytes by 1e9."),
        (expected * 8, "that uses 16 bytes per number: bfloat16 has 16 bits, which is 2 bytes."),
        (expected / 32, "that is for one head. Every head has its own (T, T) matrix: multiply by 32."),
        (expected * 2, "that is twice as much: 4 bytes per number (float32; bfloat16 uses 2), or the scores and "
                       "the softmax weights together. The question asks for the scores alone, in bfloat16."),
        (expected / 2, "that is half: 1 byte per number (bfloat16 uses 2), or half the pairs (a causal mask halves the "
         "work a fused kernel does, but the textbook still stores every score of the (T, T) matrix)."),
        (32 * 8192 * 2 / 1e9, "that counts T numbers per head, not T²: one score per (query, key) pair."),
        (32 * 8192 * 2, "that counts T numbers per head, not T²: one score per (query, key) pair.")]
    return wrong(next((message for slip, message in slips if abs(value - slip) <= 0.01 * slip),
                      f"{value:g} GB is not it. Multiply heads × T × T × bytes per number, then divide by 1e9."))


# --- Exercise 3: achieved TFLOP/s ------------------------------------------------------------------
def reference_achieved_tflops(B, H, T, d_k, milliseconds, causal=False):
    """Forward attention FLOPs 4·B·H·T²·d_k (halved when causal), divided by the time in seconds, in 10¹²."""
    flops = 4 * B * H * T**2 * d_k
    if causal:
        flops = flops / 2  # count only the pairs a query may see (half, by convention), skipped or not
    seconds = milliseconds / 1e3
    return flops / seconds / 1e12


_TFLOP_CASES = [  # (B, H, T, d_k, ms, causal); in the first, B, H, 4, 2 and T differ: each missing factor shows
    (3, 16, 4096, 128, 1.2, False), (1, 8, 1024, 64, 10.0, False), (2, 32, 8192, 128, 9.5, True),
    (1, 2, 512, 32, 4.0, True)]   # 0.0084, a CPU's rate: rounded to 3 decimals, 5 % off


def _read_tflops(result, case):
    got, problem = engine.returned_number(result, "the function", "the TFLOP/s", finite=False)
    if problem is None and not np.isfinite(got):
        return None, f"for {case.what} the result is {got.item()}. Check for a division by zero."
    return got, problem


def _judge_tflops(case, got, expected):
    """Beyond 1 % (rtol: the engine passed the rest), the factor it is off by, named; never the expected value."""
    (B, H, T, d_k, _, causal), ratio = case.args, got.item() / expected.item()
    diagnoses = [  # (whether it applies here, the ratios it gives, what it is): a ratio within 1% names it
        (causal, (2.0,), "with a causal mask, count only the pairs a query may see, half of them: halve the FLOPs."),
        (causal, (0.5,), "with a causal mask, halve the FLOPs once (half of the pairs), not twice."),
        (not causal and B > 1, (1 / B,), f"it is B = {B} times too small: did you forget the batch size B?"),
        (not causal, (1 / H,), f"it is H = {H} times too small: did you forget the number of heads H?"),
        (not causal and B > 1 and H > 1, (1 / (B * H),),
         "the result is B·H times too small: you forgot both the batch size and the number of heads."),
        (True, (0.25,), "the factor 4 is missing: Q Kᵀ and W V cost 2·T²·d_k FLOPs each (multiply and add)."),
        (True, (0.5,), "the result is half the expected value: there are two matrix products, 2·T²·d_k each (and "
                       "only causal=True halves the FLOPs)" + (f"; or is d_k fixed at 64, not read from d_k = {d_k}?"
                                                                  if d_k == 128 else ".")),
        (True, (1e-3,), "the result is 1000 times too small: milliseconds are ÷ 1000 seconds."),
        (True, (1e-6,), "the result is 10⁶ times too small: seconds = milliseconds / 1e3, not × 1e3."),
        (True, (0.1,), "the result is 10 times too small: 10e12 is 10¹³. Write 1e12 (or 10**12)."),
        (True, (1 / d_k,), f"it is d_k = {d_k} times too small: did you forget the head size d_k?"),
        (True, (1000.0,), "the result is 1000 times too large: that is GFLOP/s (÷ 10⁹). TFLOP/s divide by 10¹²."),
        (True, (1e12, 1e9, 1e15), "that is FLOP/s, not TFLOP/s: divide by 10¹²."),
        (True, (((4 * B * H * T) ^ (2 * d_k)) / (4 * B * H * T**2 * d_k),), "in Python ^ is XOR, not a power, and "
         "it comes after *: a*T^2*b is (a*T) XOR (2*b). Write T**2."),
        (True, (1 / T,), "the result is T times too small: you used T where the formula has T² (or wrote T^2 last, "
                         "which in Python is XOR, not a power: write T**2).")]
    for applies, ratios, message in diagnoses:
        if applies and any(abs(ratio - x) <= 0.01 * x for x in ratios):
            return f"for {case.what}: {message}"
    if (decimals := rounded(got, expected)) is not None:
        return (f"for {case.what} your function gives {got.item():g}: rounded to {decimals} "
                f"decimal{'s' * (decimals > 1)}. Return the number unrounded (round only when you print it).")
    return (f"for {case.what} your function gives {got.item():.4g} TFLOP/s, which is not it. "
            "FLOPs = 4·B·H·T²·d_k (÷ 2 if causal); TFLOP/s = FLOPs / seconds / 1e12.")


def _tflops_case(B, H, T, d_k, ms, causal, drawn="") -> Case:
    return Case(B, H, T, d_k, ms, causal, what=f"B={B}, H={H}, T={T}, d_k={d_k}, {ms} ms, causal={causal}{drawn}")


def _draw_tflops(rng, causal) -> Case:
    B, H, T, d_k = (int(rng.choice(options)) for options in ([2, 3, 5, 6], [4, 12, 20, 24], [512, 2048, 3072, 6144],
                                                              [32, 80, 96, 256]))
    return _tflops_case(B, H, T, d_k, float(rng.choice([0.7, 2.5, 4.0, 15.0])), causal, " (drawn at random)")


check_achieved_tflops = Exercise(reference_achieved_tflops, title="achieved TFLOP/s of forward attention",
    expects="achieved_tflops(B, H, T, d_k, milliseconds, causal=False) -> float", own="attention_flops",
    cases=lambda: [_tflops_case(*case) for case in _TFLOP_CASES], read=_read_tflops, judge=_judge_tflops, rtol=0.01,
    draw=tuple(partial(_draw_tflops, causal=c) for c in (False, True, True)), keywords=("causal",), where="",
    reads="the TFLOP/s", success="4·B·H·T²·d_k FLOPs (half when causal) over the time: the number to hold against a "
                                 "GPU's nominal peak (H100 SXM / H200: about 989 dense bf16 TFLOP/s on paper).")
