"""Notebook 10's checkers: the induction score from a weight matrix, and which head's removal hurts most, each slip
named; answers that hard-code the page or ignore an argument are refused."""
import numpy as np
import pytest
import torch
from verdicts import failing, verdict

from helpers import induction
from helpers.exercises import induction as ex
from helpers.measure import cpu_threads


def at(W, queries, offset):
    i = torch.as_tensor(list(queries))
    return W[i, i - offset].mean()


def test_the_reference_and_a_numpy_answer_pass():
    assert verdict(ex.check_induction_score(ex.reference_induction_score))[0]
    numpy_answer = lambda W, n: float(np.mean([np.asarray(W)[i, i - n + 1] for i in range(n, 2 * n)]))  # noqa: E731
    assert verdict(ex.check_induction_score(numpy_answer))[0]
    assert verdict(ex.check_induction_score(lambda W, n: induction.induction_score(W, n)))[0]


@pytest.mark.parametrize("answer, fragment", [
    (lambda W, n: at(W, range(n, 2 * n), n), "key i − n: the earlier copy of token i itself"),
    (lambda W, n: at(W, range(n, 2 * n), n - 2), "one key too far"),
    (lambda W, n: at(W, range(n), n - 1), "averages over the first half"),
    (lambda W, n: at(W, range(2 * n), n - 1), "averages over every query"),
    (lambda W, n: at(W, range(n, 2 * n), 1), "key i − 1, the previous token"),
    (lambda W, n: at(W, range(1, 2 * n), 1), "that is the previous-token score"),
    (lambda W, n: at(W.T, range(n, 2 * n), n - 1), "Rows are queries, columns keys"),
    (lambda W, n: n * ex.reference_induction_score(W, n), "the sum of the n weights"),
    (lambda W, n: at(W, range(n, 2 * n), n - 1) * n / (2 * n), "divides the n weights' sum by 2n"),
    (lambda W, n: at(W, range(n, 2 * n - 1), n - 1), "the last query, i = 2n − 1, is left out"),
    (lambda W, n: W.diagonal(-(n - 1)).mean(), "also averages query n − 1"),
    (lambda W, n: W[torch.arange(n, 2 * n), torch.arange(1, n + 1)], "should be one number"),
    (lambda W, n: None, "returned None"),
])
def test_each_slip_of_the_induction_score_is_named(answer, fragment):
    failing(ex.check_induction_score(answer), fragment)


def test_an_answer_that_is_not_one_number_is_told_on_which_input():
    message = ex.check_induction_score(lambda W, n: "0.9").message
    assert message.startswith("on random causal weights, n = 7: your function returned the text '0.9'"), message


def test_the_induction_score_cannot_be_copied_or_computed_without_n():
    failing(ex.check_induction_score(lambda W, n: 0.72), "is not right: 0.72 is too")   # the page's number
    failing(ex.check_induction_score(lambda W, n: at(W, range(16, 32), 15) if len(W) >= 32 else 0.0))
    fixed_n = lambda W, n: ex.reference_induction_score(W, 5)  # noqa: E731       # ignores n
    assert not verdict(ex.check_induction_score(fixed_n))[0]


def test_a_checker_call_draws_fresh_sizes():
    calls = []
    record = lambda W, n: calls[-1].append((n, W.shape, W.numpy().tobytes()))  # noqa: E731
    for _ in range(3):
        calls.append([])
        assert verdict(ex.check_induction_score(lambda W, n: record(W, n) or ex.reference_induction_score(W, n)))[0]
    fixed = len(ex.check_induction_score.cases())
    drawn = [call[fixed:] for call in calls]                   # the fixed cases come first, the same in every call
    assert [len(call) for call in drawn] == [len(ex.check_induction_score.draws)] * 3
    assert all(shape == (2 * n, 2 * n) for call in drawn for n, shape, _ in call)
    assert len({tuple(call) for call in drawn}) == 3           # a generator seeded once would draw the same again
    assert len({n for call in drawn for n, _, _ in call}) > 1  # and the sizes vary, not only the numbers


def by_previous_token_score(scores):
    layer, head = divmod(int(scores[0].argmax()), scores.size(2))
    return layer, head


def test_relabelled_copies_compute_the_same_function_under_new_head_numbers():
    model = induction.load_trained_model()
    swapped = ex.relabelled(model, ((1, 0), (1, 0)))
    tokens = torch.randint(0, 20, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(swapped(tokens), model(tokens), rtol=0, atol=1e-5)
    W, W_swapped = induction.attention_patterns(model, tokens), induction.attention_patterns(swapped, tokens)
    torch.testing.assert_close(W_swapped, W.flip(2), rtol=0, atol=1e-6)


def test_an_induction_score_that_reads_n_from_the_page_fails_every_time():
    def page_n(W, n):   # n = 8 wherever W is large enough for it
        return ex.reference_induction_score(W, 8 if W.shape[0] >= 16 else n)
    for _ in range(10):
        failing(ex.check_induction_score(page_n), "n = 11")


def test_copies_with_idle_layers_and_heads_compute_the_same_function():
    model = induction.load_trained_model()
    tokens = torch.randint(0, 20, (2, 32), generator=torch.Generator().manual_seed(0))
    for front, idle, size in ((1, 0, (3, 2)), (0, 1, (2, 3))):
        copy = ex.relabelled(model, [range(2 + idle)] * (front + 2), ex.SCALES[0], front, idle)
        assert (copy.n_layers, copy.n_heads) == size
        with torch.no_grad():
            torch.testing.assert_close(copy(tokens), model(tokens), rtol=0, atol=1e-5)
        batch, positions = induction.repeated_batch(500, torch.Generator().manual_seed(12))
        with cpu_threads(1):   # the losses the checker quotes for such a copy, measured on it
            measured = induction.ablation_table(copy, batch, positions)
        assert measured == pytest.approx(ex._model_case([range(2 + idle)] * (front + 2), front=front, idle=idle).table,
                                         abs=1e-5)


@pytest.mark.parametrize("answer, fragment", [
    (lambda s: divmod(int(s[0].argmax()), s.shape[1]), "(2, 3, 2) = (2, n_layers, H)"),   # n_layers read as H
    (lambda s: divmod(int(s[:, 0].argmax()), s.shape[2]), "head 0.0 (layer 0's head 0) off"),   # kinds read as layers
    (lambda s: tuple(int(i) for i in np.unravel_index(int(s[0].argmax()), s.shape[:2])), "idle layer 0 in front"),
    (lambda s: (int(s[0].argmax()) // 2, int(s[0].argmax()) % 2), "an idle head in each layer"),   # the page's H = 2
    (lambda s: divmod(int(s[0].argmax()), 2), "(2, 2, 3) = (2, n_layers, H): sizes from scores.shape"),
    (lambda s: divmod(int(s[0].argmax()), s.shape[2])[::-1], "head 1.0 (layer 1's head 0) is an induction head"),
])
def test_the_worst_head_takes_its_sizes_from_the_scores(answer, fragment):
    for _ in range(3):
        failing(ex.check_worst_head(answer, "b"), fragment)


def test_the_worst_head_is_measured_and_the_reason_checked():
    assert verdict(ex.check_worst_head(by_previous_token_score, "b"))[0]
    assert verdict(ex.check_worst_head(ex.reference_worst_head, " B "))[0]
    failing(ex.check_worst_head(ex.reference_worst_head, "because of b"), "but got 'because of b'.")
    for hedged in ("b or c", "b and c", "b c a", "b) its output builds their keys"):   # one letter, nothing else
        failing(ex.check_worst_head(ex.reference_worst_head, hedged), "one letter", f"but got {hedged[:20]!r}.")
    failing(ex.check_worst_head(by_previous_token_score, "a"), "not reason 'a'")
    failing(ex.check_worst_head(by_previous_token_score, "c"), "not reason 'c'")
    failing(ex.check_worst_head(by_previous_token_score, None), "now the reason", "still None")
    failing(ex.check_worst_head(by_previous_token_score, "d"), "'a', 'b' or 'c'")
    failing(ex.check_worst_head("b", by_previous_token_score), "the function comes first")
    assert all(verdict(ex.check_worst_head(by_previous_token_score, reason))[0] for reason in ("(b)", "b)", "(B).",
                                                                                             "b:", "b,"))


def test_the_worst_head_cannot_be_hard_coded_or_taken_from_the_induction_scores():
    failing(ex.check_worst_head(lambda scores: (0, 1), "b"), "layer 0's heads swapped", "neither")
    by_induction = lambda s: divmod(int(s[1].argmax()), s.size(2))  # noqa: E731
    failing(ex.check_worst_head(by_induction, "b"), "is an induction head", "Which head do both")
    by_any_score = lambda s: divmod(int(s.max(0).values.argmax()), s.size(2))  # noqa: E731
    failing(ex.check_worst_head(by_any_score, "b"), "flattened", "is an induction head")
    by_both_scores = lambda s: divmod(int(s.sum(0).argmax()), s.size(2))  # noqa: E731
    failing(ex.check_worst_head(by_both_scores, "b"), "flattened", "is an induction head")
    by_lowest_induction = lambda s: divmod(int(s[1].argmin()), s.size(2))  # noqa: E731
    failing(ex.check_worst_head(by_lowest_induction, "b"), "flattened", "Read both scores")
    failing(ex.check_worst_head(lambda s: (0, int(s[1, 0].argmin())), "b"), "flattened", "Read both scores")
    failing(ex.check_worst_head(lambda scores: "0.1", "b"), "a (layer, head) pair")
    failing(ex.check_worst_head(lambda scores: (2, 0), "b"), "there is no head 2.0")
    head_first = lambda s: divmod(int(s[0].argmax()), s.size(2))[::-1]  # noqa: E731
    failing(ex.check_worst_head(head_first, "b"), "head 1.0 (layer 1's head 0) is an induction head")
    failing(ex.check_worst_head(by_previous_token_score(torch.rand(2, 2, 2)), "b"), "expected a function")


def test_solutions_show_the_reference():
    assert "i - n + 1" in repr(ex.check_induction_score.solution())
    assert "scores[0]" in repr(ex.check_worst_head.solution()) and "'b'" in repr(ex.check_worst_head.solution())


def test_the_worst_head_message_quotes_the_pages_copy_losses():
    """The as-trained case is measured on the page's evaluation batch (500 sequences, seed 12), so the rises the
    message quotes are the page's table's."""
    tokens, copy = induction.repeated_batch(500, torch.Generator().manual_seed(12))
    table = induction.ablation_table(induction.load_trained_model(), tokens, copy)
    rise = {head: f"{loss - table[None]:+.2f}" for head, loss in table.items() if head is not None}
    message = failing(ex.check_worst_head(lambda scores: (1, 0), "b"), "the heads numbered as trained")
    assert f"by {rise[1, 0]}" in message and f"costs {rise[0, 1]}" in message, (rise, message)
