"""The exercise checkers of notebooks 02 and 03: the reference passes, typical slips get their own message."""
import functools
import math
import re
import types

import numpy as np
import pytest
import torch
from torch.nn.functional import softmax as sm

from helpers.attention import attend
from helpers.attention_torch import attention_weights
from helpers.exercises import parameter_free as pf
from helpers.exercises import similarity_softmax as ss
from helpers.exercises.engine import Case, Feedback, Solution, named_slip
from helpers.fast_attention import lean_attention
from helpers.learning import ParameterFreeAttention
from helpers.running_example import embed
from helpers.similarity import softmax


def _fails(feedback, *fragments):
    assert isinstance(feedback, Feedback)
    assert not feedback.passed, feedback.message
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


def _passes(feedback):
    assert isinstance(feedback, Feedback)
    assert feedback.passed, feedback.message


def test_longer_not_closer_reference_passes():
    _passes(ss.check_longer_not_closer(ss.reference_longer_not_closer()))
    _passes(ss.check_longer_not_closer([1, 20]))
    _passes(ss.check_longer_not_closer(torch.tensor([2.0, 10.0])))
    feedback = ss.check_longer_not_closer([6.06, 1.009])                       # a hair below b's cosine
    assert feedback.passed and "26.258 > 26, yet cos(a, v) = 0.9557 < cos(a, b) = 0.9558" in feedback.message


@pytest.mark.parametrize("answer, fragments", [
    (None, ["still None"]),
    ("up", ["should be numbers"]),
    ([1, 2, 3], ["a vector of 2 numbers, shape (2,)", "has shape (3,)"]),
    ([0, 0], ["no direction"]),
    ([6, 1], ["not above a · b = 26", "not below"]),           # b itself: neither
    ([1, 5], ["angle is fine", "multiply v by a number larger than 1.86"]),   # c: angle passes, dot too small
    ([12, 2], ["beats 26", "exactly the way b does", "never changes its angle"]),     # 2b: long, same direction
    (10 * ss.B, ["beats 26", "exactly the way b does"]),      # 10 b: equal cosines up to float rounding
    ([13, 3], ["beats 26", "not below", "further from a (more downward)"]),  # long, closer to a than b, below a
    ([6, 4], ["beats 26", "not below", "further from a (more upward)"]),       # long, closer to a than b, above a
    ([-100, 0], ["away from a", "No length helps", "turn v toward a"]),
    ([-2, 4], ["across a", "No length helps"]),                # perpendicular: a · v = 0 for any length
    ([1.0, float("nan")], ["NaN or infinity"]),
    ([1e308, 1e308], ["overflows"]),                            # a · v = inf: no verdict on NaNs
])
def test_longer_not_closer_typical_slips(answer, fragments):
    _fails(ss.check_longer_not_closer(answer), *fragments)


def test_the_example_vector_the_messages_give_is_no_answer_at_any_length():
    example = re.search(r"np\.array\((\[.*?\])\)", ss.check_longer_not_closer(None).message)[1]
    assert f"such as {example}" in ss.check_longer_not_closer([1, 2, 3]).message
    for length in (1, 1.01, 10, 1000):
        _fails(ss.check_longer_not_closer([length * float(x) for x in example.strip("[]").split(",")]), "not below")


def test_longer_not_closer_rounding_and_huge_vectors_are_judged_exactly():
    ten_b = 10 * ss.B
    assert ss.cosine(ss.A, ten_b) < ss.cosine(ss.A, ss.B)     # float rounding puts 10 b a hair below b's cosine
    assert not ss.check_longer_not_closer(ten_b).passed
    _passes(ss.check_longer_not_closer([1e200, 5e200]))       # c's direction, no overflow in the cosine
    _fails(ss.check_longer_not_closer([-1e300, 0.0]), "No length helps")


def test_stable_softmax_reference_and_helper_pass():
    _passes(ss.check_stable_softmax(ss.reference_softmax))
    _passes(ss.check_stable_softmax(lambda x: softmax(x, axis=-1)))
    _passes(ss.check_stable_softmax(lambda x: torch.softmax(torch.tensor(x), dim=-1)))


def _stable(x, dtype):
    x = np.asarray(x, dtype=dtype)
    return _exp_over(x, x.max(axis=-1, keepdims=True))


def test_a_float32_softmax_passes_every_time_and_float16_is_named():
    """float32 rounds a score near 1,000 by up to 3e-5, which the drawn scores around ±1,000 show at atol 1e-6."""
    for _ in range(10):
        _passes(ss.check_stable_softmax(lambda x: _stable(x, np.float32)))
        _passes(ss.check_stable_softmax(lambda x: torch.softmax(torch.from_numpy(x).float(), dim=-1)))
        _passes(ss.check_stable_softmax(lambda x: _stable(x, np.float32).tolist()))           # float32's numbers
        _passes(ss.check_stable_softmax(lambda x: _stable(x, np.float32).astype(np.float64)))  # in float64's clothes
    x = np.array([1000.1, 1000.2, 1000.3])
    assert np.abs(_stable(x, np.float32) - ss.reference_softmax(x)).max() > 1e-6
    _fails(ss.check_stable_softmax(lambda x: _stable(x, np.float16)), "float16", "np.float16")
    _fails(ss.check_stable_softmax(lambda x: _exp_over(x.astype(np.float32), 0)), "overflows")


def _exp_over(x, shift, axis=-1, keepdims=True):
    e = np.exp(x - shift)
    return e / (e.sum() if axis is None else e.sum(axis=axis, keepdims=keepdims))


def _raises(x):
    raise NotImplementedError


def _returns_nothing(x):
    np.exp(x)


@pytest.mark.parametrize("function, fragments", [
    (_raises, ["NotImplementedError"]),
    (_returns_nothing, ["None", "return"]),
    (np.exp, ["returned exp(x) itself"]),
    (lambda x: x / x.sum(), ["divided the scores by their sum, without exp"]),
    (lambda x: _exp_over(x, 0), ["large scores", "overflows", "Subtract the largest score"]),
    (lambda x: _exp_over(x, x.min(axis=-1, keepdims=True)), ["widely spread", "Subtract the MAX"]),
    (lambda x: _exp_over(x, x.max()), ["rows are far apart", "each row's own max"]),
    (lambda x: _exp_over(x, x.max(axis=-1, keepdims=True), axis=None), ["wrong axis", "axis=-1"]),
    (lambda x: _exp_over(x, x.max(), axis=0, keepdims=False), ["wrong axis"]),
    (lambda x: _exp_over(x, x.max(axis=-1, keepdims=True), keepdims=False),
     ["2-row matrix", "broadcast", "keepdims=True", "(2, 1)"]),
    (lambda x: _exp_over(x, x.max(axis=-1)), ["2-row matrix", "broadcast", "keepdims=True"]),
    (lambda x: softmax(x) * 2, ["sum to", "not 1"]),
    (lambda x: softmax(-x), ["wrong values"]),
    (lambda x: [0.1, 0.2], ["shape", "keeps the shape of its input"]),
    (lambda x: "weights", ["should be numbers"]),
])
def test_stable_softmax_typical_slips(function, fragments):
    _fails(ss.check_stable_softmax(function), *fragments)


def test_stable_softmax_other_errors_and_non_functions():
    _fails(ss.check_stable_softmax(lambda x: int("x")), "raised ValueError: invalid literal")
    _fails(ss.check_stable_softmax(np.array([0.3, 0.7])), "expected a function")
    _fails(ss.check_stable_softmax(None), "expected a function")


def test_smallest_scale_is_the_threshold():
    c = ss.reference_smallest_scale()
    assert ss.top_weight(c) == pytest.approx(0.9, abs=1e-9)
    assert ss.top_weight(c * 0.999) < 0.9
    assert 12 < c < 13


@pytest.mark.parametrize("c", [20.0, 13, 1000.0, np.float64(50.0)])
def test_scale_for_confidence_passes(c):
    _passes(ss.check_scale_for_confidence(c))


@pytest.mark.parametrize("c, fragments", [
    (None, ["still None"]),
    ("20", ["one number", "str"]),
    ([20.0], ["one number", "list"]),
    (True, ["one number"]),
    (float("inf"), ["scale = inf", "not a finite number"]),
    (0, ["uniform"]),
    (-5.0, ["negative scale", "LOWEST"]),
    (10.0, ["scale = 10", "0.844", "< 0.9", "larger"]),
])
def test_scale_for_confidence_typical_slips(c, fragments):
    _fails(ss.check_scale_for_confidence(c), *fragments)


def test_every_scale_the_feedback_quotes_reaches_the_target():
    """A student who types a number the solution or a message quotes must succeed (12.27 is 0.899971 < 0.9)."""
    up4, up2 = ss.quoted_scales()
    assert (up4, up2) == (12.2715, 12.28)
    shown = [ss.check_scale_for_confidence(20.0).message, repr(ss.check_scale_for_confidence.solution())]
    for quoted in {float(x) for text in shown for x in re.findall(r"\b12\.\d+", text)}:
        assert quoted in (up4, up2) or quoted < ss.reference_smallest_scale() < quoted + 1e-4, quoted
        if quoted in (up4, up2):
            _passes(ss.check_scale_for_confidence(quoted))
    assert "about 12.27" not in " ".join(shown) and ">= 12.27 " not in " ".join(shown)
    _fails(ss.check_scale_for_confidence(12.27), "0.899971", "Just short", "12.2715 or more")
    _fails(ss.check_scale_for_confidence(12.0), "Try a larger scale")


def test_scale_found_by_bisection_on_the_plain_formula_passes():
    """exp(scale · s) / sum, bisected until the top weight is 0.9: it differs from the checker's softmax in the last
    digit (0.89999999999999991 there) and is still the smallest scale."""
    scores, lo, hi = np.array([1.0, 1.2, 0.9]), 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        w = np.exp(mid * scores) / np.exp(mid * scores).sum()
        lo, hi = (lo, mid) if w.max() >= 0.9 else (mid, hi)
    assert ss.top_weight(hi) < 0.9
    _passes(ss.check_scale_for_confidence(hi))
    _fails(ss.check_scale_for_confidence(ss.reference_smallest_scale() - 1e-12), "Just short")   # 2e-14 below 0.9


def test_flows_row_reference_passes():
    _passes(pf.check_flows_row(pf.reference_flows_row()))
    _passes(pf.check_flows_row([0.0674, 0.1112, 0.8214]))      # four decimals
    _passes(pf.check_flows_row(torch.tensor([0.0674, 0.1112, 0.8214])))
    assert "precision you gave" not in pf.check_flows_row([0.0674, 0.1112, 0.8214]).message


@pytest.mark.parametrize("answer, fragment", [
    ([0.072, 0.107, 0.821], "right to two decimals, as asked"),      # three decimals, the third one off
    ([0.0715, 0.1070, 0.8215], "right to two decimals, as asked"),
    ([0.067, 0.111, 0.821], "correct to the precision you gave"),
])
def test_flows_row_says_what_precision_it_holds(answer, fragment):
    feedback = pf.check_flows_row(answer)
    _passes(feedback)
    assert fragment in feedback.message


def test_flows_row_with_nan_is_not_told_to_divide_by_the_sum():
    message = pf.check_flows_row([float("nan"), 0.11, 0.82]).message
    assert "sum to nan" in message and "from 0 to 1" in message and "exponential" not in message


def test_flows_row_cut_off_or_off_in_the_second_decimal_is_told_so():
    _fails(pf.check_flows_row([0.06, 0.11, 0.82]), "cut off after two decimals", "Round")
    _fails(pf.check_flows_row([0.08, 0.10, 0.82]), "not right to two decimals", "round only at the end")
    _fails(pf.check_flows_row([0.063, 0.116, 0.821]), "not right to two decimals")   # 0.116 rounds to 0.12
    for rounds_right in ([0.065, 0.111, 0.824], [0.074, 0.106, 0.82]):   # 0.065 rounds up by hand, to 0.07
        _passes(pf.check_flows_row(rounds_right))


def test_the_row_asked_for_is_not_one_the_notebook_prints():
    for sentence in ("money bank grows", "river bank flows"):
        W = pf.self_attention_steps(pf.embed(sentence))["W"]
        assert not any(np.allclose(sorted(row), sorted(pf.reference_flows_row()), atol=1e-3) for row in W)


@pytest.mark.parametrize("answer", [[0.07, 0.11, 0.82], [0.067, 0.111, 0.821], (0.07, 0.11, 0.82)])
def test_flows_row_accepts_rounded_answers(answer):
    feedback = pf.check_flows_row(answer)
    _passes(feedback)
    assert "precision you gave" in feedback.message and "0.8214" in feedback.message


@pytest.mark.parametrize("answer, fragments", [
    (None, ["None"]),
    ({"a": 1}, ["should be numbers"]),
    ([0.2, 0.2], ["should have shape (3,)", "has shape (2,)"]),
    (np.eye(3), ["should have shape (3,)", "(3, 3)", "W[2]"]),
    (pf.reference_flows_row()[None], ["has shape (1, 3), but should have shape (3,)", "a row, W[2]."]),   # W[2:]
    ([0, 1, 5], ["raw scores", "[0, 1, 5]"]),
    ([0.0, 0.5, 2.5], ["scaled scores"]),
    (np.exp([0.0, 0.5, 2.5]), ["exponentials"]),
    (softmax(np.array([0.0, 1.0, 5.0])), ["UNscaled", "√d"]),
    ([0.1863, 0.2741, 0.8214], ["COLUMN"]),
    ([0.5065, 0.3072, 0.1863], ["money row"]),
    ([0.2741, 0.4519, 0.2741], ["bank row"]),
    ([0.3, 0.3, 0.3], ["sum to 0.9", "not 1"]),
    ([0.1, 0.1, 0.8], ["one decimal", "two decimals"]),
    ([0.2, 0.2, 0.6], ["wrong values"]),
])
def test_flows_row_typical_slips(answer, fragments):
    _fails(pf.check_flows_row(answer), *fragments)


@pytest.mark.parametrize("answer, fragment", [
    ([0.05, 0.09, 0.87], "√T = √3"),                 # softmax([0, 1, 5] / √3), rounded as the exercise asks
    ([0.048, 0.086, 0.866], "√T = √3"),
    ([0.17, 0.22, 0.60], "by d = 4"),                # softmax([0, 1, 5] / 4)
    ([0.01, 0.02, 0.98], "UNscaled"),                # softmax([0, 1, 5]): the scaling forgotten
    ([0.19, 0.27, 0.82], "COLUMN"),                  # W[:, 2], which sums to 1.28
    ([0.51, 0.31, 0.19], "money row"),
    ([0.27, 0.45, 0.27], "bank row"),
    ([1.0, 1.65, 12.18], "exponentials"),
    ([0.11, 0.07, 0.82], "the right weights in the wrong order"),   # money's and bank's swapped
    ([0.8214, 0.0674, 0.1112], "entry j is the weight on word j, so the order is money, bank, flows."),
])
def test_flows_row_slips_are_named_at_two_decimals(answer, fragment):
    feedback = pf.check_flows_row(answer)
    _fails(feedback, fragment)
    assert "two decimals" not in feedback.message and "sum to" not in feedback.message, feedback.message


def test_long_grows_prediction():
    assert pf.reference_long_grows_prediction() == "grows"
    _passes(pf.check_long_grows_prediction("grows"))
    _passes(pf.check_long_grows_prediction(" Grows "))
    _fails(pf.check_long_grows_prediction("bank"), "tempting", "attended most to itself")
    _fails(pf.check_long_grows_prediction("money"), "smallest score")
    _fails(pf.check_long_grows_prediction("river"), "not a token")
    _fails(pf.check_long_grows_prediction(None), "still None")
    _fails(pf.check_long_grows_prediction(2), "one word as a string")


def test_self_attention_reference_passes():
    _passes(pf.check_self_attention(pf.reference_self_attention))
    _passes(pf.check_self_attention(pf.self_attention))


def _sqrt_T(E):
    return softmax(E @ E.T / math.sqrt(len(E))) @ E


def _by_d(E):
    return softmax(E @ E.T / E.shape[1]) @ E


def _hard_coded_2(E):
    return softmax(E @ E.T / 2) @ E    # the worked example's √4, copied


def _naive_exp(E):
    S = E @ E.T / math.sqrt(E.shape[1])
    with np.errstate(all="ignore"):
        return (np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)) @ E


def _global_max(E, eps=0.0):
    S = E @ E.T / math.sqrt(E.shape[1])
    with np.errstate(all="ignore"):
        e = np.exp(S - S.max())          # ONE max for the whole matrix, not each row's
        return e / (e.sum(axis=-1, keepdims=True) + eps) @ E


def _global_max_eps(E):
    return _global_max(E, eps=1e-12)     # 0 / eps: a row of zeros instead of NaN


def test_the_far_apart_case_is_what_catches_one_global_max():
    E, what = pf._cases()[3]
    assert "far apart" in what
    for other, _ in pf._cases()[:3] + pf._cases()[4:5]:   # the last two catch other shifts (the self-score, the last)
        np.testing.assert_allclose(_global_max(other), pf.self_attention(other), atol=1e-6)
    assert not np.isfinite(_global_max(E)).all()


@pytest.mark.parametrize("function, fragments", [
    (lambda E: softmax(E @ E.T) @ E, ["forgot to divide the scores by √d"]),
    (_sqrt_T, ["√T", "√d"]),
    (_by_d, ["divided by d = 4 instead of √d"]),
    (_hard_coded_2, ["(5, 3)", "hard-coded 2", "E.shape[1]"]),
    (lambda E: softmax(E @ E.T / int(np.sqrt(E.shape[1]))) @ E, ["(5, 3)", "forgot to divide", "round √3 down to 1"]),
    (lambda E: softmax(E @ E.T) / np.sqrt(E.shape[1]) @ E, ["after softmax", "each row sums to 1/√4"]),
    (lambda E: softmax(E @ E.T / math.sqrt(E.shape[1]), axis=0) @ E, ["columns (axis 0)"]),
    (lambda E: softmax(E @ E.T / math.sqrt(E.shape[1])).T @ E, ["used W.T"]),
    (lambda E: softmax(E @ E.T / math.sqrt(E.shape[1])), ["looks like W", "Y = W @ E"]),
    (_naive_exp, ["overflowed", "each row's max"]),
    (_global_max, ["rows' scores far apart", "row 0 came out NaN", "one max for the whole matrix", "axis=-1"]),
    (_global_max_eps, ["rows' scores far apart", "NaN or 0", "one max for the whole matrix"]),
    (lambda E: E, ["wrong values"]),
    (lambda E: E @ softmax(E.T @ E / math.sqrt(E.shape[1])), ["wrong values"]),
    (lambda E: E @ E.T @ E @ E.T, ["looks like W"]),
    (lambda E: np.ones((2, 2)), ["shape (2, 2)", "(3, 4)"]),
])
def test_self_attention_typical_slips(function, fragments):
    _fails(pf.check_self_attention(function), *fragments)


def test_a_shift_by_the_largest_absolute_score_is_refused():
    """Above the row's max, like one max for the whole matrix: a row whose scores reach −1,414 comes out 0 / 0."""
    def exp_after_abs(E):
        S = E @ E.T / math.sqrt(E.shape[1])
        e = np.exp(S - np.abs(S).max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ E
    _fails(pf.check_self_attention(exp_after_abs), "[-2000, 0]", "NaN or 0", "largest |score|")


def test_self_attention_almost_right_is_not_right():
    """An answer off by 1e-3 in one entry fails: the checker compares to 1e-6, not loosely."""
    def almost(E):
        Y = pf.reference_self_attention(E)
        Y[0, 0] += 1e-3
        return Y

    _fails(pf.check_self_attention(almost), "wrong values")


def test_self_attention_errors_and_types():
    _fails(pf.check_self_attention("E @ E.T"), "expected a function")

    def crashes(E):
        return E @ E   # (3, 4) @ (3, 4): a shape error inside the student's code

    _fails(pf.check_self_attention(crashes), "raised ValueError")
    _fails(pf.check_self_attention(lambda E: None), "None")


def test_the_scale_slips_each_get_their_own_message():
    # √T, d and a hard-coded 2 in place of √d: each slip must be named for what it is, not as "wrong values"
    specific = {
        "√T": (_sqrt_T, "√T (tokens) instead of √d"),
        "d": (_by_d, "divided by d = 4 instead of √d"),
        "2": (_hard_coded_2, "hard-coded 2"),
    }
    messages = {}
    for slip, (function, fragment) in specific.items():
        feedback = pf.check_self_attention(function)
        _fails(feedback, fragment)
        assert "wrong values" not in feedback.message, feedback.message
        messages[slip] = feedback.message
    assert len(set(messages.values())) == len(messages)           # three different messages
    for slip, message in messages.items():                         # ... and none carries another slip's words
        for other, (_, fragment) in specific.items():
            if other != slip:
                assert fragment not in message, (slip, other, message)
    # a hard-coded 2 is right when d = 4: only the random (5, 3) case can catch it, and it says so
    assert "random E of shape (5, 3)" in messages["2"] and "here d = 3" in messages["2"]


@pytest.mark.parametrize("solution", [ss.check_longer_not_closer.solution, ss.check_stable_softmax.solution,
                                      ss.check_scale_for_confidence.solution, pf.check_flows_row.solution,
                                      pf.check_long_grows_prediction.solution, pf.check_self_attention.solution])
def test_solutions_render(solution):
    shown = solution()
    assert isinstance(shown, Solution)
    assert shown.code and "<details>" in shown._repr_html_()


def test_solution_texts_carry_computed_numbers():
    assert "12.27" in ss.check_scale_for_confidence.solution().code
    assert "0.844" in ss.check_scale_for_confidence.solution().code
    assert "14.8312" in pf.check_flows_row.solution().explanation
    assert "[1, 2, 3]" in pf.check_long_grows_prediction.solution().code
    assert "0.506" in pf.check_long_grows_prediction.solution().code


def test_a_student_function_that_changes_its_input_is_refused_and_cannot_fool_the_checker():
    # Right answer, then the input zeroed in place: in the notebook the student's own E would be zeroed. The checker
    # hands each case over as a copy, judges against its own array, and names the change.
    seen = []

    def vandal(E):
        seen.append(E.copy())
        Y = pf.reference_self_attention(E)
        E[:] = 0.0
        return Y

    _fails(pf.check_self_attention(vandal), "changed its argument E in place", "E[…] = …")
    np.testing.assert_array_equal(seen[0], pf._cases()[0][0])       # the case arrived intact, and stays so
    np.testing.assert_array_equal(pf._cases()[0][0], embed("money bank grows"))

    def scales_in_place(E):
        E /= 1.0                                                     # the same numbers: nothing changed
        return pf.reference_self_attention(E)
    _passes(pf.check_self_attention(scales_in_place))
    _passes(pf.check_self_attention(pf.reference_self_attention))  # and the next call is unaffected


def test_scale_for_confidence_accepts_any_single_number_and_never_raises():
    assert ss.check_scale_for_confidence(1.7e308).passed
    assert ss.check_scale_for_confidence(np.array(20.0)).passed
    assert ss.check_scale_for_confidence(torch.tensor(20.0)).passed
    assert not ss.check_scale_for_confidence(np.array([1.0, 2.0])).passed


def test_a_scale_just_short_of_the_target_is_not_shown_as_reaching_it():
    smallest = ss.reference_smallest_scale()
    feedback = ss.check_scale_for_confidence(round(smallest - 0.005, 2))
    _fails(feedback, "< 0.9")
    assert "0.900," not in feedback.message and "0.899" in feedback.message


def test_a_library_softmax_passes_with_a_nudge_to_write_it():
    def wrapper(x):
        return torch.softmax(torch.tensor(x), dim=-1).numpy()

    feedback = ss.check_stable_softmax(wrapper)
    _passes(feedback)
    assert "calls a ready-made softmax" in feedback.message
    assert "ready-made" not in ss.check_stable_softmax(ss.reference_softmax).message


def test_the_courses_softmax_passed_as_it_is_or_imported_under_another_name_gets_the_nudge():
    assert "calls a ready-made softmax" in ss.check_stable_softmax(softmax).message
    for answer in (_module_softmax, _layer_softmax):
        assert "calls a ready-made softmax" in ss.check_stable_softmax(answer).message, answer.__name__


def test_the_courses_softmax_reached_through_the_package_or_a_partial_gets_the_nudge():
    import helpers.similarity

    def dotted(x):
        return helpers.similarity.softmax(x)
    for answer in (dotted, functools.partial(helpers.similarity.softmax, axis=-1)):
        assert "calls a ready-made softmax" in ss.check_stable_softmax(answer).message, answer


def test_a_value_error_on_a_matrix_names_both_usual_causes():
    def builtin_max(x):
        e = np.exp(x - max(x))
        return e / sum(e)
    _fails(ss.check_stable_softmax(builtin_max), "The truth value", "Python's built-in max", "keepdims=True")


def test_a_softmax_built_on_the_students_own_helper_gets_no_nudge():
    def softmax_rows(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def my_softmax(x):
        return softmax_rows(x)   # the student's own helper, not a library's

    my_softmax.__globals__["softmax_rows"] = softmax_rows
    feedback = ss.check_stable_softmax(my_softmax)
    _passes(feedback)
    assert "ready-made" not in feedback.message


own_utils = types.ModuleType("utils")   # a module of the student's own, as `import utils` gives


def test_a_softmax_from_the_students_own_module_gets_no_nudge():
    def mine(x):
        return own_utils.stable_softmax(x)

    own_utils.stable_softmax = ss.reference_softmax
    feedback = ss.check_stable_softmax(mine)
    _passes(feedback)
    assert "ready-made" not in feedback.message


def _module_softmax(x):
    return sm(torch.from_numpy(x), -1).numpy()        # torch's softmax, imported as sm


def _layer_softmax(x):
    return torch.nn.Softmax(dim=-1)(torch.from_numpy(x)).numpy()


def _shifted_softmax(shift):
    def softmax_by(x):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - shift(x))
        return e / e.sum(-1, keepdims=True)
    return softmax_by


def test_a_softmax_shifted_by_anything_but_the_row_max_is_refused():
    last = ss.check_stable_softmax(_shifted_softmax(lambda x: x[..., -1:]))
    assert not last.passed and "largest first" in last.message and "Subtract the MAX" in last.message
    only_when_large = ss.check_stable_softmax(
        _shifted_softmax(lambda x: x.max(-1, keepdims=True) if x.max() > 700 else 0.0))
    assert not only_when_large.passed and "underflows to 0" in only_when_large.message
    by_largest_size = ss.check_stable_softmax(_shifted_softmax(lambda x: np.abs(x).max(-1, keepdims=True)))
    assert not by_largest_size.passed and "sign and all" in by_largest_size.message


def _attention_shifted_by(shift):
    def self_attention(E):
        S = E @ E.T / np.sqrt(E.shape[1])
        e = np.exp(S - shift(S))
        return e / e.sum(-1, keepdims=True) @ E
    return self_attention


def test_self_attention_shifted_by_the_self_score_or_the_last_column_is_refused():
    by_self = pf.check_self_attention(_attention_shifted_by(lambda S: np.diag(S)[:, None]))
    assert not by_self.passed and "its score with itself is not its largest" in by_self.message
    assert by_self.message.index("score with itself") < by_self.message.index("one max for the whole matrix")
    by_last = pf.check_self_attention(_attention_shifted_by(lambda S: S[:, -1:]))
    assert not by_last.passed and "[[0, 40], [0, 1]]" in by_last.message and "exp overflowed" in by_last.message


def test_self_attention_in_float32_is_right():
    def in_float32(E):
        X = torch.tensor(E, dtype=torch.float32)
        return torch.softmax(X @ X.T / math.sqrt(X.shape[1]), dim=-1) @ X
    for _ in range(5):                                                   # the drawn inputs change every call
        assert pf.check_self_attention(in_float32).passed


def test_a_softmax_cut_to_the_pages_three_scores_fails_every_time():
    for _ in range(20):
        _fails(ss.check_stable_softmax(lambda x: ss.reference_softmax(x[..., :3])), "five scores",
               "keeps the shape of its input")


def attention_with_the_course(E):
    return attend(E, E, E)


def weights_from_the_course(E):
    E = torch.from_numpy(E)
    return (attention_weights(E, E) @ E).numpy()


def the_course_module(E):
    return ParameterFreeAttention()(torch.from_numpy(E)[None])[0].numpy()


def test_self_attention_with_the_courses_function_is_named_and_a_shape_error_gets_the_shapes():
    feedback = pf.check_self_attention(attention_with_the_course)
    passed, message = feedback.passed, feedback.message
    assert passed and message.endswith("It calls a ready-made attend, though: write it yourself.")
    for answer, name in ((weights_from_the_course, "attention_weights"), (the_course_module, "ParameterFreeAttention")):
        feedback = pf.check_self_attention(answer)
        assert feedback.passed and feedback.message.endswith(f"a ready-made {name}, though: write it yourself.")
    feedback = pf.check_self_attention(lambda E: lean_attention(*[torch.from_numpy(E)] * 3).numpy())
    assert feedback.passed and feedback.message.endswith("a ready-made lean_attention, though: write it yourself.")
    message = pf.check_self_attention(lambda E: softmax(E.T @ E) @ E).message
    assert "raised ValueError" in message and "(it was given E (3, 4)). Recipe: every pair's score" in message


def test_softmax_errors_on_one_row_and_in_torch_say_which_axis():
    def axis_one(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    assert "one row, with axis 0 only: axis=-1" in ss.check_stable_softmax(axis_one).message

    def torch_without_keepdim(x):
        x = torch.as_tensor(x)
        e = torch.exp(x - x.max(-1).values)
        return e / e.sum(-1, keepdim=True)
    message = ss.check_stable_softmax(torch_without_keepdim).message
    assert "raised RuntimeError" in message and "in torch keepdim=True" in message


def test_a_softmax_that_squeezes_a_single_row_fails():
    fails_with = ss.check_stable_softmax(lambda x: ss.reference_softmax(x).squeeze())
    assert not fails_with.passed and "one row" in fails_with.message and "(4,)" in fails_with.message


@pytest.mark.parametrize("exp", [lambda y: 2.718**y, lambda y: np.exp(y / 1.0001)])
def test_a_softmax_with_a_wrong_constant_for_e_is_refused_every_time(exp):
    """float32's tolerance belongs to the drawn scores near ±1,000 alone: the page's scores are judged to 1e-6."""
    def answer(x):
        e = exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    for _ in range(5):
        _fails(ss.check_stable_softmax(answer), "[1.0, 1.2, 0.9]")


def test_a_vector_at_the_edge_is_told_cosines_that_differ():
    feedback = ss.check_longer_not_closer([6.5, 1.0833333])
    _passes(feedback)
    cos_v, cos_b = re.findall(r"cos\(a, [vb]\) = (\d\.\d+)", feedback.message)
    assert float(cos_v) < float(cos_b)


def test_a_row_max_and_sum_both_without_keepdims_are_named_together():
    def both(E):
        S = E @ E.T / np.sqrt(E.shape[1])
        e = np.exp(S - S.max(axis=-1))
        return e / e.sum(axis=-1) @ E
    _fails(pf.check_self_attention(both), "the row max and the row sum both miss keepdims")


def test_weights_of_the_notebooks_sentence_on_another_e_are_named():
    W = pf.self_attention_steps(embed("money bank grows"))["W"]     # the notebook's W, left in the namespace

    def with_the_pages_weights(E):
        return W @ E
    _fails(pf.check_self_attention(with_the_pages_weights), "E of 'river bank flows'", "weights of 'money bank grows'")


@pytest.mark.parametrize("d, fragment", [(3, "forgot to divide"), (6, "hard-coded 2")])
def test_a_square_root_cut_to_a_whole_number_is_named_beside_the_slip_it_equals(d, fragment):
    E = np.random.default_rng(0).normal(size=(5, d))
    message = named_slip(softmax(E @ E.T / math.isqrt(d)) @ E, pf._attention_slips(Case(E, what="E")))
    assert fragment in message and f"round √{d} down to {math.isqrt(d)}? Keep it a float." in message
