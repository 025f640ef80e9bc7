"""Error cases of issue 27 part 1: --force replaces only its own kind; a run never inside another
run; the lock on the resolved directory; dangling-symlink --out. Joined into the audit by
tests/cli/error_cases.py (docs/errors.md is generated from the joined list); the building blocks are
in tests/cli/case_kit.py.

Each of these lost data or wrote in the wrong place on the commit before issue 27 (exit 0): a page
over results.json, capture.json or the run record; prompt lines over results.json; a run inside a
capture, a learner or another run; a SULA run over a scan's run record; scan results over SULA ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

from tests.cli import odd_inputs as odd
from tests.cli.case_kit import TWIN, Case, case, owned_json, owned_page, text

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v0_1_0"


def scan_run(d: Path, name: str = "run") -> None:
    """``d/<name>``: a finished scan run as geoprobe leaves it: results.json (a real scan result),
    report.html, capture/ and the run record naming results.json with its sha256."""
    from geoprobe.kinds import RECORD, RECORD_KIND

    run = d / name
    shutil.copytree(FIXTURE / "capture", run / "capture")
    (run / "results.json").write_text(odd.scan_results_json(), encoding="utf-8")
    owned_page(f"{name}/report.html")(d)
    sha = hashlib.sha256((run / "results.json").read_bytes()).hexdigest()
    record = {"kind": RECORD_KIND, "version": 1, "result": "results.json", "sha256": sha, "request": {}}
    (run / RECORD).write_text(json.dumps(record), encoding="utf-8")


def wind_tunnel_run(d: Path) -> None:
    """``d/wt``: an evaluated wind-tunnel run (record, windtunnel.json, a learner); ``d/tr``: trained only."""
    from geoprobe.kinds import LEARNER_KIND, RECORD, RECORD_KIND

    owned_json("wt/windtunnel.json", "geoprobe.windtunnel")(d)
    (d / "wt" / RECORD).write_text(json.dumps({"kind": RECORD_KIND, "version": 1, "result": "windtunnel.json"}))
    for learner in ("wt/transformer", "tr/transformer"):
        owned_json(f"{learner}/run.json", LEARNER_KIND)(d)


SETUPS: dict[str, Callable[[Path], None]] = {
    "scan_run_dir": scan_run,
    "wind_tunnel_dirs": wind_tunnel_run,
    "sula_results_as_scan": lambda d: owned_json("run2/results.json", "geoprobe.sula")(d),
    "dangling_links": lambda d: (os.symlink("gone", d / "link"), os.symlink("gone.html", d / "link.html")),
    "scan_prompts_12": text("p.txt", "".join(f"Prompt number {i} says that the weather\n" for i in range(12))),
}

CASES: tuple[Case, ...] = (
    case(
        "report-out-over-results",
        "report run --out run/results.json --force",
        "report --out a run's results.json with --force (replaced it with a page)",
        "--out 'run/results.json' does not end in .html or .htm",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "report-out-over-capture-json",
        "report run --out run/capture/capture.json --force",
        "report --out a capture's capture.json with --force (replaced it with a page)",
        "--out 'run/capture/capture.json' does not end in .html or .htm",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "report-out-over-run-record",
        "report run --out run/.geoprobe-run.json --force",
        "report --out the run record with --force (replaced it with a page)",
        "--out 'run/.geoprobe-run.json' does not end in .html or .htm",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "report-page-into-capture",
        "report run --out run/capture/page.html",
        "a page written into a capture directory (a later scan --force refused the capture)",
        "--out 'run/capture/page.html' lies inside 'run/capture', a capture directory",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "sample-out-over-results",
        f"sample --model {TWIN} --out run/results.json --force",
        "sample --out a scan's results.json with --force (replaced it with prompt lines)",
        "--out 'run/results.json' does not end in .jsonl",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "scan-out-inside-a-run",
        f"scan --model {TWIN} --prompts p.txt --out run/capture",
        "a scan written into another scan's capture directory",
        "--out 'run/capture' lies inside 'run', a run directory of geoprobe's (its results: results.json)",
        "choose an --out outside 'run'",
        before_load=True,
        setup=("scan_run_dir", "scan_prompts_12"),
    ),
    case(
        "windtunnel-out-inside-a-run",
        "windtunnel run --scale tiny --out wt/transformer",
        "a wind-tunnel run written into another run's learner directory",
        "--out 'wt/transformer' lies inside 'wt', a run directory of geoprobe's (its results: windtunnel.json)",
        before_load=True,
        setup=("wind_tunnel_dirs",),
    ),
    case(
        "windtunnel-out-a-learner",
        "windtunnel run --scale tiny --out tr/transformer",
        "a wind-tunnel run written into a trained learner's directory",
        "--out 'tr/transformer' is a wind-tunnel training run of geoprobe's, not a run directory",
        before_load=True,
        setup=("wind_tunnel_dirs",),
    ),
    case(
        "sula-force-over-a-scan-run",
        f"sula --model {TWIN} --out run --force",
        "sula --force into a scan's run directory (replaced the scan's run record)",
        "--out 'run' is the run directory of another command (its results: results.json; this command writes "
        "sula.json)",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "capture-overwrite-a-scan-capture",
        f"capture --model {TWIN} --out run/capture --overwrite",
        "capture --overwrite of the capture inside a scan's run",
        "--out 'run/capture' lies inside 'run', a run directory of geoprobe's",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "capture-overwrite-a-run",
        f"capture --model {TWIN} --out run --overwrite",
        "capture --overwrite of a scan's run directory",
        "--out 'run' is a run directory of geoprobe's (its results: results.json), not a capture directory",
        before_load=True,
        setup=("scan_run_dir",),
    ),
    case(
        "scan-force-over-other-results",
        f"scan --model {TWIN} --prompts p.txt --out run2 --force",
        "scan --force where results.json holds SULA results (replaced them)",
        "'run2/results.json' is a sula results file that geoprobe wrote, not a scan results file",
        before_load=True,
        setup=("sula_results_as_scan", "scan_prompts_12"),
    ),
    case(
        "scan-out-dangling-link",
        f"scan --model {TWIN} --prompts p.txt --out link",
        "--out a symbolic link to nothing",
        "--out 'link' is a symbolic link to 'gone', which does not exist",
        before_load=True,
        setup=("dangling_links", "scan_prompts_12"),
    ),
    case(
        "report-out-dangling-link",
        "report run --out link.html",
        "report --out a symbolic link to nothing",
        "--out 'link.html' is a symbolic link to 'gone.html', which does not exist",
        before_load=True,
        setup=("scan_run_dir", "dangling_links"),
    ),
)
