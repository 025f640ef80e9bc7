"""Architectures reached in issue 28 (helper i28-reach), each checked against Hugging Face eager.

Doge keeps its own ``AttentionInterface`` instance in its modeling file (it sees the library's
functions, not another instance's local entries), so geoprobe's function must sit there too; its
dynamic mask (a per-key bias exp(A·softplus(dt)) with each query's top ``keep_window_size`` keys)
is the model's own. Doge's top-k breaks ties between equal keys (a repeated token has the same
value, hence the same bias) by position, so padding can move the model's own attention: geoprobe
is compared with eager on the same padded batch, and A is drawn at random (it is initialised to
zeros, where every key ties).
"""

from __future__ import annotations

import functools

import pytest
import torch

from geoprobe.models import attention
from geoprobe.models.architecture import inspect_model
from geoprobe.models.attention import Probe, entropy_bits
from geoprobe.models.tiny import same_weights, tiny_model
from tests.models import test_attention as ta


@functools.lru_cache(maxsize=None)
def doge():
    model = tiny_model("doge")
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("self_attn.A"):
                p.copy_(torch.randn(p.shape, generator=g))
    return model, inspect_model(model), same_weights(model, "eager")


@pytest.mark.parametrize("side", ["right", "left"])
def test_doge_entropy_equals_eager_on_the_same_batch_with_its_dynamic_mask(side):
    model, arch, eager = doge()
    assert model.config.keep_window_size < max(len(s) for s in ta.prompts())  # the top-k is exercised
    ids, mask = ta.padded(ta.prompts(), side)
    probe = ta.run(model, arch, Probe(), ids, mask)
    with torch.no_grad():
        out = eager(
            ids,
            attention_mask=mask,
            position_ids=(mask.cumsum(1) - 1).clamp(min=0),
            use_cache=False,
            output_attentions=True,
        )
    last = ids.shape[1] - 1 - mask.flip(1).argmax(1)
    assert arch.layout.n_layers == len(out.attentions) == 3
    for i, layer in enumerate(arch.layout.model_layers):
        rows = out.attentions[i][torch.arange(ids.shape[0]), :, last].double()
        err = (probe.records[layer].entropy.double() - entropy_bits(rows)).abs().max().item()
        assert err < ta.ENTROPY_TOL, (side, layer, err)


def test_doge_values_and_keys_are_the_models_projections():
    ta.test_values_equal_the_models_own_value_projection("doge")
    ta.test_pre_rotary_keys_are_x_times_the_reported_key_weights("doge")


def test_geoprobe_sits_in_a_modeling_files_own_interface_only_while_it_reads():
    from transformers.models.doge import modeling_doge

    model, arch, _ = doge()
    own = modeling_doge.ALL_ATTENTION_FUNCTIONS
    assert any(f is own for f in attention.interfaces(model))
    before = dict(own._local_mapping)
    seen = []
    original = modeling_doge.DogeAttention.forward

    def spy(self, *a, **k):
        seen.append(own.get_interface(self.config._attn_implementation, None).__name__)
        return original(self, *a, **k)

    modeling_doge.DogeAttention.forward = spy
    try:
        ta.run(model, arch, Probe(), *ta.padded(ta.prompts(), "right"))
    finally:
        modeling_doge.DogeAttention.forward = original
    assert seen == ["geoprobe_sdpa"] * 3
    assert own._local_mapping == before
