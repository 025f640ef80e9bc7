"""Behaviour and geometry metrics: identities for null edits, effects for real ones, controls."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geoprobe.intervene import Edit, axis_entropy_correlation, baseline, compare_with_controls, evaluate
from geoprobe.intervene.metrics import entropy_bits_of, kl_bits
from tests.intervene._util import CALIBRATION, axis_for

TEXTS = [
    "The quick brown fox jumps over the lazy dog. It was a sunny day.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
]


def test_kl_and_entropy_helpers():
    p = torch.log_softmax(torch.tensor([[1.0, 2.0, 0.5]]), -1)
    q = torch.log_softmax(torch.tensor([[0.0, 2.0, 1.5]]), -1)
    pe, qe = p.exp().double(), q.exp().double()
    np.testing.assert_allclose(kl_bits(p, q), (pe * (pe / qe).log2()).sum(-1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(kl_bits(p, p), 0.0, atol=1e-12)
    np.testing.assert_allclose(entropy_bits_of(p), -(pe * pe.log2()).sum(-1).numpy(), rtol=1e-6)


def test_null_edit_has_null_effects_and_cut_has_effects(twin_factory):
    model = twin_factory("llama-3.2-1b")
    axis = axis_for(model, 1)
    base = baseline(model, CALIBRATION, TEXTS, geometry_layer=1, batch_size=4)
    null = evaluate(
        model, CALIBRATION, {1: Edit(axis, "cut", 0.0)}, base, TEXTS, geometry_axis=axis, batch_size=4, n_resamples=200
    )
    assert null.kl.value == 0.0 and null.delta_entropy.value == 0.0 and null.top1_agreement.value == 1.0
    assert null.perplexity_ratio.value == pytest.approx(1.0, abs=1e-12)
    assert null.axis_entropy_rho.value == pytest.approx(null.axis_entropy_rho_base.value)
    assert null.perplexity_base > 1
    cut = evaluate(
        model, CALIBRATION, {1: Edit(axis, "cut", 1.0)}, base, TEXTS, geometry_axis=axis, batch_size=4, n_resamples=200
    )
    assert cut.kl.value > 0 and cut.kl.low <= cut.kl.value <= cut.kl.high
    assert cut.perplexity_ratio.value != 1.0
    assert math.isnan(cut.axis_entropy_rho.value)  # the axis coordinate is constant after a full cut


def test_axis_entropy_correlation_on_calibration_matches_the_fit(twin_factory):
    model = twin_factory("pythia-410m")
    axis = axis_for(model, 1)
    base = baseline(model, CALIBRATION, geometry_layer=1, batch_size=4)
    rho = axis_entropy_correlation(base.values[1], entropy_bits_of(base.logprobs), axis, n_resamples=200)
    assert rho.value == pytest.approx(axis.rho, abs=1e-6) and rho.value >= 0
    assert rho.low <= rho.high


def test_compare_with_controls_reports_both_sides(twin_factory):
    model = twin_factory("llama-3.2-1b")
    axes = {1: axis_for(model, 1), -1: axis_for(model, 2)}
    cmp = compare_with_controls(
        model, CALIBRATION, axes, op="shift", strength=1.0, n_controls=3, texts=TEXTS, batch_size=4, n_resamples=200
    )
    assert cmp.layers == (1, 2) and len(cmp.controls) == 3
    mean, sd = cmp.control_summary("kl")
    assert mean > 0 and sd >= 0
    table = cmp.table()
    for name in ("delta_entropy", "kl", "top1_agreement", "perplexity_ratio", "axis_entropy_rho"):
        assert name in table
    assert "3 seeds" in table


def test_text_nll_equals_a_plain_hugging_face_forward(twin_factory):
    """Per-token NLL against the HF model's own logits, text by text (no padding), to 1e-4 nats."""
    import numpy as np
    import torch

    from geoprobe.intervene.forward import text_nll

    model = twin_factory("llama-3.2-1b")
    texts = ["The river ran past the old mill and into the", "Prices rose", "def f(x):\n    return x + 1"]
    ours = text_nll(model, texts, batch_size=2)
    ref = []
    with torch.inference_mode():
        for t in texts:
            ids = torch.tensor([model.tokenizer(t)["input_ids"]])
            logp = torch.log_softmax(model.hf_model(input_ids=ids).logits.float()[0, :-1], -1)
            ref.append((-logp.gather(-1, ids[0, 1:, None])[:, 0]).double().numpy())
    ref = np.concatenate(ref)
    assert ours.shape == ref.shape  # order is per text, but batches sort by length: compare as multisets too
    np.testing.assert_allclose(np.sort(ours), np.sort(ref), atol=1e-4)
    np.testing.assert_allclose(ours.mean(), ref.mean(), atol=1e-5)
