"""A model whose own output moves with padding is captured as it computes each prompt alone.

DeepSeek-V3.2 (``deepseek_v32``) and GLM-5 (``glm_moe_dsa``) pick their attention's keys with an indexer
whose top-k is not padding-aware: in a padded batch a prompt's final row attends to other keys than when
it runs alone (rows differed by 0.26 and values by 21-57 % before). geoprobe measures that at load
(``verify.padding_dependence``) and then batches prompts of one length only. Reference: the model's own
eager forward on each prompt alone (``output_attentions``, the row over the keys; values: the layer's V
projection of its input at the final token), 1e-5.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
import torch

from geoprobe import CaptureConfig, capture
from geoprobe.models.tiny import same_weights

TOL = 1e-5


@contextmanager
def values_received(model):
    """{layer: the value vectors (kv_head, d) at the final position} as the modeling file's own
    ``eager_attention_forward`` receives them (wrapped for the block)."""
    module = sys.modules[type(model).__module__]
    stock = module.eager_attention_forward
    got: dict[int, np.ndarray] = {}

    def wrapped(mod, query, key, value, *args, **kwargs):
        got[mod.layer_idx] = value[0, :, -1].float().numpy()
        return stock(mod, query, key, value, *args, **kwargs)

    module.eager_attention_forward = wrapped
    try:
        yield got
    finally:
        module.eager_attention_forward = stock


TEXTS = [
    "one two three four five six seven eight nine ten eleven twelve",
    "alpha beta gamma delta epsilon",
    "the indexer keeps the top four keys of each row",
    "red green blue yellow orange purple pink",
    "a longer prompt again, with more tokens than the indexer keeps, and then some",
]


@pytest.mark.parametrize("model_type", ["deepseek_v32", "glm_moe_dsa"])
def test_sparse_indexer_prompts_equal_the_prompt_alone(twin_factory, model_type):
    lm = twin_factory(model_type)
    topk = lm.hf_model.config.get_text_config().index_topk
    lengths = [len(lm.tokenizer(t)["input_ids"]) for t in TEXTS]
    assert min(lengths) > topk and len(set(lengths)) == len(lengths)  # the case that hid: selection < prompt
    assert set(lm.arch.padding_dependent) == {"right", "left"}
    for side in ("right", "left"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cap = capture(lm, TEXTS, CaptureConfig(batch_size=4, attention="distribution", padding_side=side))
        note = [str(w.message) for w in caught if "batched by equal length" in str(w.message)]
        assert len(note) == 1 and "5 batches instead of 2" in note[0], note
        eager = same_weights(lm.hf_model, "eager")
        for i, text in enumerate(TEXTS):
            ids = torch.tensor([lm.tokenizer(text)["input_ids"]])
            with torch.no_grad(), values_received(eager) as values:
                out = eager(ids, output_attentions=True, use_cache=False)
            for pos, layer in enumerate(lm.layout.model_layers):
                row = out.attentions[pos][0, :, -1].double()
                row = (row / row.sum(-1, keepdim=True)).numpy()
                got = cap.attn_pattern[pos, i, :, : lengths[i]]
                assert np.abs(got - row).max() < TOL, (side, i, layer)
                want = values[layer]  # MLA: no linear V of the input; the value tensor eager attention read
                v = cap.values[pos, i, : want.shape[0], : want.shape[1]]
                assert np.linalg.norm(v - want) / np.linalg.norm(want) < TOL, (side, i, layer)


def test_a_model_padding_does_not_move_is_batched_as_before(twin_factory):
    lm = twin_factory("llama-3.2-1b")
    assert lm.arch.padding_dependent == {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cap = capture(lm, TEXTS, CaptureConfig(batch_size=4))
    assert not [w for w in caught if "batched by equal length" in str(w.message)]
    assert cap.n_prompts == len(TEXTS)


def test_gemma3n_is_captured_as_its_prompts_alone(twin_factory):
    """Gemma 3n (``gemma3n_text``): per-layer MLP widths (a list: capture's memory estimate crashed on it),
    the one-tensor rotary ``(x, cos, sin)``, and its last layers reading earlier layers' keys and values (KV
    sharing: those layers have no W_K of their own, said so). Rows against its own eager forward on each
    prompt alone, 1e-5; values against what eager attention received."""
    lm = twin_factory("gemma3n_text")
    cfg = lm.hf_model.config.get_text_config()
    assert isinstance(cfg.intermediate_size, list) and cfg.num_kv_shared_layers > 0
    cap = capture(lm, TEXTS, CaptureConfig(batch_size=4, attention="distribution", key_weights=False))
    eager = same_weights(lm.hf_model, "eager")
    for i, text in enumerate(TEXTS):
        ids = torch.tensor([lm.tokenizer(text)["input_ids"]])
        with torch.no_grad(), values_received(eager) as values:
            out = eager(ids, output_attentions=True, use_cache=False)
        maps = [a for a in out.attentions if a is not None]
        for pos, layer in enumerate(lm.layout.model_layers):
            row = maps[pos][0, :, -1].double()
            row = (row / row.sum(-1, keepdim=True)).numpy()
            assert np.abs(cap.attn_pattern[pos, i, :, : ids.shape[1]] - row).max() < TOL, (i, layer)
            want = values[layer]
            v = cap.values[pos, i, : want.shape[0], : want.shape[1]]
            assert np.linalg.norm(v - want) / np.linalg.norm(want) < TOL, (i, layer)
    shared = range(cfg.num_hidden_layers - cfg.num_kv_shared_layers, cfg.num_hidden_layers)
    assert all(lm.arch.k_specs[layer] is None for layer in shared)
    assert "no W_K" in lm.arch.key_weights_reason or "no linear map" in lm.arch.key_weights_reason


def test_compressed_keys_are_read_over_every_key_and_no_distribution_leaves_them_out(twin_factory):
    """DeepSeek-V4 attends over its positions and compressed entries appended after them. The entropy is
    over every key the attention function received (equal to its own eager forward on the prompt alone,
    1e-5 bits); a distribution over positions only is refused in one line, naming --attention entropy."""
    from geoprobe.errors import CaptureError
    from geoprobe.models.attention import entropy_bits

    lm = twin_factory("deepseek_v4")
    cap = capture(lm, TEXTS, CaptureConfig(batch_size=4, key_weights=False))
    eager = same_weights(lm.hf_model, "eager")
    compressed = 0
    for i, text in enumerate(TEXTS):
        ids = torch.tensor([lm.tokenizer(text)["input_ids"]])
        with torch.no_grad():
            out = eager(ids, output_attentions=True, use_cache=False)
        for pos, layer in enumerate(lm.layout.model_layers):
            row = out.attentions[pos][0, :, -1].double()
            compressed += row.shape[-1] > ids.shape[1]
            want = entropy_bits(row / row.sum(-1, keepdim=True)).numpy()
            assert np.abs(cap.attn_entropy[pos, i, : want.shape[0]] - want).max() < TOL, (i, layer)
    assert compressed > 0  # the prompts reach the compressors
    with pytest.raises(CaptureError, match=r"keys for \d+ positions .*pass --attention entropy"):
        capture(lm, TEXTS, CaptureConfig(batch_size=4, attention="distribution", key_weights=False))


def test_half_precision_rounding_is_not_taken_for_padding_dependence():
    """A padded batch runs other kernel shapes than a prompt alone; in bfloat16 their rounding moves the
    logits by far more than float32's 1e-4, so the check allows the dtype's (16 eps: 0.125 of the logits'
    scale) and a plain model is batched as before; the DSA indexer's 0.3 still shows."""
    from geoprobe import twin
    from geoprobe.models.verify import padding_tolerance

    llama = twin("llama-3.2-1b", dtype="bfloat16")
    assert padding_tolerance(llama.hf_model) == 16 * torch.finfo(torch.bfloat16).eps
    assert llama.arch.padding_dependent == {}
    assert set(twin("deepseek_v32", dtype="bfloat16").arch.padding_dependent) >= {"right"}
