"""Exercises of notebook 10: the induction score from a weight matrix; which head's removal hurts most."""
import functools
import re

import numpy as np
import torch

from helpers import induction
from helpers.attention_torch import causal_mask
from helpers.exercises.engine import Case, Exercise, Feedback, correct, returned_number, solved_by, text_answer, wrong
from helpers.measure import cpu_threads


# --- Exercise 1: the induction score from a weight matrix ------------------------------------------
def reference_induction_score(W, n):
    """(2n, 2n) weights on a sequence whose second half repeats its first n tokens -> the mean weight that the
    second half's queries i = n … 2n − 1 give key i − n + 1, the token after the earlier copy of token i."""
    i = torch.arange(n, 2 * n)                  # (n,) the second half's queries
    return W[i, i - n + 1].mean()               # (n,) weights on the key after the earlier copy -> one number


def _random_case(n, seed, drawn=""):
    """The case (W, n): W (2n, 2n), causal softmax weights of random scores (rows sum to 1, none on a later key)."""
    S = 3.0 * torch.randn(2 * n, 2 * n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    W = torch.softmax(S.masked_fill(~causal_mask(2 * n), float("-inf")), dim=-1)
    return Case(W, n, what=f"random causal weights, n = {n}{drawn}")


def _ideal(n, offset, what):
    """A case whose weights put everything on key i − offset (key 0 where that is before the start)."""
    i = torch.arange(2 * n)
    return Case(torch.eye(2 * n, dtype=torch.float64)[(i - offset).clamp(min=0)], n, what=f"{what}, n = {n}")


def _mean_at(W, queries, offset):
    """The mean of W[i, i − offset] over `queries` (negative keys wrap around, as indexing does)."""
    i = torch.as_tensor(list(queries))
    return W[i, i - offset].mean()


def _score_slips(case):
    W, n = case.args
    return [(value, f"{message}.") for value, message in [
        (lambda: _mean_at(W, range(n, 2 * n), n), "that is the weight on key i − n: the earlier copy of token i "
                                                  "itself. Predicting needs the token AFTER it: key i − n + 1"),
        (lambda: _mean_at(W, range(n, 2 * n), n - 2), "one key too far: the token after the earlier copy of token "
                                                      "i is at i − n + 1, not i − n + 2"),
        (lambda: _mean_at(W, range(n), n - 1), f"that averages over the first half, queries 0 … {n - 1}: their "
                                               "letters have not appeared before. Average over i = n … 2n − 1"),
        (lambda: _mean_at(W, range(2 * n), n - 1), "that averages over every query; only the second half's, i = n "
                                                   "… 2n − 1, have an earlier copy to look back to"),
        (lambda: _mean_at(W, range(n, 2 * n), 1), "that is the weight on key i − 1, the previous token: the "
                                                  "previous-token score. The induction head looks at key i − n + 1"),
        (lambda: _mean_at(W, range(1, 2 * n), 1), "that is the previous-token score (key i − 1, every query). The "
                                                  "induction score looks at key i − n + 1 from the second half"),
        (lambda: _mean_at(W.T, range(n, 2 * n), n - 1), "you got 0. Did the mean become a whole number (// n, int() "
         "or round() cut it to 0)? Divide with /. Or did you read W[i − n + 1, i], rows and columns swapped: the "
         "weight on a LATER key, 0 under a causal mask? Rows are queries, columns keys, and i − n + 1 comes before i"),
        (lambda: n * reference_induction_score(W, n), "that is the sum of the n weights: the score is their mean"),
        (lambda: reference_induction_score(W, n) / 2, "that divides the n weights' sum by 2n: the mean is over n"),
        (lambda: _mean_at(W, range(n - 1, 2 * n), n - 1), f"that also averages query n − 1 = {n - 1}, of the first "
                                                          "half (as W.diagonal(-(n − 1)) does): take i = n … 2n − 1"),
        *[(lambda k=k: k * _mean_at(W, range(n, 2 * n - 1), n - 1), "the last query, i = 2n − 1, is left out (or its "
           "key, n, by a slice of the keys that stops at n − 1): queries i = n … 2n − 1, keys i − n + 1 = 1 … n")
          for k in (1, (n - 1) / n)]]]   # its mean, or its sum divided by n


check_induction_score = Exercise(reference_induction_score, title="the induction score from a weight matrix",
    expects="induction_score(W, n) returning one number", slips=_score_slips, reads="the mean weight",
    read=lambda result, case: returned_number(result, "your function", "the mean weight", f"on {case.what}: "),
    cases=lambda: [*(_random_case(n, n) for n in (7, 4, 11)), _ideal(5, 4, "a perfect induction head"),
                   _ideal(5, 1, "a perfect previous-token head")], atol=1e-6, own="induction_score",
    draw=tuple(lambda rng, n=n: _random_case(int(rng.integers(*n)), int(rng.integers(1_000_000)), " (drawn at random)")
               for n in ((3, 13), (3, 13), (13, 41))),
    hint="Average, over the second copy's queries, the weight on the token just after its first occurrence.",
    success="the mean weight on the token after the earlier copy: 1 for a perfect induction head, 0 for a "
            "previous-token head, whatever n is.",
    explanation="helpers.induction.induction_score does the same for (..., 2n, 2n): one score per head at once.")


# --- Exercise 2: which head's removal hurts most -----------------------------------------------------
def reference_worst_head(scores):
    """(2, n_layers, H) scores -> the (layer, head) with the highest previous-token score: both induction heads
    build their keys, and part of their queries, from its output, so without it neither finds the earlier copy."""
    previous = scores[0]                                        # (n_layers, H)
    layer, head = divmod(int(previous.argmax()), previous.size(1))
    return layer, head


#: W_q scales per head, (layer 0's, layer 1's) as trained: none; layer 1's doubled (sharper induction heads); the
#: previous-token head flattened and every other head sharpened, so that its previous-token score no longer tops
#: every score (0.44, under one half), nor is its induction score the lowest.
SCALES = (((1.0, 1.0), (1.0, 1.0)), ((1.0, 1.0), (2.0, 2.0)), ((3.0, 0.25), (8.0, 8.0)))
SCALED = {SCALES[1]: ", layer {}'s W_q doubled", SCALES[2]: ", the previous-token head flattened, the others sharpened"}


def relabelled(model, orders, scales=SCALES[0], front=0, idle=0):
    """A copy of `model` computing the same function under new numbers: `front` idle layers (weights 0) first, `idle`
    idle heads after each layer's, layer l's heads in the order orders[l]; head h of layer l: W_q × scales[l][h]."""
    H, d_k, layers = model.n_heads, model.layers[0].d_k, front + model.n_layers
    copy = induction.AttentionOnlyTransformer(d_model=(H + idle) * d_k, n_layers=layers, n_heads=H + idle)
    state = {name: W.zero_() for name, W in copy.state_dict().items()}   # the copy's own weights, all 0 to begin
    for name, W in model.state_dict().items():   # each into its top-left corner: the rows and columns added stay 0
        state[re.sub(r"\d+", lambda n: str(int(n[0]) + front), name, count=1)][tuple(map(slice, W.shape))] = W
    with torch.no_grad():
        for layer, scale in zip(copy.layers[front:], scales):
            layer.W_q.weight[:H * d_k].mul_(torch.tensor(scale).repeat_interleave(d_k)[:, None])   # head h's rows
        for layer, order in zip(copy.layers, orders):
            rows = torch.cat([torch.arange(h * d_k, (h + 1) * d_k) for h in order])   # head blocks
            for W in (layer.W_q, layer.W_k, layer.W_v):
                W.weight.copy_(W.weight[rows])                  # (d_model, d_model): output rows, head by head
            layer.W_o.weight.copy_(layer.W_o.weight[:, rows])   # its input columns, in the same order
    return copy.eval()


@functools.lru_cache(maxsize=4 * len(SCALES))
def _measured(scales, front=0, idle=0):
    """That copy's scores (2, n_layers, H), heads as trained, and {head: copy loss with it off} of the copy without
    idle layers and heads (they change nothing); one thread."""
    model = relabelled(induction.load_trained_model(), [range(2 + idle)] * (front + 2), scales, front, idle)
    tokens, copy = induction.repeated_batch(500, torch.Generator().manual_seed(12))   # the page's evaluation batch
    with cpu_threads(1):
        return induction.head_scores(model, induction.probes(40)), (
            _measured(scales, 0, 0)[1] if front or idle else induction.ablation_table(model, tokens, copy))


def _model_case(orders, scales=SCALES[0], front=0, idle=0, drawn=""):
    """A relabelled copy computes the same function: the measured scores and losses, heads reordered (idle: no loss)."""
    (scores, measured), was = _measured(scales, front, idle), {(l, h): (l - front, old) for l, order in
                                                               enumerate(orders) for h, old in enumerate(order)}
    scores = torch.stack([scores[:, l, list(order)] for l, order in enumerate(orders)], dim=1)   # (2, n_layers, H)
    table = {head: measured.get(was.get(head), measured[None]) for head in [None, *was]}   # None: every head on
    moved = [f"layer {layer}'s heads " + ("swapped" if len(order) == 2 else f"in the order {order}")
             for layer, order in enumerate(orders) if list(order) != sorted(order)]
    kind = ", ".join(moved or ["the heads numbered as trained"]) + SCALED.get(scales, "").format(1 + front) + (
        ", an idle layer 0 in front (weights 0: it adds nothing)" * front + ", an idle head in each layer" * idle)
    return Case(scores, what=kind + drawn, table=table, worst=max(filter(None, table), key=table.get))   # None: all on


def _draw_model(rng) -> Case:
    front, idle = (int(n) for n in rng.integers(2, size=2))   # sizes other than the page's 2 layers of 2 heads
    orders = (tuple(range(2 + idle)),) * front + tuple(tuple(map(int, rng.permutation(2 + idle))) for _ in "01")
    return _model_case(orders, SCALES[int(rng.integers(len(SCALES)))], front, idle, ", drawn at random")


def _read_head(result, case):
    try:   # exactly two whole numbers: text, True, 0.7, inf or a third entry is no (layer, head)
        whole = [int(v) for v in result if not isinstance(v, (str, bool, np.bool_))
                 and getattr(v, "dtype", None) != torch.bool and float(v).is_integer()]
        layer, head = whole if len(whole) == len(result) else ()
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return None, (f"on {case.what}: your function returned {result!r:.60}; it should return a (layer, head) "
                      "pair of whole numbers, e.g. (1, 0).")
    if (layer, head) not in case.table:
        return None, (f"on {case.what}: there is no head {layer}.{head}: layers 0 to {case.args[0].size(1) - 1}, heads "
                      f"0 to {case.args[0].size(2) - 1}.")
    return np.asarray([layer, head]), None


def _judge_head(case, got, expected):
    head, table = tuple(int(v) for v in got), case.table
    label = f"{head[0]}.{head[1]} (layer {head[0]}'s head {head[1]})"   # (layer, head): the order named
    rise, worst = table[head] - table[None], table[case.worst] - table[None]   # its removal's cost; the worst one's
    name = induction.head_names(case.args[0])[head].replace("neither", "neither previous-token nor induction head")
    sizes = tuple(case.args[0].shape)   # the page's model is (2, 2, 2): an answer sized by it reads the wrong heads
    notes = f" (here scores is {sizes} = (2, n_layers, H): sizes from scores.shape)" * (sizes != (2, 2, 2))
    if name == "induction head":
        return (f"on {case.what}: head {label} is an induction head; switching it off raises the copy loss by "
                f"{rise:+.2f}, but another head's removal costs {worst:+.2f}: the other induction head still copies "
                f"part of the way without it. Which head do both induction heads need?{notes}")
    return (f"on {case.what}: switching head {label} off ({name}) changes the copy loss by {rise:+.2f}; another "
            f"head's removal costs {worst:+.2f}. Read both scores of every head{notes}.")


_worst_function = Exercise(reference_worst_head, title="which head's removal hurts most",
    expects="worst_head(scores) returning (layer, head)", success="the right head on every copy.",
    cases=lambda: (_model_case(*args) for args in (   # (orders, scales, idle layers in front, idle heads per layer)
        (((0, 1), (0, 1)),), (((1, 0), (0, 1)),), (((0, 1), (1, 0)), SCALES[1]), (((1, 0), (0, 1)), SCALES[2]),
        (((0, 1), (0, 1), (1, 0)), SCALES[0], 1), (((0, 2, 1), (0, 1, 2)), SCALES[0], 0, 1))),
    draw=_draw_model, draws=1, read=_read_head, judge=_judge_head, expected=lambda case: np.asarray(case.worst))


@solved_by("which head's removal hurts most", reference_worst_head, "reason = 'b': K- and Q-composition.")
def check_worst_head(worst_head, reason=None) -> Feedback:
    """Exercise 2: worst_head(scores) -> (layer, head), checked against the measured table of relabelled copies of
    the trained model; reason: the letter of the reason, "b" (its output builds the induction heads' keys)."""
    if isinstance(worst_head, str) and callable(reason):
        return wrong("the function comes first, then the letter: check_worst_head(my_worst_head, reason).")
    if not (verdict := _worst_function(worst_head)).passed:
        return verdict
    letter, problem = text_answer(reason, "the letter 'a', 'b' or 'c'", "reason")
    if problem is not None:
        return wrong(f"your function finds the right head every time; now the reason: {problem.message}")
    if letter.lower() not in ("a", "b", "c"):   # one letter: "b or c" and "b, not sure" hedge
        return wrong(f"reason should be one letter, 'a', 'b' or 'c', but got {letter[:20]!r}.")
    why = {"a": "it attends to the letter BEFORE each position, which is not the letter to predict: its output is "
                "read by layer 1",
           "c": "nothing here looked at the size of its weights; the table measured what breaks without it"}
    if letter.lower() != "b":
        return wrong(f"the right head, but not reason {letter!r}: {why[letter.lower()]}. Whose keys and queries "
                     "does it feed?")
    return correct("the previous-token head, which predicts nothing itself: both induction heads build their keys "
                   "(K-composition) and part of their queries (Q-composition) from it, so neither works without it.")
