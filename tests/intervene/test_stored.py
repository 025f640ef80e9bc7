"""An intervene.json written by geoprobe 0.1.0 still loads, and re-encodes to the same bytes."""

import json
from pathlib import Path

from geoprobe.intervene import InterventionResult

STORED = Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "intervene.json"


def test_a_0_1_0_intervene_file_loads_and_re_encodes_byte_identical():
    text = STORED.read_text(encoding="utf-8")
    res = InterventionResult.load(STORED)
    assert res.experiments() == [((1,), 0.5), ((1,), 1.0)] and len(res.rows) == 2 * 3
    assert json.dumps(res.to_dict(), indent=1, allow_nan=False, ensure_ascii=False) == text
