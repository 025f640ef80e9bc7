"""Terminal text is inert (issue 27 part 3): whatever a results file, a model config, a prompt file or
an argument holds, no control character reaches stdout or stderr raw and no rich markup in it is
interpreted; the escaped form (as ``repr`` writes it) is what the user sees.

The mechanism is one: the CLI's two consoles (geoprobe.cli.app.InertConsole) escape every string where
rich turns it into text and every segment on its way out. The unit tests below drive each way text
enters rich (print, table title and cells, status, progress label, JSON); the end-to-end tests run
commands on planted files; the house test checks that nothing in geoprobe prints around the consoles."""

from __future__ import annotations

import ast
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.table import Table

from tests.cli.error_cases import RAW_CONTROL
from tests.cli.planted_runs import EVIL_MODEL, EVIL_SHOWN, scan_run
from tests.cli.test_cli import run_cli

PACKAGE = Path(__file__).resolve().parents[2] / "geoprobe"
OSC, CSI, C1 = "\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m"
PLANTED = f"x{OSC}{CSI}{C1}\r[bold]y[/bold]:smile:"
SHOWN = r"x\x1b]0;pwned\x07\x1b[2J\x9b31m\r[bold]y[/bold]:smile:"


def _console(terminal: bool = False) -> tuple[Any, io.StringIO]:
    from geoprobe.cli.app import InertConsole

    buf = io.StringIO()
    colour = "truecolor" if terminal else None
    return InertConsole(file=buf, width=300, force_terminal=terminal, color_system=colour), buf


def _inert(text: str) -> None:
    """What a colour terminal receives holds no OSC (title), no clear-screen, no C1 control, no BEL:
    only rich's own styling (SGR) and, for a live display, its cursor moves and carriage returns."""
    for raw in ("\x1b]", "\x1b[2J", "\x9b", "\x9d", "\x07"):
        assert raw not in text, (raw, text)


def _plain(text: str) -> str:
    """``text`` without rich's colour codes (the highlighter colours brackets and numbers)."""
    return re.sub("\x1b\\[[0-9;]*m", "", text)


# ------------------------------------------------------------------ the console, one entry at a time


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "colour terminal"])
def test_print_shows_the_escaped_text_and_no_markup(terminal):
    c, buf = _console(terminal)
    c.print(f"note: model {PLANTED} differs")
    _inert(buf.getvalue())
    assert f"note: model {SHOWN} differs" in _plain(buf.getvalue())
    if not terminal:
        assert not RAW_CONTROL.search(buf.getvalue())


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "colour terminal"])
def test_table_title_and_cells_are_escaped(terminal):
    c, buf = _console(terminal)
    t = Table(title=f"{PLANTED}: title")
    t.add_column("model")
    t.add_row(PLANTED)
    c.print(t)
    out = buf.getvalue()
    _inert(out)
    assert _plain(out).count(SHOWN) == 2
    if terminal:
        assert "\x1b[" in out  # rich still styles (the title is italic): only the file's text is escaped


def test_status_and_progress_labels_are_escaped_and_markup_free():
    """A status or a progress label is not parsed as markup ("[/x]" used to raise MarkupError) and
    carries no control character through (they bypass render_str: the segment filter catches them)."""
    from rich.progress import Progress, TextColumn

    c, buf = _console(terminal=True)
    with c.status(f"loading [/x] {PLANTED} …"):
        pass
    with Progress(TextColumn("{task.description}", markup=False), console=c, transient=False) as bar:
        bar.add_task(f"stage {OSC}{C1}", total=1, completed=1)  # escaped by the segment filter (and cut short)
    out = buf.getvalue()
    _inert(out)
    assert "loading [/x]" in out


def test_stage_progress_labels_are_not_markup(monkeypatch):
    from geoprobe.cli import progress as display

    c, buf = _console(terminal=True)
    monkeypatch.setattr(display, "err", c)
    with display.stage_progress({"s": f"[bold]{CSI}", f"t{OSC}": None}) as progress:
        progress("s", 1, 1)
        progress(f"t{OSC}", 1, 1)  # a stage without a label shows its name
    assert r"[bold]\x1b[2J" in buf.getvalue() and r"t\x1b]0;pwned\x07" in buf.getvalue()
    _inert(buf.getvalue())


def test_json_output_stays_valid_json_and_ascii():
    c, buf = _console()
    rows = [{"model": PLANTED + "\u2028é"}]
    c.print_json(json.dumps(rows))
    assert json.loads(buf.getvalue()) == rows  # the escapes are JSON's own (\u001b), so it reads back
    assert buf.getvalue().isascii() and not RAW_CONTROL.search(buf.getvalue())


# geoprobe.cli.main._interrupted prints one fixed line (no string from a file or a model) to stderr
# directly: a Ctrl-C at start-up can come before rich, and so the consoles, are imported.
STARTUP_WRITERS = {("main.py", "_interrupted")}


def test_nothing_in_geoprobe_prints_around_the_inert_consoles():
    """Every line geoprobe shows goes through geoprobe.cli.app's consoles: no print(), no
    sys.stdout/stderr.write, no typer/click echo, no other rich Console."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):  # the one stated exception: the interrupt line, written before rich is imported
            if isinstance(fn, ast.FunctionDef) and (path.name, fn.name) in STARTUP_WRITERS:
                fn.body = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            owner = ast.unparse(f.value) if isinstance(f, ast.Attribute) else ""
            bad = (
                (isinstance(f, ast.Name) and name == "print")
                or (name == "write" and owner in ("sys.stdout", "sys.stderr"))
                or (name in ("echo", "secho") and owner in ("typer", "click"))
                or (name == "Console" and path.name != "app.py")
            )
            if bad:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, offenders


# ------------------------------------------------------------------ commands on planted files


@pytest.fixture(scope="module")
def evil_runs(tmp_path_factory):
    """A scan of a model whose name holds ESC/OSC/C1, CR and rich markup, and one of model-b on other
    prompts whose results record a prompt-set name holding a C1 CSI and BEL (so compare warns about
    both models and both sets, and notes the skipped global PCA)."""
    root = tmp_path_factory.mktemp("evil")
    scan_run(root, "evil", EVIL_MODEL, seed=1)
    scan_run(root, "b", "model-b", tag="other", seed=2, set_name=f"set{C1}\x07b.txt")
    return root


def test_compare_shows_a_hostile_model_name_escaped_in_its_table_warning_and_notes(
    evil_runs, tmp_path, capsys, monkeypatch
):
    for name in ("evil", "b"):
        shutil.copytree(evil_runs / name, tmp_path / name)
    code, out, err = run_cli(["compare", "evil", "b", "--out", "cmp"], capsys, monkeypatch, tmp_path)
    assert code == 0, err
    assert not RAW_CONTROL.search(out + err)
    assert r"evil\x1b]0;pwned\x07\x1b[2J\x9b31m[bold]x[/bold]" in out  # the table (its cell may be cut)
    said = " ".join(err.split())
    # said once, as the warning (the summary no longer repeats a warning as a note; notes print through
    # the same console: "note: global PCA skipped …" below)
    assert said.count(f"models {EVIL_SHOWN} and model-b") == 1 and f"warning: models {EVIL_SHOWN} and model-b" in said
    assert "note: global PCA skipped" in said
    assert r"vs set\x9b31m\x07b.txt" in said  # the prompt-set name the results file records


def test_report_and_capture_show_hostile_paths_and_prompts_escaped(evil_runs, tmp_path, capsys, monkeypatch):
    """A run directory, an --out directory and a prompt file named with escape sequences, and prompts
    holding them (CR-only line ends: 12 prompts): the paths are shown escaped; the prompts are kept
    as they are in capture.json and never printed raw."""
    run = tmp_path / f"run{CSI}"
    shutil.copytree(evil_runs / "evil", run)
    code, out, err = run_cli(["report", run.name], capsys, monkeypatch, tmp_path)
    assert code == 0, err
    assert not RAW_CONTROL.search(out + err) and r"wrote run\x1b[2J/report.html" in out

    prompts = [f"Prompt {i} with {OSC} and {C1} in it" for i in range(12)]
    (tmp_path / f"p{OSC}.txt").write_bytes("\r".join(prompts).encode("utf-8"))  # old Mac line ends
    args = ["capture", "--model", "twin:llama-3.2-1b", "--prompts", f"p{OSC}.txt", "--layers", "0"]
    code, out, err = run_cli([*args, "--out", f"out{CSI}"], capsys, monkeypatch, tmp_path)
    assert code == 0, err
    assert not RAW_CONTROL.search(out + err)
    assert r"prompts: 12 read from" in out and r"p\x1b]0;pwned\x07.txt" in out
    assert r"wrote out\x1b[2J (12 prompts × 1 layers)" in out
    meta = json.loads((tmp_path / f"out{CSI}" / "capture.json").read_text(encoding="utf-8"))
    assert meta["prompts"] == prompts  # the data keeps the prompts exactly; only the terminal escapes


def test_a_model_path_that_looks_like_markup_loads(tmp_path, capsys, monkeypatch):
    """'loading m[/x] …' was parsed as rich markup: the closing tag matched nothing and capture ended in
    'unexpected MarkupError', exit 1, before loading the model."""
    from tests.cli.case_kit import tiny_model_dir

    tiny_model_dir(tmp_path, "m[/x]", pickle=False)
    (tmp_path / "p.txt").write_text("".join(f"Prompt {i} says that the weather\n" for i in range(3)))
    args = ["capture", "--model", "m[/x]", "--prompts", "p.txt", "--layers", "0", "--out", "out"]
    code, out, err = run_cli(args, capsys, monkeypatch, tmp_path)
    assert code == 0, err
    assert "wrote out (3 prompts × 1 layers)" in out
