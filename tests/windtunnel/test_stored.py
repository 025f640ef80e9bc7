"""A windtunnel.json and a run.json written by geoprobe 0.1.0 still load, and re-encode to the same bytes
(``geoprobe windtunnel train --task hmm --scale tiny --seed 1`` then ``eval --n-eval 16 --n-probes 8``)."""

import json
from pathlib import Path

from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.train import RunSpec

FIXTURES = Path(__file__).parents[1] / "fixtures" / "v0_1_0"


def test_a_0_1_0_windtunnel_file_loads_and_re_encodes_byte_identical():
    stored = FIXTURES / "windtunnel.json"
    res = WindTunnelResult.load(stored)
    assert res.name == "hmm" and res.lengths == (6, 9) and set(res.metrics) == {"transformer", "mlp"}
    assert res.geometry is not None and res.geometry.n_probes == 8 and res.ablations is not None
    assert res.specs["transformer"]["train"]["seed"] == 1
    text = json.dumps(res.to_dict(), indent=1, allow_nan=False, ensure_ascii=False)
    assert text == stored.read_text(encoding="utf-8")


def test_a_0_1_0_run_spec_loads_and_re_encodes_byte_identical():
    stored = FIXTURES / "windtunnel_run.json"
    text = stored.read_text(encoding="utf-8")
    spec = RunSpec.from_json(json.loads(text), str(stored))
    assert spec.arch == "transformer" and spec.train.steps == 40 and spec.train.threads is None
    assert spec.json_text() == text
    assert spec.to_json() == WindTunnelResult.load(FIXTURES / "windtunnel.json").specs["transformer"]
