"""The contract every experiment keeps (issue 29; the ``check_estimator`` of geoprobe), over the one list of
experiments (geoprobe.recipes.EXPERIMENTS): an experiment added to the list is held to all of it with no line
added here. Each runs its own smallest real run (``Experiment.tiny()``: tiny twins, tiny scales, few
resamples), once from Python and once through the command line, and once interrupted and resumed:

* its config round-trips through a TOML recipe (``geoprobe.recipes.recipe_text`` -> ``load_probe``);
* ``geoprobe.run(config, ...)`` and ``geoprobe run RECIPE`` write byte-identical results.json (after masking
  the wall-clock readings: times and creation dates);
* the result round-trips (the file read back re-encodes to the same JSON);
* its page renders every figure's anchor, its sections those of ``<package>/report.py``'s ``sections``;
* it refuses an --out that holds a file geoprobe did not write, --force or not, before any work;
* it reports progress through the ``progress`` callback, ``(stage, done, total)``;
* interrupted three quarters of the way (Ctrl-C in its progress callback), the same run again resumes from
  what it had finished (it reports less work), writes the same results and leaves no partial state behind.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

import geoprobe
from geoprobe.errors import ForeignOutputError
from geoprobe.recipes import experiments, load_probe, load_result, recipe_text

#: results keys that hold wall-clock readings (as tests/scan/test_resume.py drops geoprobe.scan.run.WALL_CLOCK_KEYS)
WALL_CLOCK = {"created", "timings", "seconds", "eval_seconds", "tokens_per_second"}
#: and those that record a resumption itself (a wind tunnel's training log: the step a session resumed from,
#: and its sessions, of which one stopped between a checkpoint and its log has no record)
RESUMPTION = {"resumed_from", "sessions"}
COMMANDS = list(experiments())


def masked(path: Path, root: Path, hide: frozenset[str] = frozenset()) -> str:
    """The results file's JSON with every wall-clock reading replaced by a placeholder (key names: times
    and creation dates, ``*_s`` seconds; and ``hide``) and the absolute directory it was run in (``root``: a
    path such as a capture's, resolved) by ``<root>``, as text: equal text is equal bytes of everything else."""

    def mask(x):
        if isinstance(x, dict):
            return {k: "<masked>" if k in WALL_CLOCK | hide or k.endswith("_s") else mask(v) for k, v in x.items()}
        if isinstance(x, list):
            return [mask(v) for v in x]
        if isinstance(x, str):
            return x.replace(str(root.resolve()), "<root>")
        return x

    return json.dumps(mask(json.loads(path.read_text(encoding="utf-8"))), ensure_ascii=False)


class Stop(KeyboardInterrupt):
    """Ctrl-C, raised by a progress callback."""


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """One experiment's runs: ``py`` (geoprobe.run), ``cli`` (geoprobe run RECIPE), ``resumed`` (interrupted
    late, then run again), each in a directory of its own as the same relative --out ``run``."""
    exp = experiments()[request.param]
    config, model = exp.tiny()
    root = tmp_path_factory.mktemp(request.param)
    cwd = os.getcwd()
    d = {"exp": exp, "config": config, "model": model, "root": root}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("GEOPROBE_ENTROPY_CACHE", str(root / "entropy"))
        try:
            for name in ("py", "cli", "resumed"):
                (root / name).mkdir()
            recipe = root / "recipe.toml"
            recipe.write_text(recipe_text(config, model, name="contract"), encoding="utf-8")
            d["recipe"] = recipe

            os.chdir(root / "py")
            events: list[tuple] = []
            kw = {} if model is None else {"model": model}
            d["result"] = geoprobe.run(config, out="run", progress=lambda *e: events.append(e), **kw)
            d["events"] = events

            os.chdir(root / "cli")
            d["cli_exit"] = _cli(["run", str(recipe), "--out", "run"], mp)

            os.chdir(root / "resumed")
            calls = [0]
            late = max(1, 3 * len(events) // 4)  # late enough that some unit of work has finished

            def interrupt(*e):
                calls[0] += 1
                if calls[0] >= late:
                    raise Stop

            try:
                geoprobe.run(config, out="run", progress=interrupt, **kw)
                d["interrupted"] = False
            except Stop:
                d["interrupted"] = True
            again: list[tuple] = []
            geoprobe.run(config, out="run", progress=lambda *e: again.append(e), **kw)
            d["resumed_events"] = again
        finally:
            os.chdir(cwd)
    return d


def _cli(argv: list[str], mp) -> int:
    import io
    import sys
    from contextlib import redirect_stderr, redirect_stdout

    from geoprobe.cli import main

    mp.setattr(sys, "argv", ["geoprobe", *argv])
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main()
        except SystemExit as e:
            return int(e.code or 0) if str(e.code or 0).isdigit() else 1
    return 0


def _run_dir(runs, name: str) -> Path:
    return runs["root"] / name / "run"


def _results(runs, name: str) -> Path:
    return _run_dir(runs, name) / runs["exp"].result.FILE


experiment = pytest.mark.parametrize("runs", COMMANDS, indirect=True)


@experiment
def test_the_config_round_trips_through_a_recipe(runs):
    probe = load_probe(runs["recipe"])
    assert probe.command == runs["exp"].command and probe.config == runs["config"]
    assert type(probe.config) is runs["exp"].config
    if runs["model"] is not None:  # the model and how it loads: the recipe's [load] table
        assert {k: getattr(runs["model"], k) for k in probe.load} == dict(probe.load)


@experiment
def test_python_and_the_command_line_write_the_same_results(runs):
    assert runs["cli_exit"] == 0
    py, cli = _results(runs, "py"), _results(runs, "cli")
    assert py.is_file() and cli.is_file()
    assert masked(py, runs["root"] / "py") == masked(cli, runs["root"] / "cli")
    page = runs["exp"].result.PAGE
    assert page is None or ((_run_dir(runs, "py") / page).is_file() and (_run_dir(runs, "cli") / page).is_file())


@experiment
def test_the_result_round_trips(runs):
    path = _results(runs, "py")
    back = load_result(path)
    assert type(back) is type(runs["result"]) is runs["exp"].result
    assert back.to_dict() == json.loads(path.read_text(encoding="utf-8"))
    assert back == runs["result"]


@pytest.mark.parametrize("runs", COMMANDS, indirect=True)
def test_the_page_shows_every_figure_from_its_report_module(runs):
    exp, result = runs["exp"], runs["result"]
    package = exp.execute.__module__.rsplit(".", 1)[0]
    report = importlib.import_module(f"{package}.report")  # its page is written there (its `sections`)
    assert [s.render() for s in report.sections(result)] == [s.render() for s in result.sections()]
    html = (_run_dir(runs, "py") / exp.result.PAGE).read_text(encoding="utf-8")
    anchors = [f.anchor for f in result.figures()]
    assert anchors, "a page with no figure"
    for anchor in anchors:
        assert f'<figure id="{anchor}">' in html, anchor


@experiment
def test_a_foreign_out_is_refused_before_any_work(runs, tmp_path, monkeypatch):
    exp = runs["exp"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    planted = foreign / exp.result.FILE
    planted.write_text('{"mine": true}\n', encoding="utf-8")
    seen = []
    kw = {} if runs["model"] is None else {"model": runs["model"]}
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ForeignOutputError):
        geoprobe.run(runs["config"], out=foreign, force=True, progress=lambda *e: seen.append(e), **kw)
    assert seen == [] and planted.read_text(encoding="utf-8") == '{"mine": true}\n'
    assert sorted(p.name for p in foreign.iterdir()) == [exp.result.FILE]


@experiment
def test_it_reports_progress_through_the_callback(runs):
    events = runs["events"]
    assert events, "no progress reported"
    for stage, done, total in events:
        assert isinstance(stage, str) and stage and 0 <= done <= total, (stage, done, total)


@experiment
def test_an_interrupted_run_resumes_from_what_it_finished(runs):
    assert runs["interrupted"], "the run ended before its progress callback interrupted it"
    assert len(runs["resumed_events"]) < len(runs["events"]), "the run again did all the work again"
    resumed, py = _results(runs, "resumed"), _results(runs, "py")
    hide = frozenset(RESUMPTION)
    assert masked(resumed, runs["root"] / "resumed", hide) == masked(py, runs["root"] / "py", hide)
    partial = [p for p in _run_dir(runs, "resumed").iterdir() if p.name.endswith(".partial")]
    assert partial == [], f"left behind: {partial}"
