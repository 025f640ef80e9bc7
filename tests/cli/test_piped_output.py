"""Issue 39 case 4: output that goes to a pipe or a file is whole (a program reads it): no table cell or
header cut with "…" or folded at 80 columns, no line of the scorecard broken mid-phrase. A terminal keeps
rich's own width and wraps to it."""

from __future__ import annotations

import io
import json

import pytest
from rich.table import Table

from geoprobe.cli.app import PIPED_WIDTH, InertConsole
from tests.cli.test_cli import run_cli

#: what would make rich treat a captured stream as a terminal, or fix a width: none of it here
TERMINAL_ENV = ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "JUPYTER_COLUMNS")
LONG_HEADER = "sula_mae_posterior_vs_model_label_entropy_restricted"
LONG_CELL = "axis_entropy_alignment_of_the_restricted_domain_" * 3


@pytest.fixture
def piped(monkeypatch):
    for name in TERMINAL_ENV:
        monkeypatch.delenv(name, raising=False)


def _table() -> Table:
    table = Table(title="wide")
    table.add_column("layer")
    table.add_column(LONG_HEADER)
    table.add_column("note", overflow="fold")
    table.add_row("0", "0.125", LONG_CELL)
    return table


def test_a_piped_console_lays_a_wide_table_out_whole(piped):
    buf = io.StringIO()  # not a terminal
    console = InertConsole(file=buf)
    assert console.width == PIPED_WIDTH
    console.print(_table())
    text = buf.getvalue()
    assert LONG_HEADER in text and LONG_CELL in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) > 80  # was: every line cut to 80


def test_a_terminal_keeps_its_width_and_wraps(piped, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    buf = io.StringIO()
    console = InertConsole(file=buf, force_terminal=True, color_system=None)
    assert console.width == 60
    console.print(_table())
    lines = buf.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 60
    assert LONG_CELL not in buf.getvalue()  # folded over several lines, as rich does on a terminal


def test_a_width_asked_for_holds_when_piped(piped, monkeypatch):
    assert InertConsole(file=io.StringIO(), width=50).width == 50  # chosen by its maker
    console = InertConsole(file=io.StringIO())
    console.width = 70  # or set later
    assert console.width == 70
    monkeypatch.setenv("COLUMNS", "72")  # the user's explicit COLUMNS is rich's, piped or not
    assert InertConsole(file=io.StringIO()).width == 72


def test_geoprobe_models_piped_shows_every_column_whole(piped, capsys, monkeypatch):
    from geoprobe.models.registry import ALIASES

    code, out, err = run_cli(["models"], capsys, monkeypatch)
    assert code == 0, err
    assert "left out at this width" not in out and "…" not in out  # was: source, family cut at 80 columns
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    assert {len(r) for r in rows} == {7} and {r[0] for r in rows} == set(ALIASES)
    assert {r[-1] for r in rows} >= {spec.hf_id for spec in ALIASES.values() if spec.source == "hub"}


def _failed_sweep(tmp_path, capsys, monkeypatch):
    """A sweep of two cells that fail at once (unknown twins): a status table with long error cells."""
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["twin:nosuchthing", "twin:nosuchthing_either"]\n'
        '[prompts]\nset = "builtin"\n'
    )
    code, _, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 1, err
    return tmp_path / "o"


def test_sweep_status_piped_keeps_each_row_on_one_line(piped, tmp_path, capsys, monkeypatch):
    out_dir = _failed_sweep(tmp_path, capsys, monkeypatch)
    code, out, err = run_cli(["sweep", "status", str(out_dir)], capsys, monkeypatch)
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 2  # one line per cell: was folded over several lines at 80 columns
    assert all("no twin for 'nosuchthing" in r and "see geoprobe models" in r for r in rows)


def test_sweep_status_format_json(piped, tmp_path, capsys, monkeypatch):
    out_dir = _failed_sweep(tmp_path, capsys, monkeypatch)
    code, out, err = run_cli(["sweep", "status", str(out_dir), "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    got = json.loads(out)
    assert got["counts"] == {"pending": 0, "done": 0, "failed": 2, "cells": 2}
    assert [c["status"] for c in got["cells"]] == ["failed", "failed"]
    assert all(c["error"].startswith("no twin for 'nosuchthing") for c in got["cells"])
    code, _, err = run_cli(["sweep", "status", str(out_dir), "--format", "xml"], capsys, monkeypatch)
    assert code == 2 and "--format 'xml' is not one of table, json" in err
    code, _, err = run_cli(["sweep", str(tmp_path / "s.toml"), "--format", "json"], capsys, monkeypatch)
    assert code == 2 and "--format applies to `geoprobe sweep status OUT` only" in err


def test_the_scorecard_piped_is_one_line_per_criterion(piped, tmp_path, capsys, monkeypatch):
    p = tmp_path / "p.txt"
    words = "apple river music stone cloud paper tiger light engine garden silver window".split()
    p.write_text("\n".join(f"Sentence {i} is about the {w}" for i, w in enumerate(words)))
    args = ["scan", "--model", "twin:llama-3.2-1b", "--prompts", str(p), "--out", str(tmp_path / "o")]
    code, out, err = run_cli([*args, "--layers", "0,-1", "--no-init-baseline"], capsys, monkeypatch)
    assert code == 0, err
    card = [line for line in out.splitlines() if line.startswith(("PASS  ", "fail  "))]
    assert len(card) >= 3, out
    assert all("beats null: " in line for line in card), card  # each criterion whole on its own line
    assert out.count("beats null: ") == len(card)  # and no criterion's tail on a line of its own
    assert max(len(line) for line in card) > 80, card  # long enough that 80 columns would have broken it
