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
from geoprobe.models.architecture import inspect_model, probing
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


@pytest.mark.parametrize("model_type", ["llama4_text", "llama4"])
def test_llama4_has_no_key_weights_because_of_its_norm_and_says_so(model_type):
    """Llama 4 L2-normalises q and k after rotary (no learned weights): its keys are x·W_K rescaled per
    head and token, not multi-head latent attention. The message says what geoprobe found, and what it
    found is checked here independently: at position 0 the keys the scores use are qk_norm(x·W_K)."""
    model = tiny_model(model_type)
    arch = inspect_model(model)
    reason = arch.key_weights_reason
    assert "latent" not in reason and "latent" not in arch.NO_KEY_WEIGHTS and "\n" not in reason
    assert "rescaled per head and token" in reason and "qk_norm: Llama4TextL2Norm" in reason
    layer = min(ly for ly, s in arch.k_specs.items() if s is None)
    module = arch.modules[layer]
    assert f"keys of layer {layer} " in reason and hasattr(module, "qk_norm")
    ids = torch.randint(3, 500, (2, 7), generator=torch.Generator().manual_seed(0))
    x0: dict[str, torch.Tensor] = {}

    def keep(mod, args, kwargs):
        x0["x"] = (args[0] if args else kwargs["hidden_states"])[:, 0]

    hook = module.register_forward_pre_hook(keep, with_kwargs=True)
    probe = Probe(attn_out=False, attention=False, pre_rotary=False)
    probe.new_batch(torch.zeros(2, dtype=torch.long))
    try:
        with probing(model, arch, probe), torch.no_grad():
            model(ids, use_cache=False)
    finally:
        hook.remove()
    with torch.no_grad():
        ref = module.qk_norm(module.k_proj(x0["x"]).view(2, -1, module.head_dim))
    got = probe.records[layer].k
    assert ((got - ref).norm() / ref.norm()).item() < 1e-5


def test_mla_keeps_a_message_that_names_its_latent():
    arch = inspect_model(tiny_model("deepseek_v3"))
    assert "latent" in arch.key_weights_reason and "rescaled" not in arch.key_weights_reason


def test_blt_stays_refused_saying_where_its_layers_zero_sit():
    """BLT runs separate stacks (its entropy patcher, local encoder, the global transformer over patches,
    local decoder and its cross-attention), each numbering its layers from 0; the global transformer's
    queries are patches, not tokens. geoprobe does not guess an order: it refuses, naming the stacks."""
    from geoprobe.errors import UnsupportedArchitectureError

    with pytest.raises(UnsupportedArchitectureError) as e:
        inspect_model(tiny_model("blt"))
    msg = str(e.value)
    assert e.value.reason == "no-layer-index" and "\n" not in msg
    assert "separate stacks of layers" in msg and "model.patcher.layers" in msg and "model.local_encoder.layers" in msg
    assert "say they are layer 0" in msg
