"""A sula.json written by geoprobe 0.1.0 still loads, and re-encodes to the same bytes."""

import json
from pathlib import Path

from geoprobe.sula import SulaResult

STORED = Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "sula.json"


def test_a_0_1_0_sula_file_loads_and_re_encodes_byte_identical():
    text = STORED.read_text(encoding="utf-8")
    res = SulaResult.load(STORED)
    assert set(res.conditions) == {"main", "lexical_remap", "shuffled", "ablated"} and res.config.seed == 2
    assert json.dumps(res.to_dict(), indent=1, allow_nan=False, ensure_ascii=False) == text


def test_a_file_from_before_the_label_mass_threshold_scores_every_prompt():
    """sula.json files from before issue 27 have no min_label_mass: none was applied, so none is
    assumed (not today's default), nothing is flagged, and the page says so."""
    res = SulaResult.load(STORED)
    assert res.config.min_label_mass is None and res.flagged == ()
    assert all(c.low_mass is None and c.flagged is None and c.scored.all() for c in res.conditions.values())
    assert all(c.metrics.n == c.n and c.metrics.n_excluded is None for c in res.conditions.values())
    html = "".join(s.html for s in res.sections())
    assert "written before the label-mass threshold: every prompt is scored" in html
