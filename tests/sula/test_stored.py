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
