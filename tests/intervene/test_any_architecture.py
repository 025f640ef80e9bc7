"""Interventions through the same mechanism as capture, on tiny twins of many architectures.

* A full cut leaves the final-token values attention read with no component along the axis
  (and their orthogonal complement as it was), on interface architectures (GPT-2 with its
  fused ``c_attn``, Qwen2, Gemma-2 with soft-capping and sliding windows, Llama, GPT-NeoX) and
  on the inline-attention exceptions (Bloom's fused per-head QKV, GPT-Neo, MPT's and OpenAI
  GPT's fused ``[q|k|v]``), whose edit runs on the V projection output) and Falcon (read and
  edited in its inline SDPA call, K/V broadcast to every query head in its new decoder
  architecture).
* Editing the values inside geoprobe's attention function gives the same log-probs as editing
  the output of the V projection (split by its description) with the same edit.
* Zeroing a head's attention output (``zeroed_heads``, an out-edit) equals zeroing its slice of
  the output projection's input with a pre-hook.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe.intervene import Edit, intervened
from geoprobe.intervene.forward import final_logprobs
from geoprobe.windtunnel.evaluate import zeroed_heads
from tests.intervene._util import CALIBRATION, axis_for

PROMPTS = CALIBRATION[:6]
TYPES = ("gpt2", "qwen2", "gemma2", "llama", "gpt_neox", "bloom", "gpt_neo", "falcon", "mpt", "openai-gpt")


@pytest.mark.parametrize("name", TYPES)
def test_full_cut_removes_the_axis_component_of_the_values_attention_read(name, twin_factory):
    model = twin_factory(name)
    layer = 1
    axis = axis_for(model, layer)
    u = axis.direction
    base_lp, base = final_logprobs(model, PROMPTS, batch_size=4, value_layers=[layer])
    with intervened(model, {layer: Edit(axis, "cut", 1.0)}) as applied:
        lp, got = final_logprobs(model, PROMPTS, batch_size=4, value_layers=[layer])
    assert applied.counts[layer] == 2  # two batches, one edit each
    x, y = base[layer].astype(np.float64), got[layer].astype(np.float64)
    px, py = np.einsum("nhd,hd->nh", x, u), np.einsum("nhd,hd->nh", y, u)
    scale = np.abs(x).max()
    assert np.abs(px).max() > 1e-2 * scale  # the component was there before
    assert np.abs(py).max() <= 1e-5 * scale, "a component along the axis survived the full cut"
    np.testing.assert_allclose(y - py[..., None] * u, x - px[..., None] * u, atol=1e-5 * scale)
    assert float((lp - base_lp).abs().max()) > 1e-4, "the cut did not change the output"


@pytest.mark.parametrize("name", ["qwen2", "gpt2", "falcon"])
def test_edit_in_the_attention_function_equals_edit_of_the_v_projection(name, twin_factory):
    model = twin_factory(name)
    layer = 1
    ml = model.layout.model_layers[layer]
    assert model.arch.mechanism in ("interface", "inline-sdpa")
    edit = Edit(axis_for(model, layer), "shift", 2.0)
    with intervened(model, {layer: edit}):
        a, va = final_logprobs(model, PROMPTS, batch_size=4, value_layers=[layer])
    spec = model.arch.v_specs[ml]
    handle = spec.linear(model.arch.modules[ml]).register_forward_hook(
        lambda mod, args, out: spec.edit_output(out, edit.apply)
    )
    try:
        b, vb = final_logprobs(model, PROMPTS, batch_size=4, value_layers=[layer])
    finally:
        handle.remove()
    base, _ = final_logprobs(model, PROMPTS, batch_size=4)
    assert float((a - base).abs().max()) > 1e-3
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    np.testing.assert_allclose(va[layer], vb[layer], atol=1e-5)


@pytest.mark.parametrize(
    "name, out_proj",
    [("qwen2", "o_proj"), ("gemma2", "o_proj"), ("bloom", "dense"), ("falcon", "dense"), ("xglm", "out_proj")],
)
def test_zeroed_heads_equals_zeroing_the_output_projection_input(name, out_proj, twin_factory):
    model = twin_factory(name)
    layer, head = 1, 2
    ml = model.layout.model_layers[layer]
    d = model.layout.d_head
    with zeroed_heads(model, {layer: [head]}):
        got, _ = final_logprobs(model, PROMPTS, batch_size=4)

    def pre(mod, args):
        x = args[0].clone()
        x[..., head * d : (head + 1) * d] = 0
        return (x, *args[1:])

    handle = getattr(model.arch.modules[ml], out_proj).register_forward_pre_hook(pre)
    try:
        want, _ = final_logprobs(model, PROMPTS, batch_size=4)
    finally:
        handle.remove()
    intact, _ = final_logprobs(model, PROMPTS, batch_size=4)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
    assert float((intact - got).abs().max()) > 1e-4


@pytest.mark.parametrize("name", ["qwen2", "bloom"])
def test_plain_forward_passes_inside_intervened_after_final_logprobs(name, twin_factory):
    """Batches of another size after final_logprobs inside the same block: no stale final positions."""
    model = twin_factory(name)
    axis = axis_for(model, 1)
    ids = torch.as_tensor(model.tokenizer(["a b c d e f g"])["input_ids"])
    with intervened(model, {1: Edit(axis, "cut", 1.0)}) as applied:
        final_logprobs(model, PROMPTS, batch_size=4)
        with torch.inference_mode():
            model.hf_model(ids, use_cache=False)
    assert applied.counts[1] == 3


@pytest.mark.parametrize("name", ["cohere", "gemma2"])
def test_text_nll_is_the_models_own_loss(name, twin_factory):
    """Per-token NLL from the model's own logits: Cohere multiplies them by ``logit_scale``,
    Gemma-2 soft-caps them. Independent side: transformers' own ``labels=`` loss, text by text."""
    from geoprobe.intervene.forward import text_nll

    model = twin_factory(name)
    texts = ["The cat sat on the mat and looked around", "A dog"]
    nll = text_nll(model, texts, batch_size=2)
    ref = []
    for t in texts:
        ids = torch.tensor([model.tokenizer(t)["input_ids"]])
        with torch.no_grad():
            loss = model.hf_model(ids, labels=ids, use_cache=False).loss
        ref.append((float(loss), ids.shape[1] - 1))
    n = [k for _, k in ref]
    assert len(nll) == sum(n)
    np.testing.assert_allclose([nll[: n[0]].mean(), nll[n[0] :].mean()], [r for r, _ in ref], rtol=1e-5)
