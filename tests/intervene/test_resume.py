"""Resuming from the residual stream gives the full intervened forward's logits (every
architecture in RESUMABLE: the family twins and tiny twins of gpt2, qwen2, gemma2, bloom, gpt_neo)."""

from __future__ import annotations

import pytest
import torch

from geoprobe.intervene import RESUMABLE, Edit, Resumable, intervened, random_axes, sweep
from geoprobe.intervene.forward import final_logprobs
from tests.conftest import FAMILY_TWINS
from tests.intervene._util import CALIBRATION, axis_for

TYPE_TWINS = ("gpt2", "qwen2", "gemma2", "bloom", "gpt_neo")
SUBJECTS = (*FAMILY_TWINS, *TYPE_TWINS, pytest.param("smollm2-135m", marks=pytest.mark.slow))
ATOL = 1e-4


@pytest.fixture(params=SUBJECTS)
def subject(request, twin_factory):
    name = request.param
    return request.getfixturevalue("smollm2") if name == "smollm2-135m" else twin_factory(name)


def test_resumed_sweep_equals_full_intervened_forward(subject):
    model = subject
    assert model.arch.model_type in RESUMABLE
    L = model.layout.n_layers
    layer = L // 2 if L > 3 else 1
    axis = axis_for(model, layer)
    top = axis_for(model, L - 1)
    edit_sets = [{layer: Edit(axis, "cut", s)} for s in (0.25, 1.0)]
    edit_sets += [
        {layer: Edit(axis, "shift", -2.0)},
        {layer: Edit(random_axes(axis, 1, 3)[0], "only", 1.0)},
        {layer: Edit(axis, "cut", 1.0), L - 1: Edit(top, "cut", 1.0)},
    ]  # multi-layer
    res = sweep(model, CALIBRATION, edit_sets, batch_size=4)
    assert res.resumed and res.layer == layer
    base, _ = final_logprobs(model, CALIBRATION, batch_size=4)
    torch.testing.assert_close(res.base, base, rtol=0, atol=ATOL)
    for edits, got in zip(edit_sets, res.logprobs):
        with intervened(model, edits):
            full, _ = final_logprobs(model, CALIBRATION, batch_size=4)
        torch.testing.assert_close(got, full, rtol=0, atol=ATOL)
        assert (full - base).abs().max() > 1e-3  # the edit did something, so the equality is not vacuous


def test_every_resumable_type_is_tested():
    from geoprobe.models import twin

    tested = {twin(n).arch.model_type for n in (*FAMILY_TWINS, *TYPE_TWINS)}
    assert RESUMABLE <= tested, f"RESUMABLE names untested types {sorted(RESUMABLE - tested)}"


def test_an_untested_type_falls_back_to_full_forwards(twin_factory):
    model = twin_factory("starcoder2")
    assert model.arch.model_type not in RESUMABLE
    edit_sets = [{1: Edit(axis_for(model, 1), "cut", 1.0)}]
    res = sweep(model, CALIBRATION[:4], edit_sets, batch_size=4)
    assert not res.resumed
    with intervened(model, edit_sets[0]):
        full, _ = final_logprobs(model, CALIBRATION[:4], batch_size=4)
    torch.testing.assert_close(res.logprobs[0], full, rtol=0, atol=0)


def test_resumed_edit_must_run_and_stay_above_the_resume_layer(twin_factory):
    model = twin_factory("llama-3.2-1b")
    r = Resumable(model, CALIBRATION, 1, batch_size=4)
    assert torch.equal(r.logprobs(None), r.base)
    with pytest.raises(ValueError, match="below the resume layer"):
        r.logprobs({0: Edit(axis_for(model, 0))})


def test_fallback_reruns_the_full_model(twin_factory):
    model = twin_factory("pythia-410m")
    axis = axis_for(model, 1)
    edit_sets = [{1: Edit(axis, "cut", 1.0)}]
    full = sweep(model, CALIBRATION, edit_sets, batch_size=4, resume=False)
    fast = sweep(model, CALIBRATION, edit_sets, batch_size=4)
    assert not full.resumed and fast.resumed
    torch.testing.assert_close(full.logprobs[0], fast.logprobs[0], rtol=0, atol=ATOL)


def test_resumed_run_returns_the_values_attention_read(twin_factory):
    """run(edits, value_layers) gives the same edited final-token values as a full intervened forward."""
    import numpy as np

    from geoprobe.intervene import Edit, intervened
    from geoprobe.intervene.forward import final_logprobs
    from geoprobe.intervene.resume import Resumable
    from tests.intervene._util import CALIBRATION, axis_for

    model = twin_factory("llama-3.2-1b")
    layer = model.layout.n_layers - 2
    edits = {layer: Edit(axis_for(model, layer), "cut", 1.0)}
    top = model.layout.n_layers - 1
    lp, vals = Resumable(model, CALIBRATION[:6], layer).run(edits, [layer, top])
    with intervened(model, edits):
        ref_lp, ref_vals = final_logprobs(model, CALIBRATION[:6], value_layers=[layer, top])
    assert torch.allclose(lp, ref_lp, atol=1e-4)
    for k in (layer, top):
        np.testing.assert_allclose(vals[k], ref_vals[k], atol=1e-5)
