"""Numbers and values on the pages read as a reader writes them, not as Python prints them (issue 39 case 5):
provenance showed ``None``, ``True``, ``[]``; a scan's ``load_s`` read ``0.00 s`` because the model was loaded
before the scan began and the scan timed nothing (the file held 9.5e-07); the scorecard printed
``-0.0 % (95 % CI [-0.0 %, -0.0 %])``. One number formatter (geoprobe.text.number) serves the pages, the
scorecard lines and ``Estimate``'s format; one value formatter (geoprobe.report.blocks.display) every table."""

from __future__ import annotations

import dataclasses
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from geoprobe.analysis.stats import Estimate
from geoprobe.report.blocks import NOTHING, display, html_table, kv_table
from geoprobe.report.page import provenance_section, seconds
from geoprobe.scan.scorecard import Criterion
from geoprobe.text import number

STORED = Path(__file__).resolve().parents[1] / "fixtures" / "v0_1_0" / "results.json"
#: what Python prints for values a reader writes otherwise
CODE = {"None", "True", "False", "[]", "()", "{}", "nan", "NaN"}
#: a zero written with a minus: -0, -0.0, -0.000 (not -0.0042)
NEGATIVE_ZERO = re.compile(r"-0(\.0*)?(?![\d.])")


def _cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html)


@pytest.mark.parametrize(
    ("x", "spec", "text"),
    [
        (-0.0, ".1f", "0.0"),
        (-1e-9, ".1f", "0.0"),
        (-0.04, ".1f", "0.0"),
        (-0.06, ".1f", "-0.1"),
        (-0.0, "+.2f", "0.00"),
        (0.0, "+.2f", "0.00"),
        (0.5, "+.1f", "+0.5"),
        (-0.0, "", "0.0"),
        (-0.0, ".3g", "0"),
        (-1e-9, ".1%", "0.0%"),
        (np.float32(-1e-9), ".2f", "0.00"),
        (np.float64(-0.0), "", "0.0"),
        (9.5e-07, "", "9.5e-07"),
        (math.nan, ".1f", "n/a"),
        (None, ".1f", "n/a"),
    ],
)
def test_the_number_formatter_never_writes_a_negative_zero(x, spec, text):
    assert number(x, spec) == text


def test_an_estimate_and_the_scorecard_write_no_negative_zero():
    assert format(Estimate(-0.0001, -0.0002, 0.0), ".2f") == "0.00 [0.00, 0.00]"
    assert format(Estimate(-0.2, -0.3, -0.1), ".1f") == "-0.2 [-0.3, -0.1]"  # a real negative keeps its sign
    zero = Estimate(-0.0, -0.0, -0.0)
    focus = Criterion("attention_focusing", "focusing", "s", zero, "percent", False, "init", -0.0, False, "", zero)
    shown = focus.formatted(-0.0), focus.interval(), focus.contrast_text()
    assert shown == ("0.0 %", "95 % CI [0.0 %, 0.0 %]", "0.0 pp [0.0 pp, 0.0 pp]")
    assert focus.formatted(-1e-20) == "≈ 0 %" and focus.formatted(0.03) == "0.03 %"
    ortho = Criterion("key_orthogonality", "keys", "s", zero, "fraction", False, "init", None, None, "", zero)
    assert ortho.contrast_text() == "0.0000 [0.0000, 0.0000]"
    # the page's scorecard and the command line's scorecard lines are both these rows
    from geoprobe.scan.scorecard import Scorecard

    rows = Scorecard("m", (focus, ortho)).rows()
    assert not [v for r in rows for v in r.values() if NEGATIVE_ZERO.search(v)], rows


def test_values_are_written_as_a_reader_writes_them():
    planted = [None, True, False, [], (), {}, ["a", "b"], {"a": 1, "b": None}, -0.0, 0.95, "", "x", 3, math.nan]
    shown = [display(v) for v in planted]
    assert shown == [NOTHING, "yes", "no", "none", "none", "none", "a, b", "a: 1, b: —", "0.0", "0.95", NOTHING] + [
        "x",
        "3",
        "n/a",
    ]
    cells = _cells(kv_table([(str(i), v) for i, v in enumerate(planted)]) + html_table([{"v": v} for v in planted]))
    assert len(cells) == 2 * len(planted) and not CODE & set(cells) and not NEGATIVE_ZERO.search(" ".join(cells))


def test_durations_are_written_as_read():
    assert seconds(9.5e-07) == "< 0.01 s" and seconds(2.0745) == "2.07 s" and seconds(0.04, 1) == "< 0.1 s"
    assert seconds(None) == "not timed" and seconds(math.nan) == "not timed"


def test_a_provenance_section_shows_no_python():
    prov = {"model_id": "m", "source": "twin", "weights": "w", "seed": None, "weight_seed": 0, "prompts_hash": ""}
    config = {"layers": None, "init_baseline": True, "scatter_layers": [], "analyses": ("manifold", "focusing")}
    html = provenance_section(prov, config=config, timings={"load_s": 9.5e-07, "capture_s": -0.0}).render()
    cells = _cells(html)
    assert not CODE & set(cells) and not NEGATIVE_ZERO.search(html)
    assert "<th>config.analyses</th><td>manifold, focusing</td>" in html
    assert "<th>config.init_baseline</th><td>yes</td>" in html and "<th>config.scatter_layers</th><td>none</td>" in html
    assert "<th>time: load_s</th><td>&lt; 0.01 s</td>" in html


def test_a_stored_scan_page_shows_no_python():
    """A results file of geoprobe 0.1.0: its page's tables (provenance, config, scorecard, by layer)."""
    from geoprobe.recipes import load_result

    result = load_result(STORED)
    html = "\n".join(s.render() for s in result.sections())
    cells = _cells(html)
    assert len(cells) > 60 and not CODE & set(cells), sorted(CODE & set(cells))
    assert not [c for c in cells if NEGATIVE_ZERO.search(c)]
    assert "-0.0042 %" in cells  # a real small negative keeps its sign and digits
    assert "<th>config.init_baseline</th><td>yes</td>" in html and "<th>time: load_s</th><td>&lt; 0.01 s</td>" in html


def test_a_scan_records_its_model_load_time(tmp_path, monkeypatch):
    """The run loads the model before the scan begins: its load time is the load's own, measured around it."""
    from geoprobe.models.loading import LoadOptions
    from geoprobe.scan.experiment import EXPERIMENT, tiny

    measured: list[float] = []
    load = LoadOptions.load

    def measured_load(self):
        t = time.perf_counter()
        model = load(self)
        measured.append(time.perf_counter() - t)
        return model

    monkeypatch.setattr(LoadOptions, "load", measured_load)
    config, options = tiny()
    config = dataclasses.replace(config, init_baseline=False)  # no null draws: one model, one load
    result = EXPERIMENT.run(config, model=options, out=tmp_path / "run")
    assert len(measured) == 1
    load_s = result.timings["load_s"]
    assert 0.01 < load_s and measured[0] <= load_s <= measured[0] + 0.05  # the load, and nothing else
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert f"<th>time: load_s</th><td>{load_s:.2f} s</td>" in html


def test_a_scan_of_a_model_passed_in_says_it_loaded_none(tmp_path):
    from geoprobe.models.twins import twin
    from geoprobe.scan.experiment import tiny
    from geoprobe.scan.report import NO_LOAD
    from geoprobe.scan.run import scan

    config = dataclasses.replace(tiny()[0], init_baseline=False)
    result = scan(twin("llama-3.2-1b"), None, config)
    assert "load_s" not in result.timings and result.timings["capture_s"] > 0
    html = "\n".join(s.render() for s in result.sections())
    assert f"<th>model load</th><td>{NO_LOAD}</td>" in html and "time: load_s" not in html
