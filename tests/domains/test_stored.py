"""A domains.json written by geoprobe 0.1.0 still loads, and re-encodes to the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

from geoprobe.domains import DomainComparison
from geoprobe.recipes import load_result

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v0_1_0" / "domains.json"


def test_v0_1_0_domains_file_loads_and_reencodes_byte_identical():
    text = FIXTURE.read_text(encoding="utf-8")
    cmp = DomainComparison.load(FIXTURE)
    assert cmp.domains == ("math",) and set(cmp.sets) == {"mixed", "math", "math-control"}
    assert json.dumps(cmp.to_dict(), indent=1, allow_nan=False, ensure_ascii=False) == text
    assert load_result(FIXTURE) == cmp and DomainComparison.from_dict(json.loads(text)) == cmp
