"""Inputs a student can type into the public functions of notebooks 01-09: each gets a named error, never a silent
wrong result."""
import re

import numpy as np
import pytest
import torch

from helpers import cost, heads, induction, learning, luong, measure, positions, scaling, temperature
from helpers.attention import self_attention, self_attention_steps
from helpers.attention_plots import gravity_plot, labelled_table
from helpers.attention_torch import SelfAttention, causal_mask, scaled_dot_product_attention
from helpers.fast_attention import flash_attention, tile_map, tiled_attention
from helpers.heads import MultiHeadAttention
from helpers.plotting import heatmap
from helpers.running_example import tokenize
from helpers.similarity import softmax


def _qkv():
    return torch.randn(1, 6, 4), torch.randn(1, 6, 4), torch.randn(1, 6, 4)


@pytest.mark.parametrize("call, error, says", [
    (lambda: heads.attention_dropout(torch.ones(3, 3), 1.0, torch.Generator()), ValueError, "below 1"),
    (lambda: heads.attention_dropout(torch.ones(3, 3), 1.5, torch.Generator()), ValueError, "below 1"),
    (lambda: heads.attention_dropout(torch.ones(3, 3), -0.5, torch.Generator()), ValueError, "at least 0"),
    (lambda: tiled_attention(*_qkv(), block=-1), ValueError, "block (queries per tile) should be a whole number"),
    (lambda: tiled_attention(*_qkv(), block=2.5), ValueError, "block (queries per tile)"),
    (lambda: heads.decode_with_cache(heads.demo_model(), torch.randn(1, 5, 16, dtype=torch.float64), prompt=-1),
     ValueError, "prompt (the tokens read at once) should be a whole number from 1 to 5"),
    (lambda: heads.decode_with_cache(heads.demo_model(), torch.randn(1, 5, 16, dtype=torch.float64), prompt=6),
     ValueError, "from 1 to 5"),
    # notebook 09's two-layer cell calls attend_with_cache itself: a float32 x, one sentence or the wrong width
    (lambda: heads.attend_with_cache(heads.demo_model(), torch.randn(1, 1, 16)), TypeError,
     "x is torch.float32 on cpu but the module's weights are torch.float64"),
    (lambda: heads.attend_with_cache(heads.demo_model(), torch.randn(1, 16, dtype=torch.float64)), ValueError,
     "(one sentence of shape (T, d_model): x[None])"),
    (lambda: heads.attend_with_cache(heads.demo_model(), torch.randn(1, 1, 8, dtype=torch.float64)), ValueError,
     "x should be a torch.Tensor of shape (B, T, d_model) = (B, T, 16)"),
    (lambda: heads.padding_mask([2.5], 4), ValueError, "each length should be a whole number from 1 to 4"),
    (lambda: heads.padding_mask([5], 4), ValueError, "from 1 to 4"),
    (lambda: measure.run_benchmark(sizes=64, impls=("flash",)), ValueError, "implementations=measure.WITH_FLASH"),
    (lambda: measure.run_benchmark(sizes=64, impls="naiv"), ValueError, "impls should be among ['naive', 'lean', "
                                                                         "'tiled', 'sdpa'], but got ['naiv']"),
    (lambda: heads.padding_mask("3", 5), ValueError, "each length should be a whole number from 1 to 5, but got '3'"),
    (lambda: heads.padding_mask([3], "5"), ValueError, "T (the padded length) should be a whole number"),
    (lambda: positions.sinusoidal_positions(5, 4, dtype=torch.int64), TypeError, "floating-point torch dtype"),
    (lambda: positions.frequencies(3), ValueError, "d = 3 is odd"),
    (lambda: positions.shift_matrix(3, 5), ValueError, "d = 5 is odd"),
    (lambda: positions.shift_matrix(1, 4, torch.int64), TypeError, "floating-point torch dtype"),   # not all zeros
    (lambda: luong.luong_dot_attention(torch.tensor([1, 0]), torch.tensor([[1, 0], [0, 1]])), ValueError,
     "float tensors of one dtype, but got s Tensor of shape (2,) (torch.int64)"),
    (lambda: temperature.softmax_at_scale([[1, 2], [3, 4]]), ValueError, "scores should be 1-D"),
    (lambda: heads.SeparateHeads(16, 3), ValueError, "cannot be split into n_heads=3"),
    (lambda: cost.attention_flops(-5, 64), ValueError, "T should be a whole number of at least 1, but got -5"),
    (lambda: cost.attention_flops(8, 4, causal="no"), TypeError, "causal should be True or False"),
    (lambda: cost.projection_parameters("512", 64), ValueError, "d_model should be a whole number"),
    (lambda: cost.projection_flops(1024, 512, 64, batch=0), ValueError, "batch should be a whole number"),
    (lambda: cost.attention_flops(np.float64(562.0), 64), ValueError, "T should be a whole number of at least 1, but "
     "got 562.0."),                                                  # the number, not "float64 of shape ()"
    (lambda: cost.cost_table(1024, 512, 64, heads=2.5), ValueError, "heads should be"),   # not batch · heads
    (lambda: cost.score_matrix_bytes(1024.0), ValueError, "T should be a whole number of at least 1, but got 1024.0"),
    (lambda: cost.tensor_bytes(3, -1), ValueError, "size 1 of (3, -1) should be a whole number of at least 0"),
    (lambda: cost.tensor_bytes(128, 1024, "float16"), TypeError, "the sizes come first, then dtype by name"),
    (lambda: cost.kv_cache_bytes(32, 32, 128, tokens=0), ValueError, "tokens should be a whole number"),
    (lambda: cost.largest_T_for_memory(16e9, heads=0.5), ValueError, "heads should be a whole number"),
    (lambda: cost.largest_T_for_memory(-5), ValueError, "budget_bytes should be a number of bytes, at least 0, such "
                                                        "as 40e9 (40 GB), but got -5"),   # not isqrt's error
    (lambda: cost.largest_T_for_memory("80 GB"), ValueError, "budget_bytes should be a number of bytes"),
    (lambda: cost.largest_T_for_memory(float("inf")), ValueError, "but got inf"),
    (lambda: SelfAttention(8, 8 / 2), ValueError, "d_k should be a whole number of at least 1, but got 4.0"),
    (lambda: causal_mask(10 / 2), ValueError, "T_q should be a whole number of at least 1, but got 5.0"),
    (lambda: causal_mask(4, -1), ValueError, "T_k (the queries are the last T_q of the T_k tokens) should be a whole "
                                             "number of at least 4, but got -1"),
    (lambda: causal_mask(4, 2), ValueError, "should be a whole number of at least 4, but got 2"),   # no blind query
    (lambda: flash_attention(*_qkv(), causal="no"), TypeError, "causal (a mask goes in mask=) should be True"),
    (lambda: scaled_dot_product_attention(torch.ones(2, 3, 4), torch.ones(3, 5, 4), torch.ones(3, 5, 4)), ValueError,
     "the batch axes (all but the last two) do not fit: Q (2, 3, 4), K (3, 5, 4), V (3, 5, 4)"),   # not torch's
    (lambda: flash_attention(torch.ones(2, 3, 4), torch.ones(2, 5, 4), torch.ones(1, 3, 5, 4)), ValueError,
     "do not fit: Q (2, 3, 4), K (2, 5, 4), V (1, 3, 5, 4)"),
    (lambda: heads.split_heads(torch.randn(2, 5, 16), 3), ValueError, "cannot be split into n_heads=3"),
    (lambda: tokenize("bank's river"), ValueError, "'s' is not in the course vocabulary (money, bank, grows, river, "
                                                   "flows). Build sentences from these words (punctuation is"),
    (lambda: tile_map(16, 16, 0, 4), ValueError, "block_q (queries per tile) should be a whole number of at least 1"),
    (lambda: tile_map(32, 12, 4, 4, causal=True), ValueError, "the first 20 queries would see no key"),   # as flash
    (lambda: tile_map(1e5, 12, 4, 4), ValueError, "T_q should be a whole number of at least 1, but got 100000.0."),
    (lambda: scaled_dot_product_attention(torch.ones(3, 4), torch.ones(0, 4), torch.ones(0, 4)), ValueError,
     "K has no keys (shape (0, 4))"),                               # not a (3, 4) of zeros
    (lambda: scaled_dot_product_attention(*_qkv(), mask=torch.tensor([0, -100, 0, 0, 0, 0])), ValueError,
     "that is an additive mask"),                      # integers too: not key 1 alone kept as 'may attend'
    (lambda: scaling.score_divisor(8, 16), ValueError, "cannot be split into n_heads=16"),   # not a divisor of 0
    (lambda: scaling.per_head_dim(512, 7), ValueError, "so n_heads must divide 512"),           # not 73, floored
    (lambda: induction.repeated_batch(4, torch.Generator(), offset=40), ValueError, "from 2 to 30, but got 40"),
    (lambda: induction.induction_score(torch.rand(32, 32), 20), ValueError, "n = 20 tokens said twice, but is (32"),
    (lambda: induction.induction_score(torch.rand(32, 32), 0), ValueError, "n should be a whole number of at least 1"),
    (lambda: induction.induction_score(torch.rand(32, 32), 16.0), ValueError, "but got 16.0"),   # not an IndexError
    (lambda: learning.run_experiment("idioms"), ValueError, "task should be 'idiom' or 'keyword', but got "
                                                            "'idioms'"),   # not the keyword task
    (lambda: learning.make_dataset("Idiom"), ValueError, "task should be 'idiom' or 'keyword', but got 'Idiom'"),
    (lambda: learning.run_experiment(models="learned"), ValueError, "model should be one of ('parameter-free', "
                                                                    "'learned Q, K, V'"),   # not a KeyError
    (lambda: learning.run_experiment(steps=20.0), ValueError, "steps should be a whole number of at least 0"),
    (lambda: learning.soft_lookup([1, 0], np.eye(3), [1, 2, 4]), ValueError, "have shapes (2,), (3, 3) and (3,)"),
    (lambda: learning.soft_lookup([1, 0, 0], np.eye(3), [1, 2]), ValueError, "should fit"),
    (lambda: learning.ParameterFreeAttention()(np.eye(3)), TypeError,
     "E should be a float torch.Tensor (..., T, d), such as (T, d), but got ndarray"),
    (lambda: luong.luong_dot_attention(luong.decoder_states(), luong.encoder_states()), ValueError,
     "s should be one decoder state (d,) and H (T_k, d), float tensors of one dtype, but got s Tensor of shape (2, 4) "
     "(torch.float32)"),
    (lambda: luong.qkv_attention(luong.decoder_states().double(), luong.encoder_states()), TypeError,
     "Q is torch.float64 on cpu but K is torch.float32"),   # not torch's "expected m1 and m2 …"
    (lambda: luong.qkv_attention(luong.decoder_states().double(), luong.encoder_states(), luong.projections()),
     TypeError, "X_q should be a torch.float32 tensor (T, 4), as P['W_q'] is (4, 4), but got Tensor of shape "
                "(2, 4) of torch.float64."),                   # before the projection: not "expected m1 and m2 …"
    (lambda: luong.qkv_attention(luong.decoder_states(), luong.encoder_states()[:, :3], luong.projections()),
     ValueError, "X_kv should be a torch.float32 tensor (T, 4)"),   # not "mat1 and mat2 shapes cannot be multiplied"
    (lambda: luong.qkv_attention([[1.0, 2, 3, 4]], luong.encoder_states(), luong.projections()), TypeError,
     "X_q should be a torch.float32 tensor (T, 4), as P['W_q'] is (4, 4), but got list of length 1."),
    (lambda: luong.qkv_attention(luong.decoder_states(), luong.encoder_states(), tuple(luong.projections().values())),
     TypeError, "P should be a dict {'W_q': …, 'W_k': …, 'W_v': …} as projections(d_model, d_k) makes, but got tuple"),
    (lambda: luong.qkv_attention(luong.decoder_states(), luong.encoder_states(), {"W_q": torch.eye(4)}), TypeError,
     "with keys ['W_q']."),
    (lambda: softmax([np.inf, 1.0]), ValueError, "needs a finite largest score in each row of x (axis -1), but a row "
                                                 "has +inf (typed, or a number that overflowed"),
    (lambda: self_attention(np.full((3, 4), 1e160)), ValueError, "+inf (typed, or a number that overflowed: its inputs "
                                                                 "grew too large)"),   # E Eᵀ past float64's 1.8e308
    (lambda: softmax([[0.0, 1.0], [-np.inf, -np.inf]]), ValueError, "a row has only -inf (every score hidden)"),
    # notebook 05's cells invite other sizes: one token has no second-best key, 1e5 is a float, one pair no variance
    (lambda: scaling.gradient_measurements([4], n_seq=2, T=1), ValueError, "T (two keys at least: a query's top two"),
    (lambda: scaling.gradient_measurements([4], n_seq=0), ValueError, "n_seq should be a whole number of at least 1"),
    (lambda: scaling.variance_table([64], n_pairs=1e5), ValueError, "n_pairs (a variance needs two) should be a whole"),
    (lambda: scaling.variance_table([64], n_pairs=1), ValueError, "at least 2, but got 1."),
    (lambda: softmax([[4.0, -np.inf], [1.0, -np.inf]], axis=0), ValueError, "(axis 0), but a row has only -inf"),
    (lambda: softmax([np.nan, 1.0]), ValueError, "a row has NaN"),
    (lambda: softmax([]), ValueError, "a row has no score"),   # not "zero-size array to reduction …"
    (lambda: softmax([1.0, 2.0], axis=1), ValueError, "axis 1 is out of bounds for array"),   # not an IndexError
    (lambda: heads.padding_mask([[3, 5], [2, 4]], 5), ValueError, "each length should be a whole number"),   # not 4
    (lambda: labelled_table(np.ones((5, 5)), "abc", "abc"), ValueError, "3 column labels came (a string counts its "),
    (lambda: labelled_table(np.ones((5, 5)), list("abc"), list("abc")), ValueError, "M has shape (5, 5), but 3 row "
                                                                                 "and 3 column labels came."),
    (lambda: self_attention_steps(np.eye(3), scaled="no"), TypeError, "scaled should be True or False"),
    (lambda: heatmap(np.eye(5), list("abc"), list("abc")), ValueError, "M has shape (5, 5), but 3 row and 3 column"),
    (lambda: gravity_plot(np.eye(5), np.eye(5), list("abc")), ValueError, "one row per token, but have 5, 5, 3"),
    (lambda: measure.time_calls({"sdpa": torch.ones(2) @ torch.ones(2)}), TypeError, "functions should map names "
     "to functions of no arguments, {'name': lambda: f(Q, K, V)}, but got {'sdpa': 'Tensor'}"),   # not "not callable"
    (lambda: measure.time_calls(lambda: None), TypeError, "but got function."),   # not "'function' is not iterable"
    (lambda: measure.cpu_peak_bytes(torch.ones(2) @ torch.ones(2)), TypeError, "fn should be a function of no "
     "arguments, lambda: f(Q, K, V), but got Tensor."),                # not "'Tensor' object is not callable"
    (lambda: induction.heads_off(induction.load_trained_model(), 1).__enter__(), TypeError, "heads should be one "
     "(layer, head) pair or a list of them, such as [(1, 0)], but got 1."),       # not "'int' object is not iterable"
    (lambda: induction.heads_off(induction.load_trained_model(), [1, 0, 1]).__enter__(), TypeError, "[1, 0, 1]."),
    (lambda: scaling.variance_table([0, 64], n_pairs=10), ValueError, "each d (a vector size) should be a whole number "
                                                                     "of at least 1, but got 0"),   # not d = 64's row
    (lambda: luong.qkv_attention(luong.decoder_states(), luong.encoder_states(), {
        **luong.projections(), "W_v": torch.ones(3, 3)}), ValueError, "as P['W_v'] is (3, 3)"),   # not "mat1 and mat2"
    (lambda: induction.copy_loss(induction.load_trained_model(), torch.zeros(1, 32, dtype=torch.long),
                                 torch.zeros(1, 31, dtype=torch.bool)),
     ValueError, "but got one that marks no position (the mean over none is NaN)."),
    (lambda: induction.copy_loss(induction.load_trained_model(), torch.zeros(2, 32, dtype=torch.long),
                                 torch.ones(2, 31, dtype=torch.long)),
     ValueError, "torch.int64 (0/1 integers would pick rows: .bool() makes a mask)."),
    (lambda: induction.copy_loss(induction.load_trained_model(), torch.zeros(2, 32, dtype=torch.long),
                                 torch.ones(2, 32, dtype=torch.bool)), ValueError, "bool tensor of shape (2, 31)"),
])
def test_a_bad_input_is_named(call, error, says):
    with pytest.raises(error, match=None) as raised:
        call()
    assert says in str(raised.value), str(raised.value)


def test_a_hand_made_projection_of_numpy_arrays_is_taken_in_the_tokens_dtype():
    """np.random.randn gives float64: the arrays are taken as tensors of X_q's float32, as projections() gives."""
    P = luong.projections()
    torch.testing.assert_close(luong.qkv_attention(luong.decoder_states(), luong.encoder_states(), {
        name: W.double().numpy() for name, W in P.items()})["Y"], luong.qkv_attention(luong.decoder_states(),
                                                                                      luong.encoder_states(), P)["Y"])


def test_a_format_spec_without_braces_formats_the_numbers():
    """fmt=".2f" (the spec alone, as format() takes it) writes 0.33, not the text ".2f" in every cell."""
    assert labelled_table([[1 / 3]], ["a"], ["b"], fmt=".2f").splitlines()[1] == "a  0.33"
    assert [t.get_text() for t in heatmap([[1 / 3, 0.5]], fmt=".0%").texts] == ["33%", "50%"]


def test_sizes_held_in_a_numpy_or_torch_scalar_count_as_their_number():
    assert cost.largest_T_for_memory(torch.tensor(40e9)) == cost.largest_T_for_memory(40e9) == 100_000
    assert causal_mask(torch.tensor(4)).shape == (4, 4) and cost.attention_flops(np.int64(8), 4)["total"] == 4 * 64 * 4


def test_a_three_dimensional_mask_given_to_many_heads_is_told_to_add_the_head_axis():
    """With B = h = 4 a (B, T, T) mask would broadcast silently against (B, H, T, T), its batch axis on the heads."""
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(4, 5, 16)
    masks = causal_mask(5).repeat(4, 1, 1)                              # (B, T, T)
    with pytest.raises(ValueError, match=r"Add a head axis: mask\[:, None\] is \(B, 1, T, T\)"):
        mha(x, masks)
    torch.testing.assert_close(mha(x, masks[:, None]), mha(x, causal_mask(5)))


def test_the_widgets_take_what_their_controls_offer_and_name_it_otherwise():
    from helpers.widgets.flash import FlashTilesWidget
    from helpers.widgets.heads import HeadsWidget
    from helpers.widgets.positions import PositionsWidget
    from helpers.widgets.scaling import ScalingWidget
    from helpers.widgets.softmax_temperature import SoftmaxTemperatureWidget
    from helpers.widgets.start_here import PullSliderWidget

    assert HeadsWidget(model=MultiHeadAttention(16, 4)).result["weights"].shape[0] == 4   # a float32 model too
    assert PositionsWidget(p=4, T=5).result["p"] == 4
    refused = {lambda: PositionsWidget(p=60): "p should be a whole number from 0 to 47, but got 60",   # not moved to 47
               lambda: HeadsWidget("river bank flows"): "sentence should be one of 'the river bank flows slowly'",
               lambda: HeadsWidget(mask_type="Causal"): "mask_type should be one of 'none', 'causal'",
               lambda: HeadsWidget(head=4): "head should be a whole number from 0 to 3, but got 4",
               lambda: FlashTilesWidget(block=0): "block (keys per tile) should be a whole number of at least 1",
               lambda: ScalingWidget(T=0): "T (keys) should be a whole number of at least 1, but got 0",
               lambda: PullSliderWidget(other="cat"): "'cat' is not in the course vocabulary",   # not KeyError 'cat'

               lambda: FlashTilesWidget(causal="yes"): "causal should be one of False, True, but got 'yes'",
               lambda: PositionsWidget(p=2.5): "p should be a whole number from 0 to 47, but got 2.5",   # not 2
               lambda: SoftmaxTemperatureWidget(scale=5000): "scale should be a number from 0.01 to 1000"}
    for make, message in refused.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            make()


def test_four_terms_refuses_what_would_be_silently_wrong():
    E = torch.randn(3, 4, dtype=torch.float64)
    for P in (positions.sinusoidal_positions(5, 4, dtype=torch.float64), positions.sinusoidal_positions(3, 4)):
        with pytest.raises(ValueError, match=r"one shape \(T, d\) and one dtype.*dtype=E.dtype"):
            positions.four_terms(E, P)                               # (3, 5) terms, or a dtype error, before
    with pytest.raises(ValueError, match=r"\(3, 4\) torch.float64 and Tensor of shape \(3, 4\) torch.float32"):
        positions.four_terms(E, positions.sinusoidal_positions(3, 4))   # the shapes agree: the dtypes are named
    with pytest.raises(ValueError, match=r"E = torch.tensor\(E\) first for a NumPy array") as refused:
        positions.four_terms(E.numpy(), positions.sinusoidal_positions(3, 4))
    E = torch.tensor(E.numpy())                                       # the advice, followed: it runs
    assert "torch.tensor(E)" in str(refused.value) and positions.four_terms(E, positions.sinusoidal_positions(
        3, 4, dtype=E.dtype))["position-position"].shape == (3, 3)


def test_what_a_student_may_type_instead_is_taken():
    """One length for one sentence, one (layer, head) pair, a list as a NumPy query, -inf as a hidden score."""
    assert torch.equal(heads.padding_mask(3, 5), heads.padding_mask([3], 5))
    model, (tokens, copy) = induction.load_trained_model(), induction.repeated_batch(20, torch.Generator())
    losses = []
    for off in ((1, 0), [(1, 0)], torch.tensor([1, 0]), {(1, 0)}, iter([(1, 0)]), ((1, 0), (0, 1)), ()):   # pairs
        with induction.heads_off(model, off):
            losses.append(induction.copy_loss(model, tokens, copy))
    assert losses[0] == losses[1] == losses[2] == losses[3] == losses[4] not in (losses[5], losses[6])
    assert losses[6] == induction.copy_loss(model, tokens, copy)   # nothing switched off
    assert luong.qkv_attention(torch.randn(2, 6), torch.randn(3, 4), {"W_q": torch.randn(6, 3), "W_k": torch.randn(
        4, 3), "W_v": torch.randn(4, 2)})["Y"].shape == (2, 2)    # cross-attention between widths 6 and 4
    assert labelled_table(np.eye(2), (w for w in "ab"), iter("cd")).split() == ["c", "d", "a", "1.0000", "0.0000",
                                                                               "b", "0.0000", "1.0000"]
    assert learning.soft_lookup([1, 0, 0], np.eye(3).tolist(), [1, 2, 4])[1] == pytest.approx(1.8477662, abs=1e-6)
    np.testing.assert_allclose(softmax([-np.inf, 0.0]), [0.0, 1.0])


def test_the_errors_name_the_argument_typed_and_describe_it_briefly():
    from helpers.attention import self_attention
    from helpers.attention_torch import SelfAttention, scaled_dot_product_attention
    cases = {lambda: self_attention([1.0, 2.0]): r"^E should be 2-D with shape \(T, d\)",
             lambda: SelfAttention(4, 2)(np.zeros((1, 3, 4))): r"got ndarray of shape \(1, 3, 4\) \(a NumPy array: "
                                                                r"torch\.from_numpy\(x\)\.to\(torch\.float32\)\)",
             lambda: SelfAttention(4, 2).double()(np.zeros((1, 3, 4))): r"torch\.from_numpy\(x\)\.to\(torch\.float64\)",
             lambda: scaled_dot_product_attention([1, 2], torch.ones(2, 2), torch.ones(2, 2)): "list of length 2\\.$",
             lambda: positions.LearnedPositions(8, 4)(torch.ones(3, 4)): r"got Tensor of shape \(3, 4\)\.$"}
    for call, message in cases.items():
        with pytest.raises((ValueError, TypeError), match=message):
            call()


def test_tiled_attention_and_self_attention_name_a_mask_or_text_given_as_a_flag_and_inputs_that_do_not_fit():
    from helpers.attention import self_attention
    Q, K, V = torch.randn(6, 4), torch.randn(7, 4), torch.randn(7, 3)
    with pytest.raises(TypeError, match=r"causal \(a mask goes to flash_attention\) should be True or False"):
        tiled_attention(Q, K, V, causal_mask(6, 7))                  # sdpa's argument order: "Boolean value of …"
    with pytest.raises(ValueError, match="Q has d_k=4 but K has d_k=5"):
        tiled_attention(Q, torch.randn(7, 5), V)                     # "The expanded size of the tensor …"
    with pytest.raises(TypeError, match=r"scaled should be True or False, but got str \('no'\)"):
        self_attention(np.eye(3), scaled="no")                       # scaled anyway, before
