"""Exercises of notebook 08: the sinusoidal encoding, the outputs of a shuffled sentence, positions added."""
import math
from functools import partial

import numpy as np
import torch

from helpers.attention_torch import SelfAttention
from helpers.exercises.engine import Case, Exercise
from helpers.positions import sinusoidal_positions


# --- Exercise 1: the sinusoidal encoding --------------------------------------------------------
def reference_sinusoidal(T, d):
    """PE[p, 2m] = sin(p / 10000^(2m/d)), PE[p, 2m+1] = cos(p / 10000^(2m/d)): -> (T, d)."""
    p = torch.arange(T, dtype=torch.float64)[:, None]   # (T, 1) positions 0 … T − 1
    two_m = torch.arange(0, d, 2, dtype=torch.float64)   # (d/2,) 0, 2, …, d − 2
    angles = p / 10000 ** (two_m / d)                    # (T, d/2) one angle per position and pair
    PE = torch.zeros(T, d, dtype=torch.float64)
    PE[:, 0::2] = torch.sin(angles)                      # even columns: sin
    PE[:, 1::2] = torch.cos(angles)                      # odd columns: cos
    return PE


def _sinusoid_slips(T: int, d: int) -> list[tuple[torch.Tensor, str]]:
    """[(what a slip returns, what the slip is)]."""
    p, m = torch.arange(T, dtype=torch.float64)[:, None], torch.arange(d // 2, dtype=torch.float64)   # (T, 1), (d/2,)
    def interleave(sin, cos):   # (T, d/2) each -> (T, d): sin in the even columns, cos in the odd ones
        return torch.stack([sin, cos], dim=-1).reshape(T, d)
    right = p / 10000 ** (2 * m / d)
    return [(interleave(torch.cos(right), torch.sin(right)),
             "sin and cos are swapped: even columns 2m hold sin, odd columns 2m+1 hold cos"),
            (interleave(torch.sin(p / 10000 ** (m / d)), torch.cos(p / 10000 ** (m / d))), "the exponent uses m "
             "instead of 2m: pair m has frequency 1 / 10000^(2m/d), so the slowest pair is near 1/10000, not 1/100"),
            (interleave(torch.sin(right), torch.cos(p / 10000 ** ((2 * m + 1) / d))), "column 2m+1 got its own "
             "exponent (2m+1)/d: the sin and the cos of a pair share one frequency, 10000^(2m/d) for both"),
            (interleave(torch.sin(p / 10000 ** (4 * m / d)), torch.cos(p / 10000 ** ((4 * m + 2) / d))), "the exponent "
             "used the column index c as if it were m, 10000^(2c/d); pair m covers columns 2m and 2m+1, so column c "
             "belongs to pair c // 2"),
            (interleave(torch.sin(p / 10000 ** (4 * m / d)), torch.cos(p / 10000 ** (4 * m / d))), "the exponent is "
             "4m/d: a loop over range(0, d, 2) gives i = 2m already, so 2 * i doubles it. Use i / d there"),
            (torch.cat([torch.sin(right), torch.cos(right)], dim=1),
             "all the sines come first and then all the cosines: interleave them, sin in column 2m and cos in 2m+1"),
            (interleave(torch.sin(p * 10000 ** (2 * m / d)), torch.cos(p * 10000 ** (2 * m / d))),
             "you multiplied p by 10000^(2m/d); divide: the angle is p / 10000^(2m/d)"),
            (interleave(torch.sin(right + 1 / 10000 ** (2 * m / d)), torch.cos(right + 1 / 10000 ** (2 * m / d))),
             "the positions start at 1; the first token is position 0 (its row is 0, 1, 0, 1, …)"),
            (interleave(torch.sin(wrong := p * m / d / 10000 ** 2), torch.cos(wrong)), "every angle is (almost) 0: "
             "is p missing, or ** read first? p / 10000 ** 2*m/d is (p / 10000²)·m/d: write p / 10000 ** (2*m/d)"),
            (interleave(torch.sin(p + 0 * m), torch.cos(p + 0 * m)), "every pair got the angle p: the division by "
             "10000^(2m/d) is missing, or 2*m // d floored its exponent to 0 (// is floor division). Use /")]


def _sinusoid_shapes(case):
    (T, d), what = case.args, case.what
    return {(T, d // 2): (f"on {what} the result has shape ({T}, {d // 2}): one column per pair. Each pair m "
                          "fills two columns, sin in 2m and cos in 2m+1."),
            (d, T): f"on {what} the result has shape ({d}, {T}): positions are the rows, (T, d) = ({T}, {d}). A "
                    "transpose, or parameters in the order (d, T)? The call is sinusoidal(T, d)."}


#: (T, d); the last is longer than any table the notebook prints; one drawn T is longer still (401 to 999), its d 22+.
SINUSOID_CASES = ((6, 4), (50, 16), (100, 8), (300, 10))


def _draw_sinusoid(rng, shortest=2, longest=400, widths=(2, 6, 8, 10, 12, 18, 20)) -> Case:
    T, d = int(rng.integers(shortest, longest)), int(rng.choice(widths))
    return Case(T, d, what=f"T = {T}, d = {d} (drawn at random)")


check_sinusoidal = Exercise(reference_sinusoidal, title="the sinusoidal encoding",
    expects="sinusoidal(T, d) returning a (T, d) tensor",
    cases=lambda: [Case(T, d, what=f"T = {T}, d = {d}") for T, d in SINUSOID_CASES], own="sinusoidal_positions",
    draw=(partial(_draw_sinusoid, longest=50), _draw_sinusoid,
          partial(_draw_sinusoid, shortest=401, longest=1000, widths=(22, 34, 66, 130))),
    expected=lambda case: sinusoidal_positions(*case.args, dtype=torch.float64), shapes=_sinusoid_shapes,
    slips=lambda case: [(v, f"on {case.what}: {m}.") for v, m in _sinusoid_slips(*case.args)],
    name="PE on {what}", atol=1e-5, atol32=1e-4,   # float32's angles at T = 1,000 are off by 3e-5
    hint="Angle = p / 10000 ** (2m / d) (in Python ^ is XOR): the positions p as a column (T, 1) against the "
         "d / 2 values of m as a row give (T, d / 2) angles; sin in column 2m, cos in column 2m+1.",
    success="your encoding matches sinusoidal_positions for (T, d) = (6, 4), (50, 16), (100, 8), (300, 10) and three "
            "sizes drawn at random. Row 0 is 0, 1, 0, 1, …: position 0 has every angle at 0.",
    explanation="Slicing with 0::2 and 1::2 puts the sines in the even columns and the cosines in the odd ones; "
                "both columns of pair m use the same angle p / 10000^(2m/d).")


# --- Exercise 2: the outputs of a shuffled sentence ---------------------------------------------
ORDER = [2, 0, 3, 4, 1]   # the shuffled sentence is (word 2, word 0, word 3, word 4, word 1): not its own inverse


def reference_shuffled_outputs(Y, order):
    """Outputs of the shuffled sentence, from the original outputs Y (T, d_k): row i belongs to word order[i]."""
    return Y[order]                                      # (T, d_k) the same vectors, in the new order


def _shuffle_case(order=ORDER, seed: int = 8, d_model: int = 6, drawn: str = "", wide: int = 0) -> Case:
    """Y (T, T + wide) of a SelfAttention on T random words (d_k ≥ T: a column shuffle is a slip, not an error), the
    order, and the outputs of the shuffled sentence as the module computes them."""
    torch.manual_seed(seed)
    attention = SelfAttention(d_model=d_model, d_k=len(order) + wide).double()
    E = torch.randn(len(order), d_model, dtype=torch.float64)   # (T, d_model) the words, no positions
    with torch.no_grad():
        Y, Y_shuffled = attention(E[None])[0], attention(E[list(order)][None])[0]
    return Case(Y, list(order), what=f"order = {list(order)}{drawn}", Y_shuffled=Y_shuffled)


def _draw_shuffle(rng, T=None, wide=False) -> Case:
    """An order of T words (3 to 8 if None): not the identity, not the page's nor its inverse (Y[ORDER] would be the
    inverse shuffle), not its own inverse (so Y[argsort] shows); `wide`: d_k above T."""
    T = T or int(rng.integers(3, 9))
    order = rng.permutation(T).tolist()
    while order in (sorted(order), ORDER, np.argsort(ORDER).tolist(), np.argsort(order).tolist()):
        order = rng.permutation(T).tolist()
    return _shuffle_case(order, seed=int(rng.integers(2**31)), d_model=int(rng.integers(3, 9)),
                         drawn=" (drawn at random)", wide=int(rng.integers(1, 4)) * wide)


def _shuffle_slips(case):
    Y, order = case.args
    return [(Y, "that is Y unchanged. The words moved, and each word's output moves with it."),
            (Y[torch.argsort(torch.tensor(order))], "that is the inverse shuffle (Y[argsort(order)]). Row i of the "
             "new sentence is word order[i], so its output is row order[i] of Y: Y[order]."),
            (Y[:, order], "you shuffled the columns (the features); shuffle the rows."),
            (lambda: Y[ORDER], f"that is Y in the page's order {ORDER}: use the argument, order = {order}.")]


check_shuffled_outputs = Exercise(reference_shuffled_outputs, title="the outputs of a shuffled sentence",
    expects="shuffled_outputs(Y, order) returning a (T, d_k) tensor", cases=lambda: [_shuffle_case()],
    draw=(partial(_draw_shuffle, T=len(ORDER)), _draw_shuffle, partial(_draw_shuffle, wide=True)),   # the page's T
    expected=lambda case: case.Y_shuffled, slips=_shuffle_slips,
    name="the result for {what}", atol=1e-6, hint="Each word keeps its output vector; only the rows change places.",
    success="your prediction equals what SelfAttention computes on the shuffled sentence, for this order and three "
            "drawn at random: every output is the same vector as before, in the new order. Attention without "
            "positions cannot tell the two orders apart.",
    explanation="Attention(E[order]) = Attention(E)[order]: shuffling the inputs shuffles the outputs the same way "
                "(permutation equivariance).")


# --- Exercise 3: add the positions --------------------------------------------------------------
def reference_add_positions(E):
    """E (T, d) -> E + PE (T, d): each token's embedding plus its position's encoding."""
    T, d = E.shape
    return E + sinusoidal_positions(T, d, dtype=E.dtype)   # (T, d) + (T, d)


def _add_shapes(case):
    (T, d) = case.args[0].shape
    return {(T, 2 * d): (f"on {case.what} the result is ({T}, {2 * d}): you concatenated. Add instead, E + PE, "
                         f"which keeps the shape ({T}, {d}) that attention expects.")}


def _add_slips(case):
    (E,), (T, d) = case.args, case.args[0].shape
    PE = sinusoidal_positions(T, d, dtype=torch.float64)
    return [(v, f"on {case.what}: {m}.") for v, m in [
        (E, "that is E unchanged: the positions were not added"),
        (PE, "that is PE alone: the words are gone. Add the two: E + PE"),
        (E * PE, "you multiplied E by PE; add them"),
        (E + PE[0], "every token got position 0's vector (PE[0]); each row p needs its own PE[p]"),
        (E * math.sqrt(d) + PE, "you scaled E by √d, as the paper does before adding; here add E as it is"),
        (E + sinusoidal_positions(T + 1, d, dtype=torch.float64)[1:], "the positions start at 1; the first "
                                                                      "token is position 0")]]


def _add_case(E, drawn="") -> Case:
    return Case(E, what=f"E of shape {tuple(E.shape)}{drawn}")


def _draw_add(rng, shortest=2, longest=12, widths=(2, 8, 10, 12)) -> Case:
    T, d = int(rng.integers(shortest, longest)), int(rng.choice(widths))
    return _add_case(torch.from_numpy(rng.normal(size=(T, d))), " (drawn at random)")


check_add_positions = Exercise(reference_add_positions, title="adding the positions",
    expects="add_positions(E) returning a (T, d) tensor", slips=_add_slips, name="the result on {what}", atol=1e-5,
    cases=lambda: [_add_case(torch.tensor([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=torch.float64)),
                   _add_case(torch.randn(7, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64))],
    draw=(_draw_add, partial(_draw_add, shortest=65, longest=300, widths=(8, 22, 66)),
          lambda rng: _add_case(torch.from_numpy(rng.normal(size=(3, 4))), " (drawn at random, the size of 'money bank "
                                "grows')")), shapes=_add_shapes,
    hint="Add E + sinusoidal_positions(T, d), with E's own T (its rows, the tokens) and d (its columns, the features).",
    success="E + PE: each token's vector now depends on where it stands. The same word at two positions "
            "gets two different vectors.",
    explanation="Adding keeps the width d, so nothing after it changes; the price is that content and position "
                "share the same d numbers (section 6's four terms).")
