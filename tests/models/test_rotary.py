"""The rotary adapter (geoprobe/models/rotary.py) on planted rotations, one per signature form.

Each case takes a modeling file's own ``apply_rotary_pos_emb`` from the installed transformers,
plants a known vector and known angles (different per batch row), builds the pair in that file's
convention, and compares the adapter's turn with the rotation computed here by hand: each pair of
dims (i, j) turned by its angle θ, y_i = x_i cosθ − x_j sinθ, y_j = x_j cosθ + x_i sinθ, the
pairs being (i, i + r/2) for rotate_half functions and (2i, 2i + 1) for GPT-J's interleaved ones,
dims beyond the rotated width unchanged. Unrotating the planted result gives the vector back.
All in float64, at 1e-6.
"""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from geoprobe.models.rotary import RotaryFunction, unrotate

TOL = 1e-6
B, H, D = 2, 3, 16


def function(model_type: str):
    return importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}").apply_rotary_pos_emb


def planted_angles(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(B, n, generator=g, dtype=torch.float64) - 0.5) * 4 * math.pi  # (batch, n), ±2π


def by_hand(x: torch.Tensor, theta: torch.Tensor, pairs: list[tuple[int, int]]) -> torch.Tensor:
    """x (batch, head, d) with dims (i, j) of pair f turned by theta[:, f]."""
    y = x.clone()
    for f, (i, j) in enumerate(pairs):
        c, s = theta[:, f].cos()[:, None], theta[:, f].sin()[:, None]
        y[:, :, i] = x[:, :, i] * c - x[:, :, j] * s
        y[:, :, j] = x[:, :, j] * c + x[:, :, i] * s
    return y


def half(r: int) -> list[tuple[int, int]]:
    return [(i, i + r // 2) for i in range(r // 2)]


def interleaved(r: int) -> list[tuple[int, int]]:
    return [(2 * i, 2 * i + 1) for i in range(r // 2)]


def doubled(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Llama's (cos, sin) of width 2n: each angle once per half."""
    t = torch.cat([theta, theta], dim=-1)
    return t.cos(), t.sin()


# model type, tensor parameters, where sin is in the pair, rotated width r of D, its pairs of dims,
# and the pair as the module receives it, from the angles θ (batch, r/2)
FORMS = {
    "llama (q, k, cos, sin)": ("llama", 2, 1, D, half, doubled),
    "llama, partial: the module slices (StableLM, Phi)": ("llama", 2, 1, 4, half, doubled),
    "gpt_oss (q, k, cos, sin), half-width cos": ("gpt_oss", 2, 1, D, half, lambda t: (t.cos(), t.sin())),
    "gemma3n (x, cos, sin, unsqueeze_dim)": ("gemma3n", 1, 1, D, half, doubled),
    "gemma4 (x, cos, sin, unsqueeze_dim)": ("gemma4", 1, 1, D, half, doubled),
    "gptj (tensor, sin, cos), partial, interleaved": ("gptj", 1, 0, 8, interleaved, lambda t: (t.sin(), t.cos())),
    "codegen (tensor, sin, cos), full width": ("codegen", 1, 0, D, interleaved, lambda t: (t.sin(), t.cos())),
}


@pytest.mark.parametrize("form", FORMS)
def test_each_signature_form_turns_a_planted_vector_by_planted_angles(form):
    model_type, n_tensors, sin_index, r, pairs, pair_of = FORMS[form]
    rf = RotaryFunction.read(function(model_type))
    assert rf is not None and (rf.n_tensors, rf.sin_index) == (n_tensors, sin_index)
    x = torch.randn(B, H, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    theta = planted_angles(r // 2, seed=len(form))
    pair = pair_of(theta)
    want = by_hand(x, theta, pairs(r))
    assert rf.width(pair, D) in (r, D)  # the slice it accepts: the rotated one, or all dims where it picks its own
    torch.testing.assert_close(rf.turn(x, pair), want, atol=TOL, rtol=0)
    torch.testing.assert_close(unrotate(rf, want, pair), x, atol=TOL, rtol=0)
    assert rf.rotated_dims(pair, D) == r
    # a control: turning forth again instead of back is far from the planted vector
    assert (rf.turn(want, pair) - x).abs().max() > 100 * TOL


@pytest.mark.parametrize("form", ["llama (q, k, cos, sin)", "gptj (tensor, sin, cos), partial, interleaved"])
def test_a_scaled_pair_is_divided_out(form):
    """YaRN multiplies cos and sin by an attention factor m: the turn scales by m, unrotate undoes both."""
    model_type, _, _, r, pairs, pair_of = FORMS[form]
    rf = RotaryFunction.read(function(model_type))
    x = torch.randn(B, H, D, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    theta = planted_angles(r // 2, seed=3)
    m = 1.3
    pair = tuple(m * p for p in pair_of(theta))
    turned = rf.turn(x, pair)
    want = by_hand(x, theta, pairs(r))
    torch.testing.assert_close(turned[..., :r], m * want[..., :r], atol=TOL, rtol=0)
    torch.testing.assert_close(unrotate(rf, turned, pair), x, atol=TOL, rtol=0)


def test_the_key_of_a_two_tensor_function_is_its_k():
    """A function whose q and k paths differ: the adapter reads the one named k."""

    def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
        return q * 0, k * cos.unsqueeze(unsqueeze_dim) + k.flip(-1) * sin.unsqueeze(unsqueeze_dim)

    rf = RotaryFunction.read(apply_rotary_pos_emb)
    assert rf.out_index == 1
    x = torch.randn(B, H, D, dtype=torch.float64)
    one = torch.ones(B, D, dtype=torch.float64)
    torch.testing.assert_close(rf.turn(x, (one, 0 * one)), x, atol=TOL, rtol=0)


@pytest.mark.parametrize(
    "signature",
    [
        lambda x, freqs_cis: x,  # complex frequencies, no cos/sin pair
        lambda cos, sin, x: x,  # no tensor before the pair
        lambda q, k, cos, position_ids: q,  # cos without sin
    ],
)
def test_a_signature_without_a_cos_sin_pair_after_a_tensor_is_not_read(signature):
    assert RotaryFunction.read(signature) is None


def test_a_function_that_accepts_no_slice_is_refused_not_guessed():
    def apply_rotary_pos_emb(x, cos, sin):
        return x[..., :3] * cos[..., :3]  # changes the width of whatever it is given

    rf = RotaryFunction.read(apply_rotary_pos_emb)
    one = torch.ones(B, 8, dtype=torch.float64)
    assert rf.width((one, one), D) == 0
    with pytest.raises(ValueError, match="accepts no slice"):
        unrotate(rf, torch.ones(B, H, D, dtype=torch.float64), (one, one))


@pytest.mark.parametrize("alias", ["llama-3.2-1b", "pythia-410m"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_keys_are_pre_rotary(alias, dtype):
    """In half precision the captured keys are the raw key projection at the final token (turned back
    from the model's rotary), as in float32: the load-time check that a key turns back to its projection
    allows the dtype's roundoff (architecture.rotation_tolerance). With a float32 tolerance every layer was
    taken for post-rotary and bfloat16 keys came out rotated (relative L2 error 0.6-1.0 against the
    projection; found by the GPU benchmark's dry run). Reference: the same model's eager forward, hooks
    on the raw projections (tests/capture/_reference.py); tolerance 4 units of the dtype's roundoff."""
    import numpy as np

    from geoprobe import CaptureConfig, capture, twin
    from tests.capture._reference import run_final_token

    lm = twin(alias, dtype=dtype)
    assert lm.arch.post_rotary_layers == frozenset()
    text = "The rotary embedding turns each pair of dims by an angle that grows with the position"
    cap = capture(lm, [text], CaptureConfig(batch_size=1, key_weights=False))
    hf = lm.hf_model
    hf.set_attn_implementation("eager")
    try:
        ref = run_final_token(hf, lm.tokenizer(text)["input_ids"])
    finally:
        hf.set_attn_implementation("sdpa")
    tol = 4 * torch.finfo(getattr(torch, dtype)).eps
    for layer, k in enumerate(ref.k):
        got = cap.keys[layer, 0, : k.shape[0], : k.shape[1]]
        err = np.linalg.norm(got - k, axis=-1) / np.linalg.norm(k, axis=-1)
        assert err.max() < tol, (layer, err.max(), tol)
