"""Proof that every edit changes what attention reads, exactly as defined, and nothing else.

Subjects: tiny random twins of Llama-3.2-1B (GQA 2:1), Pythia-410M (GPT-NeoX fused QKV, MHA),
Gemma-3-270M (GQA, sliding window, q/k norm), and the real SmolLM2-135M (slow). For an edit at
layer ℓ the test reads, in the same forward pass, through a probe that keeps the full tensors
geoprobe's attention function handed the model's own attention function,
* the value tensor at ℓ (what the attention receives, after the edit),
* q, k, the mask and scaling at ℓ (hence the attention pattern) and the attention output z,
  and checks z = pattern · v_edited per query head (via its KV group): attention really
  consumed the edited values,
and compares with the unperturbed run: blocks below ℓ bit-identical, q and k at ℓ bit-identical,
the component along the axis / its orthogonal complement as the operation defines them, and
the final logits changed.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe.intervene import Edit, InterventionError, intervened, random_axes
from geoprobe.intervene.forward import final_logprobs
from geoprobe.models.attention import current
from tests.intervene._util import CALIBRATION, axis_for, full_probe, heads, rel, run_full

TWINS = ("llama-3.2-1b", "pythia-410m", "gemma-3-270m")
SUBJECTS = (*TWINS, pytest.param("smollm2-135m", marks=pytest.mark.slow))
TOL = 1e-5
PROMPTS = CALIBRATION[:6]


@pytest.fixture(params=SUBJECTS)
def subject(request, twin_factory):
    name = request.param
    model = request.getfixturevalue("smollm2") if name == "smollm2-135m" else twin_factory(name)
    layer = model.layout.n_layers // 2
    return model, layer, axis_for(model, layer)


def _edited_run(model, layer, edit):
    with full_probe(model, layer) as probe:
        base = run_full(model, probe, PROMPTS, layer)
        with intervened(model, {layer: edit}) as applied:
            pert = run_full(model, probe, PROMPTS, layer)  # the probe now carries the edit
    assert applied.counts[layer] == 1
    return base, pert


def _check_attention_read(model, pert):
    """z at ℓ equals pattern · (the edited v) for every query head and position."""
    lay = model.layout
    v = heads(pert["v"], lay.n_kv_heads, lay.d_head)  # (b, pos, Hkv, d)
    p = pert["pattern"]  # (b, H, q, k)
    z = pert["z"].reshape(v.shape[0], v.shape[1], lay.n_heads, lay.d_head).double()
    kv = torch.tensor(lay.kv_group)
    z_rec = torch.einsum("bhqk,bkhd->bqhd", p, v[:, :, kv])
    mask = pert["mask"].bool()
    assert rel((z_rec - z)[mask], z[mask]) <= TOL, "attention output is not pattern · edited values"
    return z_rec


def _below_identical(base, pert):
    assert len(base["below"]) == len(pert["below"]) > 0
    for i, (a, b) in enumerate(zip(base["below"], pert["below"])):
        assert torch.equal(a, b), f"block output {i} changed although it lies below the edit"
    for name in ("q", "k"):
        assert torch.equal(base[name], pert[name]), f"{name} changed although it lies below the edit"


OPS = [("cut", 1.0), ("cut", 0.5), ("only", 1.0), ("shift", 2.0), ("shift", -1.5)]
# every op on every twin; on the real model (slow) the full cut and a shift, the others being the same code path
EDIT_CASES = [(t, *o) for t in TWINS for o in OPS] + [
    pytest.param("smollm2-135m", *o, marks=pytest.mark.slow) for o in (("cut", 1.0), ("shift", 2.0))
]


@pytest.mark.parametrize("name,op,strength", EDIT_CASES)
def test_edit_is_exact_and_read_by_attention(name, op, strength, request, twin_factory):
    model = request.getfixturevalue("smollm2") if name == "smollm2-135m" else twin_factory(name)
    layer = model.layout.n_layers // 2
    axis = axis_for(model, layer)
    lay = model.layout
    base, pert = _edited_run(model, layer, Edit(axis, op, strength))
    _below_identical(base, pert)
    mask = pert["mask"].bool()
    x = heads(base["v"], lay.n_kv_heads, lay.d_head)[mask]  # (tokens, Hkv, d)
    y = heads(pert["v"], lay.n_kv_heads, lay.d_head)[mask]
    u = torch.as_tensor(axis.direction)
    px, py = (x * u).sum(-1), (y * u).sum(-1)  # (tokens, Hkv)
    perp_x, perp_y = x - px[..., None] * u, y - py[..., None] * u
    if op == "cut":
        assert rel(py - (1 - strength) * px, px) <= TOL
        assert rel(perp_y - perp_x, perp_x) <= TOL, "the orthogonal complement changed"
    elif op == "only":
        assert rel(perp_y, perp_x) <= TOL, "something off the axis survived"
        assert rel(py - px, px) <= TOL, "the component along the axis changed"
    else:
        expected = strength * torch.as_tensor(axis.sigma)[None, :]
        assert rel(py - px - expected, expected) <= TOL
        assert rel(perp_y - perp_x, perp_x) <= TOL
    assert (y - x).abs().max() > 1e-3 * x.abs().max(), "the edit did not change the values"
    z_rec = _check_attention_read(model, pert)
    # control: the unedited values do not reproduce the edited attention output
    v0 = heads(base["v"], lay.n_kv_heads, lay.d_head)
    z_wrong = torch.einsum("bhqk,bkhd->bqhd", pert["pattern"], v0[:, :, torch.tensor(lay.kv_group)])
    assert (z_wrong - z_rec)[mask].abs().max() > 100 * TOL * z_rec[mask].abs().max()
    # the output changed
    diff = (pert["logits"] - base["logits"])[mask].abs().max()
    assert diff > 1e-4, f"final logits unchanged ({diff}) by {op} {strength} at layer {layer}"


def test_strength_zero_is_identity(subject):
    model, layer, axis = subject
    for op in ("cut", "only", "shift"):
        base, pert = _edited_run(model, layer, Edit(axis, op, 0.0))
        assert torch.equal(base["logits"], pert["logits"]), op
        assert torch.equal(base["v"], pert["v"]), op


def test_several_layers_at_once_and_negative_layers(twin_factory):
    model = twin_factory("llama-3.2-1b")
    L = model.layout.n_layers
    a0, a2 = axis_for(model, 0), axis_for(model, L - 1)
    with full_probe(model, 0) as probe, intervened(model, {0: Edit(a0, "cut"), -1: Edit(a2, "cut")}) as applied:
        run_full(model, probe, PROMPTS, 0)
    assert applied.counts == {0: 1, L - 1: 1}  # -1 resolved to the last layer, and it ran


def test_random_axes_are_orthogonal_unit_and_seeded(subject):
    model, layer, axis = subject
    ctrl = random_axes(axis, 4, random_state=7)
    assert len(ctrl) == 4
    for c in ctrl:
        np.testing.assert_allclose(np.linalg.norm(c.direction, axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(np.einsum("hd,hd->h", c.direction, axis.direction), 0.0, atol=1e-12)
        assert c.kind == "random" and c.shape == axis.shape
        np.testing.assert_allclose(c.sigma, np.sqrt(np.einsum("hd,hde,he->h", c.direction, axis.cov, c.direction)))
    assert not np.allclose(ctrl[0].direction, ctrl[1].direction)
    again = random_axes(axis, 4, random_state=7)
    for a, b in zip(ctrl, again):
        np.testing.assert_array_equal(a.direction, b.direction)


# -- bad input ---------------------------------------------------------------------------------
def test_strength_outside_unit_interval_is_one_line_error(twin_factory):
    axis = axis_for(twin_factory("llama-3.2-1b"), 1)
    for op in ("cut", "only"):
        for bad in (1.5, -0.1):
            with pytest.raises(InterventionError) as e:
                Edit(axis, op, bad)
            msg = str(e.value)
            assert str(bad) in msg and "--strength" in msg and "\n" not in msg
    with pytest.raises(InterventionError, match="--op"):
        Edit(axis, "scale", 1.0)  # type: ignore[arg-type]
    with pytest.raises(InterventionError, match="finite"):
        Edit(axis, "shift", float("nan"))
    Edit(axis, "shift", 5.0)  # shift strengths are not bounded


def test_layer_out_of_range_names_the_range(twin_factory):
    model = twin_factory("llama-3.2-1b")
    axis = axis_for(model, 1)
    L = model.layout.n_layers
    for bad in (L, -L - 1, 99):
        with pytest.raises(InterventionError) as e:
            with intervened(model, {bad: Edit(axis)}):
                pass
        msg = str(e.value)
        assert str(bad) in msg and f"0..{L - 1}" in msg and "--layers" in msg


def test_wrong_axis_shape_is_an_error(twin_factory):
    llama, pythia = twin_factory("llama-3.2-1b"), twin_factory("pythia-410m")
    axis = axis_for(llama, 1)  # 2 KV heads; the Pythia twin has 4
    with pytest.raises(InterventionError, match=r"\(2, 16\).*\(4, 16\)"):
        with intervened(pythia, {1: Edit(axis)}):
            pass


def test_an_edit_that_never_runs_raises(twin_factory):
    model = twin_factory("llama-3.2-1b")
    axis = axis_for(model, 1)
    with pytest.raises(InterventionError, match="never ran"):
        with intervened(model, {1: Edit(axis)}):
            pass  # no forward pass: the edit did nothing, which must not pass silently
    _edit_is_gone(model)


def _edit_is_gone(model):
    """No probe is active, the model's own attention implementation is back, and a forward pass
    gives the unedited log-probs."""
    assert current() is None
    assert not model.hf_model.config._attn_implementation.startswith("geoprobe_")
    lp, _ = final_logprobs(model, PROMPTS, batch_size=4)
    ref, _ = final_logprobs(model, PROMPTS, batch_size=4)
    assert torch.equal(lp, ref)
    axis = axis_for(model, 1)
    with intervened(model, {1: Edit(axis)}):
        edited, _ = final_logprobs(model, PROMPTS, batch_size=4)
    assert (edited - lp).abs().max() > 1e-4  # (the comparison can tell an edit from none)
    lp2, _ = final_logprobs(model, PROMPTS, batch_size=4)
    assert torch.equal(lp2, lp)


def test_hooks_removed_after_an_exception_in_the_block(twin_factory):
    model = twin_factory("llama-3.2-1b")
    axis = axis_for(model, 1)
    with pytest.raises(RuntimeError, match="boom"):
        with intervened(model, {1: Edit(axis)}):
            raise RuntimeError("boom")
    _edit_is_gone(model)
