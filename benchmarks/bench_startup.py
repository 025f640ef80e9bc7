"""How long the ``geoprobe`` command takes to start, and which imports it waits for (issue 39 case 7).

Side by side in one run, for ``python -c pass`` (the interpreter alone, the floor), ``geoprobe --help``,
``geoprobe models``, ``geoprobe sweep status DIR`` (a sweep of two tiny cells, one done and one failed,
made once in a temporary directory before anything is timed) and ``geoprobe scan --help``:

* **wall**: the median (and range) of ``--repeats`` runs of the installed ``geoprobe`` script in a fresh
  process each, output captured (a pipe, as a script reading it would see);
* **imports**: one run under ``python -X importtime``: the time spent importing (the sum of the root
  imports' cumulative times), which of the heavy packages (torch, transformers, ray, plotly, pandas,
  scipy, sklearn) were imported, and the top offenders: the packages with the largest cumulative import
  time (a package's time includes what it imported itself, so nested ones overlap).

Target (issue 39): ``geoprobe --help`` and ``geoprobe sweep status`` under 1 s on an idle machine. The load
average is printed beside the numbers: a loaded machine's times are not the idle ones.

``--root DIR`` times the geoprobe of another checkout (e.g. a ``git worktree`` of an earlier commit) with the
same interpreter, for a before/after comparison; ``--write LABEL`` records the table in docs/benchmarks.md
(section "Start-up", block LABEL, e.g. ``before`` or ``after``), keeping the other blocks.

    python benchmarks/bench_startup.py                     # prints the table
    python benchmarks/bench_startup.py --write after       # and records it in docs/benchmarks.md
    python benchmarks/bench_startup.py --root /tmp/geoprobe-before --write before
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
TITLE = "Start-up (benchmarks/bench_startup.py, issue 39 case 7)"
HEAVY = ("torch", "transformers", "ray", "plotly", "pandas", "scipy", "sklearn")
#: a sweep of two tiny cells: one scan on a twin (done in seconds) and one that fails at once
SWEEP = """[sweep]
experiment = "scan"
out = "{out}"
[[cell]]
model = "twin:llama"
max_tokens = 4
[[cell]]
model = "twin:nosuchthing"
[prompts]
set = "builtin"
[capture]
batch_size = 8
[analyses]
n_resamples = 20
pca_resamples = 10
null_draws = 10
n_permutations = 20
init_baseline = false
"""


def geoprobe_script() -> str:
    """The ``geoprobe`` console script beside this interpreter (what a user runs)."""
    script = Path(sys.executable).parent / "geoprobe"
    if not script.exists():
        sys.exit(f"no geoprobe script beside {sys.executable}; install the package (pip install -e .) first")
    return str(script)


def environment(root: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONPATH")}
    env["HF_HUB_OFFLINE"] = "1"
    if root is not None:
        env["PYTHONPATH"] = str(root)
    return env


def make_sweep(where: Path, env: dict[str, str]) -> Path:
    spec = where / "tiny.toml"
    out = where / "sweep"
    spec.write_text(SWEEP.format(out=out))
    r = subprocess.run([geoprobe_script(), "sweep", str(spec)], env=env, capture_output=True, text=True)
    if not (out / "sweep.json").exists():  # exit 1 is expected (one cell fails); no manifest is not
        sys.exit(f"could not make the tiny sweep (exit {r.returncode}):\n{r.stderr}")
    return out


def wall(argv: list[str], env: dict[str, str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = subprocess.run(argv, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"{' '.join(argv)} exited {r.returncode}:\n{r.stderr}")
    return times


def imports(argv: list[str], env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """(seconds spent importing, {top-level package: its largest cumulative import time in s}) under -X importtime."""
    r = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, capture_output=True, text=True)
    total, packages = 0.0, {}
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if not cumulative.strip().isdigit():
            continue  # the header
        seconds = int(cumulative) / 1e6
        if not name.startswith("  "):  # a root import (nothing was importing it)
            total += seconds
        top = name.strip().split(".")[0]
        if not top.startswith("_") and top != "geoprobe":
            packages[top] = max(packages.get(top, 0.0), seconds)
    return total, packages


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--root", type=Path, default=None, help="time this checkout's geoprobe (PYTHONPATH)")
    ap.add_argument("--write", metavar="LABEL", default=None, help="record the table in docs/benchmarks.md")
    args = ap.parse_args()
    env = environment(args.root)
    geoprobe = geoprobe_script()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = make_sweep(Path(tmp), env)
        commands = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("geoprobe --help", [geoprobe, "--help"]),
            ("geoprobe models", [geoprobe, "models"]),
            ("geoprobe sweep status DIR", [geoprobe, "sweep", "status", str(sweep)]),
            ("geoprobe scan --help", [geoprobe, "scan", "--help"]),
        ]
        load_before = load()
        rows = []
        for label, argv in commands:
            times = wall(argv, env, args.repeats)
            total, packages = imports(argv[1:] if argv[0] == sys.executable else argv, env)
            heavy = [h for h in HEAVY if h in packages]
            top = sorted(packages.items(), key=lambda kv: -kv[1])[:4]
            rows.append(
                f"| `{label}` | {statistics.median(times):.2f} ({min(times):.2f}–{max(times):.2f}) | {total:.2f} | "
                f"{', '.join(heavy) or 'none'} | {', '.join(f'{k} {v:.2f}' for k, v in top)} |"
            )
            print(rows[-1], flush=True)
        load_after = load()
    lines = [
        f"Command: `python benchmarks/bench_startup.py --repeats {args.repeats}"
        + (f" --root {args.root}" if args.root else "")
        + "`",
        "",
        f"Run {datetime.now().isoformat(timespec='seconds')} on {platform.processor() or platform.machine()} "
        f"({os.cpu_count()} CPUs), Python {platform.python_version()}; load average (1, 5, 15 min) "
        f"{load_before} before, {load_after} after. Wall: median of {args.repeats} runs (range), output to a pipe.",
        "",
        "| command | wall s, median (range) | imports s | heavy packages imported | top offenders (cumulative s) |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]
    text = "\n".join(lines)
    print("\n" + text)
    if args.write:
        record(args.write, text)


def record(label: str, body: str) -> None:
    """Replace block ``label`` of the start-up section of docs/benchmarks.md (appending the block, and the
    section, where missing), keeping everything else in the file."""
    start, end = f"<!-- startup:{label}:start -->", f"<!-- startup:{label}:end -->"
    block = f"{start}\n### {label}\n\n{body}{end}"
    text = DOC.read_text()
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        heading = f"## {TITLE}"
        if heading not in text:
            text = text.rstrip("\n") + f"\n\n{heading}\n"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
        # a block appended at the file's end belongs to the last section: the start-up section must be last
        if text.rindex("\n## ") != text.index(heading) - 1:
            sys.exit(f"the section '{TITLE}' is not the last of {DOC}: add the block's markers in it by hand")
    DOC.write_text(text)


if __name__ == "__main__":
    main()
