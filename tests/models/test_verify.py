"""The checks at load time (geoprobe/models/verify.py) and what they make possible: encoders refused,
RoBERTa's own position numbering kept, a model that computes something else under geoprobe's
function refused, sparse attention read with the model's own top-k."""

from __future__ import annotations

import contextlib

import pytest
import torch

from geoprobe.errors import CaptureError, UnsupportedArchitectureError
from geoprobe.models.architecture import inspect_model, probing
from geoprobe.models.attention import Probe
from geoprobe.models.tiny import same_weights, tiny_model
from geoprobe.models.verify import check_causal, check_same_model, position_ids, position_offset


@pytest.mark.parametrize("model_type", ["bert", "roberta", "electra"])
def test_an_encoder_with_an_lm_head_is_refused_as_bidirectional(model_type):
    with pytest.raises(UnsupportedArchitectureError, match="not causal") as e:
        check_causal(tiny_model(model_type), model_type)
    assert e.value.reason == "bidirectional" and "is_decoder=True" in str(e.value)


@pytest.mark.parametrize("model_type", ["llama", "gpt2", "bert/decoder", "roberta/decoder"])
def test_a_decoder_passes_the_causality_check(model_type):
    check_causal(tiny_model(model_type), model_type)  # raises if not


@pytest.mark.parametrize(
    ("model_type", "offset"), [("llama", 0), ("gpt2", 0), ("roberta/decoder", 2), ("xlm-roberta/decoder", 2)]
)
def test_the_position_offset_is_the_models_own(model_type, offset):
    model = tiny_model(model_type)
    assert position_offset(model) == offset
    if offset:  # RoBERTa: padding_idx + 1, read from its position embedding
        assert model.config.pad_token_id + 1 == offset


def test_left_padded_roberta_capture_equals_each_prompt_alone():
    """Before: geoprobe passed positions 0..n-1 and RoBERTa's own start at padding_idx + 1 = 2, so every
    position was shifted. Now a left-padded batch gives each prompt's own next-token distribution."""
    from geoprobe.capture.forward import final_hidden, run_batch
    from tests.models.census import _loaded

    model = tiny_model("roberta/decoder")
    loaded = _loaded(model)
    g = torch.Generator().manual_seed(4)
    seqs = [torch.randint(3, 512, (n,), generator=g) for n in (9, 5)]
    ids = torch.full((2, 9), model.config.pad_token_id)
    mask = torch.zeros(2, 9, dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, 9 - len(s) :], mask[b, 9 - len(s) :] = s, 1
    probe = Probe()
    with probing(model, loaded.arch, probe), final_hidden(loaded, probe), torch.no_grad():
        logits = run_batch(loaded, probe, ids, mask)
    with torch.no_grad():
        for b, s in enumerate(seqs):
            own = model(s[None], use_cache=False).logits[0, -1]
            torch.testing.assert_close(logits[b], own, atol=1e-4, rtol=1e-4)


def test_unknown_numbering_is_never_passed_and_refuses_left_padding():
    right = torch.tensor([[1, 1, 0]])
    assert position_ids(None, right) is None
    assert position_ids(2, right).tolist() == [[2, 3, 3]]  # padding repeats the last number
    with pytest.raises(CaptureError, match="--padding-side right"):
        position_ids(None, torch.tensor([[0, 1, 1]]))


def test_a_model_that_computes_something_else_under_geoprobe_is_refused():
    """Planted: an 'activation' that edits every value (as a modeling branch on the implementation's name
    would change the computation); the check compares logits and refuses."""
    model = tiny_model("llama")
    arch = inspect_model(model)
    check_same_model(model, "llama", lambda: probing(model, arch, Probe.silent()))  # the real one passes
    edit = Probe(queries=False, keys=False, values=False, attn_out=False, attention=False, edits={0: lambda v: 2 * v})
    with pytest.raises(UnsupportedArchitectureError, match="logits change") as e:
        check_same_model(model, "llama", lambda: probing(model, arch, edit))
    assert e.value.reason == "other-computation"


@pytest.mark.parametrize("model_type", ["deepseek_v32", "glm_moe_dsa"])
def test_sparse_attention_keeps_the_models_top_k(model_type):
    """DeepSeek-V3.2 / GLM-5 fold the indexer's top-k into the mask only under 'eager'/'sdpa'. geoprobe's
    function runs under the implementation's own name, so the final row attends to exactly the
    index_topk keys the model selects (before: every key, a dense model), equal to eager's row."""
    model = tiny_model(model_type)
    arch = inspect_model(model)
    k = model.config.index_topk
    ids = torch.randint(3, 512, (1, 13), generator=torch.Generator().manual_seed(5))
    probe = Probe(distribution=True)
    probe.new_batch(None)
    with probing(model, arch, probe), torch.no_grad():
        model(ids, use_cache=False)
        rows = same_weights(model, "eager")(ids, output_attentions=True, use_cache=False).attentions
    for i, layer in enumerate(arch.layout.model_layers):
        p = probe.records[layer].distribution[0]
        assert ((p > 0).sum(-1) <= k).all() and k < 13
        torch.testing.assert_close(p, rows[i][0, :, -1].float(), atol=1e-5, rtol=0)


def test_geoprobe_leaves_the_attention_functions_as_it_found_them():
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = {name: ALL_ATTENTION_FUNCTIONS.get(name) for name in ("sdpa", "eager")}
    model = tiny_model("llama")
    arch = inspect_model(model)
    with contextlib.suppress(RuntimeError), probing(model, arch, Probe()):
        assert ALL_ATTENTION_FUNCTIONS.get("sdpa") is not before["sdpa"]
        raise RuntimeError("an error inside the block")
    assert {name: ALL_ATTENTION_FUNCTIONS.get(name) for name in ("sdpa", "eager")} == before
