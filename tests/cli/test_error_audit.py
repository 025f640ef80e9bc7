"""Every bad input in tests/cli/error_cases.py gets exactly one stderr line `error: …` naming what
to fix, exit status 2, no traceback, and writes nothing; docs/errors.md is the table of those lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.cli.case_kit import MARKER, Case, Outcome
from tests.cli.error_cases import CASES, RAW_CONTROL, check, markdown, run_case

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
CUDA = torch.cuda.is_available()
_SEEN: dict[str, Outcome] = {}  # outcomes of the parametrised runs, reused by the docs check


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gets_one_error_line_and_exit_2(case: Case, tmp_path):
    if case.needs_no_cuda and CUDA:
        pytest.skip("this machine has CUDA, so --device cuda is a valid choice here")
    work = tmp_path / "work"
    o = run_case(case, work)
    _SEEN[case.id] = o
    assert o.code == case.code, (o.code, o.err)
    assert len(o.lines) == 1, o.err
    line = o.lines[0]
    assert line.startswith("error: "), line
    for needle in case.expect:
        assert needle in line, (needle, line)
    assert "Traceback" not in o.err + o.out
    assert not RAW_CONTROL.search(o.out + o.err), "a control character reached the terminal raw (geoprobe.text.inert)"
    assert o.changed == (), f"the failing command wrote or changed {o.changed}"
    if case.before_load:
        assert o.loaded == (), f"refused only after loading {o.loaded}"
    assert not any(work.rglob(MARKER)), "code shipped with a model ran"


def test_cases_cover_every_subcommand_and_the_required_inputs():
    import typer

    from geoprobe.cli import app

    group = typer.main.get_command(app)
    commands = set(group.commands)  # type: ignore[attr-defined]
    wt = set(group.commands["windtunnel"].commands)  # type: ignore[attr-defined]
    used = {c.argv[0] for c in CASES}
    used_wt = {c.argv[1] for c in CASES if c.argv[0] == "windtunnel"}
    assert commands <= used, commands - used
    assert wt <= used_wt, wt - used_wt
    assert len(CASES) >= 30 and len({c.id for c in CASES}) == len(CASES)
    ids = {c.id for c in CASES}
    for required in (
        "unknown-alias",
        "missing-local-dir",
        "not-gguf",
        "layers-syntax",
        "layer-out-of-range",
        "batch-size-zero",
        "dtype",
        "device-cuda",
        "prompt-file-missing",
        "prompt-file-empty",
        "too-few-prompts",
        "unknown-prompt-set",
        "prompts-and-domain",
        "scan-out-exists",
        "report-wrong-kind",
        "windtunnel-report-wrong-kind",
        "compare-wrong-kind",
        "report-corrupt",
        "recipe-unknown-key",
        "recipe-wrong-type",
        "recipe-unknown-command",
        "wt-vocab",
        "wt-length",
        "denoise-task",
        "denoise-L",
        "positional-decreasing",
        "sula-k-negative",
        "intervene-strength",
        "remote-code-without-flag",
        "pickle-without-flag",
    ):
        assert required in ids, required


def test_the_harness_catches_a_real_model_load_and_a_success(tmp_path):
    """The contract checks can fail: a real model is refused, a command that works breaks the contract."""
    real = Case(id="x", argv=("capture", "--model", "smollm2-135m", "--out", "o"), bad="", expect=())
    o = run_case(real, tmp_path / "real")
    assert o.code == 1 and "must fail before a real model loads" in o.err and o.loaded == ("smollm2-135m",)
    fine = Case(id="y", argv=("prompts", "--json"), bad="", expect=())
    problems = check(fine, run_case(fine, tmp_path / "fine"))
    assert "exit 0, expected 2" in problems and "0 stderr lines, expected 1" in problems


def test_docs_errors_md_is_the_generated_table(tmp_path):
    if CUDA:
        pytest.skip("docs/errors.md is generated where CUDA is absent (the --device cuda rows differ here)")
    outcomes = {c.id: _SEEN.get(c.id) or run_case(c, tmp_path / c.id) for c in CASES}
    fresh = markdown(outcomes)
    assert DOCS.read_text(encoding="utf-8") == fresh, (
        "docs/errors.md differs from what the CLI prints; regenerate it with "
        "`HF_HUB_OFFLINE=1 python -m tests.cli.error_cases --markdown > docs/errors.md`"
    )


@pytest.mark.parametrize("argv", [(), ("windtunnel",)], ids=["geoprobe", "geoprobe windtunnel"])
def test_a_bare_group_prints_its_help_and_no_empty_error_line(argv, tmp_path):
    o = run_case(Case(id="bare", argv=argv, bad="", expect=()), tmp_path)
    assert o.code == 2 and "Usage: geoprobe" in o.out and "Commands" in o.out
    assert o.lines == [], o.err
