"""A comparison.json written by geoprobe 0.1.0 still loads, and re-encodes to the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from geoprobe.compare import GlobalPCA, ModelComparison
from geoprobe.recipes import load_result

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v0_1_0" / "comparison.json"


def test_v0_1_0_comparison_file_loads_and_reencodes_byte_identical():
    text = FIXTURE.read_text(encoding="utf-8")
    comp = ModelComparison.load(FIXTURE)
    assert len(comp.rows) == 2 and len(comp.sources) == 3 and isinstance(comp.global_pca, GlobalPCA)
    assert [e.domain for e in comp.rows[0].restricted] == ["math"]
    assert json.dumps(comp.to_dict(), indent=1, allow_nan=False, ensure_ascii=False) == text
    assert load_result(FIXTURE) == comp and ModelComparison.from_dict(json.loads(text)) == comp
