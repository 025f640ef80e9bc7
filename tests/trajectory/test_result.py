"""TrajectoryResult: round trip, lookups by step and by Pythia's revision name, the page, step_of."""

from __future__ import annotations

import pytest

from geoprobe.errors import ResultsError
from geoprobe.trajectory import TrajectoryResult, step_of


def test_round_trip_and_lookups(trained, tmp_path):
    result, out = trained
    back = TrajectoryResult.load(result.save(tmp_path / "trajectory.json"))
    assert back == result and back.steps == result.steps
    assert result.checkpoint(4) is result.checkpoint("step4")
    assert result.directory("step4", out) == out / "checkpoints" / "step4"
    assert [c.revision for c in result.checkpoints] == ["step0", "step1", "step2", "step4", "step8", "step9"]
    with pytest.raises(ResultsError, match="no checkpoint 'step3'; it holds steps 0, 1, 2, 4, 8, 9"):
        result.checkpoint("step3")
    assert result.total_bytes == sum(c.bytes for c in result.checkpoints) > 0


def test_page_has_the_loss_figure_and_the_checkpoint_table(trained, tmp_path):
    result, _ = trained
    html = result.report(tmp_path / "trajectory.html").read_text()
    assert 'id="loss"' in html and "checkpoints/step8" in html and "not Pythia" in html


def test_step_of_is_none_outside_a_trajectory(trained, tmp_path):
    _, out = trained
    assert step_of(out / "checkpoints" / "step2") == 2
    assert step_of(tmp_path) is None


def test_a_manifest_with_checkpoints_out_of_order_is_damaged(trained, tmp_path):
    import json

    result, _ = trained
    d = result.to_dict()
    d["checkpoints"] = d["checkpoints"][::-1]
    (tmp_path / "trajectory.json").write_text(json.dumps(d))
    with pytest.raises(ResultsError, match="is damaged"):
        TrajectoryResult.load(tmp_path)
