"""Exercises of notebook 11: the running softmax of one query, key by key; the causal skip condition of a tile."""
import contextlib
import math
import sys
import tracemalloc
import types
import weakref
from collections.abc import Mapping, Sequence, Set
from functools import partial

import numpy as np
import torch

from helpers import validation as check
from helpers.exercises.engine import Case, Exercise, Refusal, named_slip, raised, refused


# --- Exercise 1: the running softmax, one key at a time ----------------------------------------------------------
def reference_running_softmax(stream, d_v):
    """(score, value) pairs arriving one key at a time -> (m, l, o) after the last one:
    the largest score, the sum of exp(score − m), the sum of exp(score − m) · value (d_v,)."""
    m = torch.tensor(float("-inf"), dtype=torch.float64)   # nothing seen yet: every score will be larger
    l = torch.tensor(0.0, dtype=torch.float64)
    o = torch.zeros(d_v, dtype=torch.float64)
    for s, v in stream:
        m_new = torch.maximum(m, s)
        correction = torch.exp(m - m_new)      # exp(m_old − m_new): rescales what was summed against m_old
        p = torch.exp(s - m_new)               # the new key's weight, before dividing
        m, l, o = m_new, correction * l + p, correction * o + p * v
    return m, l, o


def slipped_running_softmax(stream, d_v, *, rescale_l=True, rescale_o=True, sign=1, divide=False, start=-np.inf,
                            old=False, inside=False):
    """The loop with one slip: a sum not rescaled, the correction upside down, o divided every step, m from 0, the new
    key weighted against the old m (`old`; the first key: itself), the correction on the new term too (`inside`)."""
    m, l, o = (torch.tensor(start, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64),
               torch.zeros(d_v, dtype=torch.float64))
    for s, v in stream:
        m_new = torch.maximum(m, s)
        correction = torch.exp(sign * (m - m_new)) if torch.isfinite(m) else torch.tensor(0.0)
        p = torch.exp(s - (m if old and torch.isfinite(m) else m_new)) * (correction if inside else 1)
        l_new = (correction if rescale_l else 1) * l + p
        o = ((correction if rescale_o else 1) * o * (l if divide else 1) + p * v) / (l_new if divide else 1)
        m, l = m_new, l_new
    return m, l, o


RUNNING_SLIPS = (
    (dict(rescale_l=False), "l is not rescaled: when a larger score arrives, the old sum of exp(s − m_old) must be "
                            "multiplied by exp(m_old − m_new) before the new term is added"),
    (dict(rescale_o=False), "o is not rescaled: its terms were weighted against the old maximum; multiply o by "
                            "exp(m_old − m_new), m_old read before m changes, then add the new value, as for l"),
    (dict(sign=-1), "the correction is upside down: exp(m_new − m_old) grows the old sums; the old terms "
                    "exp(s − m_old) become exp(s − m_new) = exp(s − m_old) · exp(m_old − m_new), which shrinks them"),
    (dict(divide=True), "o came back divided by l (at every step, or once at the end): that is the finished output "
                        "row o / l. Return o undivided, a sum like l: whoever needs the output divides, once"),
    (dict(start=0.0), "m starts at 0: scores far below 0 underflow, exp(s − 0) = 0, l stays 0 (0 / 0 at the end). "
                      "Start at −∞, nothing seen yet: torch.tensor(-math.inf, dtype=torch.float64) (or -math.inf)"),
    (dict(old=True), "the new key was weighted against the OLD maximum, exp(s − m_old), too large whenever the "
                     "maximum grows: weight it by exp(s − m_new), after m is updated"),
    (dict(inside=True), "the correction exp(m_old − m_new) multiplied the new key's term too: it rescales only "
                        "what was summed before; add p = exp(s − m_new) after it: l = exp(m_old − m_new) · l + p"),
    (dict(rescale_l=False, rescale_o=False), "neither l nor o is rescaled: multiply both by exp(m_old − m_new) when a "
                                             "larger score arrives (computed before m takes its new value)"))
LONG = 1000   #: the keys of the long streams, on which the answer's memory is measured
#: (scores, values): the maximum arrives late (rescaling matters), scores far below 0 (m from 0 fails), and scores
#: that climb far above the first (exp(s − first score) overflows: only a maximum kept up to date works).
RUNNING_CASES = (([0.3, 1.2, -0.4, 2.0], [[1, 0, 2], [0, 1, 1], [3, 1, 0], [0, 2, 1]]),
                 ([-1000.0, -998.5, -1001.0], [[1, 2], [0, 1], [2, 0]]),
                 ([0.0, 800.0, 1600.0], [[1, 2], [0, 1], [2, 0]]),
                 ([-1.5e308, -1.7e308, -1.6e308], [[1, 2], [0, 1], [2, 0]]))   # below any finite start but −∞


def _running_case(scores, values, what=None) -> Case:
    s, V = torch.tensor(scores, dtype=torch.float64), torch.tensor(values, dtype=torch.float64)
    return Case(list(zip(s, V)), V.shape[1],
                what=what or f"scores {[float(f'{x:.4g}') for x in scores]} with values of d_v = {V.shape[1]}")


def _draw_running(rng, low=False, long=False, d_v=None) -> Case:
    """Scores often rising; `low`: all near −1,000 (m from 0 fails); `long`: LONG keys. d_v 4 to 7, or as given."""
    T, d_v = LONG if long else int(rng.integers(3, 8)), d_v or int(rng.integers(4, 8))
    scores = (np.sort(rng.normal(0, 2, T)) if rng.random() < 0.5 else rng.normal(0, 2, T)) - 1000 * low
    return _running_case(scores.tolist(), rng.normal(0, 1, (T, d_v)).tolist(),
                         f"{T:,} keys drawn at random{', scores near −1,000' * low}, d_v={d_v}")


_HOLDERS = (Sequence, Mapping, Set)   # whose len() is their entries (list, deque, array, dict; not a progress bar)


class _Watch(torch.overrides.TorchFunctionMode):
    """Inside it: `most`, the most numbers in one tensor that a torch function or method returned; `alive`, those
    tensors (and NumPy arrays, from .numpy()) still in use (weakly held); `kept`, `bytes`, `sizes`: see _stream."""
    def __init__(self):
        super().__init__()
        self.most, self.kept, self.bytes, self.sizes, self.alive = 0, 0, 0, {}, weakref.WeakValueDictionary()

    def __torch_function__(self, func, _types, args=(), kwargs=None):
        if func in (torch.Tensor.tolist, torch.Tensor.item, torch.Tensor.__float__):
            return func(*args, **(kwargs or {}))   # Python numbers and lists: the answer's memory (see _stream)
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, (torch.Tensor, np.ndarray)):   # a view of a tensor's numbers is a copy of its own
                self.most, self.alive[id(t)] = max(self.most, math.prod(t.shape)), t
        return out


def _sizes(frame, with_globals=True) -> dict:
    """{name: its length (items, characters, longest axis)}: the locals, the globals named (`with_globals`), what they
    hold three levels down: attributes (self.scores; not a module's), a small container's items (keep[0], log["a"])."""
    sizes = {}
    while frame is not None and frame.f_code is not _run_running.__code__:   # the answer, and what it called
        named = {n: frame.f_globals[n] for n in frame.f_code.co_names if with_globals and n in frame.f_globals}
        todo = [(name, x, 3) for name, x in {**named, **frame.f_locals}.items()]
        while todo:
            key, x, depth = todo.pop()
            sizes[key] = max(sizes.get(key, 0), max(x.shape, default=1) if isinstance(x, (np.ndarray, torch.Tensor))
                           else len(x) if isinstance(x, _HOLDERS) else 1)   # the longest axis: (1, T), (T, d_v) count T
            if depth and isinstance(x, (list, tuple, dict)) and len(x) <= 16:
                todo += [(f"{key}[{k!r}]", y, depth - 1) for k, y in (dict(x) if isinstance(x, dict) else
                                                                        dict(enumerate(x))).items()]
            elif depth and hasattr(x, "__dict__") and not isinstance(x, types.ModuleType):
                todo += [(f"{key}.{a}", y, depth - 1) for a, y in vars(x).items()]
        frame = frame.f_back
    return sizes


def _stream(pairs, watch=None):
    """Fresh copies of the (s, v) pairs; with a `watch`, the answer's variables' sizes halfway and at the last key, and
    there the numbers its tensors hold and the bytes of Python objects made since tracemalloc started (not ours)."""
    for i, (s, v) in enumerate(pairs):
        if watch is not None and i in (len(pairs) // 2, len(pairs) - 1):   # with the globals it reads, and without
            watch.sizes[i] = _sizes(sys._getframe(1)), _sizes(sys._getframe(1), with_globals=False)
        if watch is not None and i == len(pairs) - 1:
            watch.kept = sum(math.prod(t.shape) for t in list(watch.alive.values()))   # the keys kept, and m, l, o
            call, traces = _Watch.__torch_function__.__code__.co_firstlineno + 2, tracemalloc.take_snapshot().traces
            theirs = [t for t in traces if (f := t.traceback[0]).filename not in (__file__, weakref.__file__) or (
                f.filename, f.lineno) == (__file__, call)]   # ours out, but .tolist()'s
            watch.bytes = sum(t.size for t in theirs)
            watch.kept += sum(t.size for t in theirs if t.domain == np.lib.tracemalloc_domain) // 8   # NumPy's arrays
        yield s.clone(), v.clone()


def _run_running(answer, case):
    """The answer on the case's keys; on the long stream, its Python memory and the tensors it keeps too."""
    (pairs, d_v), sink = case.args, types.SimpleNamespace(write=len, flush=lambda: None)
    if len(pairs) < LONG or tracemalloc.is_tracing():
        return answer(_stream(pairs), d_v)
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), _Watch() as watch:   # prints: dropped
        tracemalloc.start()
        try:
            result = answer(_stream(pairs, watch), d_v)
        finally:
            tracemalloc.stop()
    (then, _), (last, local) = (watch.sizes.get(i, ({}, {})) for i in (len(pairs) // 2, len(pairs) - 1))   # {}: unread
    # refused: grown since halfway by over LONG / 4 keys (a tile passes), or the answer's own with room for every key
    grew, name = max(((n - then.get(k, 0), k) for k, n in last.items()), default=(0, ""))
    size, name = (last[name], name) if grew > LONG // 4 else max(((n, k) for k, n in local.items()), default=(0, ""))
    limit = 3 * LONG * (d_v + 1) // 4   # of all (s, v): a tile of ≤ LONG / 5 keys, held 3 times; bytes: as at d_v = 64
    kept = [f"still held {watch.kept:,} numbers in tensors and arrays at the last key"] * (watch.kept > limit) + [
        f"made a tensor of {watch.most:,} numbers"] * (watch.most > limit) + [
        f"still held {watch.bytes:,} bytes of Python objects at the last key"] * (watch.bytes > 6 * LONG * 64) + [
        f"held {size:,} entries in the variable {name} at the last key"] * (grew > LONG // 4 or size >= LONG)
    if kept:
        raise Refusal(f"on {case.what}: your function {' and '.join(kept)}, memory that grows with the keys. A "
                      "running softmax keeps only m, l and o: update them as each (s, v) arrives, and keep nothing "
                      "per key (no values, no scores, no history: l is the scores' running sum).")
    return result


def _state(m, l, o) -> np.ndarray:
    """(m, l, o) as one array [m, l, o_0 … o_{d_v−1}]."""
    return np.concatenate([check.as_array(x, name).reshape(-1) for name, x in zip("mlo", (m, l, o))])


def _read_state(result, case):
    d_v, where = case.args[1], f"on {case.what}: "
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        return None, (f"{where}the function should return three things, (m, l, o), but returned {type(result).__name__}"
                      + (f" of length {len(result)}." if isinstance(result, (tuple, list)) else "."))
    try:
        m, l, o = (check.as_array(x, name) for name, x in zip("mlo", result))   # bfloat16 too; complex refused
    except (TypeError, ValueError):
        return None, f"{where}m, l and o should be numbers (m and l one each, o a vector of d_v numbers)."
    if m.size != 1 or l.size != 1 or o.shape != (d_v,):
        return None, (f"{where}m and l should be one number each and o a vector of d_v = {d_v} numbers, but they "
                      f"have shapes {m.shape}, {l.shape} and {o.shape}.")
    low = next((f"{name} is {x.dtype}" for name, x in zip("mlo", result) if str(getattr(x, "dtype", "")).endswith(
        ("float32", "float16"))), None)
    if low is not None and np.allclose(_state(m, l, o), _state(*reference_running_softmax(*case.args)), rtol=1e-2):
        return None, (f"{where}{low}: keep m, l and o in the stream's float64 (float32 keeps about 7 digits, the "
                      "checker compares 9).")
    return _state(m, l, o), None


def _judge_state(case, got, expected):
    """Which of m, l and o is off, by name; a named slip, NaN or infinity is left to the engine."""
    if not np.isfinite(got).all() or named_slip(got, check_running_softmax.slips(case), atol=1e-9, right=expected):
        return None
    if np.allclose(got, expected, rtol=1e-5):   # float64 results that went through a float32 step
        return (f"on {case.what}: (m, l, o) are right to 5 digits or more, not to the 9 compared: a step ran in "
                "float32 (torch.tensor of a Python float is float32). Keep every step in float64: math.exp, or "
                "dtype=torch.float64.")
    if np.allclose(got[[1, 0, *range(2, got.size)]], expected, atol=1e-9):
        return f"on {case.what}: m and l are swapped: return them in the order (m, l, o)."
    if got[0] != expected[0] and np.isclose(got[0], expected[0] + np.log(expected[1]), atol=1e-9, rtol=0):
        return f"on {case.what}: m = {got[0]:.6g} is m + log l, the log-sum-exp: return m, the largest score seen."
    if got[0] > expected[0]:   # a lazy m is never above the largest score
        return f"on {case.what}: m = {got[0]:.6g} is above every score, not the largest one seen: start m at −∞."
    if got[0] != expected[0] and np.allclose(got[2:] / got[1], expected[2:] / expected[1], atol=1e-9):
        return (f"on {case.what}: o / l is right, but m = {got[0]:.6g} is not the largest score: any m (flash_forward "
                "starts at 0) keeps o / l right, but this exercise returns m = the largest score, l and o against it.")
    i = int(np.argmax(~np.isclose(got, expected, atol=1e-9, rtol=0)))
    names = ["m", "l", *(f"o[{k}]" for k in range(got.size - 2))]
    return (f"(m, l, o) on {case.what} has the right shape but the wrong values: {names[i]} = {got[i]:.6g} is too "
            f"{'large' if got[i] > expected[i] else 'small'}.")


def _running_error(case, error):
    """After a TypeError (a start left None, a Python float given to torch) or a RuntimeError (o's size): a hint."""
    hint = {TypeError: " Is m, l or o still None, as the stub starts? Start m at −∞, l at 0, o at d_v zeros. "
                       "torch.maximum and torch.exp take tensors, max and math.exp Python numbers.",
            RuntimeError: f" If two sizes differ: o has d_v = {case.args[1]} entries here, so make it from the d_v "
                          "argument, torch.zeros(d_v, dtype=torch.float64)."}.get(type(error))
    return hint and f"on {case.what}: {raised(error).rstrip('.')}.{hint}"


check_running_softmax = Exercise(reference_running_softmax, title="the running softmax, one key at a time",
    expects="running(stream, d_v) returning (m, l, o)", cases=lambda: [_running_case(*c) for c in RUNNING_CASES],
    call=_run_running, draw=(_draw_running, _draw_running, partial(_draw_running, low=True),   # long: d_v a head's,
                             partial(_draw_running, long=True, d_v=64), partial(_draw_running, long=True)),   # or not
    expected=lambda case: _state(*reference_running_softmax(*case.args)), read=_read_state, own="online_softmax_step",
    slips=lambda case: [(lambda o=options: _state(*slipped_running_softmax(*case.args, **o)), f"on {case.what}: {m}.")
                        for options, m in RUNNING_SLIPS],
    judge=_judge_state, reads="(m, l, o)", name="(m, l, o) on {what}", atol=1e-9, errors=_running_error,
    hint="When a larger score arrives, rescale what was summed against the old m before adding the new key.",
    success="one key at a time: the largest score so far, and two sums kept against it, rescaled by exp(m_old − m_new) "
            "whenever it grows. o / l is the attention output; m + log l the log-sum-exp a backward pass keeps.",
    explanation="online_softmax_step (section 2) does the same for a tile of keys at once, with s.max() of the tile "
                "and sums over its keys; plain_flash (section 3) for a tile of queries too.")


# --- Exercise 2: which causal tiles to skip ----------------------------------------------------------------------
def reference_tile_is_future(q_start, q_stop, k_start, k_stop, T_q, T_k):
    """True when the causal tile of queries q_start … q_stop − 1 and keys k_start … k_stop − 1 is wholly in the
    future: its first key comes after the last key its last query may see (the queries are the LAST T_q tokens)."""
    last_seen = (q_stop - 1) + (T_k - T_q)      # the last query is token T_k − T_q + (q_stop − 1)
    return k_start > last_seen


#: (T_q, T_k, block_q, block_k): each slip below differs from the rule first on a case where no earlier slip equals it
TILE_CASES = ((3, 3, 2, 2), (8, 8, 2, 2), (3, 12, 2, 4), (12, 12, 6, 2), (9, 9, 4, 3), (1, 10, 1, 3))
#: (wrong rule, message): a tile is skipped when the rule says so.
TILE_SLIPS = (
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qb - 1, "the tiles are aligned top-left: with fewer queries than keys the "
     "queries are the LAST T_q tokens, so query i sees keys up to i + T_k − T_q. Add T_k − T_q"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka >= qb - 1 + T_k - T_q, "the diagonal tile is skipped when its first key is "
     "exactly the last key its last query may see (off by one): skip only when k_start is AFTER that key (>, not >=)"),
    (lambda qa, qb, ka, kb, T_q, T_k: kb - 1 > qb - 1 + T_k - T_q, "a partly visible tile is skipped: you tested the "
     "tile's LAST key (k_stop − 1); its earlier keys may still be visible to its last query. Test k_start"),
    (lambda qa, qb, ka, kb, T_q, T_k: kb - 1 > qa + T_k - T_q, "a partly visible tile is skipped: its first query "
     "cannot see all its keys, but later queries of the tile can. Skip a tile only when even its LAST query sees none "
     "of its keys"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qa + T_k - T_q, "a partly visible tile is skipped: you tested the tile's "
     "FIRST query; its last query may still see some of the keys. Use q_stop − 1"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > (qa + qb) // 2 + T_k - T_q, "a partly visible tile is skipped: you tested a "
     "query in the MIDDLE of the tile; its last query may still see some of the keys. Use q_stop − 1"),
    (lambda qa, qb, ka, kb, T_q, T_k: kb > qb - 1 + T_k - T_q, "a partly visible tile is skipped: you tested k_stop, "
     "one past the tile's last key; its keys from k_start on may still be visible to its last query. Test its first "
     "key, k_start"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qb - 1 + T_q - T_k, "the shift has the wrong sign: the queries are the LAST "
     "T_q tokens, so query i is token i + T_k − T_q and sees the keys up to it. Add T_k − T_q, not T_q − T_k"),
    (lambda qa, qb, ka, kb, T_q, T_k: not ka > qb - 1 + T_k - T_q, "True and False are swapped: return True for a tile "
     "to SKIP (wholly in the future)"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qb + T_k - T_q, "one tile too many is computed: a tile whose first key is "
     "just after the last query's last key is already wholly in the future (the last query is q_stop − 1, not q_stop)"))


def tile_grid(rule, T_q, T_k, block_q, block_k) -> np.ndarray:
    """`rule` applied to every tile: (query tiles, key tiles) of 1.0 (skipped) and 0.0 (computed)."""
    return np.array([[float(bool(rule(i, min(i + block_q, T_q), j, min(j + block_k, T_k), T_q, T_k)))
                      for j in range(0, T_k, block_k)] for i in range(0, T_q, block_q)])


def _tile_case(T_q, T_k, block_q, block_k, drawn="") -> Case:
    tiles = f"{block_q} quer{'ies' if block_q > 1 else 'y'} × {block_k} key{'s' * (block_k > 1)}"
    return Case(T_q, T_k, block_q, block_k, what=f"T_q={T_q}, T_k={T_k} in tiles of {tiles}{drawn}")


def _draw_tiles(rng, tall=False, wide=False) -> Case:
    """Any tiles; `tall`: 2+ rows of 3 to 5 queries by 1 key (first, middle, last differ), more keys than the page;
    `wide`: 1 query by 2 to 4 keys, T_k > T_q > block_k (some row's last visible key falls inside a tile)."""
    T_k = int(rng.integers(13 if tall else 6, 20))
    block_q, block_k = (int(rng.integers(3, 6)), 1) if tall else (int(rng.integers(1, 5)), int(rng.integers(1, 6)))
    block_q, block_k = (1, int(rng.integers(2, 5))) if wide else (block_q, block_k)
    T_q = int(rng.integers(block_k + 1, T_k) if wide else rng.integers(2 * block_q if tall else 1, T_k + 1))
    return _tile_case(T_q, T_k, block_q, block_k, ", drawn at random")


def _run_tiles(answer, case):
    """The answer's rule on every tile of the grid; a rule that returns no truth value is refused."""
    if misfit := refused(answer, (0, 1, 0, 1, 1, 1), {}):   # the course's own tile_is_future has no k_stop
        raise Refusal(f"your function has the parameters {misfit}, but is called as {check_tile_is_future.expects}.")
    def rule(*tile):
        said = answer(*tile)
        if math.prod(getattr(said, "shape", ())) != 1:   # a whole mask, not one verdict for the tile
            raise Refusal(f"for {case.what} your function returned a {type(said).__name__} of shape "
                          f"{tuple(said.shape)}: return one truth value for the whole tile (reduce a mask with "
                          ".all() or .any(), whichever says 'no key of the tile is visible').")
        if not isinstance(said, (bool, int, np.bool_, np.integer)) and not str(getattr(said, "dtype", "")).startswith(
                ("torch.bool", "torch.int", "torch.uint", "bool", "int", "uint")):   # 0.5, nan: no truth value
            raise Refusal(f"for {case.what}: your function returned " + ("None. Did it forget to `return` its verdict?"
                          if said is None else f"{type(said).__name__} {said!r:.30}: return True (skip) or False."))
        return said
    grid = tile_grid(rule, *case.args)
    with contextlib.suppress(Exception):   # the rule on every fixed grid: a slip is named only if it fits them all
        case.fixed_grids = [tile_grid(answer, *c) for c in TILE_CASES]
    if not grid.any() and tile_grid(reference_tile_is_future, *case.args).any() and not rule(0, 1, 7, 8, 8, 8):
        raise Refusal(f"for {case.what}: your function skipped no tile, not even query 0's tile of key 7 when T_q = "
                      "T_k = 8, which is wholly in the future. Return True for a tile to SKIP: one whose first key "
                      "comes after the last key its LAST query (token q_stop − 1 + T_k − T_q) may see.")
    return grid


def _judge_tiles(case, got, expected):
    """The first tile the rule gets wrong, named by its queries and keys; a named slip is left to the engine."""
    if got.shape != expected.shape or named_slip(got, check_tile_is_future.slips(case), atol=0.5) is not None:
        return None
    (T_q, T_k, block_q, block_k), (i, j) = case.args, np.argwhere(got != expected)[0]
    q_first, k_first = i * block_q, j * block_k
    q_last, k_last = min(q_first + block_q, T_q) - 1, min(k_first + block_k, T_k) - 1
    queries = f"query {q_first}" if q_first == q_last else f"queries {q_first}…{q_last}"
    keys, sees = f"key {k_first}" if k_first == k_last else f"keys {k_first}…{k_last}", q_last + T_k - T_q
    return f"for {case.what}: the tile of {queries} and {keys} " + (
        f"is skipped, but its last query (token {sees}) sees key {k_first}: compute it." if got[i, j] else
        f"is computed, but it is wholly in the future: its last query (token {sees}) sees keys up to {sees}, and the "
        f"tile starts at key {k_first}. Skip it.")


check_tile_is_future = Exercise(reference_tile_is_future, title="the causal skip condition",
    expects="future(q_start, q_stop, k_start, k_stop, T_q, T_k) returning True or False", call=_run_tiles,
    cases=lambda: [_tile_case(*c) for c in TILE_CASES], where="for {what}: ", name="the tiles skipped (1) for {what}",
    own="tile_is_future or tile_map", expected=lambda case: tile_grid(reference_tile_is_future, *case.args),
    draw=(_draw_tiles, partial(_draw_tiles, wide=True), partial(_draw_tiles, tall=True)), atol=0.5, judge=_judge_tiles,
    slips=lambda case: [(lambda r=rule: tile_grid(r, *case.args), f"for {case.what}: {message}.")
                        for rule, message in TILE_SLIPS if hasattr(case, "fixed_grids") and all(
                            np.array_equal(tile_grid(rule, *c), g) for c, g in zip(TILE_CASES, case.fixed_grids))],
    hint="Skip only if even the tile's LAST query sees none of its keys: compare that with the tile's FIRST key.",
    success="a tile is skipped only when its first key comes after the last key its LAST query may see; a tile that "
            "crosses the diagonal is computed, masked inside. Square and causal, that is a bit over half of the tiles.",
    explanation="flash_attention's loop stops its key tiles at min(q_stop + T_k − T_q, T_k): the same condition, "
                "written as the end of a range (helpers.fast_attention.flash_forward).")
