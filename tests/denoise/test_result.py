"""A tiny end-to-end run in-process: JSON round trip, damaged files, checks, energy section, escaped report."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from geoprobe.denoise.config import DenoiseConfig, tiny_config
from geoprobe.denoise.result import DenoiseResult
from geoprobe.denoise.run import run_denoise
from geoprobe.errors import GeoprobeError, ResultsError
from geoprobe.report.page import render


@pytest.fixture(scope="module")
def result():
    return run_denoise(tiny_config(task="linear", warp=True, steps=40, n_resamples=100))


def test_structure(result):
    assert [s.method for s in result.scores][:4] == ["oracle", "finite-context", "softmax", "linear"]
    assert result.score("oracle").ratio is None and result.score("softmax").ratio is not None
    assert [b.key for b in result.lengths] == [10, 40] and [b.key for b in result.transfer] == [2, 3]
    for s in result.scores:
        assert s.mse.low <= s.mse.value <= s.mse.high
    # the paired ratio's point value is the ratio of the means on the same prompts
    r = result.score("linear").ratio.value
    assert r == pytest.approx(result.score("linear").mse.value / result.score("oracle").mse.value, rel=1e-12)
    assert result.warp is not None and any(f.structure == "(AAᵀ)⁻¹" for f in result.warp["fits"])
    e = result.energy
    assert e["one_step_max_abs_diff"] < 1e-12  # one gradient step == softmax attention at (α, β)
    assert len(e["descent"]["mse"]) == 6
    assert {c["check"].split()[0] for c in result.checks()} == {"softmax", "linear"}
    assert result.provenance["seed"] == 0 and len(result.provenance["config_sha256"]) == 64
    assert result.provenance["versions"]["torch"]


def test_json_round_trip_and_determinism(result, tmp_path):
    path = result.save(tmp_path / "denoise.json")
    back = DenoiseResult.load(tmp_path)
    assert back == result
    again = run_denoise(tiny_config(task="linear", warp=True, steps=40, n_resamples=100))
    strip = lambda d: {k: v for k, v in d.items() if k not in ("training", "provenance")}  # noqa: E731 (timings)
    assert strip(again.to_dict()) == strip(result.to_dict())
    d = json.loads(path.read_text())
    d["scores"] = [s for s in d["scores"] if s["method"] != "oracle"]
    (tmp_path / "bad.json").write_text(json.dumps(d))
    with pytest.raises(ResultsError, match="damaged"):
        DenoiseResult.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"kind": "geoprobe.windtunnel", "version": 1}))
    with pytest.raises(ResultsError, match="not a geoprobe"):
        DenoiseResult.load(tmp_path / "other.json")


def test_report_escapes_user_strings(result, tmp_path):
    evil = "<script>alert(1)</script>"
    r = replace(result, provenance={**result.provenance, "model_id": evil})
    html = render(r)
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for anchor in ("scores", "training", "lengths", "transfer", "weights", "energy", "descent"):
        assert f'id="{anchor}"' in html
    p = result.report(tmp_path / "r.html")
    with pytest.raises(GeoprobeError, match="--force"):
        result.report(p)


def test_config_validation():
    with pytest.raises(GeoprobeError, match="--lengths values of 9"):
        DenoiseConfig(task="linear", lengths=(8, 20))
    with pytest.raises(GeoprobeError, match="--transfer-dims"):
        DenoiseConfig(task="linear", transfer_dims=(17,))
    with pytest.raises(GeoprobeError, match="--n-eval"):
        DenoiseConfig(n_eval=3)
    assert DenoiseConfig(task="mixture").make_task().signal_var == 0.02
    assert np.isclose(DenoiseConfig(task="sphere").make_task().noise_var, 0.1)
