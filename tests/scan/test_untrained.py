"""An untrained model beats no null and passes no criterion (issue 37 part 1): random-init twins of five
architectures, each scored against fresh random-init draws of its own architecture, and a training run's
step-0 checkpoint, scored against itself (the series' own step 0)."""

from __future__ import annotations

import pytest

from geoprobe.scan import ScanConfig, scan

FAST = ScanConfig(prompts="builtin", n_resamples=200, pca_resamples=50, null_draws=50, n_permutations=200)
ARCHITECTURES = ("pythia-410m", "phi-2", "llama-3.2-1b", "mistral-7b", "gemma-3-270m")


@pytest.mark.parametrize("alias", ARCHITECTURES)
def test_a_random_init_twin_passes_no_criterion_and_beats_no_null(alias, twin_factory):
    r = scan(twin_factory(alias), config=FAST)
    null = r.init_null
    assert null is not None and null.source == "twin" and null.draws == FAST.init_draws
    assert len(r.scorecard.criteria) == 3
    for c in r.scorecard.criteria:
        assert c.contrast is not None, c.key
        assert c.beats_null is False and c.passes is False, (c.key, c.contrast, c.detail)
    o = next(c for c in r.scorecard.criteria if c.key == "key_orthogonality")
    assert o.threshold_met  # Gaussian-like columns are under 0.20 at init: the threshold alone says little


def test_a_step0_checkpoint_is_its_own_null_and_passes_nothing(tmp_path):
    from geoprobe.models.loading import load_model
    from geoprobe.trajectory import train_trajectory
    from tests.trajectory.conftest import planted_documents, tiny

    train_trajectory(tiny(steps=2), out=tmp_path, documents=planted_documents(), threads=1)
    step0 = load_model(str(tmp_path / "checkpoints" / "step0"))
    r = scan(step0, config=FAST)
    assert r.init_null.source == "step0" and "own step 0" in r.init_null.label
    for c in r.scorecard.criteria:
        assert c.contrast.value == 0.0 and c.contrast.low <= 0.0 <= c.contrast.high, c.key
        assert not c.beats_null and not c.passes
    later = scan(load_model(str(tmp_path / "checkpoints" / "step2")), config=FAST)
    assert later.init_null.source == "step0" and later.init_null.draws == 1  # the run's step 0, not a fresh twin


def test_a_baseline_that_is_no_model_is_refused_before_anything_loads(tmp_path):
    from geoprobe.errors import GeoprobeError
    from geoprobe.scan.run import check_baseline

    with pytest.raises(GeoprobeError, match=r"--baseline '.*nope/step0' is no model directory"):
        scan("twin:gpt2", config=ScanConfig(prompts="builtin", baseline=str(tmp_path / "nope" / "step0")))
    check_baseline(ScanConfig(prompts="builtin", baseline=str(tmp_path)))  # a directory: loaded after the capture
    check_baseline(ScanConfig(prompts="builtin", baseline="pythia-70m"))  # an alias: not a path, not checked here
