"""The analyses on real SmolLM2-135M agree with an independent computation from plain Hugging Face.

The independent side never touches geoprobe's capture, adapters or analysis code: a plain
``AutoModelForCausalLM`` (eager attention) is loaded from the safetensors cache of the embedded
GGUF, and

1. ``W_K`` is read from each layer's ``self_attn.k_proj.weight`` (``(Hkv·d_head, d_model)``,
   reshaped ``(Hkv, d_head, d_model)``: row ``j`` of head ``h`` is column ``j`` of ``W_K^h``), and
   its mean off-diagonal |cos| is computed inline → ``head_orthogonality(capture.w_k)`` within 1e-6;
2. the final row of ``output_attentions=True`` gives each head's distribution, its entropy in
   bits averaged over heads → ``attention_focusing(...).per_prompt`` within 1e-4 bits (the
   capture's own float32 tolerance against HF);
3. raw ``v_proj`` outputs at the final token give the value vectors → ``ValueManifold``
   explained-variance ratios equal those of ``capture.values`` within 1e-5.

Prompts run one at a time, unpadded; the capture runs them in padded batches.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from geoprobe.analysis.focusing import attention_focusing
from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.orthogonality import head_orthogonality, key_orthogonality
from geoprobe.capture import CaptureConfig, capture
from tests.capture import _reference as R
from tests.conftest import requires_smollm2

pytestmark = [pytest.mark.slow, requires_smollm2]

PROMPTS = (
    "The cat sat on the mat and looked at",
    "Hello",
    "In 1905 Einstein published four papers that changed physics, among them",
    "def fibonacci(n):\n    if n < 2:\n        return",
    "Paris is the capital of",
    "She opened the letter, read the first line, and",
    "The boiling point of water at sea level is",
    "1, 1, 2, 3, 5, 8, 13,",
    "To be or not to be, that is the",
    "The mitochondria is the powerhouse of the",
    "import numpy as np\nx = np.",
    "Once upon a time, in a land far away, there lived a",
)


@functools.lru_cache(maxsize=None)
def _plain(directory: str):
    return R.plain_pretrained(directory)


@pytest.fixture(scope="module")
def setup(smollm2):
    from geoprobe.models.gguf import gguf_cache_path

    directory = gguf_cache_path(smollm2.provenance.weights.removeprefix("sha256:"))
    assert (directory / "DONE").exists(), f"no safetensors cache for SmolLM2 at {directory}"
    cap = capture(smollm2, PROMPTS, CaptureConfig(attention="distribution", batch_size=5))
    ids = smollm2.tokenizer(list(PROMPTS), add_special_tokens=True)["input_ids"]
    return cap, _plain(str(directory)), ids


def _raw_final_token(plain, ids: list[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per layer: attention of the final query row (H, T) and raw v_proj output there (Hkv·d,)."""
    values: dict[int, torch.Tensor] = {}
    handles = []
    for i, layer in enumerate(plain.model.layers):

        def hook(module, args, out, i=i):
            values[i] = out[0, -1].detach().clone()

        handles.append(layer.self_attn.v_proj.register_forward_hook(hook))
    try:
        with torch.inference_mode():
            out = plain(torch.tensor([ids]), output_attentions=True, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    attn = [a[0, :, -1, :].double().numpy() for a in out.attentions]
    return attn, [values[i].double().numpy() for i in range(len(attn))]


def _entropy_bits(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0).sum(-1)


@pytest.fixture(scope="module")
def raw(setup):
    _, plain, ids = setup
    runs = [_raw_final_token(plain, seq) for seq in ids]
    attn = [[run[0][layer] for run in runs] for layer in range(len(runs[0][0]))]  # [L][n] (H, T_i)
    values = np.stack([np.stack([run[1][layer] for run in runs]) for layer in range(len(runs[0][1]))])
    return attn, values  # values: (L, n, Hkv·d)


def test_key_orthogonality_from_raw_k_proj(setup):
    cap, plain, _ = setup
    cfg = plain.config
    n_kv, d_model = cfg.num_key_value_heads, cfg.hidden_size
    d_head = d_model // cfg.num_attention_heads
    expected = np.zeros((len(plain.model.layers), n_kv))
    for layer, block in enumerate(plain.model.layers):
        w = block.self_attn.k_proj.weight.detach().double().numpy().reshape(n_kv, d_head, d_model)
        for h in range(n_kv):
            rows = w[h] / np.linalg.norm(w[h], axis=1, keepdims=True)  # the d_head columns of W_K^h
            cos = rows @ rows.T
            expected[layer, h] = np.abs(cos[~np.eye(d_head, dtype=bool)]).mean()
    assert cap.layers == tuple(range(len(plain.model.layers)))
    got = head_orthogonality(cap.w_k)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    ko = key_orthogonality(cap.w_k, cap.layers, cap.layout.d_model, model="smollm2-135m", keys=cap.keys)
    np.testing.assert_allclose(ko.layer_mean, expected.mean(axis=1), rtol=0, atol=1e-6)


def test_attention_focusing_from_raw_attentions(setup, raw):
    cap, _, ids = setup
    attn, _ = raw
    expected = np.array([[_entropy_bits(a).mean() for a in layer] for layer in attn])  # (L, n)
    np.testing.assert_array_equal(cap.n_tokens, [len(s) for s in ids])
    af = attention_focusing(cap.attn_entropy, cap.layers, cap.n_tokens, model="smollm2-135m")
    np.testing.assert_allclose(af.per_prompt, expected, rtol=0, atol=1e-4)
    np.testing.assert_allclose([m.value for m in af.mean], expected.mean(axis=1), rtol=0, atol=1e-4)
    assert af.uniform[0] == pytest.approx(np.mean(np.log2([len(s) for s in ids])))
    # Jensen on real attention: the head-averaged distribution's entropy is never below the mean
    # head entropy, so averaging distributions first would overstate the entropy
    for layer in attn:
        for a in layer:
            assert _entropy_bits(a.mean(axis=0)) >= _entropy_bits(a).mean() - 1e-9


def test_value_manifold_from_raw_v_proj(setup, raw):
    cap, _, _ = setup
    _, values = raw
    ours = cap.values.reshape(cap.values.shape[0], cap.n_prompts, -1)
    np.testing.assert_allclose(ours, values, rtol=0, atol=1e-4)  # the raw vectors themselves
    for layer in (0, len(cap.layers) // 2, len(cap.layers) - 1):
        expected = ValueManifold().fit(values[layer]).explained_variance_ratio_
        got = ValueManifold().fit(ours[layer]).explained_variance_ratio_
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5, err_msg=f"layer {layer}")
