"""Notebook 10's three models retrained from their seed: the heads form, and the committed record
(helpers/data/induction.pt) is what the code trains. About a minute on 2 cores: run with `make test-training`."""
import pytest

from helpers import induction

pytestmark = pytest.mark.training


@pytest.fixture(scope="module")
def retrained():
    return induction.train_all()


def final_copy_loss(log):
    return log["copy"][-100:].mean().item()


def test_a_previous_token_head_and_induction_heads_form_in_two_layers_only(retrained):
    names = induction.head_names(retrained["logs"][induction.TWO_LAYERS]["final_scores"])
    for kind, layer in (("previous-token head", 0), ("induction head", 1)):
        layers = [layer for (layer, _), name in names.items() if name == kind]
        assert layers and set(layers) == {layer}, f"{kind}s: {names}"
    assert final_copy_loss(retrained["logs"][induction.TWO_LAYERS]) < 1.0
    for name in (induction.ONE_LAYER, induction.FIXED_OFFSET):
        assert set(induction.head_names(retrained["logs"][name]["final_scores"]).values()) == {"neither"}
    assert final_copy_loss(retrained["logs"][induction.ONE_LAYER]) > 2.0
    assert final_copy_loss(retrained["logs"][induction.FIXED_OFFSET]) < 0.5   # by position, at its one offset


def test_the_committed_record_is_what_the_code_trains(retrained):
    stored = induction.load_record()
    for name in induction.RECIPES:
        new, old = retrained["logs"][name], stored["logs"][name]
        assert (new["final_scores"] - old["final_scores"]).abs().max() < 0.05, name
        assert abs(final_copy_loss(new) - final_copy_loss(old)) < 0.05, name
        assert abs(new["other"][-100:].mean() - old["other"][-100:].mean()) < 0.05, name
