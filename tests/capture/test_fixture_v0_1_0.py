"""A capture directory written by geoprobe 0.1.0 (``geoprobe capture --model twin:llama-3.2-1b
--top-k 3``, two prompts) still loads, and its capture.json re-encodes to the same bytes: the layout
and provenance, now serial.Records, store what 0.1.0 stored."""

from __future__ import annotations

import json
from pathlib import Path

from geoprobe.capture import Capture
from geoprobe.models.layout import Layout
from geoprobe.provenance import Provenance

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v0_1_0" / "capture"


def test_a_0_1_0_capture_loads_and_re_encodes_to_the_same_bytes():
    cap = Capture.load(FIXTURE)
    assert cap.layout.kv_group == (0, 0, 1, 1) and cap.provenance.seed == 0 and cap.values is not None
    text = (FIXTURE / "capture.json").read_text(encoding="utf-8")
    assert json.dumps(cap.metadata(), indent=1, ensure_ascii=False) == text


def test_layout_and_provenance_round_trip():
    meta = json.loads((FIXTURE / "capture.json").read_text(encoding="utf-8"))
    lay, prov = Layout.from_dict(meta["layout"]), Provenance.from_dict(meta["provenance"])
    assert lay.to_dict() == meta["layout"] and prov.to_dict() == meta["provenance"]
    mla = Layout(
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        d_head=8,
        d_model=32,
        vocab_size=10,
        rotary_dim=4,
        sliding_window=(None, 6),
        layer_ids=(1, 3),
        d_key=12,
    )
    assert list(mla.to_dict()) == [
        "n_layers",
        "n_heads",
        "n_kv_heads",
        "d_head",
        "d_model",
        "vocab_size",
        "rotary_dim",
        "sliding_window",
        "kv_group",
        "layer_ids",
        "d_key",
    ]
    assert Layout.from_dict(mla.to_dict()) == mla and hash(mla) == hash(Layout.from_dict(mla.to_dict()))
