"""Every geoprobe HTML report built once per session from the cheapest real run (tiny twins, tiny
scales, few resamples), all under a directory whose name carries HTML/JS/template injection
strings, with a scan of a prompt file whose prompts carry them too; and a headless Chromium.

Builders mirror the CLI tests (tests/cli/*, tests/windtunnel, tests/denoise, tests/positional)."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

#: strings that would run script, break the markup or be evaluated by a template engine if unescaped
EVIL_SCRIPT = "<script>window.__pwned=1</script>"
EVIL_IMG = '<img src=x onerror="window.__pwned=2">'
EVIL_QUOTES = "\"double\" and 'single' quotes"
EVIL_TEMPLATE = "{{ 7*7 }}"
EVIL_PROMPTS = (
    f"{EVIL_SCRIPT} the weather today is",
    "</div> closes the block and then the",
    f"{EVIL_QUOTES} make the parser",
    f"{EVIL_TEMPLATE} is a template and the answer",
    f"{EVIL_IMG} shows a picture of the",
    "The cat sat on the mat and looked at",
    "In 1905 Einstein published four papers that",
    "Paris is the capital of France and the",
    "She opened the letter, read the first line and",
    "The river flows through the valley towards the",
    "def fibonacci(n): return the sum of the",
    "Seven times seven equals the number that",
)
#: the directory every run is written under: its path string holds every injection string above
#: ("/" separates components, so "</script>" and "</div>" span two of them)
EVIL_DIR_PARTS = (EVIL_IMG, "<script>window.__pwned=1<", "script><", f"div>{EVIL_TEMPLATE} {EVIL_QUOTES}")
EVIL_DIR_TEXT = f"{EVIL_IMG}/{EVIL_SCRIPT}</div>{EVIL_TEMPLATE} {EVIL_QUOTES}"
PROMPT_FILE_NAME = f"prompts {EVIL_TEMPLATE}.txt"

TWIN = "twin:llama-3.2-1b"


def cli(*args: object) -> str:
    """Run ``geoprobe ARGS`` in-process; fail with its stderr unless it exits 0. Returns stdout."""
    from geoprobe.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = ["geoprobe", *map(str, args)]
    code = 0
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(err):
        mp.setattr(sys, "argv", argv)
        try:
            main()
        except SystemExit as e:
            code = e.code or 0
    assert code == 0, f"{' '.join(argv)} exited {code}: {err.getvalue()[-3000:]}"
    return out.getvalue()


@pytest.fixture(scope="session")
def evil_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports").joinpath(*EVIL_DIR_PARTS)
    root.mkdir(parents=True)
    assert EVIL_DIR_TEXT in str(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("GEOPROBE_ENTROPY_CACHE", str(tmp_path_factory.mktemp("entropy")))
        yield root


@pytest.fixture(scope="session")
def prompt_file(evil_root) -> Path:
    p = evil_root / PROMPT_FILE_NAME
    p.write_text("\n".join(EVIL_PROMPTS) + "\n", encoding="utf-8")
    return p


# a scan recipe with few resamples: `geoprobe run` (the plain scan has no resampling flags)
_SCAN_RECIPE = (
    '[probe]\nname = "browser"\ncommand = "scan"\n'
    "[analyses]\nn_resamples = 50\npca_resamples = 20\nnull_draws = 20\nn_permutations = 50\n"
)


def _scan(evil_root: Path, prompt_file: Path, model: str, name: str) -> Path:
    recipe = evil_root / "scan.toml"
    if not recipe.exists():
        recipe.write_text(_SCAN_RECIPE, encoding="utf-8")
    out = evil_root / name
    cli("run", recipe, "--model", model, "--prompts", prompt_file, "--out", out)
    return out


@pytest.fixture(scope="session")
def scan_run(evil_root, prompt_file) -> Path:
    return _scan(evil_root, prompt_file, TWIN, "scan")


@pytest.fixture(scope="session")
def scan_report(scan_run) -> Path:
    return scan_run / "report.html"


@pytest.fixture(scope="session")
def rebuilt_report(scan_run) -> Path:
    out = scan_run.parent / "rebuilt.html"
    cli("report", scan_run / "results.json", "--out", out)
    return out


@pytest.fixture(scope="session")
def compare_report(scan_run, evil_root, prompt_file) -> Path:
    other = _scan(evil_root, prompt_file, "twin:pythia-410m", "scan-pythia")
    out = evil_root / "compare"
    cli("compare", scan_run, other, "--out", out)
    return out / "compare.html"


@pytest.fixture(scope="session")
def domains_report(evil_root) -> Path:
    out = evil_root / "domains"
    cli(
        "compare-domains",
        "--model",
        TWIN,
        "--domains",
        "math",
        "--domain-candidates",
        "40",
        "--candidates",
        "60",
        "--per-quintile",
        "4",
        "--min-tokens",
        "8",
        "--max-prompt-tokens",
        "32",
        "--n-resamples",
        "50",
        "--n-permutations",
        "50",
        "--out",
        out,
    )
    return out / "domains.html"


@pytest.fixture(scope="session")
def sula_report(evil_root) -> Path:
    out = evil_root / "sula"
    # a random twin puts ~2/vocab of its mass on the two labels: threshold 0 scores every prompt, so every
    # figure has lines to draw (the unscored case is tests/sula/test_result.py's)
    cli(
        "sula",
        "--model",
        TWIN,
        "--k",
        "0,1,2",
        "--n-per-k",
        "4",
        "--n-resamples",
        "50",
        "--seed",
        "2",
        "--min-label-mass",
        "0",
        "--out",
        out,
    )
    return out / "sula.html"


@pytest.fixture(scope="session")
def intervene_report(evil_root) -> Path:
    out = evil_root / "intervene"
    cli(
        "intervene",
        "--model",
        TWIN,
        "--layers",
        "1",
        "--strength",
        "0.5,1",
        "--n-per-k",
        "4",
        "--controls",
        "2",
        "--n-resamples",
        "50",
        "--out",
        out,
    )
    return out / "intervene.html"


@pytest.fixture(scope="session")
def windtunnel_run(evil_root) -> Path:
    out = evil_root / "windtunnel"
    cli("windtunnel", "run", "--task", "hmm", "--scale", "tiny", "--steps", "12", "--out", out)
    return out


@pytest.fixture(scope="session")
def windtunnel_report(windtunnel_run) -> Path:
    return windtunnel_run / "windtunnel.html"


@pytest.fixture(scope="session")
def denoise_report(evil_root) -> Path:
    out = evil_root / "denoise"
    cli("denoise", "--tiny", "--task", "sphere", "--steps", "30", "--n-resamples", "50", "--seed", "3", "--out", out)
    return out / "denoise.html"


@pytest.fixture(scope="session")
def positional_report(evil_root) -> Path:
    out = evil_root / "positional"
    cli(
        "positional",
        "--model",
        TWIN,
        "--lengths",
        "8,16",
        "--n-prompts",
        "5",
        "--n-resamples",
        "20",
        "--layers",
        "0,-1",
        "--batch-size",
        "3",
        "--out",
        out,
    )
    return out / "positional.html"


@pytest.fixture(scope="session")
def tunnel_length_report(windtunnel_run, evil_root) -> Path:
    """``geoprobe positional --windtunnel``: the other page positional.html can be."""
    out = evil_root / "positional-windtunnel"
    cli(
        "positional",
        "--windtunnel",
        windtunnel_run,
        "--lengths",
        "6,9",
        "--n-eval",
        "32",
        "--n-resamples",
        "20",
        "--out",
        out,
    )
    return out / "positional.html"
