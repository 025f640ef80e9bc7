"""Inline attention read from the modules' own probabilities (issue 28): descriptions and refusals.

geoprobe reads an inline architecture's attention (``legacy.py``) from the probabilities its
modules return, so comparing those with eager ``output_attentions`` (test_attention.py) shows
only that the right rows are kept. That its q and k (``x·W`` through the description in
``legacy.INLINE``, pre-rotary) are the model's is shown here: from the attention input x of
every position, the described W_Q and W_K give q and k; with the model's *own* position
mechanism (MPT's and Bloom's ALiBi builders, GPT-NeoX-Japanese's rotary embedding and
``apply_rotary_pos_emb``, GPT-Neo's local window) and the module's own scale,

    p = softmax(scale · q_final · k_t + bias_t) over the visible keys t,

must equal Hugging Face's eager ``output_attentions`` final row and geoprobe's recorded
distribution, within 1e-5. A wrong split of a fused projection (q for k, another head order)
gives a different p. The final token's recorded q and k equal those x·W (1e-5 relative).

Refusals, each one line with its reason: RWKV (modules named *Attention* that compute no softmax
over keys: ``no-attention``), CPM-Ant (attention that reads later tokens: ``bidirectional``), MPT
with ``clip_qkv`` and a module that returns no probabilities (``inline``).
"""

from __future__ import annotations

import sys

import pytest
import torch

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.architecture import editing, inspect_model, probing
from geoprobe.models.attention import Probe
from geoprobe.models.tiny import tiny_model
from tests.models.test_attention import eager, twin

TOL = 1e-5
T = 13  # crosses GPT-Neo's 6-token local window


def scores(model_type: str, model, attn, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(head, T) scores of the final query over every key, with the model's own scale and position
    mechanism; q and k are (T, head, d) as the description gives them (x·W + b, pre-rotary)."""
    H = q.shape[1]
    if model_type == "gpt_neox_japanese":
        mod = sys.modules[type(attn).__module__]
        pos = torch.arange(T)[None]
        cos, sin = model.gpt_neox_japanese.rotary_emb(q[None], position_ids=pos)
        r = attn.rotary_ndims
        qr, kr = mod.apply_rotary_pos_emb(q.transpose(0, 1)[None, ..., :r], k.transpose(0, 1)[None, ..., :r], cos, sin)
        q = torch.cat([qr[0].transpose(0, 1), q[..., r:]], -1)
        k = torch.cat([kr[0].transpose(0, 1), k[..., r:]], -1)
    s = torch.einsum("hd,thd->ht", q[-1].double(), k.double())
    if model_type == "mpt":
        alibi = model.transformer.build_mpt_alibi_tensor(H, model.config.max_seq_len)  # (head, 1, max_seq_len)
        return s * attn.softmax_scale + alibi[:, 0, -T:].double()
    if model_type == "bloom":
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        alibi = build_alibi_tensor(torch.ones(1, T), H, torch.float32)  # (head, 1, T)
        return s * attn.inv_norm_factor + alibi[:, 0].double()
    if model_type == "xglm":
        return s * attn.scaling
    if model_type in ("openai-gpt", "git"):
        return s / q.shape[-1] ** 0.5
    if model_type == "gpt_neox_japanese":
        return s / attn.norm_factor
    if model_type == "gpt_neo":  # no scaling; a local layer sees the last window_size keys
        window = model.config.window_size if attn.attention_type == "local" else T
        return s.masked_fill(torch.arange(T) <= T - 1 - window, float("-inf"))
    raise AssertionError(model_type)


@pytest.mark.parametrize("model_type", ["mpt", "xglm", "openai-gpt", "gpt_neox_japanese", "bloom", "gpt_neo", "git"])
def test_distribution_is_softmax_of_described_q_and_k_with_the_models_own_positions(model_type):
    model, arch = twin(model_type)
    assert arch.mechanism == "legacy"
    ids = torch.randint(3, 512, (T,), generator=torch.Generator().manual_seed(1))
    xs: dict[int, torch.Tensor] = {}
    handles = []
    for layer, module in arch.modules.items():

        def pre(mod, args, kwargs, _layer=layer):
            xs[_layer] = (args[0] if args else kwargs["hidden_states"])[0].detach()

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
    probe = Probe(distribution=True)
    probe.new_batch(None)
    try:
        with probing(model, arch, probe), torch.no_grad():
            model(ids[None], use_cache=False)
    finally:
        for h in handles:
            h.remove()
    with torch.no_grad():
        ref = eager(model_type)(ids[None], output_attentions=True, use_cache=False).attentions
    for i, layer in enumerate(arch.layout.model_layers):
        attn, rec = arch.modules[layer], probe.records[layer]
        with torch.no_grad():
            q = arch.q_specs[layer].project(attn, xs[layer])
            k = arch.k_specs[layer].project(attn, xs[layer])
            p = torch.softmax(scores(model_type, model, attn, q, k), dim=-1)
        torch.testing.assert_close(ref[i][0, :, -1].double(), p, atol=TOL, rtol=0)
        torch.testing.assert_close(rec.distribution[0].double(), p, atol=TOL, rtol=0)
        for got, want in ((rec.q[0], q[-1]), (rec.k[0], k[-1])):
            assert ((got - want).norm() / want.norm()).item() < TOL, (model_type, layer)
    if model_type == "gpt_neo":
        assert {arch.modules[ly].attention_type for ly in arch.layout.model_layers} == {"global", "local"}
    if model_type == "gpt_neox_japanese":
        assert arch.layout.rotary_dim == arch.modules[0].rotary_ndims == arch.layout.d_head


@pytest.mark.parametrize("model_type", ["mpt", "xglm", "openai-gpt", "gpt_neox_japanese", "git"])
def test_probing_leaves_the_models_output_and_hooks_as_they_were(model_type):
    """OpenAI GPT's module is asked for its probabilities (output_attentions) while probed: the
    model's logits are unchanged and every hook is gone afterwards."""
    model, arch = twin(model_type)
    ids = torch.randint(3, 512, (2, 9), generator=torch.Generator().manual_seed(2))
    n_hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    with torch.no_grad():
        plain = model(ids, use_cache=False).logits
        probe = Probe()
        probe.new_batch(None)
        with probing(model, arch, probe):
            probed = model(ids, use_cache=False).logits
    assert torch.equal(plain, probed)
    assert sorted(probe.calls) == sorted(arch.layout.model_layers)
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()) == n_hooks


def test_a_recurrent_mixer_named_attention_is_refused_as_no_attention():
    """RWKV's RwkvSelfAttention is a linear recurrence (no softmax over keys): refused as a model
    without softmax attention, from what its modules compute, not as inline attention."""
    with pytest.raises(UnsupportedArchitectureError) as e:
        inspect_model(tiny_model("rwkv"))
    assert e.value.reason == "no-attention" and "\n" not in str(e.value)
    assert "(RwkvSelfAttention) compute no softmax" in str(e.value)


def test_inline_softmax_attention_that_is_not_described_stays_an_inline_refusal(monkeypatch):
    model = tiny_model("llama", seed=3)  # its attention calls SDPA: softmax attention, read by no exception
    for cls in (type(model), type(model.model)):  # the class holding the attention is asked (language.owners)
        monkeypatch.setattr(cls, "_can_set_attn_implementation", classmethod(lambda cls: False))
    with pytest.raises(UnsupportedArchitectureError) as e:
        inspect_model(model)
    assert e.value.reason == "inline" and "mpt" in str(e.value)


def test_cpmant_attends_to_later_tokens_and_is_refused_as_not_causal():
    """transformers runs every input token of CPM-Ant as its bidirectional context (context = 1):
    what a layer reads at a position changes with the tokens after it."""
    with pytest.raises(UnsupportedArchitectureError) as e:
        inspect_model(tiny_model("cpmant"))
    assert e.value.reason == "bidirectional" and "\n" not in str(e.value)
    assert "CpmAntForCausalLM: its attention is not causal" in str(e.value)


def test_mpt_with_clipped_qkv_is_refused_in_one_line():
    with pytest.raises(UnsupportedArchitectureError) as e:
        inspect_model(tiny_model("mpt", attn_config={"clip_qkv": 8.0}))
    assert e.value.reason == "inline" and "\n" not in str(e.value) and "clip_qkv=8.0" in str(e.value)


def test_a_module_that_returns_no_probabilities_is_refused(monkeypatch):
    model = tiny_model("mpt", seed=4)
    attn = model.transformer.blocks[1].attn
    real = attn.forward
    monkeypatch.setattr(attn, "forward", lambda *a, **k: (real(*a, **k)[0], None))
    with pytest.raises(UnsupportedArchitectureError, match="returned no") as e:
        inspect_model(model)
    assert e.value.reason == "inline" and "\n" not in str(e.value)


@pytest.mark.parametrize("model_type", ["mpt", "xglm", "openai-gpt", "gpt_neox_japanese", "git"])
def test_value_edits_reach_exactly_the_values_attention_reads(model_type):
    """A value edit runs on the V part of the (fused) projection: zeroed values make the layer's
    attention output z zero and leave its distribution (q and k) as it was."""
    model, arch = twin(model_type)
    ids = torch.randint(3, 512, (2, 9), generator=torch.Generator().manual_seed(3))
    runs = []
    for edits in ({}, {1: lambda v: torch.zeros_like(v)}):
        probe = Probe(distribution=True)
        probe.new_batch(None)
        with probing(model, arch, probe), editing(model, arch, edits), torch.no_grad():
            model(ids, use_cache=False)
        runs.append(probe.records[1])
    plain, edited = runs
    assert plain.z.abs().max() > 1e-3 and edited.z.abs().max() == 0 and edited.v.abs().max() == 0
    torch.testing.assert_close(edited.distribution, plain.distribution, atol=1e-6, rtol=0)


def test_git_out_edits_reach_its_sibling_output_projection_and_z_is_recorded():
    """GIT's text self-attention returns z itself; its output projection (GitSelfOutput.dense) sits in a
    sibling module. The recorded z is what that projection receives at the final token, and an out-edit
    of one head changes exactly that head's part of its input."""
    model, arch = twin("git")
    ids = torch.randint(3, 512, (2, 9), generator=torch.Generator().manual_seed(4))
    dense = model.git.encoder.layer[1].attention.output.dense
    seen: list[torch.Tensor] = []
    hook = dense.register_forward_pre_hook(lambda mod, args: seen.append(args[0][:, -1].detach().clone()))
    H, d = arch.layout.n_heads, arch.layout.d_head

    def zero_head_2(z):
        z = z.clone()
        z[:, :, 2] = 0
        return z

    try:
        runs = []
        for out_edits in ({}, {1: zero_head_2}):
            probe = Probe()
            probe.new_batch(None)
            with probing(model, arch, probe), editing(model, arch, out_edits=out_edits), torch.no_grad():
                model(ids, use_cache=False)
            runs.append(probe.records[1].z)
    finally:
        hook.remove()
    plain_in, edited_in = (x.reshape(2, H, d) for x in seen)
    torch.testing.assert_close(runs[0], plain_in, atol=0, rtol=0)
    torch.testing.assert_close(runs[1], edited_in, atol=0, rtol=0)
    assert edited_in[:, 2].abs().max() == 0 and plain_in[:, 2].abs().max() > 1e-3
    torch.testing.assert_close(edited_in[:, [0, 1, 3]], plain_in[:, [0, 1, 3]], atol=0, rtol=0)


def test_a_model_whose_forward_fails_is_refused_saying_so(monkeypatch):
    """Where the model's own forward pass on token ids fails, nothing is known about its attention: one
    line saying so (not 'no attention', not a traceback)."""
    model = tiny_model("rwkv")
    monkeypatch.setattr(model, "forward", lambda *a, **k: (_ for _ in ()).throw(ValueError("needs pixel values")))
    with pytest.raises(UnsupportedArchitectureError) as e:
        inspect_model(model)
    assert e.value.reason == "forward-fails" and "needs pixel values" in str(e.value)
