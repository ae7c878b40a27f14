"""Exercises of notebook 08: the sinusoidal encoding, the outputs of a shuffled sentence, positions added."""
from __future__ import annotations

import math

import torch

from helpers.attention_torch import SelfAttention
from helpers.exercises.feedback import (
    Feedback,
    Solution,
    compare_numbers,
    correct,
    numbers_from,
    require_callable,
    wrong,
)
from helpers.positions import sinusoidal_positions

# --- Exercise 1: the sinusoidal encoding --------------------------------------------------------


def reference_sinusoidal(T, d):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)): -> (T, d)."""
    p = torch.arange(T, dtype=torch.float64)[:, None]   # (T, 1) positions 0 … T − 1
    two_i = torch.arange(0, d, 2, dtype=torch.float64)   # (d/2,) 0, 2, …, d − 2
    angles = p / 10000 ** (two_i / d)                    # (T, d/2) one angle per position and pair
    PE = torch.zeros(T, d, dtype=torch.float64)
    PE[:, 0::2] = torch.sin(angles)                      # even columns: sin
    PE[:, 1::2] = torch.cos(angles)                      # odd columns: cos
    return PE


def _sinusoid_slips(T: int, d: int) -> list[tuple[torch.Tensor, str]]:
    """[(what a slip returns, what the slip is)]."""
    p = torch.arange(T, dtype=torch.float64)[:, None]   # (T, 1)
    i = torch.arange(d // 2, dtype=torch.float64)        # (d/2,) the pair index
    column = torch.arange(d, dtype=torch.float64)        # (d,) the column index

    def interleave(sin, cos):
        PE = torch.zeros(T, d, dtype=torch.float64)
        PE[:, 0::2], PE[:, 1::2] = sin, cos
        return PE

    right = p / 10000 ** (2 * i / d)
    per_column = p / 10000 ** (column / d)                # (T, d) every column its own exponent
    doubled = p / 10000 ** (2 * column / d)               # (T, d) the column index j used as i in 2i
    return [
        (interleave(torch.cos(right), torch.sin(right)),
         "sin and cos are swapped: even columns 2i hold sin, odd columns 2i+1 hold cos"),
        (interleave(torch.sin(p / 10000 ** (i / d)), torch.cos(p / 10000 ** (i / d))),
         "the exponent uses i instead of 2i: pair i has frequency 1 / 10000^(2i/d), so the slowest pair "
         "is near 1/10000, not 1/100"),
        (interleave(torch.sin(per_column[:, 0::2]), torch.cos(per_column[:, 1::2])),
         "column 2i+1 got its own exponent (2i+1)/d: the sin and the cos of a pair share one frequency, "
         "10000^(2i/d) for both"),
        (interleave(torch.sin(doubled[:, 0::2]), torch.cos(doubled[:, 1::2])),
         "the exponent used the column index j as if it were i, 10000^(2j/d); pair i covers columns 2i and "
         "2i+1, so column j belongs to pair j // 2"),
        (torch.cat([torch.sin(right), torch.cos(right)], dim=1),
         "all the sines come first and then all the cosines: interleave them, sin in column 2i and cos in 2i+1"),
        (interleave(torch.sin(p * 10000 ** (2 * i / d)), torch.cos(p * 10000 ** (2 * i / d))),
         "you multiplied p by 10000^(2i/d); divide: the angle is p / 10000^(2i/d)"),
        (interleave(torch.sin(right + 1 / 10000 ** (2 * i / d)), torch.cos(right + 1 / 10000 ** (2 * i / d))),
         "the positions start at 1; the first token is position 0 (its row is 0, 1, 0, 1, …)"),
    ]


def check_sinusoidal(student_function) -> Feedback:
    """Exercise 1: sinusoidal(T, d) -> (T, d), checked against helpers.positions.sinusoidal_positions."""
    problem = require_callable(student_function, "sinusoidal(T, d) returning a (T, d) tensor")
    if problem is not None:
        return problem
    for T, d in ((6, 4), (50, 16)):
        what = f"T = {T}, d = {d}"
        got, problem = numbers_from(student_function, T, d, on=what)
        if problem is not None:
            return problem
        expected = sinusoidal_positions(T, d, dtype=torch.float64).numpy()   # (T, d)
        if got.shape == (d, T):
            return wrong(f"on {what} the result has shape ({d}, {T}), the transpose: positions are the rows, "
                         f"(T, d) = ({T}, {d}).")
        if got.shape == (T, d // 2):
            return wrong(f"on {what} the result has shape ({T}, {d // 2}): one column per pair. Each pair i "
                         "fills two columns, sin in 2i and cos in 2i+1.")
        problem = compare_numbers(got, expected, f"PE on {what}", atol=1e-5,
                                  hint="angle = p / 10000^(2i/d); sin in column 2i, cos in column 2i+1.",
                                  slips=[(v.numpy(), f"on {what}: {m}.") for v, m in _sinusoid_slips(T, d)])
        if problem is not None:
            return problem
    return correct("your encoding matches sinusoidal_positions for (T, d) = (6, 4) and (50, 16). Row 0 is "
                   "0, 1, 0, 1, …: position 0 has every angle at 0.")


def solution_sinusoidal() -> Solution:
    return Solution.from_function(
        "the sinusoidal encoding", reference_sinusoidal,
        "Slicing with 0::2 and 1::2 puts the sines in the even columns and the cosines in the odd ones; "
        "both columns of pair i use the same angle p / 10000^(2i/d).")


# --- Exercise 2: the outputs of a shuffled sentence ---------------------------------------------

ORDER = [2, 0, 3, 4, 1]   # the shuffled sentence is (word 2, word 0, word 3, word 4, word 1): not its own inverse


def reference_shuffled_outputs(Y, order):
    """Outputs of the shuffled sentence, from the original outputs Y (T, d_k): row i belongs to word order[i]."""
    return Y[order]                                      # (T, d_k) the same vectors, in the new order


def _shuffle_case():
    torch.manual_seed(8)
    attention = SelfAttention(d_model=6, d_k=5).double()   # d_k = T: a column shuffle is a slip, not an error
    E = torch.randn(len(ORDER), 6, dtype=torch.float64)   # (5, 6) five words, no positions
    with torch.no_grad():
        return attention(E[None])[0], attention(E[ORDER][None])[0]   # (5, 5) before and after the shuffle


def check_shuffled_outputs(student_function) -> Feedback:
    """Exercise 2: shuffled_outputs(Y, order) -> the outputs of the shuffled sentence, without running attention."""
    problem = require_callable(student_function, "shuffled_outputs(Y, order) returning a (T, d_k) tensor")
    if problem is not None:
        return problem
    Y, Y_shuffled = _shuffle_case()
    got, problem = numbers_from(student_function, Y.clone(), list(ORDER), on=f"order = {ORDER}")
    if problem is not None:
        return problem
    inverse = torch.argsort(torch.tensor(ORDER))
    slips = [
        (Y, "that is Y unchanged. The words moved, and each word's output moves with it"),
        (Y[inverse], "that is the inverse shuffle (Y[argsort(order)]). Row i of the new sentence is word "
                     "order[i], so its output is row order[i] of Y: Y[order]"),
        (Y[:, ORDER], "you shuffled the columns (the features); shuffle the rows"),
    ]
    problem = compare_numbers(got, Y_shuffled.numpy(), f"the outputs for order = {ORDER}", atol=1e-9,
                              hint="each word keeps its output vector; only the rows change places.",
                              slips=[(v.numpy(), m + ".") for v, m in slips])
    if problem is not None:
        return problem
    return correct("your prediction equals what SelfAttention computes on the shuffled sentence: every output "
                   "is the same vector as before, in the new order. Attention without positions cannot tell "
                   "the two orders apart.")


def solution_shuffled_outputs() -> Solution:
    return Solution.from_function(
        "the outputs of a shuffled sentence", reference_shuffled_outputs,
        "Attention(E[order]) = Attention(E)[order]: shuffling the inputs shuffles the outputs the same way "
        "(permutation equivariance).")


# --- Exercise 3: add the positions --------------------------------------------------------------


def reference_add_positions(E):
    """E (T, d) -> E + PE (T, d): each token's embedding plus its position's encoding."""
    T, d = E.shape
    return E + sinusoidal_positions(T, d, dtype=E.dtype)   # (T, d) + (T, d)


def check_add_positions(student_function) -> Feedback:
    """Exercise 3: add_positions(E) -> E + sinusoidal_positions(T, d)."""
    problem = require_callable(student_function, "add_positions(E) returning a (T, d) tensor")
    if problem is not None:
        return problem
    g = torch.Generator().manual_seed(3)
    for E in (torch.tensor([[1.0, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=torch.float64),
              torch.randn(7, 6, generator=g, dtype=torch.float64)):
        T, d = E.shape
        what = f"E of shape ({T}, {d})"
        got, problem = numbers_from(student_function, E.clone(), on=what)
        if problem is not None and ("must match" in problem.message or "is odd" in problem.message):
            return wrong(f"{problem.message.rstrip('.')}. The encoding must have E's shape: "
                         "sinusoidal_positions(T, d) with T, d = E.shape, in that order.")
        if problem is not None:
            return problem
        PE = sinusoidal_positions(T, d, dtype=torch.float64)
        if got.shape == (T, 2 * d):
            return wrong(f"on {what} the result is ({T}, {2 * d}): you concatenated. Add instead, E + PE, "
                         f"which keeps the shape ({T}, {d}) that attention expects.")
        slips = [
            (E, "that is E unchanged: the positions were not added"),
            (PE, "that is PE alone: the words are gone. Add the two: E + PE"),
            (E * PE, "you multiplied E by PE; add them"),
            (E + PE[0], "every token got position 0's vector (PE[0]); each row p needs its own PE[p]"),
            (E * math.sqrt(d) + PE, "you scaled E by √d, as the paper does before adding; here add E as it is"),
            (E + sinusoidal_positions(T + 1, d, dtype=torch.float64)[1:], "the positions start at 1; the first "
                                                                          "token is position 0"),
        ]
        problem = compare_numbers(got, (E + PE).numpy(), f"the result on {what}", atol=1e-5,
                                  hint="E + sinusoidal_positions(T, d), with T, d = E.shape.",
                                  slips=[(v.numpy(), f"on {what}: {m}.") for v, m in slips])
        if problem is not None:
            return problem
    return correct("E + PE: each token's vector now depends on where it stands. The same word at two positions "
                   "gets two different vectors.")


def solution_add_positions() -> Solution:
    return Solution.from_function(
        "adding the positions", reference_add_positions,
        "Adding keeps the width d, so nothing after it changes; the price is that content and position share "
        "the same d numbers (section 6's four terms).")
