"""The determinism check across issue 19: a scan's results.json as geoprobe 0.1.0 wrote it.

``tests/fixtures/v0_1_0/results.json`` was written by the 0.1.0 tree (commit fc6a836) with
:data:`COMMAND`, run from the repository root. Today's code must (a) read it and write it back
byte for byte, (b) write the same bytes when it runs the same command (after masking the fields
that differ between any two runs, listed in :data:`MASKED`), and (c) rebuild its page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from geoprobe.scan import ScanResult

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "v0_1_0"
FIXTURE = FIXTURES / "results.json"
PROMPTS = "tests/fixtures/v0_1_0/scan_prompts.txt"  # relative: the config stores it as given
COMMAND = ["scan", "--model", "twin:llama-3.2-1b", "--prompts", PROMPTS, "--batch-size", "4", "--seed", "7"]

#: dotted path -> why its value legitimately differs between two runs of COMMAND. The key stays
#: (so key order and presence are still compared); only its value is replaced.
MASKED = {
    "timings.*": "wall-clock seconds of each step (the keys are compared, the values are not)",
    "provenance.created": "the time the run was made",
    "prompt_set.path": "absolute path of the prompt file: depends on where the checkout lives",
    "geoprobe": "the package version in the envelope: 0.1.0 today, moves with a release, not with behaviour",
    "provenance.versions.*": "the environment's package versions (geoprobe's own, plotly, ...); the keys are "
    "compared, and the test runs only where NUMERIC_LIBRARIES match the fixture's",
}
#: libraries whose builds decide the floats; part (b) needs the fixture's versions of them
NUMERIC_LIBRARIES = ("python", "torch", "transformers", "transformer-lens", "numpy", "scipy", "scikit-learn")


def _dump(d: object) -> str:
    """What paths.write_json writes."""
    return json.dumps(d, indent=1, allow_nan=False, ensure_ascii=False)


def _mask(d: dict, dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if head == "*":
        for k in d:
            d[k] = "<masked>"
    elif rest:
        _mask(d[head], rest)
    else:
        assert head in d, f"masked field {dotted!r} is missing"
        d[head] = "<masked>"


def _masked_text(text: str) -> str:
    d = json.loads(text)
    assert _dump(d) == text  # parse + dump is byte-faithful, so masking changes only the masked values
    for dotted in MASKED:
        _mask(d, dotted)
    return _dump(d)


def test_the_0_1_0_results_file_loads_and_re_encodes_to_the_same_bytes():
    text = FIXTURE.read_text(encoding="utf-8")
    r = ScanResult.load(FIXTURE)
    assert r.n_prompts == 16 and r.layers == (0, 1, 2) and r.scorecard.criteria
    assert _dump(r.to_dict()) == text


def test_the_same_scan_today_writes_the_bytes_0_1_0_wrote(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8")
    stored = json.loads(text)["provenance"]["versions"]
    from geoprobe.provenance import package_versions

    now = package_versions()
    changed = {k: (stored.get(k), now.get(k)) for k in NUMERIC_LIBRARIES if stored.get(k) != now.get(k)}
    if changed:
        pytest.skip(f"the fixture's floats came from other library builds: {changed}")
    out = tmp_path / "run"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run(
        [sys.executable, "-m", "geoprobe", *COMMAND, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert _masked_text((out / "results.json").read_text(encoding="utf-8")) == _masked_text(text)


def test_the_0_1_0_results_file_rebuilds_its_page(tmp_path, capsys, monkeypatch):
    from tests.cli.test_cli import run_cli

    page = tmp_path / "report.html"
    code, _, err = run_cli(["report", str(FIXTURE), "--out", str(page)], capsys, monkeypatch)
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    r = ScanResult.load(FIXTURE)
    assert "<h2>Scorecard</h2>" in html and "test (§4.4)</th>" in html
    for c in r.scorecard.criteria:
        assert c.label in html
    anchors = [f.anchor for f in r.figures()]  # the scorecard is a table on the page, not a figure
    assert anchors == [
        "manifold-scatter-2",
        "manifold-profile",
        "entropy-scatter",
        "alignment-profile",
        "key-orthogonality",
        "attention-focusing",
    ]
    for a in anchors:
        assert f'<figure id="{a}">' in html
    assert "<h2>By layer</h2>" in html and "<h2>Provenance</h2>" in html
