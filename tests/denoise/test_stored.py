"""A denoise.json written by geoprobe 0.1.0 still loads, and re-encodes to the same bytes
(``geoprobe denoise --tiny --task linear --warp --steps 20 --n-resamples 50 --seed 1``)."""

import json
from pathlib import Path

from geoprobe.denoise.landscape import DescentComparison, EnergyLandscape
from geoprobe.denoise.result import DenoiseResult, Fit, Score

STORED = Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "denoise.json"


def test_a_0_1_0_denoise_file_loads_and_re_encodes_byte_identical():
    res = DenoiseResult.load(STORED)
    assert res.name == "linear" and res.provenance["seed"] == 1 and res.config["steps"] == 20
    assert [b.key for b in res.lengths] == [10, 40] and [b.key for b in res.transfer] == [2, 3]
    assert isinstance(res.warp["scores"][0], Score) and isinstance(res.warp["fits"][0], Fit)
    assert res.score("oracle").ratio is None and res.score("softmax").ratio is not None
    text = json.dumps(res.to_dict(), indent=1, allow_nan=False, ensure_ascii=False)
    assert text == STORED.read_text(encoding="utf-8")


def test_the_stored_energy_view_reads_as_its_results():
    energy = DenoiseResult.load(STORED).energy
    land = EnergyLandscape.from_dict(energy["landscape"])
    descent = DescentComparison.from_dict(energy["descent"])
    assert land.to_dict() == energy["landscape"] and descent.to_dict() == energy["descent"]
    assert len(descent.mse) == descent.n_steps + 1 == 6
