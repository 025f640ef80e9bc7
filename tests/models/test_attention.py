"""Capture through transformers' AttentionInterface, checked per architecture on tiny twins.

For each architecture (one tiny random-init twin, built once per session): the final-token
attention entropy of every head equals Hugging Face's own eager ``output_attentions=True``
(each prompt run alone, unpadded) within 1e-4 bits, for a batch padded on the right and on the
left; the recorded values equal the output of the model's own V projection at the final token
(1e-5 relative); the recorded pre-rotary keys equal x·W_K + b with the W_K geoprobe reports
(q/k norms off). Refusals: a model without attention, one whose attention bypasses the
interface, MLA's W_K. GPT-J and CodeGen moved to the interface in transformers 5.24: GPT-J is
checked on either path, CodeGen (refused before) from 5.24 on.
"""

from __future__ import annotations

import contextlib
import functools

import pytest
import torch
import transformers

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.architecture import inspect_model, probing
from geoprobe.models.attention import Probe, entropy_bits
from geoprobe.models.projections import qk_norms_off
from geoprobe.models.tiny import VOCAB, same_weights, tiny_config, tiny_model

ARCHS = (
    "gpt2",
    "opt",
    "gpt_neo",
    "bloom",
    "gptj",
    "codegen",
    "stablelm",
    "cohere",
    "gpt_bigcode",
    "falcon",
    "falcon/mq",
    "falcon/alibi",
    "phi3",
    "qwen3",
    "olmo2",
    "qwen2",
    "gemma",
    "gemma2",
    "starcoder2",
    "qwen3_moe",
    "olmoe",
    "llama",
    "mistral",
    "mixtral",
    "phi",
    "gemma3_text",
    "gpt_neox",
    "gpt_oss",
    "jamba",
    "mpt",
    "xglm",
    "openai-gpt",
    "gpt_neox_japanese",
    # multimodal checkpoints, measured on their language model (tests/models/test_multimodal.py)
    "gemma3",
    "mllama",
    "phi4_multimodal",
    "got_ocr2",
    "moss_transcribe_diarize",
    "fuyu",
    "emu3",
)
#: computed inline (and refused) before transformers 5.24, read through AttentionInterface since
INTERFACE_FROM_5_24 = ("codegen",)
LENGTHS = (13, 9, 5)  # the tiny twins' windows are 6 tokens: the longer prompts cross them
ENTROPY_TOL = 1e-4  # bits
VALUE_RTOL = 1e-5


def skip_where_inline(model_type: str) -> None:
    """Skip, saying why, a type of INTERFACE_FROM_5_24 that the installed transformers still computes inline."""
    from transformers import MODEL_FOR_CAUSAL_LM_MAPPING

    if model_type in INTERFACE_FROM_5_24 and not (
        MODEL_FOR_CAUSAL_LM_MAPPING[type(tiny_config(model_type))]._can_set_attn_implementation()
    ):
        pytest.skip(
            f"{model_type}: transformers {transformers.__version__} computes its attention inline, where geoprobe "
            "refuses it (test_gptj_and_codegen_take_the_path_their_transformers_gives_them); 5.24 moved it to "
            "AttentionInterface"
        )


@functools.lru_cache(maxsize=None)
def twin(model_type: str):
    skip_where_inline(model_type)
    model = tiny_model(model_type)
    return model, inspect_model(model)


@functools.lru_cache(maxsize=None)
def eager(model_type: str):
    return same_weights(twin(model_type)[0], "eager")


def prompts(seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, VOCAB, (n,), generator=g) for n in LENGTHS]


def padded(seqs: list[torch.Tensor], side: str) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), T, dtype=torch.long)
    mask = torch.zeros(len(seqs), T, dtype=torch.long)
    for b, s in enumerate(seqs):
        sl = slice(0, len(s)) if side == "right" else slice(T - len(s), T)
        ids[b, sl], mask[b, sl] = s, 1
    return ids, mask


def run(model, arch, probe: Probe, ids: torch.Tensor, mask: torch.Tensor) -> Probe:
    probe.new_batch(ids.shape[1] - 1 - mask.flip(1).argmax(1))
    with probing(model, arch, probe), torch.no_grad():
        model(ids, attention_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp(min=0), use_cache=False)
    return probe


def eager_entropies(model_type: str, seq: torch.Tensor) -> list[torch.Tensor]:
    """(layer, head) entropy in bits of the final query row, from HF's eager output_attentions.

    Falcon with ALiBi: transformers 5.23's eager path adds ALiBi twice (once folded into the mask
    for every implementation, once to the scores), while the default SDPA path, which the model
    runs and geoprobe reads, adds it once; the reference halves ``build_alibi_tensor`` so that
    eager's two halves make one."""
    from unittest import mock

    from transformers.models.falcon import modeling_falcon

    original = modeling_falcon.build_alibi_tensor
    halved = mock.patch.object(modeling_falcon, "build_alibi_tensor", lambda *a, **k: 0.5 * original(*a, **k))
    with torch.no_grad(), halved if model_type == "falcon/alibi" else contextlib.nullcontext():
        out = eager(model_type)(seq[None], output_attentions=True, use_cache=False)
    # the row normalised over the keys: geoprobe's one definition where a sink takes mass (gpt-oss's eager
    # leaves the sink's mass out of its row, Granite-SWA's renormalises; attention.final_row_distribution)
    rows = [a[0, :, -1].double() for a in out.attentions if a is not None]
    return [entropy_bits(r / r.sum(-1, keepdim=True)) for r in rows]


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("model_type", ARCHS)
def test_final_token_entropy_equals_eager_output_attentions(model_type, side):
    model, arch = twin(model_type)
    seqs = prompts()
    probe = run(model, arch, Probe(), *padded(seqs, side))
    assert sorted(probe.calls) == sorted(arch.layout.model_layers)
    for b, seq in enumerate(seqs):
        ref = eager_entropies(model_type, seq)
        assert len(ref) == arch.layout.n_layers
        for i, layer in enumerate(arch.layout.model_layers):
            got = probe.records[layer].entropy[b].double()
            assert got.shape == (arch.layout.n_heads,)
            err = (got - ref[i]).abs().max().item()
            assert err < ENTROPY_TOL, (model_type, side, b, layer, err)


@pytest.mark.parametrize("model_type", ARCHS)
def test_values_equal_the_models_own_value_projection(model_type):
    model, arch = twin(model_type)
    seqs = prompts(1)
    ids, mask = padded(seqs, "right")
    last = ids.shape[1] - 1 - mask.flip(1).argmax(1)
    seen: dict[int, torch.Tensor] = {}
    handles = []
    for layer, module in arch.modules.items():
        spec = arch.v_specs[layer]
        lin = spec.linear(module)

        def hook(mod, args, out, _layer=layer, _spec=spec):
            rows = out[torch.arange(out.shape[0]), last]  # (batch, out_features), the projection's own output
            seen[_layer] = _spec._rows(rows.T.contiguous()).permute(2, 0, 1)  # (batch, head, d)

        handles.append(lin.register_forward_hook(hook))
    try:
        probe = run(model, arch, Probe(), ids, mask)
    finally:
        for h in handles:
            h.remove()
    for layer in arch.layout.model_layers:
        got, ref = probe.records[layer].v, seen[layer].float()
        assert got.shape == (len(seqs), arch.layout.n_kv_heads, arch.layout.d_head)
        assert ((got - ref).norm() / ref.norm()).item() < VALUE_RTOL, (model_type, layer)


@pytest.mark.parametrize("model_type", ARCHS)
def test_pre_rotary_keys_are_x_times_the_reported_key_weights(model_type):
    model, arch = twin(model_type)
    ids, mask = padded(prompts(2), "left")
    last = ids.shape[1] - 1 - mask.flip(1).argmax(1)
    xs: dict[int, torch.Tensor] = {}
    handles = []
    for layer, module in arch.modules.items():

        def pre(mod, args, kwargs, _layer=layer):
            x = args[0] if args else kwargs["hidden_states"]
            xs[_layer] = x[torch.arange(x.shape[0]), last].detach()

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
    try:
        with qk_norms_off(list(arch.modules.values())):
            probe = run(model, arch, Probe(), ids, mask)
    finally:
        for h in handles:
            h.remove()
    w_k = arch.key_weight_views()
    for i, layer in enumerate(arch.layout.model_layers):
        spec, module = arch.k_specs[layer], arch.modules[layer]
        b = spec.bias(module)
        ref = torch.einsum("nm,hmd->nhd", xs[layer], w_k[i]) + (0 if b is None else b)
        got = probe.records[layer].k
        assert ((got - ref).norm() / ref.norm()).item() < 1e-4, (model_type, layer)


@pytest.mark.parametrize("model_type", ["gptj", "codegen"])
def test_gptj_and_codegen_take_the_path_their_transformers_gives_them(model_type):
    """Before transformers 5.24 both compute attention inline: GPT-J is read by legacy.py's hooks,
    CodeGen is refused in one line; from 5.24 both go through AttentionInterface and the derived
    layout. Either way the rotary width is the number of dims rotated, the config's rotary_dim
    (GPT-J's cos/sin are half that wide: one entry per interleaved pair)."""
    model = tiny_model(model_type)
    inline = not type(model)._can_set_attn_implementation()
    if inline and model_type == "codegen":
        with pytest.raises(UnsupportedArchitectureError, match="inline") as e:
            inspect_model(model)
        assert "\n" not in str(e.value) and "CodeGenForCausalLM" in str(e.value)
        return
    arch = inspect_model(model)
    assert arch.mechanism == ("legacy" if inline else "interface")
    assert arch.layout.rotary_dim == model.config.rotary_dim < arch.layout.d_head
    assert not arch.post_rotary_layers and not arch.notes


def test_hybrid_layers_are_the_attention_layers_only():
    _, arch = twin("jamba")
    assert arch.layout.layer_ids == (1, 3) and arch.layout.n_layers == 2


def test_a_model_without_attention_is_refused_in_one_line():
    model = tiny_model("mamba")
    with pytest.raises(UnsupportedArchitectureError, match="no attention layers") as e:
        inspect_model(model)
    assert "\n" not in str(e.value) and "MambaForCausalLM" in str(e.value)


def test_attention_that_bypasses_the_interface_is_refused_in_one_line(monkeypatch):
    model = tiny_model("llama", seed=3)  # as if it computed attention inline, like no exception geoprobe has
    for cls in (type(model), type(model.model)):  # the model, and the model that holds the attention modules
        monkeypatch.setattr(cls, "_can_set_attn_implementation", classmethod(lambda cls: False))
    with pytest.raises(
        UnsupportedArchitectureError, match="computed inline, not through transformers' AttentionInterface"
    ) as e:
        inspect_model(model)
    assert "\n" not in str(e.value) and "LlamaForCausalLM" in str(e.value)


def test_falcon_is_read_through_its_inline_sdpa_and_eager_falcon_is_refused():
    _, arch = twin("falcon")
    assert arch.mechanism == "inline-sdpa" and arch.layout.n_kv_heads == 2 and arch.layout.rotary_dim == 16
    _, alibi = twin("falcon/alibi")  # computes cos/sin it never applies: keys are kept as received
    assert alibi.layout.rotary_dim == 0 and not alibi.notes
    with pytest.raises(UnsupportedArchitectureError, match="attn_implementation='sdpa'") as e:
        inspect_model(tiny_model("falcon", attn_implementation="eager"))
    assert "\n" not in str(e.value) and "FalconForCausalLM" in str(e.value)
    assert torch.nn.functional.scaled_dot_product_attention is torch._C._nn.scaled_dot_product_attention


def test_a_module_that_skips_the_function_is_refused(monkeypatch):
    model = tiny_model("llama", seed=5)
    attn = model.model.layers[1].self_attn
    monkeypatch.setattr(attn, "forward", lambda hidden_states, *a, **k: (torch.zeros_like(hidden_states), None))
    with pytest.raises(UnsupportedArchitectureError, match="never called it") as e:
        inspect_model(model)
    assert "\n" not in str(e.value)


def test_mla_captures_but_refuses_key_weights_naming_the_mechanism():
    model = tiny_model("deepseek_v3")
    arch = inspect_model(model)
    assert arch.layout.d_key == 24 and arch.layout.d_head == 16
    ids, mask = padded(prompts(), "right")
    probe = run(model, arch, Probe(), ids, mask)
    assert all(torch.isfinite(probe.records[layer].entropy).all() for layer in arch.layout.model_layers)
    with pytest.raises(UnsupportedArchitectureError, match="latent") as e:
        arch.key_weight_views()
    assert "\n" not in str(e.value)


def test_sinks_take_mass_and_are_recorded():
    model, arch = twin("gpt_oss")
    probe = run(model, arch, Probe(), *padded(prompts(), "right"))
    sink = probe.records[arch.layout.model_layers[0]].sink_mass
    assert sink is not None and (sink > 0).all() and (sink < 1).all()


def test_the_model_is_left_as_it_was():
    model, arch = twin("qwen2")
    impl = model.config._attn_implementation
    n_hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    run(model, arch, Probe(), *padded(prompts(), "right"))
    assert model.config._attn_implementation == impl
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()) == n_hooks


def test_llama4_missing_w_k_is_blamed_on_what_llama4_does():
    """Llama 4 L2-normalises q and k after its rotary embedding (no latent): the refusal of W_K says what
    geoprobe found (its norm, qk_norm), never multi-head latent attention (tests/models/test_reach.py
    checks the keys themselves)."""
    model = tiny_model("llama4_text")
    arch = inspect_model(model)
    reason = arch.key_weights_reason
    assert "qk_norm" in reason and "latent" not in reason and "\n" not in reason
