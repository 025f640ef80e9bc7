"""Attention sinks: one definition for every sink architecture (attention.final_row_distribution).

geoprobe's distribution is the one over the real keys (it sums to 1) and the sink's mass is kept
beside it (``LayerRecord.sink_mass``). Checked per sink architecture against two independent
computations: HF eager's ``output_attentions`` final row normalised over the keys (gpt-oss's eager
leaves the sink's mass out of the row, Granite-SWA's renormalises), and the sink's mass from the
attention output itself: a sink takes mass but adds no value, so the output with the sink is the
output without it (the same weights with the sink logits at -1e4) times 1 - sink mass, head by head.
"""

from __future__ import annotations

import pytest
import torch

from geoprobe.models.architecture import inspect_model, probing
from geoprobe.models.attention import Probe
from geoprobe.models.tiny import same_weights, tiny_model

SINK_TYPES = ("gpt_oss", "granite_swa", "granitemoe_swa", "flint", "hy_v4")
TOL = 1e-5


def sinks(module) -> torch.nn.Parameter:
    return next(p for n, p in module.named_parameters() if n.split(".")[-1] == "sinks")


def final(model, arch, ids):
    probe = Probe(distribution=True)
    probe.new_batch(None)
    with probing(model, arch, probe), torch.no_grad():
        model(ids, use_cache=False)
    return probe


@pytest.mark.parametrize("model_type", SINK_TYPES)
def test_sink_mass_and_distribution_are_the_models(model_type):
    model = tiny_model(model_type)
    arch = inspect_model(model)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():  # planted: sinks that take a fair share of the mass in every head
        for layer in arch.layout.model_layers:
            sinks(arch.modules[layer]).copy_(2.0 + torch.rand(arch.layout.n_heads, generator=g) * 8)
    ids = torch.randint(3, 512, (1, 11), generator=torch.Generator().manual_seed(2))
    with_sink = final(model, arch, ids)
    with torch.no_grad():
        rows = same_weights(model, "eager")(ids, output_attentions=True, use_cache=False).attentions
    for i, layer in enumerate(arch.layout.model_layers):
        with torch.no_grad():  # this layer's sinks off: its input (from the layers before) is unchanged
            kept_logits = sinks(arch.modules[layer]).clone()
            sinks(arch.modules[layer]).fill_(-1e4)
        without = final(model, arch, ids)
        with torch.no_grad():
            sinks(arch.modules[layer]).copy_(kept_logits)
        rec = with_sink.records[layer]
        assert rec.sink_mass is not None and bool((rec.sink_mass > 0.05).any())  # the planted sinks take mass
        row = rows[i][0, :, -1].double()
        torch.testing.assert_close(rec.distribution[0].double(), row / row.sum(-1, keepdim=True), atol=TOL, rtol=0)
        assert float(rec.distribution[0].sum(-1).sub(1).abs().max()) < 1e-5
        kept = 1 - rec.sink_mass[0].double()  # (head,)
        z, z0 = rec.z[0].double(), without.records[layer].z[0].double()  # (head, d)
        torch.testing.assert_close(z, z0 * kept[:, None], atol=TOL, rtol=1e-4)
