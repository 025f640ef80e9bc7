"""`geoprobe scan --model DIR` on a saved twin whose weights do not match its config.json: refused in one
line (exit 2, nothing written) unless --allow-partial-weights, which runs the scan and records the
partial load in results.json's provenance and on report.html."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_cli import run_cli
from tests.models.test_partial_weights import expected_parts
from tests.models.weights_kit import BREAKERS, saved_twin


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return saved_twin(tmp_path_factory.mktemp("twin"))


def _scan(target, out, capsys, monkeypatch, *flags):
    argv = ["scan", "--model", str(target), "--prompts", "builtin", "--no-init-baseline", "--out", str(out), *flags]
    return run_cli(argv, capsys, monkeypatch)


@pytest.mark.parametrize("how", list(BREAKERS))
def test_a_checkpoint_whose_weights_do_not_match_is_refused(base, tmp_path, capsys, monkeypatch, how):
    target = tmp_path / "ck"
    shutil.copytree(base, target)
    expect = BREAKERS[how](target)
    out = tmp_path / "o"
    code, _, err = _scan(target, out, capsys, monkeypatch)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"error: model {str(target)!r}: its weights do not match its config.json: "), line
    for part in expected_parts(expect):
        assert part in line, (part, line)
    assert f"({expect['first']}" in line and "--allow-partial-weights" in line and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("how", list(BREAKERS))
def test_with_the_flag_the_scan_runs_and_records_the_partial_load(base, tmp_path, capsys, monkeypatch, how):
    target = tmp_path / "ck"
    shutil.copytree(base, target)
    expect = BREAKERS[how](target)
    out = tmp_path / "o"
    code, _, err = _scan(target, out, capsys, monkeypatch, "--allow-partial-weights")
    assert code == 0, err
    prov = json.loads((out / "results.json").read_text())["provenance"]
    pw = prov["partial_weights"]
    assert [len(pw["missing"]), len(pw["unexpected"]), len(pw["mismatched"])] == [
        expect["missing"],
        expect["unexpected"],
        expect["mismatched"],
    ]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Partial load: the weights did not match the model&#x27;s config.json" in html
    for part in expected_parts(expect):
        assert part in html, part
    assert expect["first"] in html


def test_a_whole_checkpoint_scans_with_no_partial_load_recorded(base, tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    code, _, err = _scan(base, out, capsys, monkeypatch)
    assert code == 0, err
    assert "partial_weights" not in json.loads((out / "results.json").read_text())["provenance"]
    assert "Partial load" not in (out / "report.html").read_text(encoding="utf-8")
