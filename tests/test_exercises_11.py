"""Notebook 11's checkers: the running softmax key by key, the causal skip condition. Each slip the notebook names is
diagnosed by name, and answers that copy what the page shows, or ignore an argument, are refused."""
import array
import collections
import math
from functools import partial

import numpy as np
import pytest
import torch

from helpers.exercises import flash as ex11
from helpers.fast_attention import online_softmax_step, tile_is_future, tile_map


def passed(feedback):
    assert feedback.passed, feedback.message


def not_yet(feedback, *fragments):
    assert not feedback.passed, feedback.message
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


# ---------------------------------------------------------------- Exercise 1: the running softmax

def test_the_reference_and_the_library_step_pass():
    passed(ex11.check_running_softmax(ex11.reference_running_softmax))

    def in_python_floats(stream, d_v):
        m, l, o = float("-inf"), 0.0, [0.0] * d_v
        for s, v in stream:
            m_new = max(m, float(s))
            correction, p = math.exp(m - m_new), math.exp(float(s) - m_new)
            m, l, o = m_new, correction * l + p, [correction * a + p * b for a, b in zip(o, v.tolist())]
        return m, l, o
    passed(ex11.check_running_softmax(in_python_floats))

    def with_the_helpers_step(stream, d_v):
        from helpers.fast_attention import online_softmax_step
        m, l, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0
        for s, v in stream:
            m, l, o = online_softmax_step(m, l, o, s[None], v[None])
        return m, l, o
    passed(ex11.check_running_softmax(with_the_helpers_step))

    def one_key_a_step(stream, d_v):   # s a 0-d score, v (d_v,): the step takes one key as it comes
        m, l, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0
        for s, v in stream:
            m, l, o = online_softmax_step(m, l, o, s, v)
        return m, l, o
    assert "a ready-made online_softmax_step" in ex11.check_running_softmax(one_key_a_step).message
    passed(ex11.check_running_softmax(one_key_a_step))


def test_a_tile_rule_read_off_the_course_s_own_functions_is_told_so():
    """Section 4 prints tile_map's codes, not tile_is_future's body: either one called is a ready-made answer."""
    def from_the_map(q_start, q_stop, k_start, k_stop, T_q, T_k):   # 1 x 1 tiles: the last query against the first key
        return bool(tile_map(T_q, T_k, 1, 1, causal=True)[q_stop - 1, k_start] == 0)

    def wrapped(q_start, q_stop, k_start, k_stop, T_q, T_k):
        return tile_is_future(q_start, q_stop, k_start, T_q, T_k)
    for answer, name in ((from_the_map, "tile_map"), (wrapped, "tile_is_future")):
        feedback = ex11.check_tile_is_future(answer)
        assert feedback.passed and f"a ready-made {name}, though" in feedback.message


def running(update, start=-math.inf, divide=False):
    """A student's loop: (l, o) = update(m, m_new, l, o, p, v) with p = exp(s − m_new); m from `start`; o / l at the
    end where `divide`."""
    def answer(stream, d_v):
        m, l, o = (torch.tensor(x, dtype=torch.float64) for x in (start, 0.0, [0.0] * d_v))
        for s, v in stream:
            m_new = torch.maximum(m, s)
            (l, o), m = update(m, m_new, l, o, torch.exp(s - m_new), v), m_new
        return m, l, o / l if divide else o
    return answer


def rescale(m, m_new):
    return torch.exp(m - m_new)


def upside_down(m, m_new, l, o, p, v):   # exp(m_new − m), from the second key on (the first has nothing to rescale)
    c = torch.exp(m_new - m) if torch.isfinite(m) else 0.0
    return c * l + p, c * o + p * v


def right(m, m_new, l, o, p, v):
    return rescale(m, m_new) * l + p, rescale(m, m_new) * o + p * v


@pytest.mark.parametrize("answer, fragment", [
    (running(lambda m, m_new, l, o, p, v: (l + p, rescale(m, m_new) * o + p * v)), "l is not rescaled"),
    (running(lambda m, m_new, l, o, p, v: (rescale(m, m_new) * l + p, o + p * v)), "o is not rescaled"),
    (running(lambda m, m_new, l, o, p, v: (l + p, o + p * v)), "neither l nor o is rescaled"),
    (running(upside_down), "the correction is upside down"),
    (running(right, divide=True), "o came back divided by l"),
    (running(right, start=0.0), "m starts at 0"),
], ids=["l", "o", "neither", "upside down", "divided", "from 0"])
def test_each_running_slip_is_named(answer, fragment):
    passed(ex11.check_running_softmax(running(right)))   # the same loop without the slip
    not_yet(ex11.check_running_softmax(answer), fragment)


def test_the_solution_shows_the_reference():
    assert ex11.check_running_softmax.solution().code.startswith("def reference_running_softmax(stream, d_v):")
    assert ex11.check_tile_is_future.solution().code.startswith("def reference_tile_is_future(")


def test_the_placeholder_and_answers_of_the_wrong_form():
    def placeholder(stream, d_v):
        raise NotImplementedError
    not_yet(ex11.check_running_softmax(placeholder), "still raises NotImplementedError")
    not_yet(ex11.check_running_softmax(ex11.reference_running_softmax(iter([]), 2)), "expected a function")
    not_yet(ex11.check_running_softmax(lambda stream, d_v: ex11.reference_running_softmax(stream, d_v)[2]),
            "should return three things")
    not_yet(ex11.check_running_softmax(lambda stream, d_v: (0.0, 1.0, torch.zeros(d_v + 1))), "shapes")


def test_answers_that_copy_numbers_or_ignore_the_values_fail():
    first = ex11.reference_running_softmax(zip(*map(lambda x: torch.tensor(x, dtype=torch.float64),
                                                    ex11.RUNNING_CASES[0])), 3)
    not_yet(ex11.check_running_softmax(lambda stream, d_v: first))            # the first case's answer, every time

    def ignores_values(stream, d_v):
        m, l, o = ex11.reference_running_softmax(stream, d_v)
        return m, l, torch.ones(d_v) * l                                         # as if every value were all ones
    not_yet(ex11.check_running_softmax(ignores_values), "wrong values")


def test_only_the_keys_seen_so_far_are_available():
    """The stream is an iterator: a function that asks for all the scores at once gets an error it can read."""
    not_yet(ex11.check_running_softmax(lambda stream, d_v: (stream.max(), 0, 0)), "raised AttributeError")


def test_an_answer_that_collects_the_stream_first_is_told_why():
    """Right numbers from every key kept, as the stream gave them or copied: the long stream's memory refuses them."""
    def softmax_of(scores, values):
        s, V = torch.as_tensor(scores, dtype=torch.float64), torch.as_tensor(values, dtype=torch.float64)
        w = torch.exp(s - s.max())
        return s.max(), w.sum(), w @ V

    def collects(stream, d_v):
        pairs = list(stream)                                                     # every key before any update
        return softmax_of(torch.stack([s for s, _ in pairs]), torch.stack([v for _, v in pairs]))

    def copies(stream, d_v):
        pairs = [(s.item(), v.clone()) for s, v in stream]
        return softmax_of([s for s, _ in pairs], torch.stack([v for _, v in pairs]))

    def as_numbers(stream, d_v):
        scores, values = [], []
        for s, v in stream:
            scores.append(float(s))
            values.extend(v.tolist())                                            # one flat list of floats
        return softmax_of(scores, torch.tensor(values, dtype=torch.float64).view(-1, d_v))

    def into_a_buffer(stream, d_v):
        S, V, n = np.empty(20_000), np.empty((20_000, d_v)), 0                   # made before the first key
        for s, v in stream:
            S[n], V[n], n = s.item(), v.numpy(), n + 1
        return softmax_of(S[:n], V[:n])

    def two_passes(stream, d_v):                                                 # no tensor made of all the keys
        pairs = list(stream)
        m = max(s for s, _ in pairs)
        return m, sum(torch.exp(s - m) for s, _ in pairs), sum(torch.exp(s - m) * v for s, v in pairs)

    def largest_first(stream, d_v):                                              # sorted: nothing to rescale
        return ex11.slipped_running_softmax(sorted(stream, key=lambda pair: -pair[0]), d_v, rescale_l=False,
                                            rescale_o=False)

    def in_numpy(stream, d_v):                                                   # no tensor: Python and NumPy
        pairs = [(float(s), v.numpy().copy()) for s, v in stream]               # a list no variable names yet
        S, V = np.array([s for s, _ in pairs]), np.stack([v for _, v in pairs])
        return S.max(), np.exp(S - S.max()).sum(), np.exp(S - S.max()) @ V

    def unless_wide(stream, d_v, keep=collects):                                 # d_v cannot say which stream is long
        return ex11.reference_running_softmax(stream, d_v) if d_v >= 8 else keep(stream, d_v)

    def flat(stream, d_v):                                                       # one NumPy array of every number
        S = np.fromiter((x for s, v in stream for x in (s.item(), *v.tolist())), float).reshape(-1, d_v + 1)
        return S[:, 0].max(), np.exp(S[:, 0] - S[:, 0].max()).sum(), np.exp(S[:, 0] - S[:, 0].max()) @ S[:, 1:]
    for answer in (collects, copies, as_numbers, into_a_buffer, two_passes, largest_first, in_numpy, flat,
                   unless_wide, partial(unless_wide, keep=in_numpy), partial(unless_wide, keep=flat)):
        not_yet(ex11.check_running_softmax(answer), f"on {ex11.LONG:,} keys drawn at random", "grows with the keys")
    not_yet(ex11.check_running_softmax(two_passes), "still held", "numbers in tensors and arrays at the last key")
    not_yet(ex11.check_running_softmax(into_a_buffer), "bytes of Python objects")


def test_keys_kept_as_python_lists_from_tolist_are_counted():
    """.tolist() runs inside the checker's watch: its lists are the answer's memory, not the checker's."""
    def as_lists(stream, d_v):
        scores, values = [], []
        for s, v in stream:
            scores.append(s.item())
            values.append(v.tolist())
        S, V = np.array(scores), np.array(values)
        w = np.exp(S - S.max())
        return S.max(), w.sum(), w @ V
    not_yet(ex11.check_running_softmax(as_lists), "bytes of Python objects at the last key", "grows with the keys")


def test_keeping_only_the_scores_is_refused_by_the_memory_that_grows():
    """One number a key, kept in a list (as floats or as tensors) to sum at the end: a list as long as the keys."""
    def scores_kept(as_float):
        def answer(stream, d_v):
            scores, m, o = [], torch.tensor(float("-inf"), dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64)
            for s, v in stream:
                scores.append(float(s) if as_float else s)
                m_new = torch.maximum(m, s)
                m, o = m_new, o * torch.exp(m - m_new) + torch.exp(s - m_new) * v
            return m, sum(torch.exp(torch.as_tensor(x, dtype=torch.float64) - m) for x in scores), o
        return answer
    for as_float in (True, False):
        not_yet(ex11.check_running_softmax(scores_kept(as_float)), "entries in the variable scores at the last key",
                "no scores")

    def scores_in(container):                                                    # any Python sequence counts
        def answer(stream, d_v):
            scores, m, o = container(), -math.inf, torch.zeros(d_v, dtype=torch.float64)
            for s, v in stream:
                scores.append(s.item())
                m_new = max(m, s.item())
                m, o = m_new, o * math.exp(m - m_new) + math.exp(s.item() - m_new) * v
            return m, sum(math.exp(x - m) for x in scores), o
        return answer
    for container in (collections.deque, partial(array.array, "d"), collections.UserList):
        not_yet(ex11.check_running_softmax(scores_in(container)), "999 entries in the variable scores")

    def in_a_row(library):                                                       # a (1, T_k) row: one "row" long
        def answer(stream, d_v):
            m, o, S = -math.inf, torch.zeros(d_v, dtype=torch.float64), library.zeros((1, 0), dtype=library.float64)
            for s, v in stream:
                S = library.concatenate([S, s.reshape(1, 1).numpy() if library is np else s.reshape(1, 1)], axis=1)
                m_new = max(m, s.item())
                m, o = m_new, o * math.exp(m - m_new) + math.exp(s.item() - m_new) * v
            return m, library.exp(S - m).sum().item(), o
        return answer
    for library in (np, torch):
        not_yet(ex11.check_running_softmax(in_a_row(library)), "entries in the variable S", "999")

    class Running:                                                               # a class whose state keeps them
        def __init__(self):
            self.m, self.scores = torch.tensor(float("-inf"), dtype=torch.float64), []

        def __call__(self, stream, d_v):
            o = torch.zeros(d_v, dtype=torch.float64)
            for s, v in stream:
                self.scores.append(s.item())
                m_new = torch.maximum(self.m, s)
                self.m, o = m_new, o * torch.exp(self.m - m_new) + torch.exp(s - m_new) * v
            return self.m, torch.exp(torch.tensor(self.scores, dtype=torch.float64) - self.m).sum(), o
    not_yet(ex11.check_running_softmax(lambda stream, d_v: Running()(stream, d_v)), "the variable self.scores")
    not_yet(ex11.check_running_softmax(in_a_global_log), "the variable LOG at the last key")

    def kept_inside(box, key):                                                 # a list inside a list or a dict
        def answer(stream, d_v):
            m, o, box[key] = torch.tensor(float("-inf"), dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64), []
            for s, v in stream:
                box[key].append(s)
                m_new = torch.maximum(m, s)
                m, o = m_new, o * torch.exp(m - m_new) + torch.exp(s - m_new) * v
            return m, torch.exp(torch.stack(box[key]) - m).sum(), o
        return answer
    not_yet(ex11.check_running_softmax(kept_inside([[]], 0)), "the variable box[0] at the last key")
    not_yet(ex11.check_running_softmax(kept_inside({"scores": []}, "scores")), "the variable box['scores']")

    def three_deep(stream, d_v):                                                # no shallower name holds them
        log, m, o = {"a": {"b": {"scores": []}}}, torch.tensor(float("-inf"), dtype=torch.float64), 0
        for s, v in stream:
            log["a"]["b"]["scores"].append(s)
            m_new = torch.maximum(m, s)
            m, o = m_new, o * torch.exp(m - m_new) + torch.exp(s - m_new) * v
        return m, torch.exp(torch.stack(log["a"]["b"]["scores"]) - m).sum(), o
    not_yet(ex11.check_running_softmax(three_deep), "the variable log['a']['b']['scores']")


LOG = []   # a notebook's global list


def in_a_global_log(stream, d_v):
    m, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64)
    LOG.clear()
    for s, v in stream:
        LOG.append(s.item())
        m_new = torch.maximum(m, s)
        m, o = m_new, o * torch.exp(m - m_new) + torch.exp(s - m_new) * v
    return m, torch.exp(torch.tensor(LOG, dtype=torch.float64) - m).sum(), o


def test_a_sum_shifted_by_the_first_score_and_corrected_at_the_end_overflows():
    """No running maximum: exp(s − first score) overflows when a score climbs 1,600 above the first."""
    def first_score_shift(stream, d_v):
        first, l, o, m = None, torch.tensor(0.0, dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64), None
        for s, v in stream:
            first = s if first is None else first
            m = s if m is None else torch.maximum(m, s)
            p = torch.exp(s - first)
            l, o = l + p, o + p * v
        return m, l * torch.exp(first - m), o * torch.exp(first - m)
    not_yet(ex11.check_running_softmax(first_score_shift), "[0.0, 800.0, 1600.0]", "NaN or infinity")


def test_an_answer_that_stops_before_the_last_key_gets_its_numbers_judged():
    not_yet(ex11.check_running_softmax(lambda stream, d_v: ex11.reference_running_softmax(
        (pair for _, pair in zip(range(100), stream)), d_v)), f"on {ex11.LONG:,} keys", "wrong values")


def test_m_and_l_as_tensors_of_one_number_pass():
    def one_element(stream, d_v):
        m, l, o = ex11.reference_running_softmax(stream, d_v)
        return m.reshape(1), l.reshape(1, 1), o
    passed(ex11.check_running_softmax(one_element))


def test_a_print_per_key_is_no_memory_the_answer_keeps(capsys):
    def prints(stream, d_v):
        m, l, o = float("-inf"), 0.0, torch.zeros(d_v, dtype=torch.float64)
        for s, v in stream:
            m_new = max(m, s.item())
            correction, p = math.exp(m - m_new), math.exp(s.item() - m_new)
            m, l, o = m_new, correction * l + p, correction * o + p * v
            print(f"m = {m:.3f}, l = {l:.3f}")                                 # a student's debugging line
        return m, l, o
    passed(ex11.check_running_softmax(prints))
    assert 0 < len(capsys.readouterr().out.splitlines()) < ex11.LONG           # the short streams' lines only

    def upside_down(stream, d_v):                                                # NaN of its own: inf · 0
        m, l, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0
        for s, v in stream:
            m_new = torch.maximum(m, s)
            correction, p = torch.exp(m_new - m), torch.exp(s - m_new)
            m, l, o = m_new, correction * l + p, correction * o + p * v
        return m, l, o
    not_yet(ex11.check_running_softmax(upside_down), "contains NaN or infinity")


@pytest.mark.parametrize("total", [None, 1000])
def test_a_progress_bar_around_the_stream_is_no_memory_the_answer_keeps(total):
    class Bar:   # as tqdm: len() is its total, None (len() raises) for a stream of unknown length
        def __init__(self, stream):
            self.stream, self.total, self.n = stream, total, 0

        def __len__(self):
            return self.total

        def __iter__(self):
            for pair in self.stream:
                self.n += 1
                yield pair

    def with_a_bar(stream, d_v):
        return ex11.reference_running_softmax(Bar(stream), d_v)
    passed(ex11.check_running_softmax(with_a_bar))


# ---------------------------------------------------------------- Exercise 2: the causal skip condition

def test_the_reference_passes_and_the_library_rule_agrees():
    passed(ex11.check_tile_is_future(ex11.reference_tile_is_future))
    from helpers.fast_attention import tile_is_future
    passed(ex11.check_tile_is_future(lambda qa, qb, ka, kb, T_q, T_k: tile_is_future(qa, qb, ka, T_q, T_k)))


@pytest.mark.parametrize("rule, fragment", [
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qb - 1, "the tiles are aligned top-left"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka >= qb - 1 + T_k - T_q, "(off by one)"),
    (lambda qa, qb, ka, kb, T_q, T_k: kb - 1 > qb - 1 + T_k - T_q, "you tested the tile's LAST key (k_stop − 1)"),
    (lambda qa, qb, ka, kb, T_q, T_k: kb - 1 > qa + T_k - T_q, "its first query cannot see all its keys"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qa + T_k - T_q, "you tested the tile's FIRST query"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > (qa + qb) // 2 + T_k - T_q, "a query in the MIDDLE of the tile"),
    (lambda qa, qb, ka, kb, T_q, T_k: kb > qb - 1 + T_k - T_q, "you tested k_stop, one past the tile's last key"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qb - 1 + T_q - T_k, "the shift has the wrong sign"),
    (lambda qa, qb, ka, kb, T_q, T_k: not ka > qb - 1 + T_k - T_q, "True and False are swapped"),
    (lambda qa, qb, ka, kb, T_q, T_k: ka > qb + T_k - T_q, "one tile too many is computed"),
], ids=["top-left", ">=", "last key", "first query all keys", "first query", "middle", "k_stop", "sign", "swapped",
        "one too many"])
def test_each_tile_slip_is_named(rule, fragment):
    not_yet(ex11.check_tile_is_future(rule), fragment)


def test_a_rule_that_ignores_the_sizes_or_copies_the_square_case_fails():
    not_yet(ex11.check_tile_is_future(lambda qa, qb, ka, kb, T_q, T_k: ka > qb - 1 + 4 - 4), "top-left")
    square = {(i, j) for i in range(4) for j in range(4) if j > i}               # the 8 × 8 case's tiles, memorised
    not_yet(ex11.check_tile_is_future(lambda qa, qb, ka, kb, T_q, T_k: (qa // 2, ka // 2) in square))
    not_yet(ex11.check_tile_is_future(lambda *args: "yes"))                     # a text is truthy, everywhere
    not_yet(ex11.check_tile_is_future(lambda *args: False), "skipped no tile", "True for a tile to SKIP")


def test_an_error_in_the_rule_is_reported_with_the_sizes():
    not_yet(ex11.check_tile_is_future(lambda qa, qb, ka, kb, T_q, T_k: 1 / 0),
            "for T_q=3, T_k=3 in tiles of 2 queries × 2 keys: your function raised ZeroDivisionError")


def test_values_cut_to_the_pages_d_v_fail():
    def cut(stream, d_v):
        m, l, o = ex11.reference_running_softmax(stream, d_v)
        return m, l, o[:3]                                                      # the first case's d_v = 3
    not_yet(ex11.check_running_softmax(cut), "shapes")


def test_the_state_names_its_wrong_part_and_its_dtype():
    reference = ex11.reference_running_softmax

    def swapped(stream, d_v):
        m, l, o = reference(stream, d_v)
        return l, m, o

    def l_off(stream, d_v):
        m, l, o = reference(stream, d_v)
        return m, 1.01 * l, o

    def in_float32(stream, d_v):
        return tuple(x.float() for x in reference(stream, d_v))

    def float32_step(stream, d_v):   # float64 in and out, but torch.tensor(a Python float) is float32
        m, l, o = float("-inf"), torch.tensor(0.0, dtype=torch.float64), torch.zeros(d_v, dtype=torch.float64)
        for s, v in stream:
            m_new = max(m, s.item())
            correction, p = torch.exp(torch.tensor(m - m_new)), torch.exp(torch.tensor(s.item() - m_new))
            m, l, o = m_new, correction * l + p, correction * o + p * v
        return m, l, o

    def divided_at_the_end(stream, d_v):
        m, l, o = reference(stream, d_v)
        return m, l, o / l

    def starts_with_the_first_value(stream, d_v):
        m = l = o = None
        for s, v in stream:
            if m is None:
                m, l, o = s, torch.tensor(1.0, dtype=torch.float64), v                 # o is v itself
                continue
            m_new = torch.maximum(m, s)
            correction, p = torch.exp(m - m_new), torch.exp(s - m_new)
            m, l, o = m_new, correction * l + p, correction * o + p * v
        return m, l, o
    not_yet(ex11.check_running_softmax(swapped), "m and l are swapped")
    not_yet(ex11.check_running_softmax(l_off), "wrong values: l = ")
    not_yet(ex11.check_running_softmax(in_float32), "is torch.float32", "float64")
    not_yet(ex11.check_running_softmax(float32_step), "right to 5 digits or more", "a step ran in float32")
    not_yet(ex11.check_running_softmax(divided_at_the_end), "or once at the end", "Return o undivided")
    passed(ex11.check_running_softmax(starts_with_the_first_value))             # each v is the answer's own copy


def test_a_rule_that_returns_no_truth_value_is_told_so():
    def forgets_to_return(q_start, q_stop, k_start, k_stop, T_q, T_k):
        skip = k_start > q_stop - 1 + T_k - T_q   # noqa: F841
    not_yet(ex11.check_tile_is_future(forgets_to_return), "for T_q=3, T_k=3", "returned None", "`return`")
    not_yet(ex11.check_tile_is_future(lambda *tile: "False"), "returned str 'False'")
    for verdict in (torch.tensor(0.5), torch.tensor(float("nan")), np.float64(1.0)):   # truthy, but no verdict
        not_yet(ex11.check_tile_is_future(lambda *tile, v=verdict: v), "return True (skip) or False")
    right = ex11.reference_tile_is_future
    passed(ex11.check_tile_is_future(lambda *tile: torch.tensor(right(*tile))))      # a bool or int tensor passes
    passed(ex11.check_tile_is_future(lambda *tile: np.int8(right(*tile))))


def test_a_rule_that_only_looks_like_a_slip_on_a_small_grid_is_not_told_that_slip():
    """k_start > q_stop + 5 + T_k − T_q skips what 'one tile too many' skips on the first 2 × 2 grid, not later."""
    feedback = ex11.check_tile_is_future(lambda qa, qb, ka, kb, T_q, T_k: ka > qb + 5 + T_k - T_q)
    not_yet(feedback, "for T_q=3, T_k=3", "the tile of queries 0…1 and key 2 is computed, but it is wholly in the "
            "future: its last query (token 1) sees keys up to 1, and the tile starts at key 2. Skip it.")
    assert not any(m[:40] in feedback.message for _, m in ex11.TILE_SLIPS), feedback.message
    not_yet(ex11.check_tile_is_future(lambda qa, qb, ka, kb, T_q, T_k: None if T_k != T_q else ka > qb - 1),
            "for T_q=3, T_k=12", "returned None")   # the grid where it happened, not the first one tried


def test_a_tile_skipped_though_its_last_query_sees_a_key_is_named_by_its_queries_and_keys():
    def skips_query_4_s_first_tile(q_start, q_stop, k_start, k_stop, T_q, T_k):
        return k_start > q_stop - 1 + T_k - T_q or (q_start, k_start, T_q) == (4, 0, 8)
    not_yet(ex11.check_tile_is_future(skips_query_4_s_first_tile), "for T_q=8, T_k=8 in tiles of 2 queries × 2 keys: "
            "the tile of queries 4…5 and keys 0…1 is skipped, but its last query (token 5) sees key 0: compute it.")


def test_an_answer_right_on_the_pages_cases_and_slipped_elsewhere_fails_every_time():
    """Each slip's witness is a fixed case; the drawn cases refuse it too, so copying the fixed cases does not help."""
    fixed_tiles = {tuple(ex11._tile_case(*c).args) for c in ex11.TILE_CASES}
    partly = next(rule for rule, message in ex11.TILE_SLIPS if "the tile's FIRST query" in message)
    middle = next(rule for rule, message in ex11.TILE_SLIPS if "MIDDLE" in message)
    fixed_scores = {tuple(scores) for scores, _ in ex11.RUNNING_CASES}

    def from_zero(stream, d_v):
        pairs = [(s, v.clone()) for s, v in stream]
        right = tuple(round(float(s), 6) for s, _ in pairs) in fixed_scores
        return ex11.slipped_running_softmax(pairs, d_v, **({} if right else {"start": 0.0}))
    for _ in range(20):
        for slip in (partly, middle):
            def rule(qa, qb, ka, kb, T_q, T_k, slip=slip):
                sizes = {(T_q, T_k, b_q, b_k) for T_q, T_k, b_q, b_k in fixed_tiles}
                page = any((T_q, T_k) == s[:2] for s in sizes)
                return ex11.reference_tile_is_future(qa, qb, ka, kb, T_q, T_k) if page else slip(qa, qb, ka, kb,
                                                                                                  T_q, T_k)
            feedback = ex11.check_tile_is_future(rule)
            not_yet(feedback, "drawn at random")                    # right on every fixed case: no slip named
            assert not any(message[:40] in feedback.message for _, message in ex11.TILE_SLIPS), feedback.message
        not_yet(ex11.check_running_softmax(from_zero), "drawn at random", "m starts at 0")


def test_a_torch_buffer_of_the_keys_is_refused_and_a_bounded_tile_is_not():
    def buffer_of(scores, values):
        w = torch.exp(scores - scores.max())
        return scores.max(), w.sum(), w @ values

    def concatenates(stream, d_v):                                              # grows a tensor, key by key
        S, V = torch.empty(0, dtype=torch.float64), torch.empty(0, d_v, dtype=torch.float64)
        for s, v in stream:
            S, V = torch.cat([S, s.reshape(1)]), torch.cat([V, v[None]])
        return buffer_of(S, V)

    def preallocates(stream, d_v):                                              # one tensor, larger than any stream
        S, V, n = torch.empty(1024, dtype=torch.float64), torch.empty(1024, d_v, dtype=torch.float64), 0
        for n, (s, v) in enumerate(stream, start=1):
            S[n - 1], V[n - 1] = s, v
        return buffer_of(S[:n], V[:n])
    for answer in (concatenates, preallocates):
        not_yet(ex11.check_running_softmax(answer), "made a tensor of", "grows with the keys")

    def in_tiles_of(stream, d_v, size=32):                                      # memory bounded by the tile, not T
        m, l, o, tile = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0, []
        for s, v in stream:
            tile.append((s, v))
            if len(tile) == size:
                m, l, o = online_softmax_step(m, l, o, *map(torch.stack, zip(*tile)))
                tile = []
        return online_softmax_step(m, l, o, *map(torch.stack, zip(*tile))) if tile else (m, l, o)

    def with_a_history(stream, d_v):                                             # m and l of every step, for a plot
        m, l, o, history = torch.tensor(float("-inf"), dtype=torch.float64), 0, 0, []
        for s, v in stream:
            m, l, o = online_softmax_step(m, l, o, s[None], v[None])
            history.append((m, l))
        return m, l, o
    for _ in range(10):
        passed(ex11.check_running_softmax(in_tiles_of))
    passed(ex11.check_running_softmax(partial(in_tiles_of, size=128)))           # bounded by the tile, not by T

    def stacked_tiles_of_10(stream, d_v):                                        # 10 rows of 64 values at most
        m, l, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0
        S, V = torch.empty(0, dtype=torch.float64), torch.empty(0, d_v, dtype=torch.float64)
        for s, v in stream:
            S, V = torch.cat([S, s[None]]), torch.cat([V, v[None]])
            if len(S) == 10:
                m, l, o = online_softmax_step(m, l, o, S, V)
                S, V = S[:0], V[:0]
        return online_softmax_step(m, l, o, S, V) if len(S) else (m, l, o)
    passed(ex11.check_running_softmax(stacked_tiles_of_10))
    not_yet(ex11.check_running_softmax(with_a_history), "entries in the variable history at the last key", "no history")

    def as_numpy_views(stream, d_v):                                             # v.numpy() shares v's numbers
        scores, values = zip(*((s.item(), v.numpy()) for s, v in stream))
        w = np.exp(np.array(scores) - max(scores))
        return max(scores), w.sum(), w @ np.stack(values)
    not_yet(ex11.check_running_softmax(as_numpy_views), "numbers in tensors and arrays at the last key")


def test_a_lazy_maximum_is_told_the_exercise_returns_the_largest_score():
    def lazy(stream, d_v):   # rescales only when a score is 5 above m: o / l right, m not the largest
        m, l, o = None, 0.0, torch.zeros(d_v, dtype=torch.float64)
        for s, v in stream:
            m = float(s) if m is None else m
            if float(s) > m + 5:
                l, o, m = l * math.exp(m - float(s)), o * math.exp(m - float(s)), float(s)
            l, o = l + math.exp(float(s) - m), o + math.exp(float(s) - m) * v
        return m, l, o
    not_yet(ex11.check_running_softmax(lazy), "o / l is right", "is not the largest score", "flash_forward starts at 0")


def test_a_start_left_none_or_a_fixed_d_v_gets_a_hint_and_a_rule_that_never_skips_the_condition():
    def running(stream, d_v, m=None, size=None):
        l, o = torch.tensor(0.0, dtype=torch.float64), torch.zeros(size or d_v, dtype=torch.float64)
        for s, v in stream:
            m_new = torch.maximum(m, s)
            correction, p = torch.exp(m - m_new), torch.exp(s - m_new)
            m, l, o = m_new, correction * l + p, correction * o + p * v
        return m, l, o
    not_yet(ex11.check_running_softmax(running), "raised TypeError", "still None, as the stub starts", "−∞")
    minus_inf = torch.tensor(float("-inf"), dtype=torch.float64)
    not_yet(ex11.check_running_softmax(partial(running, m=minus_inf, size=3)), "raised RuntimeError",
            "o has d_v = 2 entries here", "from the d_v argument")
    not_yet(ex11.check_tile_is_future(lambda q_start, q_stop, k_start, k_stop, T_q, T_k: k_start > q_stop - 1 + T_k),
            "skipped no tile", "True for a tile to SKIP", "its LAST query (token q_stop − 1 + T_k − T_q)")


NOTEBOOK_TENSOR = torch.zeros(5000, 2, dtype=torch.float64)   # a large global of the notebook, not the answer's memory


def started_at(m):
    """A right running softmax in Python floats, m starting at `m`; it reads a large notebook global's dtype."""
    def answer(stream, d_v):
        m_, l, o = m, 0.0, torch.zeros(d_v, dtype=NOTEBOOK_TENSOR.dtype)
        for s, v in stream:
            m_new = max(m_, s.item())
            l, o = l * math.exp(m_ - m_new) + math.exp(s.item() - m_new), o * math.exp(m_ - m_new) + math.exp(
                s.item() - m_new) * v
            m_ = m_new
        return m_, l, o
    return answer


def test_a_running_softmax_that_reads_a_large_notebook_global_is_not_blamed_for_holding_it():
    passed(ex11.check_running_softmax(started_at(-math.inf)))


def test_a_running_softmax_started_at_a_finite_m_is_told_its_start():
    for start in (-1e4, -1e9, 5.0, -1e300):   # 5.0: above a case's scores, where nothing underflows; -1e300 too
        not_yet(ex11.check_running_softmax(started_at(start)), "is above every score, not the largest one seen")


def test_a_tile_buffer_made_before_the_first_key_passes_when_it_cannot_hold_every_key():
    def tiles_in_a_buffer(size):                                                # FlashAttention's block, made once
        def answer(stream, d_v):
            S, V, n = torch.empty(size, dtype=torch.float64), torch.empty(size, d_v, dtype=torch.float64), 0
            m, l, o = torch.tensor(float("-inf"), dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0
            for s, v in stream:
                S[n], V[n], n = s, v, n + 1
                if n == size:
                    m, l, o = online_softmax_step(m, l, o, S, V)
                    n = 0
            return online_softmax_step(m, l, o, S[:n], V[:n]) if n else (m, l, o)
        return answer
    for size in (100, 256):   # 512 keys of d_v = 64 would hold more than half of all the values: refused
        passed(ex11.check_running_softmax(tiles_in_a_buffer(size)))
    not_yet(ex11.check_running_softmax(tiles_in_a_buffer(ex11.LONG)), "held 1,000 entries in the variable")


def test_tiles_read_with_islice_pass_though_two_tiles_are_alive_at_a_time():
    from itertools import islice

    def in_tiles(stream, d_v, tile=200):
        m, l, o = torch.tensor(-math.inf, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), 0
        keys = iter(stream)
        while chunk := list(islice(keys, tile)):                                 # the last tile stays alive
            S, V = torch.stack([s for s, _ in chunk]), torch.stack([v for _, v in chunk])
            m, l, o = online_softmax_step(m, l, o, S, V)
        return m, l, o
    passed(ex11.check_running_softmax(in_tiles))
