"""A scan leaves nothing behind: no hooks on the model, and the model is freed once the caller
drops it (no module-level cache, result or capture keeps a reference). The RSS side of this
(five models in one process) is benchmarks/bench_load.py."""

from __future__ import annotations

import gc
import weakref

import pytest

from geoprobe.scan import ScanConfig, scan

FAST = ScanConfig(prompts="builtin", n_resamples=100, pca_resamples=20, null_draws=20, n_permutations=100)


def _n_hooks(bridge) -> int:
    points = {id(hp): hp for hp in bridge.hook_dict.values()}
    torch_hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in bridge.modules())
    return sum(len(hp.fwd_hooks) + len(hp.bwd_hooks) for hp in points.values()) + torch_hooks


@pytest.mark.parametrize("alias", ["phi-2", "mistral-7b"])
def test_scan_removes_its_hooks_and_the_model_is_freed_afterwards(alias, tmp_path):
    import torch

    from geoprobe.models import twin

    m = twin(alias, "tiny", seed=3)  # a fresh model, not the session-cached fixture
    m.bridge(torch.tensor([[1, 2, 3]]))  # TransformerBridge wires its own pre-hooks on the first forward
    before = _n_hooks(m.bridge)
    result, cap = scan(m, None, FAST, return_capture=True)
    assert _n_hooks(m.bridge) == before
    cap.save(tmp_path / "capture")
    result.save(tmp_path / "results.json")
    result.report(tmp_path / "report.html")
    refs = [weakref.ref(m.bridge), weakref.ref(m.hf_model)]
    del m
    gc.collect()
    assert [r() is None for r in refs] == [True, True], "the model outlived the scan: something still holds it"
    # what the caller keeps is arrays and numbers, not the model
    assert result.manifold is not None and cap.values.shape[1] == result.n_prompts
