"""positional.json files written by geoprobe 0.1.0 (a model's priors, a wind-tunnel length curve)
still load, and re-encode to the same bytes."""

import json
from pathlib import Path

import pytest

from geoprobe.positional import PositionalResult, TunnelLengthCurve, load_positional

STORED = Path(__file__).parents[1] / "fixtures" / "v0_1_0"


@pytest.mark.parametrize(
    "name, cls", [("positional.json", PositionalResult), ("positional-windtunnel.json", TunnelLengthCurve)]
)
def test_a_0_1_0_positional_file_loads_and_re_encodes_byte_identical(name, cls):
    text = (STORED / name).read_text(encoding="utf-8")
    res = load_positional(STORED / name)
    assert type(res) is cls and cls.load(STORED / name) == res
    assert json.dumps(res.to_dict(), indent=1, allow_nan=False, ensure_ascii=False) == text
