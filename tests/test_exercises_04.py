"""The checkers of notebook 04 (helpers.exercises.learned_qkv): right answers pass, typical slips are named."""
import math

import numpy as np
import pytest
import torch
from verdicts import failing, student_module, verdict

from helpers.attention_torch import SelfAttention, count_parameters
from helpers.attention_torch import scaled_dot_product_attention as sdpa
from helpers.exercises import learned_qkv as ex
from helpers.exercises.engine import Solution
from helpers.learning import soft_lookup

# ----------------------------------------------------------------------------- exercise 1: soft lookup

def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_soft_lookup_reference_passes():
    passed, message = verdict(ex.check_soft_lookup(ex.reference_soft_lookup))
    assert passed, message
    assert "1.8478" in message


def test_soft_lookup_accepts_other_correct_styles():
    def with_torch(query, keys, values):
        w = torch.softmax(torch.tensor(keys @ query), dim=0).numpy()
        return w @ values
    assert verdict(ex.check_soft_lookup(with_torch))[0]


def test_a_lookup_that_blends_the_pages_values_over_three_keys_fails_every_time():
    def page_values(query, keys, values):   # d = {'a': 1, 'b': 2, 'c': 4} whenever there are three keys
        return soft_lookup(query, keys, np.array([1.0, 2.0, 4.0]) if len(values) == 3 else values)[1]
    for _ in range(10):
        failing(ex.check_soft_lookup(page_values), "random keys (3, ", "drawn for this check")


def test_soft_lookup_names_the_slips():
    failing(ex.check_soft_lookup(lambda q, K, v: v[np.argmax(K @ q)]), "HARD lookup")
    failing(ex.check_soft_lookup(lambda q, K, v: (K @ q) @ v), "without softmax")
    failing(ex.check_soft_lookup(lambda q, K, v: (K @ q) / (K @ q).sum() @ v), "divided by their sum")
    failing(ex.check_soft_lookup(lambda q, K, v: v.mean()), "plain average")
    failing(ex.check_soft_lookup(lambda q, K, v: np.exp(K @ q) @ v), "do not add up to 1")
    failing(ex.check_soft_lookup(lambda q, K, v: _softmax(K @ q)), "returned the weights")
    failing(ex.check_soft_lookup(lambda q, K, v: np.ones(5)), "one number")
    failing(ex.check_soft_lookup(lambda q, K, v: math.nan), "overflowed")
    failing(ex.check_soft_lookup(lambda q, K, v: None), "None")
    failing(ex.check_soft_lookup(lambda q, K, v: 1.0), "is not right: 1 is too")
    failing(ex.check_soft_lookup(lambda q, K, v: _softmax(K @ q / np.sqrt(len(q))) @ v), "√d = √3", "no scale")
    failing(ex.check_soft_lookup(lambda q, K, v: _softmax(K @ q / np.sqrt(len(K))) @ v),
            "(or by √n, the number of keys)", "no scale")


def test_soft_lookup_names_the_interface_of_section_5():
    from helpers.learning import soft_lookup
    failing(ex.check_soft_lookup(soft_lookup), "(weights, blend)", "only the blend")
    failing(ex.check_soft_lookup(lambda q, K, v: list(soft_lookup(q, K, v))[::-1]), "only the blend")
    assert verdict(ex.check_soft_lookup(lambda q, K, v: np.array([soft_lookup(q, K, v)[1]])))[0]


def test_soft_lookup_checker_never_raises():
    def unsolved(query, keys, values):
        raise NotImplementedError

    failing(ex.check_soft_lookup(unsolved), "NotImplementedError")
    failing(ex.check_soft_lookup(lambda q, K, v: q @ K @ v @ q), "raised ValueError")
    failing(ex.check_soft_lookup(3.5), "expected a function")
    failing(ex.check_soft_lookup(lambda q, K, v: "blend"), "should be numbers")
    assert isinstance(ex.check_soft_lookup.solution(), Solution)


# ----------------------------------------------------------------------------- exercise 2: parameter count

def test_parameter_count_reference_passes():
    passed, message = verdict(ex.check_qkv_parameters(ex.reference_qkv_parameters))
    assert passed, message
    assert "98,304" in message
    assert verdict(ex.check_qkv_parameters(lambda m, k: float(3 * m * k)))[0]      # 48.0 is 48
    assert verdict(ex.check_qkv_parameters(lambda m, k: np.int64(3 * m * k)))[0]
    assert verdict(ex.check_qkv_parameters(lambda m, k: np.array([3 * m * k])))[0]     # one-element arrays
    assert verdict(ex.check_qkv_parameters(lambda m, k: torch.tensor(3 * m * k)))[0]
    assert verdict(ex.check_qkv_parameters(lambda m, k: torch.tensor([3 * m * k])))[0]


def test_parameter_count_names_the_slips():
    failing(ex.check_qkv_parameters(lambda m, k: m * k), "one matrix", "W_q, W_k and W_v")
    failing(ex.check_qkv_parameters(lambda m, k: 2 * m * k), "two matrices")
    failing(ex.check_qkv_parameters(lambda m, k: 3 * m * m), "d_model=16, d_k=8", "not (d_model, d_model)")
    failing(ex.check_qkv_parameters(lambda m, k: 48), "d_model=16, d_k=8 you returned 48 (the count at d_model = "
            "d_k = 4, again), but SelfAttention(16, 8) has 384")
    failing(ex.check_qkv_parameters(lambda m, k: 3 * k * k), "not (d_k, d_k)")
    failing(ex.check_qkv_parameters(lambda m, k: 3 * (m * k + k)), "biases", "bias=False")
    failing(ex.check_qkv_parameters(lambda m, k: 3 * (m + k)), "added the sizes")
    failing(ex.check_qkv_parameters(lambda m, k: 47), "has 48 parameters")


def test_parameter_count_checker_never_raises():
    def unsolved(d_model, d_k):
        raise NotImplementedError

    failing(ex.check_qkv_parameters(unsolved), "NotImplementedError")
    failing(ex.check_qkv_parameters(lambda m, k: None), "forget to `return`")
    failing(ex.check_qkv_parameters(lambda m, k: "48"), "the text '48'", "Remove the quotes")
    failing(ex.check_qkv_parameters(lambda m, k: True), "a truth value", "whole number")
    failing(ex.check_qkv_parameters(lambda m, k: [3 * m * k]), "a list of 1 item", "one number")
    failing(ex.check_qkv_parameters(lambda m, k: np.array([m * k, k])), "has 2 numbers", "whole number")
    failing(ex.check_qkv_parameters(48), "expected a function")
    assert isinstance(ex.check_qkv_parameters.solution(), Solution)


# ----------------------------------------------------------------------------- exercise 3: forward pass

def _forward(scale=None, dim=-1, softmax=True, swap=False, value="V", transpose=False, out="Y"):
    def f(E, W_q, W_k, W_v):
        Q, K, V = (E @ W_q.T, E @ W_k.T, E @ W_v.T) if transpose else (E @ W_q, E @ W_k, E @ W_v)  # .T: a slip
        if swap:
            Q, K = K, Q
        d_k = Q.shape[-1]
        S = Q @ K.T / (math.sqrt(d_k) if scale is None else scale(E, Q, V))
        W = torch.softmax(S, dim=dim) if softmax else S
        if out == "W":
            return W
        Y = W @ (V if value == "V" else E)
        return (Y, W) if out == "Y, W" else Y
    return f


def test_forward_reference_passes():
    passed, message = verdict(ex.check_attention_forward(ex.reference_attention_forward))
    assert passed, message
    assert verdict(ex.check_attention_forward(_forward()))[0]

    def with_numpy(E, W_q, W_k, W_v):
        E, W_q, W_k, W_v = (t.numpy() for t in (E, W_q, W_k, W_v))
        S = (E @ W_q) @ (E @ W_k).T / np.sqrt(W_q.shape[1])
        W = np.exp(S - S.max(-1, keepdims=True))
        return W / W.sum(-1, keepdims=True) @ (E @ W_v)
    assert verdict(ex.check_attention_forward(with_numpy))[0]


def test_forward_solution_is_what_self_attention_computes():
    """The course's layout: W_q is (d_model, d_k), and nn.Linear's .weight is its transpose."""
    E, W_q, W_k, _ = ex._forward_case(9, d_v=4)
    assert W_q.shape == (E.shape[1], 4)
    module = ex.SelfAttention(E.shape[1], W_q.shape[1]).double()
    with torch.no_grad():
        for layer, weight in ((module.W_q, W_q), (module.W_k, W_k), (module.W_v, W_q.flip(1))):
            layer.weight.copy_(weight.T)
        torch.testing.assert_close(ex.reference_attention_forward(E, W_q, W_k, W_q.flip(1)), module(E))


def test_numpy_spellings_on_torch_inputs_are_told_the_torch_ones():
    def numpy_style(E, W_q, W_k, W_v, numpy_max=False):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        S = Q @ K.T / math.sqrt(Q.shape[-1])
        e = torch.exp(S - (np.max(S, axis=-1, keepdims=True) if numpy_max else S.max(-1, keepdim=True)))
        return e / e.sum(-1, keepdim=True) @ V
    def numpy_max(E, W_q, W_k, W_v):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        e = torch.exp(Q @ K.T - np.max(Q @ K.T, axis=-1, keepdims=True))
        return e / e.sum(-1, keepdim=True) @ V
    for answer in (numpy_style, numpy_max):
        failing(ex.check_attention_forward(answer), "raised TypeError", "S.amax(dim=-1, keepdim=True)")

    class MaxInForward(student_module(None)):   # the max in forward's own code
        def forward(self, x):
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
            return torch.exp(S - S.max(-1, keepdim=True)) @ V
    failing(ex.check_self_attention_module(MaxInForward), "forward raised TypeError", "S.amax(dim=-1")


def test_a_softmax_taken_in_float32_on_float64_scores_passes_every_time():
    """LLaMA's torch.softmax(S, dtype=float32) then back to V's float64: float32 weights, float64 outputs."""
    def attend(Q, K, V):
        S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        return torch.softmax(S, dim=-1, dtype=torch.float32).type_as(V) @ V
    for _ in range(40):
        assert verdict(ex.check_self_attention_module(student_module(attend)))[0]


def test_forward_names_the_slips():
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: 1.0)), "forgot to divide", "√4")
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: math.sqrt(E.shape[-1]))), "√d_model")
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: Q.shape[-1])), "instead of √d_k")
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: math.sqrt(V.shape[-1]))), "√d_v",
            "dimension of the values")
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: math.sqrt(E.shape[0]))), "√T", "tokens")
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: 1 / math.sqrt(Q.shape[-1]))), "multiplied",
            "softmax(Q @ K.T / √d_k)")
    failing(ex.check_attention_forward(_forward(out="Y, W")), "Return only Y")
    failing(ex.check_attention_forward(_forward(dim=0)), "over the queries (dim=-2)")
    failing(ex.check_attention_forward(_forward(softmax=False)), "softmax is missing")
    failing(ex.check_attention_forward(_forward(swap=True)), "swapped")
    failing(ex.check_attention_forward(_forward(out="W")), "that is the weights")
    failing(ex.check_attention_forward(_forward(value="E")), "instead of", "V = E @ W_v?")
    failing(ex.check_attention_forward(_forward(transpose=True)), "Q = E @ W_q with no .T", "W_qᵀ")
    failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: torch.zeros(5, 3)), "wrong values")
    failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: torch.zeros(5, 2)), "expected (5, 3)")
    failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: torch.full((5, 3), math.nan)), "NaN")


def test_forward_catches_a_hard_coded_scale():
    """√4 = 2 is right for the first case; the second has d_k = 9, so typing the number in shows."""
    assert {case[3] for case in ex.FORWARD_CASES} >= {4, 9}
    message = failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: 2.0)), "d_k = 9", "Q.shape[-1]")
    assert "(12, 9)" in message
    failing(ex.check_attention_forward(_forward(scale=lambda E, Q, V: math.sqrt(4))), "Q.shape[-1]")


def test_forward_is_compared_to_float32_precision_and_no_coarser():
    def off_by(delta):
        def answer(E, W_q, W_k, W_v):
            Y = ex.reference_attention_forward(E, W_q, W_k, W_v).clone()
            Y[0, 0] += delta
            return Y
        return answer

    assert verdict(ex.check_attention_forward(off_by(5e-5)))[0]   # float32's rounding reaches 2.1e-5
    failing(ex.check_attention_forward(off_by(2e-4)), "wrong values", "position (0, 0)")


def test_forward_checker_never_raises():
    def unsolved(E, W_q, W_k, W_v):
        raise NotImplementedError

    failing(ex.check_attention_forward(unsolved), "NotImplementedError")
    failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: 1 / 0), "ZeroDivisionError")
    failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: None), "None")
    failing(ex.check_attention_forward("Y"), "expected a function")
    assert isinstance(ex.check_attention_forward.solution(), Solution)


# ----------------------------------------------------------------------------- exercise 4: the module

def _module(scale=True, swap=False, dim=-1, dot_T=False, bias=False):
    class MySelfAttention(torch.nn.Module):
        def __init__(self, d_model, d_k):
            super().__init__()
            self.W_q = torch.nn.Linear(d_model, d_k, bias=bias)
            self.W_k = torch.nn.Linear(d_model, d_k, bias=False)
            self.W_v = torch.nn.Linear(d_model, d_k, bias=False)

        def forward(self, x):
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            S = K @ Q.transpose(-2, -1) if swap else Q @ (K.mT.transpose(0, -1) if dot_T else K.transpose(-2, -1))
            S = S / math.sqrt(Q.shape[-1]) if scale else S
            return torch.softmax(S, dim=dim) @ V
    return MySelfAttention


def test_module_reference_and_right_answers_pass():
    passed, message = verdict(ex.check_self_attention_module(ex.SelfAttention))
    assert passed, message
    assert verdict(ex.check_self_attention_module(_module()))[0]
    code = ex.check_self_attention_module.solution().code                # the course's own class, as the answer
    assert "class MySelfAttention(nn.Module)" in code and "Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)" in code
    pasted = {}
    exec("import torch\nimport torch.nn as nn\n" + code, pasted)             # pasted into notebook 04, it passes
    assert verdict(ex.check_self_attention_module(pasted["MySelfAttention"]))[0]


def test_module_names_the_slips():
    failing(ex.check_self_attention_module(_module(scale=False)), "forgot to divide", "√4")
    failing(ex.check_self_attention_module(_module(swap=True)), "swapped", "not K @ Q.T")
    failing(ex.check_self_attention_module(_module(dim=1)), "over the queries", "dim=-1")
    failing(ex.check_self_attention_module(_module(dim=-2)), "over the queries")
    failing(ex.check_self_attention_module(_module(dim=0)), "over the batch")
    failing(ex.check_self_attention_module(_module(dot_T=True)), "K.transpose(-2, -1), not K.T")
    failing(ex.check_self_attention_module(_module(bias=True)), "bias=False", "a bias")


def test_module_scaled_by_the_input_width_the_tokens_or_the_pages_d_k_is_named():
    class ByWidth(_module()):   # the scores divided by √x.shape[-1] = √d_model, not √d_k
        def size(self, x):
            return x.shape[-1]

        def forward(self, x):
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(self.size(x)), -1) @ V

    class ByTokens(ByWidth):   # by √x.shape[-2] = √T
        def size(self, x):
            return x.shape[-2]

    class ByFour(ByWidth):   # by √4, the first case's d_k, hard-coded
        def size(self, x):
            return 4

    failing(ex.check_self_attention_module(ByWidth), "√d_model = √6", "Q.shape[-1]", "not the tokens' width")
    failing(ex.check_self_attention_module(ByTokens), "√T = √5", "the number of tokens")
    failing(ex.check_self_attention_module(ByFour), "with d_k = 9: you divided by 2 = √4, but here d_k = 9")
    failing(ex.check_self_attention_module(student_module(lambda Q, K, V: None)), "your forward returned None")


def test_module_checker_never_raises():
    class Unsolved(torch.nn.Module):
        def __init__(self, d_model, d_k):
            raise NotImplementedError

    class NoLayers(torch.nn.Module):
        def forward(self, x):
            return x

    failing(ex.check_self_attention_module(Unsolved), "NotImplementedError")
    failing(ex.check_self_attention_module(lambda d_model, d_k: NoLayers()), "self.W_q = nn.Linear(d_model, d_k")
    failing(ex.check_self_attention_module(ex.SelfAttention(4, 3)), "the class itself")
    failing(ex.check_self_attention_module(3), "expected a function")
    assert isinstance(ex.check_self_attention_module.solution(), Solution)


def test_a_forward_that_returns_nothing_is_told_by_the_name_of_what_it_should_return():
    failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: None), "on E (5, 6)", "forget to `return` Y?")


def test_a_lookup_shifted_by_anything_but_the_largest_score_is_refused():
    for shift in (np.mean, np.median, lambda s: s[0]):
        def lookup(query, keys, values, shift=shift):
            s = keys @ query
            w = np.exp(s - shift(s))
            return float(w / w.sum() @ values)
        failing(ex.check_soft_lookup(lookup), "exp overflowed")

    def by_the_query(query, keys, values):
        w = np.exp(keys @ query - query.max())
        return float(w / w.sum() @ values)
    failing(ex.check_soft_lookup(by_the_query), "keys twice as long", "exp overflowed")


def test_attention_without_the_row_max_is_refused_on_large_scores():
    def forward(E, W_q, W_k, W_v):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        e = torch.exp(Q @ K.T / math.sqrt(Q.shape[-1]))
        return e / e.sum(-1, keepdim=True) @ V
    failing(ex.check_attention_forward(forward), "30 times longer", "NaN or infinity")

    def naive(Q, K, V):
        e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]))
        return e / e.sum(-1, keepdim=True) @ V
    failing(ex.check_self_attention_module(student_module(naive)), "100 times longer", "NaN or infinity")


def _forward_in_float32(E, W_q, W_k, W_v):
    E, W_q, W_k, W_v = (X.float() for X in (E, W_q, W_k, W_v))
    Q, K, V = E @ W_q, E @ W_k, E @ W_v
    return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), -1) @ V


def test_the_forward_pass_in_float32_passes_every_time():
    for _ in range(30):
        assert verdict(ex.check_attention_forward(_forward_in_float32))[0]


def test_a_product_that_does_not_fit_names_the_scores_too():
    def keys_not_transposed(E, W_q, W_k, W_v):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        return torch.softmax(Q @ K / math.sqrt(Q.shape[-1]), -1) @ V
    failing(ex.check_attention_forward(keys_not_transposed), "If a matrix product's shapes do not fit",
            "cannot be multiplied", "The scores are Q @ K.T")


def test_a_count_right_only_when_d_model_is_at_least_d_k_fails_every_time():
    for _ in range(10):
        failing(ex.check_qkv_parameters(lambda d_model, d_k: 3 * d_model * min(d_model, d_k)),
                "for d_model=3, d_k=8", "(d_model, d_model)")


def test_a_module_that_looks_up_the_fixed_cases_and_skips_the_row_max_elsewhere_is_refused():
    from helpers.exercises.learned_qkv import MODULE_CASES, _module_case, _module_expected
    fixed = [*(_module_case(*sizes) for sizes in MODULE_CASES), _module_case(*MODULE_CASES[0], scale=100.0),
             _module_case(*MODULE_CASES[1], sunk=True)]
    stored = {tuple(case.args[0].flatten().tolist()): _module_expected(case) for case in fixed}

    def naive(Q, K, V):
        e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]))
        return e / e.sum(-1, keepdim=True) @ V
    Naive = student_module(naive)

    class Memorised(Naive):
        def forward(self, x):
            key = tuple(x.flatten().tolist())
            y = torch.softmax(self.W_q(x) @ self.W_k(x).transpose(-2, -1) / self.W_q.out_features ** 0.5, -1) \
                @ self.W_v(x)                                                   # for its gradients only
            return stored[key] + (y - y.detach()) if key in stored else super().forward(x)
    for _ in range(20):
        failing(ex.check_self_attention_module(Memorised), "drawn at random", "near 1,000 and 1 less", "NaN or inf")


def test_a_forward_that_changes_its_input_or_its_own_weights_is_refused():
    Attention = student_module(lambda Q, K, V: torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V)

    class ZeroesItsInput(Attention):
        def forward(self, x):
            y = super().forward(x)
            x.mul_(0)
            return y

    class ScalesItsWeights(Attention):   # W_q divided by √d_k on every call: right once, wrong on the next call
        def forward(self, x):
            with torch.no_grad():
                self.W_q.weight.div_(math.sqrt(self.W_q.weight.shape[0]))
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            return torch.softmax(Q @ K.transpose(-2, -1), -1) @ V
    failing(ex.check_self_attention_module(ZeroesItsInput), "forward changed its argument x in place", ".div_()")
    failing(ex.check_self_attention_module(ScalesItsWeights), "changed the module's own weights (W_q.weight)")


def test_a_module_in_float32_passes_every_time():
    Attention = student_module(lambda Q, K, V: torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V)

    class InFloat32(Attention):
        def forward(self, x):
            return super(InFloat32, self.float()).forward(x.float())
    for _ in range(100):
        assert verdict(ex.check_self_attention_module(InFloat32))[0]


class WithDropout(torch.nn.Module):
    """A right module with dropout on its weights, as in training: the checker runs it in eval mode."""

    def __init__(self, d_model, d_k):
        super().__init__()
        self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, x):
        Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
        return self.dropout(torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)) @ V


def lookup_with_the_course(query, keys, values):
    return soft_lookup(query, keys, values)[1]


def test_dropout_is_off_and_the_courses_own_code_is_named():
    assert verdict(ex.check_self_attention_module(WithDropout))[0]
    for own in (SelfAttention, type("Mine", (SelfAttention,), {})):
        passed, message = verdict(ex.check_self_attention_module(own))
        assert passed and message.endswith("It calls a ready-made SelfAttention, though: write it yourself.")
    passed, message = verdict(ex.check_soft_lookup(lookup_with_the_course))
    assert passed and message.endswith("It calls a ready-made soft_lookup, though: write it yourself.")

    class WithTorchs(WithDropout):                                              # torch's fused attention inside
        def forward(self, x):
            return torch.nn.functional.scaled_dot_product_attention(self.W_q(x), self.W_k(x), self.W_v(x))
    passed, message = verdict(ex.check_self_attention_module(WithTorchs))
    assert passed and message.endswith("It calls a ready-made scaled_dot_product_attention, though: write it yourself.")


def test_a_count_that_requires_grad_is_read():
    def as_a_tensor(d_model, d_k):
        return torch.tensor(3.0 * d_model * d_k, requires_grad=True)
    assert verdict(ex.check_qkv_parameters(as_a_tensor))[0]


def test_a_forward_made_of_the_courses_attention_passes_with_a_nudge():
    passed, message = verdict(ex.check_attention_forward(lambda E, W_q, W_k, W_v: sdpa(E @ W_q, E @ W_k, E @ W_v)))
    assert passed and message.endswith("It calls a ready-made scaled_dot_product_attention, though: write it yourself.")
    assert "ready-made" not in verdict(ex.check_attention_forward(ex.reference_attention_forward))[1]

    def torchs(E, W_q, W_k, W_v):                                               # by its dotted path
        return torch.nn.functional.scaled_dot_product_attention(E @ W_q, E @ W_k, E @ W_v)
    passed, message = verdict(ex.check_attention_forward(torchs))
    assert passed and message.endswith("It calls a ready-made scaled_dot_product_attention, though: write it yourself.")


def test_a_count_is_exact_and_the_courses_counter_is_named():
    assert not verdict(ex.check_qkv_parameters(lambda d_model, d_k: 3 * d_model * d_k + 1e-7))[0]
    passed, message = verdict(ex.check_qkv_parameters(lambda m, k: count_parameters(SelfAttention(m, k))))
    assert passed and message.endswith("It calls a ready-made count_parameters, though: write it yourself.")


def test_a_row_max_or_sum_without_keepdim_is_named():
    def shifted(E, W_q, W_k, W_v, keep_max=False, keep_sum=True):
        Q, K, V = E @ W_q, E @ W_k, E @ W_v
        S = Q @ K.T / math.sqrt(Q.shape[-1])                                     # (T, T): square, so (T,) broadcasts
        e = torch.exp(S - S.max(-1, keepdim=keep_max).values)
        return (e / e.sum(-1, keepdim=keep_sum)) @ V
    failing(ex.check_attention_forward(shifted), "shifted by the wrong max", "keepdim=True")
    failing(ex.check_attention_forward(lambda *a: shifted(*a, keep_max=True, keep_sum=False)), "the wrong sum")
    failing(ex.check_attention_forward(lambda *a: shifted(*a, keep_sum=False)), "both miss keepdim=True")


def _shifted_lookup(shift):
    def lookup(query, keys, values):
        scores = keys @ query
        weights = np.exp(scores - shift(scores))
        return float(weights / weights.sum() @ values)
    return lookup


def test_a_lookup_shifted_by_anything_but_the_largest_score_is_refused_every_time():
    """By the largest |score|, by the root mean square, or by the max only when it is above 0: NaN far below 0."""
    for shift in (lambda s: np.abs(s).max(), lambda s: np.sqrt((s**2).mean()), lambda s: max(s.max(), 0.0)):
        for _ in range(3):
            failing(ex.check_soft_lookup(_shifted_lookup(shift)), "[-1000, -1001, -1002]", "every exp fell to 0")
    assert verdict(ex.check_soft_lookup(_shifted_lookup(np.max)))[0]


def test_a_row_max_taken_only_above_0_is_refused_by_the_forward_pass_and_the_module_every_time():
    def clamped(Q, K, V):
        S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        e = torch.exp(S - S.amax(-1, keepdim=True).clamp(min=0))
        return e / e.sum(-1, keepdim=True) @ V
    for _ in range(5):
        failing(ex.check_attention_forward(lambda E, W_q, W_k, W_v: clamped(E @ W_q, E @ W_k, E @ W_v)),
                "lower every score by 1,000", "every exp fell to 0")
        failing(ex.check_self_attention_module(student_module(clamped)), "lower every score by 1,000")


def test_a_layer_with_a_bias_is_named_by_its_own_name():
    class Biased(student_module(sdpa)):
        def __init__(self, d_model, d_k):
            super().__init__(d_model, d_k)
            self.W_v = torch.nn.Linear(d_model, d_k)
    failing(ex.check_self_attention_module(Biased), "self.W_v should be", "whose .weight is W_vᵀ", "and a bias")


def test_a_module_without_super_init_or_returning_the_weights_is_told_so():
    class NoSuper(torch.nn.Module):
        def __init__(self, d_model, d_k):
            self.W_q = torch.nn.Linear(d_model, d_k, bias=False)

    class Weights(torch.nn.Module):
        def __init__(self, d_model, d_k):
            super().__init__()
            self.W_q, self.W_k, self.W_v = (torch.nn.Linear(d_model, d_k, bias=False) for _ in range(3))

        def forward(self, x):
            Q, K = self.W_q(x), self.W_k(x)
            return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1)
    failing(ex.check_self_attention_module(NoSuper), "raised AttributeError", "call super().__init__() first")
    failing(ex.check_self_attention_module(Weights), "a (B, T, T) tensor: that is the weights")


def test_one_layer_under_three_names_is_told_so_not_that_forward_changed_weights():
    class Shared(student_module(None)):
        def __init__(self, d_model, d_k):
            super().__init__(d_model, d_k)
            self.W_q = self.W_k = self.W_v                                # one nn.Linear, three names

        def forward(self, x):
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V
    message = failing(ex.check_self_attention_module(Shared), "not three layers", "its own nn.Linear")
    assert "changed" not in message


@pytest.mark.parametrize("finish", [lambda y: y.detach().numpy(), lambda y: y.tolist(), lambda y: list(y),
                                    lambda y: y.detach(), lambda y: torch.tensor(y.tolist(), dtype=y.dtype)])
def test_a_forward_that_returns_numbers_without_autograd_is_refused(finish):
    class Untrainable(student_module(None)):
        def forward(self, x):
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            return finish(torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V)
    failing(ex.check_self_attention_module(Untrainable), "is cut from autograd", "could not learn")


def _attend(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, -1) @ V


class _NoGradScores(student_module(None)):   # the weights under no_grad: W_q and W_k would never learn
    def forward(self, x):
        with torch.no_grad():
            W = torch.softmax(self.W_q(x) @ self.W_k(x).transpose(-2, -1) / self.W_q.out_features ** 0.5, -1)
        return W @ self.W_v(x)


class _FrozenQuery(student_module(_attend)):
    def __init__(self, d_model, d_k):
        super().__init__(d_model, d_k)
        self.W_q.weight.requires_grad_(False)


class _KeysFromData(student_module(None)):
    def forward(self, x):
        return _attend(self.W_q(x), x @ self.W_k.weight.data.T, self.W_v(x))


class _ZeroGradients(student_module(None)):   # right numbers, every weight in the graph, every gradient 0
    def forward(self, x):
        with torch.no_grad():
            y = _attend(self.W_q(x), self.W_k(x), self.W_v(x))
        return y + 0 * sum(layer.weight.sum() for layer in (self.W_q, self.W_k, self.W_v))


@pytest.mark.parametrize("answer, names", [
    (student_module(lambda Q, K, V: _attend(Q, K, V.detach())),
     "but W_v gets no gradient or the wrong one, so training could not change it"),
    (student_module(lambda Q, K, V: _attend(Q, K, V).detach().requires_grad_()),
     "but W_q, W_k and W_v get no gradient"),
    (student_module(lambda Q, K, V: torch.tensor(_attend(Q, K, V).tolist(), dtype=Q.dtype, requires_grad=True)),
     "but W_q, W_k and W_v get"),
    (_NoGradScores, "but W_q and W_k get no gradient or the wrong one, so training could not change them"),
    (_FrozenQuery, "but W_q gets no gradient"), (_KeysFromData, "but W_k gets no gradient"),
    (_ZeroGradients, "but W_q, W_k and W_v get no gradient or the wrong one")])
def test_a_module_with_the_right_numbers_but_not_the_right_gradients_is_refused(answer, names):
    failing(ex.check_self_attention_module(answer), "forward gives the right numbers", names,
            "nothing on their path to the output may stop autograd")


def test_a_forward_whose_backward_fails_is_told_why():
    class InPlace(student_module(None)):
        def forward(self, x):
            Q, K, V = self.W_q(x), self.W_k(x), self.W_v(x)
            e = torch.exp(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5)   # right on the first case
            e /= e.sum(-1, keepdim=True)   # exp keeps its output for the backward: changed in place
            return e @ V
    failing(ex.check_self_attention_module(InPlace), "forward gives the right numbers, but autograd cannot go back",
            "modified by an inplace operation", "write e = e / s, not e /= s, once e is used.")
