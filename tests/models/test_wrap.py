"""wrap(): a model the user already holds, plain Hugging Face or a TransformerLens TransformerBridge,
captures the same arrays as geoprobe's own loaded twin of the same weights (exactly: same modules,
same attention function), with provenance naming a hash of its parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe import capture, twin, wrap
from geoprobe.errors import GeoprobeError

PROMPTS = ["The cat sat on the mat", "A dog ran far away from home today", "Hello"]


@pytest.fixture(scope="module")
def ours():
    return twin("llama-3.2-1b", "tiny", seed=4)


def test_wrapping_a_plain_model_captures_what_geoprobe_loads(ours):
    mine = wrap(ours.hf_model, ours.tokenizer, model_id="my-llama")
    a, b = capture(ours, PROMPTS), capture(mine, PROMPTS)
    for name in ("values", "keys", "attn_entropy", "next_entropy", "w_k"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    p = b.provenance
    assert p.source == "memory" and p.model_id == "my-llama" and p.weights.startswith("sha256:")
    assert p.weights == wrap(ours.hf_model, ours.tokenizer).provenance.weights  # same weights, same hash


def test_wrapping_a_transformer_bridge_captures_the_same_arrays(ours):
    import copy

    from transformer_lens.model_bridge import TransformerBridge

    hf = copy.deepcopy(ours.hf_model)
    bridge = TransformerBridge.boot_transformers(
        "llama-twin", hf_model=hf, tokenizer=ours.tokenizer, device="cpu", dtype=torch.float32
    )
    # TransformerLens may set up its own copy of the tokenizer (BOS handling): pass ours, so that both
    # sides read the same token ids; wrap(bridge) alone takes bridge.tokenizer
    assert wrap(bridge).tokenizer is bridge.tokenizer
    mine = wrap(bridge, ours.tokenizer)
    a, b = capture(ours, PROMPTS), capture(mine, PROMPTS)
    np.testing.assert_array_equal(a.n_tokens, b.n_tokens)
    for name in ("values", "keys", "next_entropy"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(a.attn_entropy, b.attn_entropy, atol=1e-4)  # bits
    assert type(bridge).__name__ == "TransformerBridge" and bridge.cfg is not None  # the user's object is intact


def test_wrap_without_a_tokenizer_or_with_a_non_model_is_one_line(ours):
    with pytest.raises(GeoprobeError, match="needs the model's tokenizer"):
        wrap(ours.hf_model)
    with pytest.raises(GeoprobeError, match="not str"):
        wrap("gpt2", ours.tokenizer)
