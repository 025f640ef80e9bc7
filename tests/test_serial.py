"""The field-driven codec (geoprobe.serial) and the Result base (geoprobe.results)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from jaxtyping import Float, Int

from geoprobe.errors import ResultsError
from geoprobe.results import Result
from geoprobe.serial import Record, decode, encode


@dataclass(frozen=True, eq=False)
class Inner(Record):
    value: float
    low: float | None = None


@dataclass(frozen=True, eq=False)
class Outer(Record):
    name: str
    layers: tuple[int, ...]
    inner: Inner
    many: tuple[Inner, ...]
    by_layer: dict[int, float]
    curve: Float[np.ndarray, " n"]
    counts: Int[np.ndarray, " n"]
    maybe: Inner | None = None
    pair: tuple[int, str] = (1, "a")
    cache: str = field(default="x", metadata={"stored": False})


@dataclass(frozen=True, eq=False)
class Tiny(Result):
    KIND = "geoprobe.test-tiny"
    FILE = "tiny.json"
    FIX = "re-run the test"
    x: float
    xs: tuple[float, ...]


def outer(**kw) -> Outer:
    base = dict(
        name="m",
        layers=(2, 0),
        inner=Inner(math.nan, 1.0),
        many=(Inner(1.0), Inner(math.inf)),
        by_layer={3: 0.5, 1: math.nan},
        curve=np.array([0.0, np.nan, 2.5]),
        counts=np.array([1, 2, 3]),
    )
    return Outer(**{**base, **kw})


def test_encode_follows_the_rules_and_is_strict_json():
    d = outer().to_dict()
    assert d == {
        "name": "m",
        "layers": [2, 0],
        "inner": {"value": None, "low": 1.0},
        "many": [{"value": 1.0, "low": None}, {"value": None, "low": None}],
        "by_layer": {"1": None, "3": 0.5},
        "curve": [0.0, None, 2.5],
        "counts": [1, 2, 3],
        "maybe": None,
        "pair": [1, "a"],
    }  # int keys sorted; "cache" not stored
    json.dumps(d, allow_nan=False)
    assert encode(np.float32(2.0)) == 2.0 and encode(np.bool_(True)) is True


def test_round_trip_restores_types_and_nan():
    o = outer(maybe=Inner(2.0, 1.5))
    back = Outer.from_dict(json.loads(json.dumps(o.to_dict())))
    assert back == o and back.to_dict() == o.to_dict()
    assert back.layers == (2, 0) and isinstance(back.layers, tuple)
    assert math.isnan(back.inner.value) and back.many[0].low is None  # float|None keeps None, float gets NaN
    assert list(back.by_layer) == [1, 3] and math.isnan(back.by_layer[1])
    assert back.curve.dtype == np.float64 and np.isnan(back.curve[1]) and back.counts.dtype.kind == "i"
    assert back.pair == (1, "a") and back.cache == "x"


def test_records_differ_when_a_stored_value_differs():
    assert outer() == outer() and outer() != outer(name="n") and outer() != outer(curve=np.array([0.0, 1, 2]))


def test_decode_rejects_what_the_annotation_cannot_hold():
    with pytest.raises(TypeError):
        decode(int, None)
    with pytest.raises(ValueError):
        decode(tuple[int, str], [1])
    with pytest.raises(KeyError):
        Inner.from_dict({"low": 1.0})  # value has no default


def test_result_envelope_save_load_and_damage(tmp_path):
    from geoprobe import __version__

    r = Tiny(1.5, (math.nan, 2.0))
    assert r.to_dict() == {
        "kind": "geoprobe.test-tiny",
        "version": 1,
        "geoprobe": __version__,
        "x": 1.5,
        "xs": [None, 2.0],
    }
    path = r.save(tmp_path / "tiny.json")
    assert Tiny.load(tmp_path) == r  # a directory: FILE inside it
    d = json.loads(path.read_text())
    with pytest.raises(ResultsError, match="version 2 .* reads version 1"):
        Tiny.from_dict({**d, "version": 2}, "'f'")
    with pytest.raises(ResultsError, match=r"'f' is damaged \(KeyError: 'x'\); re-run the test"):
        Tiny.from_dict({k: v for k, v in d.items() if k != "x"}, "'f'")
    with pytest.raises(ResultsError, match="not a geoprobe results file"):
        Tiny.from_dict({**d, "kind": "geoprobe.other"}, "'f'")
    (tmp_path / "mine.json").write_text("{}")
    with pytest.raises(Exception, match="mine.json"):
        r.save(tmp_path / "mine.json")  # a file geoprobe did not write is never overwritten
    assert (tmp_path / "mine.json").read_text() == "{}"


def test_estimate_format_writes_value_and_interval():
    from geoprobe.analysis.stats import Estimate

    assert f"{Estimate(0.1234, 0.1, 0.15):.2f}" == "0.12 [0.10, 0.15]"
    assert f"{Estimate(0.5, 0.4, 0.6)}" == "0.500 [0.400, 0.600]"
    assert f"{Estimate(math.nan, math.nan, math.nan)}" == "n/a"
    assert f"{Estimate(1.0, math.nan, math.nan):.1f}" == "1.0"


def test_one_page_renders_any_result_and_escapes(tmp_path):
    import plotly.graph_objects as go

    from geoprobe.report.page import Figure, Page, Section, figures_section, render

    class Demo(Page):
        def title(self):
            return "demo <model>"

        def figures(self):
            return [Figure("a-fig", "cap & tion", go.Figure())]

        def sections(self):
            return [Section("Summary", "<p>ok</p>"), figures_section(self.figures())]

    html = render(Demo())
    assert "<h1>demo &lt;model&gt;</h1>" in html and "cap &amp; tion" in html and 'id="a-fig"' in html
    assert html.index("Summary") < html.index("a-fig")
    path = Demo().report(tmp_path / "p.html")
    assert path.read_text().count("<figure") == 1


def test_omit_none_fields_are_written_only_when_set():
    @dataclass(frozen=True, eq=False)
    class Opt(Record):
        a: int
        b: int | None = field(default=None, metadata={"omit_none": True})

    assert Opt(1).to_dict() == {"a": 1} and Opt(1, 2).to_dict() == {"a": 1, "b": 2}
    assert Opt.from_dict({"a": 1}) == Opt(1) and Opt.from_dict({"a": 1, "b": 2}).b == 2
