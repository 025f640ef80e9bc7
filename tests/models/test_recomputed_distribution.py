"""The recorded final-token distribution, recomputed from the captured q and k (issue 18).

Route (the simplest honest one): the probe records q and k at the final position only, so the
key of every position t is captured by running the prompt truncated to t + 1 tokens. The model
is causal, so that key is the one the full prompt's final query attends to at position t (the
test checks that the truncated runs' final keys fit the full run's scores). Each captured key
is the *pre-rotary* key geoprobe reports; it is rotated back to what the scores use with the
model's own ``apply_rotary_pos_emb`` (called as its signature says, ``rotary.py``) and the
cos/sin the layer received at that position (``Probe.rotary``, kept by ``rotary_hooks``), only
the first ``r`` dims where the rotary is partial. The final query is rotated the same way. Then

    p = softmax(softcap(scaling · q·k_t)) over t inside the layer's window (causal),

with ``scaling``/``softcap``/``window`` read from the attention module and the call
(``module.scaling``, the config's ``attn_logit_softcapping``, ``LayerRecord.window``), must
equal the probe's ``Probe(distribution=True)`` record and Hugging Face's eager
``output_attentions`` final row, within 1e-5.
"""

from __future__ import annotations

import pytest
import torch

from geoprobe.models.architecture import probing
from geoprobe.models.attention import Probe, rotary_function
from tests.models.test_attention import eager, twin

TOL = 1e-5
T = 13  # crosses the tiny twins' 6-token windows


def rotate(rf, x: torch.Tensor, pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """x (head, d) at one position rotated with the model's own function (on the slice it accepts)."""
    if rf is None:
        return x
    return rf.turn(x[None], tuple(p[None] for p in pair))[0]


def final_records(model, arch, ids: torch.Tensor) -> Probe:
    probe = Probe(distribution=True)
    probe.new_batch(None)
    with probing(model, arch, probe), torch.no_grad():
        model(ids[None], use_cache=False)
    return probe


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "stablelm", "gpt2", "gemma2", "bloom", "gptj"])
def test_recorded_distribution_is_softmax_of_captured_q_and_rotated_k(model_type):
    model, arch = twin(model_type)
    if arch.mechanism == "legacy":
        pytest.skip(
            f"{model_type} is read on the legacy path with this transformers (Bloom always; GPT-J before "
            "5.24): its hooks keep no cos/sin (Probe.rotary) to rotate captured keys with, and Bloom's ALiBi "
            "would have to be rebuilt here: test_inline.py recomputes Bloom from its described q/k with its own "
            "ALiBi, and GPT-J is recomputed here on 5.24 (interface path)"
        )
    ids = torch.randint(3, 512, (T,), generator=torch.Generator().manual_seed(1))
    full = final_records(model, arch, ids)
    per_pos = [final_records(model, arch, ids[: t + 1]) for t in range(T)]
    with torch.no_grad():
        ref = eager(model_type)(ids[None], output_attentions=True, use_cache=False).attentions
    for i, layer in enumerate(arch.layout.model_layers):
        attn = arch.modules[layer]
        fn = rotary_function(attn) if layer in full.rotary else None
        assert (fn is not None) == (model_type != "gpt2")  # rotary (full or partial) everywhere but GPT-2

        def turned(p: Probe, x: torch.Tensor, fn=fn, layer=layer) -> torch.Tensor:
            if fn is None:
                return x
            return rotate(fn, x, tuple(t[0] for t in p.rotary[layer]))

        rec = full.records[layer]
        q = turned(full, rec.q[0])  # (head, d)
        keys = torch.stack([turned(p, p.records[layer].k[0]) for p in per_pos], dim=1)  # (kv_head, T, d)
        G = q.shape[0] // keys.shape[0]
        s = torch.einsum("hd,htd->ht", q.double(), keys.double().repeat_interleave(G, dim=0))
        s = s * getattr(attn, "scaling", q.shape[-1] ** -0.5)
        cap = getattr(model.config, "attn_logit_softcapping", None)
        if cap:
            s = torch.tanh(s / cap) * cap
        pos = torch.arange(T)
        visible = pos <= T - 1 if rec.window is None else (T - 1 - pos) < rec.window
        p = torch.softmax(s.masked_fill(~visible, float("-inf")), dim=-1)
        torch.testing.assert_close(rec.distribution[0].double(), p, atol=TOL, rtol=0)
        torch.testing.assert_close(ref[i][0, :, -1].double(), p, atol=TOL, rtol=0)
        if model_type == "gemma2":
            assert rec.window is not None or layer % 2 == 1  # both kinds of layer are covered
