"""Issue 39 case 7: ``geoprobe --help`` and a command that needs no model import no heavy package (the
discipline, held without timing; benchmarks/bench_startup.py times it), and the commands listed from their
source (geoprobe.cli.lazy) are the commands their modules register."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "ray", "plotly", "pandas", "scipy", "sklearn")

#: runs ``geoprobe ARGS`` as the console script does, then prints which heavy packages were imported
PROBE = """
import json, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["geoprobe", *json.loads(sys.argv[1])]
from geoprobe.cli import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code or 0
print(json.dumps([code, [m for m in heavy if m in sys.modules]]))
"""


def _heavy_after(args: list[str], status: int = 0) -> tuple[list[str], str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    *shown, last = r.stdout.rstrip("\n").split("\n")
    code, heavy = json.loads(last)
    assert code == status, r.stderr[-3000:]
    return heavy, "\n".join(shown)


@pytest.mark.parametrize(
    "args, status",
    [(["--help"], 0), ([], 2), (["sweep", "--help"], 0), (["models", "--help"], 0), (["prompts", "--help"], 0)],
)
def test_help_imports_no_heavy_package(args, status):
    """Was: every command's module imported for any command line: torch and scipy for ``--help`` (4 s)."""
    heavy, shown = _heavy_after(args, status)
    assert heavy == [], f"geoprobe {' '.join(args)} imported {heavy}"
    assert "Usage: geoprobe" in shown


def test_the_help_lists_every_command_with_its_own_help():
    from geoprobe.cli.lazy import index

    _, shown = _heavy_after(["--help"])
    for name in index():
        assert f"│ {name} " in shown, name
    assert "│ report           Rebuild the HTML report from saved results" in shown  # its docstring


def test_the_index_is_what_the_modules_register():
    """geoprobe.cli.lazy reads the registrations from source: the same names, helps and order as importing
    every command module gives (a registration it cannot read would show here)."""
    import importlib
    import pkgutil

    import typer.main

    import geoprobe.cli
    from geoprobe.cli.lazy import COMMANDS, index
    from geoprobe.cli.main import commands
    from geoprobe.recipes import EXPERIMENTS

    for module in pkgutil.iter_modules(geoprobe.cli.__path__):  # every module, found apart from the index
        if module.name != "__main__":  # that one runs the command line
            importlib.import_module(f"geoprobe.cli.{module.name}")
    group = typer.main.get_group(commands())  # every module imported: the real commands
    assert group.standing_in == set()
    entries = index()
    assert set(entries) == set(group.commands)
    assert all(e.known for e in entries.values())
    for name, entry in entries.items():
        real = group.commands[name]
        settings = dict(entry.settings)
        assert real.help == settings.get("help"), name
        assert real.hidden == settings.get("hidden", False), name
        assert real.callback is not None or hasattr(real, "commands"), name
    modules = [e.module.rsplit(".", 1)[1] for e in entries.values()]
    expected = [m for m in (*COMMANDS, *EXPERIMENTS) if m in modules]
    assert list(dict.fromkeys(modules)) == expected  # the help's order: COMMANDS, then EXPERIMENTS'
    assert group.list_commands(None) == list(entries)


def test_a_lazy_command_runs_and_a_typo_is_suggested(capsys, monkeypatch):
    from tests.cli.test_cli import run_cli

    code, _, err = run_cli(["scna"], capsys, monkeypatch)
    assert code == 2 and "No such command 'scna'. Did you mean 'scan'?" in err
    code, out, err = run_cli(["prompts", "--json"], capsys, monkeypatch)
    assert code == 0 and {r["set"] for r in json.loads(out)} >= {"builtin", "mixed"}, err


def _planted_sweep(tmp_path):
    """A sweep directory as ``geoprobe sweep`` leaves it, written without running a model: the sweep's marker
    and three cells of a scan sweep (one done: its results file and the run record that matches it; one failed;
    one never started)."""
    import hashlib

    from geoprobe.kinds import RECORD, RECORD_KIND
    from geoprobe.recipes import experiment_named
    from geoprobe.sweep.directory import cell_dir, cell_mark, new_uid, write_cell_mark, write_identity
    from geoprobe.sweep.plan import make_plan
    from geoprobe.sweep.spec import read_sweep

    out, spec = tmp_path / "sweep", tmp_path / "tiny.toml"
    spec.write_text(f'[sweep]\nexperiment = "scan"\nout = "{out}"\n[grid]\nmodel = ["twin:llama"]\nseed = [0, 1, 2]\n')
    plan = make_plan(read_sweep(spec))
    uid = new_uid()
    out.mkdir()
    write_identity(out, plan, uid)
    done, failed, _ = plan.cells
    result = experiment_named("scan").result.FILE
    d = cell_dir(out, done.id)
    write_cell_mark(d, cell_mark(plan, done, uid, status="done", attempts=1, seconds=1.5))
    (d / result).write_text("{}")
    record = {"kind": RECORD_KIND, "version": 1, "result": result, "sha256": hashlib.sha256(b"{}").hexdigest()}
    (d / RECORD).write_text(json.dumps({**record, "request": {}}))
    write_cell_mark(cell_dir(out, failed.id), cell_mark(plan, failed, uid, status="failed", attempts=1, error="boom"))
    return out, (done.id, failed.id)


def test_sweep_status_imports_no_heavy_package(tmp_path):
    """Was: ``geoprobe sweep status`` imported torch and scipy (every experiment, each one's analysers and
    figures, and LoadOptions with torch at the top of its module): 5-9 s on a loaded machine for a table read
    from a directory. It reads the sweep file (checked against the scan's config and LoadOptions), the cells'
    records and files, and still counts right."""
    out, (done, failed) = _planted_sweep(tmp_path)
    heavy, shown = _heavy_after(["sweep", "status", str(out)])
    assert heavy == [], f"geoprobe sweep status imported {heavy}"
    assert "1 done, 1 failed, 1 not run of 3 cells" in shown
    heavy, shown = _heavy_after(["sweep", "status", str(out), "--format", "json"])
    assert heavy == []
    got = json.loads(shown)
    assert got["counts"] == {"done": 1, "failed": 1, "pending": 1, "cells": 3}
    assert {r["cell"]: r["status"] for r in got["cells"]}[done] == "done"
    assert {r["cell"]: r["error"] for r in got["cells"]}[failed] == "boom"


def test_a_result_shown_by_another_command_finds_its_printer():
    """``geoprobe run RECIPE`` imports the run command's module only: the summary a result's own command
    registers (``geoprobe.cli.common.prints``) is found when the result is shown (the wind tunnel's seeds
    printed nothing after the CLI became lazy). In a fresh process: no experiment's command module imported,
    then every result class an experiment writes first has its printer once one is asked for."""
    code = """
import json, sys
from geoprobe.cli.common import PRINTERS
from geoprobe.recipes import experiments
names = set(experiments())
kinds = [cls for exp in experiments().values() for cls in exp.results[:1]]
before = sorted(m for m in list(sys.modules) if m.startswith("geoprobe.cli.") and m.split(".")[-1] in names)
from geoprobe.cli.lazy import import_commands
missing_before = [c.__name__ for c in kinds if c not in PRINTERS]
import_commands()
print(json.dumps([before, missing_before, [c.__name__ for c in kinds if c not in PRINTERS]]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, missing_before, missing_after = json.loads(out.strip().splitlines()[-1])
    assert before == [] and len(missing_before) >= 5  # the lazy CLI had imported no command module
    assert missing_after == []
