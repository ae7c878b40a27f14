"""Checkers of notebook 05 (helpers.exercises.scaling): right answers pass, typical mistakes get specific help."""
import math

import numpy as np
import pytest
import torch

from helpers.attention_torch import attention_weights
from helpers.exercises.engine import Feedback, Solution
from helpers.exercises.scaling import (
    OTHER_D_K,
    check_divisor,
    check_scaled_weights,
    check_variance_prediction,
    exercise_inputs,
    large_inputs,
    reference_divisor,
    reference_scaled_weights,
)
from helpers.scaling import score_divisor
from helpers.similarity import softmax


def passes(feedback):
    assert isinstance(feedback, Feedback)
    assert feedback.passed, feedback.message
    return feedback.message


def fails(feedback, *phrases):
    assert isinstance(feedback, Feedback)
    assert not feedback.passed, "a wrong answer was accepted"
    for phrase in phrases:
        assert phrase in feedback.message, f"{phrase!r} not in {feedback.message!r}"
    return feedback.message


# ----------------------------------------------------------------------------- Exercise 1: the divisor

def test_divisor_reference_passes():
    assert "not √512 ≈ 22.6" in passes(check_divisor(reference_divisor))
    passes(check_divisor(lambda d_model, n_heads: np.float32(math.sqrt(d_model / n_heads))))
    passes(check_divisor(lambda d_model, n_heads: torch.tensor((d_model / n_heads) ** 0.5)))


@pytest.mark.parametrize("answer, phrases", [
    (lambda d_model, n_heads: math.sqrt(d_model), ["that is √d_model", "ONE head", "Here d_k = 512 / 8 = 64."]),
    (lambda d_model, n_heads: d_model / n_heads, ["d_k = d_model / n_heads itself", "square root"]),
    (lambda d_model, n_heads: d_model // n_heads, ["d_k = d_model / n_heads itself"]),
    (lambda d_model, n_heads: n_heads, ["number of heads", "happens to match", "d_k = 128 / 2 = 64"]),
    (lambda d_model, n_heads: 1 / math.sqrt(d_model / n_heads), ["1/√d_k", "swapped", "MULTIPLIED"]),
    (lambda d_model, n_heads: math.sqrt(n_heads / d_model), ["1/√d_k", "arguments are swapped"]),
    (lambda d_model, n_heads: n_heads / d_model, ["n_heads / d_model", "swapped", "square root is missing"]),
    (lambda d_model, n_heads: math.sqrt(n_heads // d_model), ["0 every time", "wrong way round"]),
    (lambda d_model, n_heads: math.sqrt(d_model) / n_heads, ["√d_model / n_heads"]),
    (lambda d_model, n_heads: math.sqrt(n_heads), ["that is √n_heads"]),
    (lambda d_model, n_heads: d_model * n_heads, ["that is d_model · n_heads", "do not multiply"]),
    (lambda d_model, n_heads: math.sqrt(d_model * n_heads), ["that is √(d_model · n_heads)", "do not multiply"]),
    (lambda d_model, n_heads: d_model, ["that is d_model itself"]),
    (lambda d_model, n_heads: 3.0, ["returned 3 for every input", "ignore its arguments"]),
    (lambda d_model, n_heads: math.sqrt(64), ["returned 8 for every input", "read the notebook's d_k?"]),
    (lambda d_model, n_heads: 3.0 + (d_model == 96), ["divisor(512, 8) returned 3, not the divisor of 8 heads "
                                                      "sharing d_model = 512"]),
    (lambda d_model, n_heads: math.sqrt(d_model / n_heads) + 1e-4, ["divisor(512, 8) returned 8.0001, near √(512 / 8) "
                                                                    "= 8 but not equal to it", "unrounded"]),
    (lambda d_model, n_heads: [8.0, 8.0], ["a list of 2 items", "one number"]),
    (lambda d_model, n_heads: None, ["returned None", "return"]),
    (lambda d_model, n_heads: "eight", ["text", "not a number"]),
    (lambda d_model, n_heads: 8 + 0j, ["complex"]),
    (lambda d_model, n_heads: float("nan"), ["not a finite number"]),
    (lambda d_model, n_heads: 1.7e308, ["returned 1.7e+308 for every input"]),
])
def test_divisor_mistakes_get_specific_feedback(answer, phrases):
    fails(check_divisor(answer), *phrases)


n_heads = 8   # as the notebook sets it


def _reads_the_notebooks_n_heads(d_model, heads):
    return math.sqrt(d_model / n_heads)


def test_a_divisor_that_reads_the_notebooks_n_heads_is_told_so():
    fails(check_divisor(_reads_the_notebooks_n_heads), "divisor(128, 2) returned 4",
          "Your function reads the notebook's n_heads: use the arguments it is given.")


def test_a_divisor_that_special_cases_the_pages_8_heads_fails_every_time():
    for _ in range(5):   # one drawn case always has 8 heads and a d_k other than 64
        fails(check_divisor(lambda d_model, n_heads: 8.0 if n_heads == 8 else math.sqrt(d_model / n_heads)),
              ", 8) returned 8")


def test_divisor_slips_that_coincide_at_512_and_8_are_told_apart():
    # at 512 and 8 heads, √(d_model·n_heads) = √4096 = 64 = d_k: the formula, not one value, decides
    message = fails(check_divisor(lambda d_model, n_heads: math.sqrt(d_model * n_heads)))
    assert "d_k = d_model / n_heads itself" not in message
    assert "divisor(128, 2) returned 16" in message                      # a second case shows the pattern
    # a function written as divisor(n_heads, d_model) sees the arguments the other way round
    message = fails(check_divisor(lambda n_heads, d_model: math.sqrt(d_model / n_heads)))
    assert "arguments are swapped" in message and "divisor(d_model, n_heads)" in message


def test_divisor_accepts_any_single_number():
    for wrap in (float, np.float32, np.array, lambda x: np.array([x]), torch.tensor, lambda x: torch.tensor([x])):
        passes(check_divisor(lambda d_model, n_heads, wrap=wrap: wrap(math.sqrt(d_model / n_heads))))


def test_divisor_unfinished_or_wrong_type():
    def unfinished(d_model, n_heads):
        raise NotImplementedError

    def broken(d_model, n_heads):
        return d_model / 0

    fails(check_divisor(unfinished), "NotImplementedError")
    fails(check_divisor(broken), "divisor(512, 8): your function raised ZeroDivisionError")
    fails(check_divisor(lambda d_model, n_heads: exit()), "called exit()")
    fails(check_divisor(8), "expected a function")
    fails(check_divisor(None), "expected a function")


# ----------------------------------------------------------------------------- Exercise 2: predict the variance

def test_variance_prediction_right_answer_is_measured():
    message = passes(check_variance_prediction(128 * 0.5**4, 0.5**4))
    assert "Measured on 50,000 fresh pairs" in message
    measured = [float(x) for x in message.split("pairs: ")[1].rstrip(".").split(" and ")]
    assert measured[0] == pytest.approx(8.0, rel=0.04)
    assert measured[1] == pytest.approx(0.0625, rel=0.04)
    passes(check_variance_prediction(np.float64(8), torch.tensor(0.0625)))
    passes(check_variance_prediction(8.002, 0.06249))                     # within 0.1 %
    for rounded in (0.0625, 0.063, 0.06):                                  # swapped, the small one rounded too
        fails(check_variance_prediction(rounded, 8), "swapped")
    for d_k in (127, 129):   # d_k ± 1 products: 0.8 % off
        fails(check_variance_prediction(d_k / 16, d_k / 16 / 128), "d independent products")


@pytest.mark.parametrize("raw, scaled, phrases", [
    (0.0625, 8.0, ["swapped"]),
    (32.0, 0.0625, ["d·σ²", "σ⁴"]),
    (128.0, 0.0625, ["holds for σ = 1"]),
    (0.0625, 0.0625, ["ONE product"]),
    (math.sqrt(128) * 0.25, 0.0625, ["√d", "standard deviation"]),
    (64.0, 0.0625, ["d·σ"]),
    (100.0, 0.0625, ["each of variance σ²·σ²", "variances of independent terms add"]),
    (8.0, 1.0, ["only when σ = 1"]),
    (8.0, 8 / math.sqrt(128), ["Var(X / c) = Var(X) / c²"]),
    (8.0, 8.0, ["equals the unscaled variance"]),
    (8.0, 0.5, ["c² = d_k = 128"]),
    (64 * 0.5**4, 0.5**4, ["64·σ⁴", "the page's 512 / 8 heads", "d_k = 128"]),
    (8.0, 8.0 / 64, ["Var / 64", "c² = d_k = 128"]),
    (8.0, 0.06, ["0.06: rounded", "keep 4 decimals"]),
    (8.0, 0.063, ["0.063: rounded", "keep 4 decimals"]),
])
def test_variance_prediction_mistakes_get_specific_feedback(raw, scaled, phrases):
    fails(check_variance_prediction(raw, scaled), *phrases)


def test_variance_prediction_unfinished_or_wrong_type():
    fails(check_variance_prediction(None, None), "predicted_var is still None")
    fails(check_variance_prediction(8.0, None), "predicted_var_scaled is still None")
    fails(check_variance_prediction("eight", 0.0625), "text", "not a number")
    fails(check_variance_prediction([8.0, 0.0625], 0.0625), "one number")
    fails(check_variance_prediction(float("inf"), 0.0625), "not a finite number")
    fails(check_variance_prediction(1.7e308, 0.0625), "predicted_var = 1.7e+308")
    fails(check_variance_prediction(8.0, -1.7e308), "negative", "never below 0")
    fails(check_variance_prediction(-8.0, 0.0625), "negative")
    fails(check_variance_prediction(8 + 0j, 0.0625), "complex")


def test_variance_prediction_accepts_0d_arrays_and_torch_scalars():
    passes(check_variance_prediction(np.array(8.0), np.array(0.0625)))
    passes(check_variance_prediction(torch.tensor(8.0), torch.tensor([0.0625])))
    passes(check_variance_prediction(np.float32(8.0), 1 / 16))


# ----------------------------------------------------------------------------- Exercise 3: scaled weights

def test_scaled_weights_reference_passes_and_matches_torch():
    passes(check_scaled_weights(reference_scaled_weights))
    passes(check_scaled_weights(lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[-1]))))
    passes(check_scaled_weights(lambda Q, K: torch.softmax(torch.tensor(Q @ K.T) / Q.shape[1] ** 0.5, -1)))
    from helpers.attention_torch import attention_weights
    Q, K = exercise_inputs()
    np.testing.assert_allclose(reference_scaled_weights(Q, K),
                               attention_weights(torch.tensor(Q), torch.tensor(K)).numpy(), atol=1e-12)


@pytest.mark.parametrize("answer, phrases", [
    (lambda Q, K: softmax(Q @ K.T), ["not divided by √d_k", "Q.shape[-1] = 32", "0.85", "0.42"]),
    (lambda Q, K: softmax(Q @ K.T / Q.shape[1]), ["divided by d_k = 32", "square root"]),
    (lambda Q, K: softmax((Q / Q.shape[1] ** 0.5) @ (K / Q.shape[1] ** 0.5).T), ["divided by d_k = 32",
                                                                                  "Q and K by √d_k each"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[1]) * np.log(2)), ["scale is right", "base 2 (2 ** x)", "np.exp"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[1]) * np.log(10)), ["scale is right", "base 10"]),
    (lambda Q, K: softmax(Q @ K.T * np.sqrt(Q.shape[1])), ["multiplied"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(K.shape[0])), ["√T_k = √6", "KEYS", "Q.shape[-1] = 32"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[0])), ["√T_q = √4", "QUERIES"]),
    (lambda Q, K: Q @ K.T, ["raw scores", "apply softmax", "exp, then divide by the row's sum"]),
    (lambda Q, K: Q @ K.T / np.sqrt(Q.shape[1]), ["before softmax", "exp, then divide by the row's sum"]),
    (lambda Q, K: Q @ K.T / 3.0, ["negative", "exp, then divide by the row's sum"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[1]), axis=0), ["COLUMN", "axis=-1"]),
    (lambda Q, K: np.exp(Q @ K.T / np.sqrt(Q.shape[1])), ["row sums", "divide each row by its own sum"]),
    (lambda Q, K: softmax(K @ Q.T / np.sqrt(Q.shape[1])), ["swapped", "(4, 6)"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[1]))[0], ["shape (6,)", "(4, 6)"]),
    (lambda Q, K: np.full((4, 6), np.nan), ["NaN"]),
    (lambda Q, K: np.full((4, 6), 1.7e308), ["row sums are [inf"]),
    (lambda Q, K: softmax(Q @ K.T / 4.0), ["softmax(Q Kᵀ / c) with c = 4 = √16", "√d_k = √32 = 5.657"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(64)), ["c = 8 = √64", "d_k = Q.shape[-1]"]),   # the page's d_k = 64
    (lambda Q, K: softmax(Q @ K.T / 4.1), ["softmax(Q Kᵀ / c) with c = 4.1, but"]),
    (lambda Q, K: 0.9 * softmax(Q @ K.T / np.sqrt(Q.shape[1])) + 0.1 / len(K),
     ["the rows sum to 1", "24 weights are off", "row 0, column 0"]),
    (lambda Q, K: reference_scaled_weights(*exercise_inputs()), ["30 times longer", "returned the first test's "
                                                                 "weights again", "ignore its arguments"]),
    (lambda Q, K: np.full((len(Q), len(K)), 1 / 6 - 1e-7), ["24 weights are off"]),   # uniform: no divisor fits
    (lambda Q, K: (lambda S: (e := np.exp(np.maximum(S, S.max() - 700) - S.max())) / e.sum(-1, keepdims=True))(
        Q @ K.T / np.sqrt(Q.shape[1])), ["scores lie thousands apart some weights are off"]),   # a (2, 4) case
    (lambda Q, K: None, ["returned None", "return"]),
    (lambda Q, K: "weights", ["the text 'weights'", "should be numbers"]),
    (lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[1])) + 0j, ["complex"]),
    (lambda Q, K: np.array(0.25), ["shape ()", "(4, 6)"]),
])
def test_scaled_weights_mistakes_get_specific_feedback(answer, phrases):
    fails(check_scaled_weights(answer), *phrases)


def naive_softmax_weights(Q, K):
    """Right formula, but exp without subtracting the row max: fine on small scores, NaN on large ones."""
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(S)
    return e / e.sum(axis=-1, keepdims=True)


def test_the_large_test_really_overflows_a_naive_softmax():
    Q, K = large_inputs()
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    assert np.all(S.max(axis=-1) > 709.8)                             # every row: exp(max) = inf in float64
    with np.errstate(all="ignore"):
        assert np.isnan(naive_softmax_weights(Q, K)).any(axis=-1).all()   # inf / inf = NaN in every row
    np.testing.assert_allclose(naive_softmax_weights(*exercise_inputs()), reference_scaled_weights(*exercise_inputs()))
    assert np.all(np.isfinite(reference_scaled_weights(Q, K)))


def test_scaled_weights_without_the_max_trick_is_told_about_notebook_02(recwarn):
    message = fails(check_scaled_weights(naive_softmax_weights),
                    "right on the first test", "30 times longer", "1,052", "NaN", "709.8",
                    "notebook 02's stable softmax", "S.max(axis=-1, keepdims=True)")
    assert "helpers.similarity" in message
    # no overflow warning reaches the student: the verdict says what overflowed
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]

    def subtracts_the_min(Q, K):
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        e = np.exp(S - S.min(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    fails(check_scaled_weights(subtracts_the_min), "NaN", "maximum")
    fails(check_scaled_weights(lambda Q, K: softmax(np.clip(Q @ K.T / np.sqrt(Q.shape[1]), -50, 50))),
          "30 times longer", "some weights are off", "do not clip")
    fails(check_scaled_weights(lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[1])) if abs(Q).max() < 10
                               else np.zeros((4, 6))), "30 times longer")


def test_the_head_size_varies_across_the_tests():
    assert exercise_inputs()[0].shape[-1] == large_inputs()[0].shape[-1] == 32 != OTHER_D_K
    Q, K = (X[:, :OTHER_D_K] for X in exercise_inputs())             # the third test's inputs
    assert not np.allclose(softmax(Q @ K.T / np.sqrt(32)), reference_scaled_weights(Q, K), atol=1e-3)


@pytest.mark.parametrize("hard_coded", [
    lambda Q, K: softmax(Q @ K.T / np.sqrt(32)),
    lambda Q, K: softmax(Q @ K.T / 5.656854249492381),
    lambda Q, K: softmax(Q @ K.T * 32 ** -0.5),
])
def test_a_hard_coded_divisor_is_named(hard_coded):
    message = fails(check_scaled_weights(hard_coded), "right on the first test", f"d_k = {OTHER_D_K}",
                    "√32", "hard-coded", "Q.shape[-1] (here 8)")
    assert "overflow" not in message


def test_notebook_03s_divisor_2_hard_coded_is_named_with_the_queries_it_matches():
    fails(check_scaled_weights(lambda Q, K: softmax(Q @ K.T / 2)), "√T_q = √4", "notebook 03's 2, hard-coded")


def test_stable_answers_pass_both_tests():
    assert "scaled scores up to 1,052" in passes(check_scaled_weights(reference_scaled_weights))
    passes(check_scaled_weights(lambda Q, K: torch.softmax(torch.tensor(Q @ K.T) / Q.shape[1] ** 0.5, -1)))

    def float32_stable(Q, K):
        S = (Q @ K.T / np.sqrt(Q.shape[-1])).astype(np.float32)
        e = np.exp(S - S.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    passes(check_scaled_weights(float32_stable))


def test_scaled_weights_unfinished_or_wrong_type():
    def unfinished(Q, K):
        raise NotImplementedError

    fails(check_scaled_weights(unfinished), "NotImplementedError")
    fails(check_scaled_weights(np.eye(4)), "expected a function")


def test_scaled_weights_checker_does_not_let_the_student_change_its_inputs():
    def vandal(Q, K):
        Q *= 0
        return reference_scaled_weights(Q, K)

    fails(check_scaled_weights(vandal), "changed its argument Q in place")
    passes(check_scaled_weights(reference_scaled_weights))            # the next call is unaffected


# ----------------------------------------------------------------------------- every message

def test_no_message_has_a_doubled_full_stop():
    answers = [
        check_divisor(lambda d_model, n_heads: 1.0), check_divisor(lambda d_model, n_heads: 8.0),
        check_divisor(lambda d_model, n_heads: 1 / math.sqrt(d_model / n_heads)),
        check_variance_prediction(1.0, 1.0), check_variance_prediction(8.0, 1.0),
        check_variance_prediction(1.0, 0.0625), check_variance_prediction(8.0, 0.0625),
        check_scaled_weights(lambda Q, K: np.full((4, 6), 1 / 6)),
        check_scaled_weights(lambda Q, K: np.eye(4, 6) + np.eye(4, 6, 1) * 0),
        check_scaled_weights(reference_scaled_weights),
    ]
    for feedback in answers:
        text = feedback.message.replace("...", "")
        assert ".." not in text, text


# ----------------------------------------------------------------------------- solutions

@pytest.mark.parametrize("solution, snippet", [
    (check_divisor.solution, "math.sqrt(d_k)"),
    (check_variance_prediction.solution, "d_k * sigma**4"),
    (check_scaled_weights.solution, "np.sqrt(d_k)"),
])
def test_solutions_show_code(solution, snippet):
    shown = solution()
    assert isinstance(shown, Solution)
    assert snippet in shown.code
    assert "<details>" in shown._repr_html_()


def test_one_max_for_the_whole_matrix_is_refused_where_rows_lie_far_apart():
    def one_max(Q, K):
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        e = np.exp(S - S.max())
        return e / e.sum(-1, keepdims=True)
    fails(check_scaled_weights(one_max), "thousands apart", "one max for the whole matrix")


def test_a_divisor_of_8_for_many_heads_fails_every_time():
    for _ in range(10):
        fails(check_divisor(lambda m, h: 8.0 if h >= 8 else math.sqrt(m / h)), "divisor(256, 16) returned 8")


def test_scaled_weights_an_error_names_the_shapes_given():
    def no_keepdims(Q, K):
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        e = np.exp(S - S.max(axis=-1))
        return e / e.sum(axis=-1, keepdims=True)
    fails(check_scaled_weights(no_keepdims), "ValueError", "it was given Q (4, 32), K (6, 32)", "keepdims=True")
    fails(check_scaled_weights(lambda Q, K: softmax(Q.T @ K)), "given Q (4, 32), K (6, 32)", "the scores are Q @ K.T")
    fails(check_scaled_weights(lambda Q, K: softmax(Q @ K.transpose(-2, -1))), "K.transpose(-2, -1) is K itself")


def test_rounded_weights_are_told_they_are_rounded():
    for decimals in (2, 4):
        fails(check_scaled_weights(lambda Q, K, k=decimals: np.round(reference_scaled_weights(Q, K), k)),
              f"rounded to {decimals} decimals", "unrounded")


def test_scaled_weights_from_the_courses_attention_weights_pass_with_a_nudge_and_softmax_without():
    message = passes(check_scaled_weights(lambda Q, K: attention_weights(torch.tensor(Q), torch.tensor(K)).numpy()))
    assert "It calls a ready-made attention_weights, though: write it yourself." in message
    assert "ready-made" not in passes(check_scaled_weights(lambda Q, K: softmax(Q @ K.T / np.sqrt(Q.shape[-1]))))


def test_one_query_keeps_its_row_and_the_pages_score_divisor_is_named():
    def squeezed(Q, K):
        return reference_scaled_weights(Q, K).squeeze()                          # (T_k,) when T_q = 1
    fails(check_scaled_weights(squeezed), "with one query", "(6,)", "(1, 6)")
    def calls_it(d_model, n_heads):
        return score_divisor(d_model, n_heads)

    def imports_it(d_model, n_heads):                                            # an import of its own: named too
        from helpers import scaling
        return scaling.score_divisor(d_model, n_heads)

    def imports_math(d_model, n_heads):
        import math
        return math.sqrt(d_model / n_heads)
    for answer in (calls_it, imports_it):
        feedback = check_divisor(answer)
        assert feedback.passed and feedback.message.endswith("a ready-made score_divisor, though: write it yourself.")
    assert "ready-made" not in passes(check_divisor(imports_math))


def test_weights_shifted_by_the_row_max_only_above_0_are_refused():
    def clamped(Q, K):
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        e = np.exp(S - np.maximum(S.max(axis=-1, keepdims=True), 0))
        return e / e.sum(axis=-1, keepdims=True)
    fails(check_scaled_weights(clamped), "−800, −799.5 and −799", "every exp falls to 0")


def test_variance_predictions_as_one_array_of_two_are_read_as_two():
    passes(check_variance_prediction(np.array([8.0, 0.0625])))
    passes(check_variance_prediction(torch.tensor([8.0, 0.0625])))
    fails(check_variance_prediction(np.array([8.0, 0.0625, 1.0])), "give both predictions")
