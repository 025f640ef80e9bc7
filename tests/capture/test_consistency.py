"""Capture is right for every family: against plain Hugging Face, against itself, and against W_K.

Subjects: the six tiny family twins (GPT-NeoX fused QKV + partial rotary, Phi partial rotary,
Llama GQA, Mistral GQA + sliding window 6, Mixtral MoE, Gemma-3 q/k norm + sliding layers) and
the real SmolLM2-135M. The independent side is a *plain* HF model (eager attention, no
TransformerBridge) built from scratch -- twins from the same config and seed, SmolLM2 from the
safetensors cache of its GGUF -- read with ordinary torch hooks (see ``_reference.py``).

Tolerances (float32 everywhere):
* activations (q, k, v, z), attention probabilities, attention and next-token entropies:
  1e-4 absolute. Observed worst cases: ~1e-5 on SmolLM2 activations (magnitudes up to ~20),
  2.5e-5 bits on SmolLM2's next-token entropy, <1e-6 on the twins.
* next-token probabilities: relative 1e-4 (absolute 1e-9), because a random twin spreads its
  mass over 49k tokens, so its top probabilities are ~1e-4 and an absolute 1e-4 would pass anything.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from geoprobe.capture import CaptureConfig, capture
from tests.capture import _reference as R
from tests.conftest import FAMILY_TWINS, PROMPTS

SMOLLM2 = "smollm2-135m"
SUBJECTS = (*FAMILY_TWINS, pytest.param(SMOLLM2, marks=pytest.mark.slow))
ATOL = 1e-4
PROB_RTOL = 1e-4
# longer than the tiny twins' sliding window (6 tokens); words that re-tokenize prefix by prefix
LONG_PROMPT = "In 1905 Einstein published four papers that changed physics, among them"
SIDES = ("left", "right")


class Subject:
    def __init__(self, name: str, model, plain) -> None:
        self.name, self.model, self.plain = name, model, plain
        self.layout = model.layout

    def ids(self, prompts) -> list[list[int]]:
        return self.model.tokenizer(list(prompts), add_special_tokens=True)["input_ids"]


@functools.lru_cache(maxsize=None)
def _plain_twin(alias: str, vocab_size: int):
    return R.plain_twin(alias, vocab_size)


@functools.lru_cache(maxsize=None)
def _plain_pretrained(directory: str):
    return R.plain_pretrained(directory)


@functools.lru_cache(maxsize=None)
def _reference(name: str, plain, ids: tuple[int, ...]) -> R.FinalToken:
    return R.run_final_token(plain, list(ids))


def _plain_for(name: str, model):
    if name == SMOLLM2:
        from geoprobe.models.gguf import gguf_cache_path

        assert model.provenance.source == "gguf" and model.provenance.weights.startswith("sha256:")
        directory = gguf_cache_path(model.provenance.weights.removeprefix("sha256:"))
        assert (directory / "DONE").exists(), f"no safetensors cache for SmolLM2 at {directory}"
        return _plain_pretrained(str(directory))
    return _plain_twin(name, len(model.tokenizer))


@pytest.fixture(params=SUBJECTS)
def subject(request, twin_factory) -> Subject:
    name = request.param
    model = request.getfixturevalue("smollm2") if name == SMOLLM2 else twin_factory(name)
    return Subject(name, model, _plain_for(name, model))


def _entropy_bits(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(-1)


def _softmax64(logits: np.ndarray) -> np.ndarray:
    x = logits - logits.max()
    e = np.exp(x)
    return e / e.sum()


# -- 0. the reference really is the same model -------------------------------------------------
def test_plain_reference_has_the_captured_models_weights(subject):
    """The independently built plain model carries bit-identical weights (the seed assumption)."""
    plain_sd = subject.plain.state_dict()
    bridged = R.stripped_state_dict(subject.model.hf_model)
    missing = sorted(set(plain_sd) - set(bridged))
    assert not missing, f"plain parameters absent from the captured model: {missing[:5]}"
    for name, tensor in plain_sd.items():
        np.testing.assert_array_equal(bridged[name].numpy(), tensor.numpy(), err_msg=name)
    assert R.family(subject.plain) == subject.model.hf_model.config.model_type
    assert len(R.decoder_layers(subject.plain)) == subject.layout.n_layers


# -- 1. against plain Hugging Face, padded batches vs unpadded single prompts ------------------
@pytest.mark.parametrize("side", SIDES)
def test_capture_matches_plain_hugging_face(subject, side):
    prompts = list(PROMPTS)
    ids = subject.ids(prompts)
    lengths = [len(s) for s in ids]
    assert len(set(lengths)) > 1  # the batches really are padded
    cfg = CaptureConfig(
        queries=True, attn_out=True, attention="distribution", batch_size=4, padding_side=side, top_k=10
    )
    assert cfg.batch_size < len(prompts)  # several batches run
    c = capture(subject.model, prompts, cfg)
    np.testing.assert_array_equal(c.n_tokens, lengths)
    lay = subject.layout
    for i, seq in enumerate(ids):
        ref = _reference(subject.name, subject.plain, tuple(seq))
        n = len(seq)
        for layer in range(lay.n_layers):
            where = f"{subject.name} {side}-padded prompt #{i} layer {layer}"
            for field, ref_list in (("queries", ref.q), ("keys", ref.k), ("values", ref.v), ("attn_out", ref.z)):
                np.testing.assert_allclose(
                    getattr(c, field)[layer, i], ref_list[layer], rtol=0, atol=ATOL, err_msg=f"{field} {where}"
                )
            np.testing.assert_allclose(
                c.attn_pattern[layer, i, :, :n], ref.pattern[layer], rtol=0, atol=ATOL, err_msg=f"attn_pattern {where}"
            )
            np.testing.assert_array_equal(c.attn_pattern[layer, i, :, n:], 0.0, err_msg=f"pattern padding {where}")
            np.testing.assert_allclose(
                c.attn_entropy[layer, i],
                _entropy_bits(ref.pattern[layer]),
                rtol=0,
                atol=ATOL,
                err_msg=f"attn_entropy {where}",
            )
        # next token: HF's full logits at the final position
        p = _softmax64(ref.logits)
        np.testing.assert_allclose(
            c.next_entropy[i], _entropy_bits(p), rtol=0, atol=ATOL, err_msg=f"next_entropy {subject.name} {side} #{i}"
        )
        k = c.next_top_ids.shape[1]
        order = np.argsort(-p, kind="stable")
        top_ref = order[:k]
        np.testing.assert_allclose(
            c.next_top_probs[i],
            p[top_ref],
            rtol=PROB_RTOL,
            atol=1e-9,
            err_msg=f"top-k probabilities {subject.name} {side} #{i}",
        )
        np.testing.assert_allclose(
            p[c.next_top_ids[i]],
            c.next_top_probs[i],
            rtol=PROB_RTOL,
            atol=1e-9,
            err_msg=f"probability of the captured top-k ids {subject.name} {side} #{i}",
        )
        # ids must match exactly wherever the reference ranks are not a near-tie
        ranked = p[order[: k + 1]]
        gap_before = np.r_[np.inf, ranked[:-2] - ranked[1:-1]]
        gap_after = ranked[:-1] - ranked[1:]
        clear = (gap_before > PROB_RTOL * ranked[:-1]) & (gap_after > PROB_RTOL * ranked[:-1])
        assert clear.sum() >= k // 2, "reference top-k is nearly all ties; the id check would be vacuous"
        np.testing.assert_array_equal(
            c.next_top_ids[i][clear], top_ref[clear], err_msg=f"top-k ids {subject.name} {side} #{i}"
        )


# -- 2. self-consistency: attention recomputed from captured q, k, v --------------------------
def _attention(
    q: np.ndarray, k: np.ndarray, kv_group: np.ndarray, t: int, scale: float, window: int | None
) -> np.ndarray:
    """Attention of query position t (q: (H, n, d)) over keys k (Hkv, n, d): (H, n), zero where masked."""
    n = k.shape[1]
    pos = np.arange(n)
    keep = pos <= t
    if window is not None:
        keep &= pos > t - window  # HF sliding_window_overlay: kv_idx > q_idx - window
    s = np.einsum("hd,hkd->hk", q[:, t], k[kv_group]) * scale
    s[:, ~keep] = -np.inf
    s -= s.max(1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(1, keepdims=True)


def test_attention_recomputed_from_captured_qkv(subject):
    """Final-token pattern and z follow from captured q and every position's k, v (via prefixes)."""
    tok, lay, plain = subject.model.tokenizer, subject.layout, subject.plain
    ids = subject.ids([LONG_PROMPT])[0]
    n = len(ids)
    prefixes = [tok.decode(ids[: t + 1]) for t in range(n)]
    for t, text in enumerate(prefixes):  # prefix t's final token is position t of the full prompt
        assert subject.ids([text])[0] == ids[: t + 1], f"prefix {t} {text!r} does not re-tokenize to itself"
    c = capture(
        subject.model,
        prefixes,
        CaptureConfig(queries=True, attn_out=True, attention="distribution", batch_size=8, padding_side="left"),
    )
    kv_group = np.asarray(lay.kv_group)
    per = R.n_kv_groups(plain)
    np.testing.assert_array_equal(kv_group, np.arange(lay.n_heads) // per)  # HF repeat_kv convention
    windows = [R.sliding_window(plain, layer) for layer in range(lay.n_layers)]
    assert tuple(windows) == tuple(lay.sliding_window)
    if any(windows):
        assert n > max(w for w in windows if w), "prompt must be longer than the sliding window"
    control = {"no rotary": 0.0, "no window": 0.0, "interleaved GQA": 0.0}
    for layer in range(lay.n_layers):
        q = torch.from_numpy(np.ascontiguousarray(c.queries[layer].transpose(1, 0, 2)))  # (H, n, d)
        k = torch.from_numpy(np.ascontiguousarray(c.keys[layer].transpose(1, 0, 2)))  # (Hkv, n, d)
        v = c.values[layer].transpose(1, 0, 2).astype(np.float64)  # (Hkv, n, d)
        cos, sin = R.rotary_cos_sin(plain, layer, n)
        assert cos.shape[-1] == lay.rotary_dim, "layout.rotary_dim disagrees with the model's rotary table"
        q_rot = R.apply_rotary(plain, q, cos, sin).double().numpy()
        k_rot = R.apply_rotary(plain, k, cos, sin).double().numpy()
        scale, window = R.scaling(plain, layer), windows[layer]
        for t in range(n):
            p = _attention(q_rot, k_rot, kv_group, t, scale, window)
            z = np.einsum("hk,hkd->hd", p, v[kv_group])
            where = f"{subject.name} layer {layer} query position {t}"
            got = c.attn_pattern[layer, t, :, : t + 1]
            np.testing.assert_allclose(got, p[:, : t + 1], rtol=0, atol=ATOL, err_msg=f"pattern {where}")
            np.testing.assert_allclose(c.attn_out[layer, t], z, rtol=0, atol=ATOL, err_msg=f"attn_out {where}")
            np.testing.assert_allclose(
                c.attn_entropy[layer, t], _entropy_bits(p), rtol=0, atol=ATOL, err_msg=f"attn_entropy {where}"
            )
            # controls: the same check with one ingredient wrong must be far off
            wrong = _attention(q.double().numpy(), k.double().numpy(), kv_group, t, scale, window)
            control["no rotary"] = max(control["no rotary"], np.abs(wrong[:, : t + 1] - got).max())
            if window is not None:
                wrong = _attention(q_rot, k_rot, kv_group, t, scale, None)
                control["no window"] = max(control["no window"], np.abs(wrong[:, : t + 1] - got).max())
            if lay.n_kv_heads not in (1, lay.n_heads):
                interleaved = np.arange(lay.n_heads) % lay.n_kv_heads
                wrong = _attention(q_rot, k_rot, interleaved, t, scale, window)
                control["interleaved GQA"] = max(control["interleaved GQA"], np.abs(wrong[:, : t + 1] - got).max())
    # each control must miss by 30x the tolerance, so the checks above can tell right from wrong
    assert control["no rotary"] > 30 * ATOL, control
    if any(windows):
        assert control["no window"] > 30 * ATOL, control
    if lay.n_kv_heads not in (1, lay.n_heads):
        assert control["interleaved GQA"] > 30 * ATOL, control


# -- 3. W_K reproduces captured keys ---------------------------------------------------------
def _keys_from_weights(plain, layer: int, ln1: np.ndarray, w_k: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    k = np.einsum("m,hmd->hd", ln1.astype(np.float64), w_k.astype(np.float64))
    if bias is not None:
        k = k + bias
    if R.family(plain) == "gemma3_text":  # captured keys are after the per-head k_norm
        norm = R.attention(R.decoder_layers(plain)[layer]).k_norm
        with torch.no_grad():
            k = norm(torch.from_numpy(k).float()).double().numpy()
    return k


def test_key_weights_reproduce_captured_keys(subject):
    prompts = list(PROMPTS)
    c = capture(subject.model, prompts, CaptureConfig(key_weights=True, batch_size=4))
    lay = subject.layout
    assert c.w_k.shape == (lay.n_layers, lay.n_kv_heads, lay.d_model, lay.d_head)
    for i, seq in enumerate(subject.ids(prompts)):
        ref = _reference(subject.name, subject.plain, tuple(seq))
        for layer in range(lay.n_layers):
            pred = _keys_from_weights(
                subject.plain, layer, ref.ln1[layer], c.w_k[layer], R.key_bias(subject.plain, layer)
            )
            np.testing.assert_allclose(
                pred,
                c.keys[layer, i],
                rtol=0,
                atol=ATOL,
                err_msg=f"ln1 @ W_K vs captured keys, {subject.name} prompt #{i} layer {layer}",
            )


def test_wrong_neox_layout_does_not_reproduce_keys(twin_factory):
    """Reading Pythia's fused QKV as (3, heads, d_head, d_model) gives other vectors than the keys."""
    model = twin_factory("pythia-410m")
    plain = _plain_for("pythia-410m", model)
    lay = model.layout
    prompts = list(PROMPTS)
    c = capture(model, prompts, CaptureConfig(key_weights=True))
    for layer in range(lay.n_layers):
        qkv = R.attention(R.decoder_layers(plain)[layer]).query_key_value
        w_wrong = qkv.weight.detach().reshape(3, lay.n_heads, lay.d_head, lay.d_model)[1].transpose(1, 2).numpy()
        b_wrong = qkv.bias.detach().reshape(3, lay.n_heads, lay.d_head)[1].numpy()
        assert not np.allclose(w_wrong, c.w_k[layer], atol=ATOL)
        for i, seq in enumerate(model.tokenizer(prompts)["input_ids"]):
            ref = _reference("pythia-410m", plain, tuple(seq))
            right = _keys_from_weights(plain, layer, ref.ln1[layer], c.w_k[layer], R.key_bias(plain, layer))
            np.testing.assert_allclose(right, c.keys[layer, i], rtol=0, atol=ATOL)
            wrong = _keys_from_weights(plain, layer, ref.ln1[layer], w_wrong, b_wrong)
            with pytest.raises(AssertionError):
                np.testing.assert_allclose(wrong, c.keys[layer, i], rtol=0, atol=ATOL)
            assert np.abs(wrong - c.keys[layer, i]).max() > 100 * ATOL


# -- 4. batched == one prompt at a time ------------------------------------------------------
@pytest.mark.parametrize("side", SIDES)
def test_batched_equals_one_prompt_at_a_time(subject, side):
    prompts = list(PROMPTS)
    single = capture(subject.model, prompts, CaptureConfig(batch_size=1, key_weights=False))
    batched = capture(
        subject.model, prompts, CaptureConfig(batch_size=4, padding_side=side, sort_by_length=False, key_weights=False)
    )
    lengths = np.asarray([len(s) for s in subject.ids(prompts)])
    assert len(set(lengths[:4])) > 1 and len(set(lengths[4:])) > 1  # both unsorted batches are padded
    for field in ("values", "keys", "attn_entropy", "next_entropy"):
        np.testing.assert_allclose(
            getattr(batched, field),
            getattr(single, field),
            rtol=0,
            atol=ATOL,
            err_msg=f"{field}, {subject.name} {side}-padded batches vs one at a time",
        )
    np.testing.assert_array_equal(batched.n_tokens, single.n_tokens)
