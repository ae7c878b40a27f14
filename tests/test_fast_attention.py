"""helpers.fast_attention: the lean and tiled forms give the textbook result, errors and all."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attention_torch import causal_mask, scaled_dot_product_attention
from helpers.benchmarking import make_qkv
from helpers.fast_attention import lean_attention, tiled_attention
from helpers.measure import cpu_peak_bytes


def test_lean_attention_is_a_drop_in_for_the_helpers_function():
    g = torch.Generator().manual_seed(0)
    Q, K, V = torch.randn(2, 3, 5, 4, generator=g), torch.randn(3, 7, 4, generator=g), torch.randn(3, 7, 6, generator=g)
    mask = (torch.rand(5, 7, generator=g) > 0.4)
    mask[:, 0] = True
    torch.testing.assert_close(lean_attention(Q, K, V, mask), scaled_dot_product_attention(Q, K, V, mask))
    torch.testing.assert_close(lean_attention(Q, K, V, mask.float()), scaled_dot_product_attention(Q, K, V, mask))


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_with_ragged_tiles_and_broadcast_batches(causal):
    g = torch.Generator().manual_seed(3)
    Q, K, V = torch.randn(2, 3, 9, 4, generator=g), torch.randn(3, 9, 4, generator=g), torch.randn(3, 9, 5, generator=g)
    expected = F.scaled_dot_product_attention(Q, K.expand(2, 3, 9, 4), V.expand(2, 3, 9, 5), is_causal=causal)
    torch.testing.assert_close(tiled_attention(Q, K, V, causal, block=4), expected)


def test_tiled_attention_never_holds_the_whole_matrix():
    Q, K, V = make_qkv(2, 256, 16)
    peak = cpu_peak_bytes(lambda: tiled_attention(Q, K, V, block=32))
    assert peak < 0.5 * 2 * 256 * 256 * 4


@pytest.mark.parametrize("impl", [lean_attention, tiled_attention])
@pytest.mark.parametrize("tensor", [0, 1, 2])
def test_fast_variants_refuse_nonfinite_with_the_courses_message(impl, tensor):
    Q, K, V = (t.clone() for t in make_qkv(1, 6, 4))
    (Q, K, V)[tensor][0, 0, 3, 1] = float("nan")
    name = "QKV"[tensor]
    with pytest.raises(ValueError, match=f"{name} contains NaN"):
        impl(Q, K, V)


def test_fast_variants_refuse_bad_shapes_with_the_courses_message():
    Q, K, V = make_qkv(2, 5, 4)
    with pytest.raises(ValueError, match="K has T_k=5 keys but V has 4 values"):
        tiled_attention(Q, K, V[..., :4, :])
    with pytest.raises(ValueError, match="batch dimensions"):
        lean_attention(Q, K[:, :1].expand(1, 3, 5, 4), V)
    with pytest.raises(TypeError, match="floating-point"):
        tiled_attention(Q.long(), K, V)
    with pytest.raises(ValueError, match="block should be a whole number"):
        tiled_attention(Q, K, V, block=0)


def test_lean_attention_keeps_the_helpers_errors():
    Q, K, V = make_qkv(1, 3, 4)
    hidden = causal_mask(3).clone()
    hidden[2] = False
    with pytest.raises(ValueError, match="hides every key from query row 2"):
        lean_attention(Q, K, V, hidden)
    with pytest.raises(ValueError, match="Q has d_k=4 but K has d_k=3"):
        lean_attention(Q, K[..., :3], V)
    with pytest.raises(TypeError, match="Q should be a torch.Tensor"):
        lean_attention([[1.0]], K, V)


@pytest.mark.parametrize("causal", [False, True])
def test_without_checks_the_result_is_the_same(causal):
    Q, K, V = make_qkv(3, 10, 4, seed=4)
    mask = causal_mask(10) if causal else None
    torch.testing.assert_close(lean_attention(Q, K, V, mask, checks=False), lean_attention(Q, K, V, mask))
    torch.testing.assert_close(tiled_attention(Q, K, V, causal, block=3, checks=False),
                               tiled_attention(Q, K, V, causal, block=3))


def test_without_checks_nothing_is_scanned():
    """checks=False is for timing valid inputs: a NaN passes through silently, as in the textbook formula."""
    Q, K, V = (t.clone() for t in make_qkv(1, 6, 4))
    V[0, 0, 2, 1] = float("nan")
    assert torch.isnan(lean_attention(Q, K, V, checks=False)).any()
    assert torch.isnan(tiled_attention(Q, K, V, checks=False)).any()
    with pytest.raises(TypeError, match="checks should be True or False"):
        lean_attention(Q, K, V, checks="no")


# ---------------------------------------------------------------- bad arguments

@pytest.mark.parametrize("causal", ["no", 0, None])
def test_tiled_attention_takes_only_true_or_false_for_causal(causal):
    """causal="no" used to run causal attention (any non-empty text is true)."""
    Q, K, V = make_qkv(1, 6, 4)
    with pytest.raises(TypeError, match="causal should be True or False"):
        tiled_attention(Q, K, V, causal)


def test_tiled_attention_takes_numpy_integers_for_block():
    Q, K, V = make_qkv(1, 9, 4)
    torch.testing.assert_close(tiled_attention(Q, K, V, block=np.int64(4)), tiled_attention(Q, K, V, block=4))
    with pytest.raises(TypeError, match="block should be a whole number >= 1, but got float"):
        tiled_attention(Q, K, V, block=4.0)


def test_lean_attention_refuses_a_mask_whose_batch_does_not_fit():
    """A raw `expand` error before."""
    Q, K, V = make_qkv(2, 5, 4)  # batch (1, 2)
    with pytest.raises(ValueError, match=r"mask has batch dimensions \(3, 1\)"):
        lean_attention(Q, K, V, torch.ones(3, 1, 5, 5))
    fits = torch.ones(1, 2, 5, 5)
    torch.testing.assert_close(lean_attention(Q, K, V, fits, checks=False), lean_attention(Q, K, V))


@pytest.mark.parametrize("impl", [lean_attention, tiled_attention])
def test_mixed_dtypes_are_refused_clearly(impl):
    """'expected scalar type Double but found Float' before."""
    Q, K, V = make_qkv(1, 5, 4)
    for args, other in (((Q.double(), K, V), "K"), ((Q, K, V.double()), "V")):
        with pytest.raises((TypeError, ValueError)) as error:
            impl(*args)
        message = str(error.value)
        assert "dtype" in message and "torch.float64" in message and "torch.float32" in message and other in message
