"""Regenerate docs/figures/<probe>.png: one representative figure per probe, on the embedded model.

Usage (from the repository root; about 15-30 minutes on 2 CPU cores)::

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python docs/make_figures.py [--scratch runs/docs-figures] [--only scan,sula]

Each probe runs through the CLI with ``--figures png`` into a scratch run directory (kept, so a
rerun skips probes whose run is already there; pass ``--rerun`` to redo them). The doc copies are
then re-rendered from the saved results at scale 1 (width 900 px, < 150 kB each) in ONE kaleido
batch. Settings are reduced from the defaults so the whole script fits in minutes on a CPU; they
are listed in COMMANDS below and quoted in each docs page next to its figure:

* scan: ``--prompts builtin`` (160 hand-written prompts, no corpus sampling), default analyses.
* domains: two domains (math, code), 200 mixed / 100 per-domain candidates, 8 prompts per
  entropy quintile (40 per set), 200 bootstrap resamples and permutations.
* compare: SmolLM2 on the builtin set (the scan above) against SmolLM2 on 40 math prompts.
* sula: 20 prompts per k, 200 resamples.  intervene: one layer (20 of 30), strengths 0.5 and 1,
  3 random-axis controls, 10 prompts per k, 200 resamples.
* windtunnel: the report of the existing CPU-scale bijection run (runs/windtunnel-bijection-cpu)
  if present, else a fresh ``--scale tiny`` run.
* denoise: linear task, 400 steps, 500 held-out prompts, 200 resamples, no dimension transfer.
* positional: lengths 16-128, 12 prompts per length, 100 resamples.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS_FIGURES = ROOT / "docs" / "figures"
MODEL = "smollm2-135m"
MAX_BYTES = 150_000
WIDTH = 900

#: probe -> (command after `geoprobe`, run-dir name, results file, result class, anchor of the doc figure);
#: "{out}" is the probe's scratch run directory, "{scratch}" the scratch root
COMMANDS: dict[str, tuple[str, str, str, str, str]] = {
    "scan": (
        f"scan --model {MODEL} --prompts builtin --out {{out}}",
        "scan",
        "results.json",
        "geoprobe.scan:ScanResult",
        "manifold-profile",
    ),
    "domains": (
        f"compare-domains --model {MODEL} --domains math,code --candidates 200 --domain-candidates 100 "
        "--per-quintile 8 --n-resamples 200 --n-permutations 200 --out {out}",
        "domains",
        "domains.json",
        "geoprobe.domains.result:DomainComparison",
        "sets",
    ),
    "scan-math": (
        f"scan --model {MODEL} --domain math --candidates 200 --per-quintile 8 --out {{out}}",
        "scan-math",
        "results.json",
        "geoprobe.scan:ScanResult",
        "",
    ),
    "compare": (
        "compare {scratch}/scan {scratch}/scan-math --out {out}",
        "compare",
        "comparison.json",
        "geoprobe.compare.result:ModelComparison",
        "comparison",
    ),
    "sula": (
        f"sula --model {MODEL} --n-per-k 20 --n-resamples 200 --out {{out}}",
        "sula",
        "sula.json",
        "geoprobe.sula.result:SulaResult",
        "calibration",
    ),
    "intervene": (
        f"intervene --model {MODEL} --layers 20 --strength 0.5,1 --controls 3 --n-per-k 10 "
        "--n-resamples 200 --out {out}",
        "intervene",
        "intervene.json",
        "geoprobe.intervene.result:InterventionResult",
        "dose-response",
    ),
    "windtunnel": (
        "windtunnel report runs/windtunnel-bijection-cpu --out {out}/windtunnel.html",
        "windtunnel",
        "runs/windtunnel-bijection-cpu/windtunnel.json",
        "geoprobe.windtunnel.result:WindTunnelResult",
        "entropy",
    ),
    "denoise": (
        "denoise --task linear --steps 400 --n-eval 500 --n-resamples 200 --transfer-dims none --out {out}",
        "denoise",
        "denoise.json",
        "geoprobe.denoise.result:DenoiseResult",
        "lengths",
    ),
    "positional": (
        f"positional --model {MODEL} --lengths 16,32,64,128 --n-prompts 12 --n-resamples 100 --out {{out}}",
        "positional",
        "positional.json",
        "geoprobe.positional.result:PositionalResult",
        "profiles",
    ),
}
#: the doc figures, in the order they are rendered (scan-math only feeds compare)
PROBES = ("scan", "domains", "compare", "sula", "intervene", "windtunnel", "denoise", "positional")
TINY_WINDTUNNEL = "windtunnel run --task bijection --scale tiny --out {out}"


def command(name: str, scratch: Path) -> list[str]:
    cmd = COMMANDS[name][0]
    if name == "windtunnel" and not (ROOT / "runs/windtunnel-bijection-cpu/windtunnel.json").exists():
        cmd = TINY_WINDTUNNEL
    return shlex.split(cmd.format(out=scratch / COMMANDS[name][1], scratch=scratch)) + ["--figures", "png", "--force"]


def results_path(name: str, scratch: Path) -> Path:
    rel = COMMANDS[name][2]
    if rel.startswith("runs/"):
        return ROOT / rel if (ROOT / rel).exists() else scratch / COMMANDS[name][1] / "windtunnel.json"
    return scratch / COMMANDS[name][1] / rel


def load(name: str, scratch: Path):
    import importlib

    mod, cls = COMMANDS[name][3].split(":")
    return getattr(importlib.import_module(mod), cls).load(results_path(name, scratch))


def run_probe(name: str, scratch: Path, rerun: bool) -> float:
    done = (scratch / COMMANDS[name][1] / "figures").is_dir() and results_path(name, scratch).exists()
    if done and not rerun:
        print(f"[{name}] already run in {scratch / COMMANDS[name][1]}; --rerun to redo", flush=True)
        return 0.0
    cmd = [sys.executable, "-m", "geoprobe.cli", *command(name, scratch)]
    print(f"[{name}] geoprobe {shlex.join(cmd[3:])}", flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", type=Path, default=ROOT / "runs" / "docs-figures")
    ap.add_argument("--only", help="comma-separated probes (default: all)")
    ap.add_argument("--rerun", action="store_true", help="rerun probes whose scratch run exists")
    args = ap.parse_args(argv)
    wanted = PROBES if not args.only else tuple(p.strip() for p in args.only.split(",") if p.strip())
    unknown = [p for p in wanted if p not in PROBES]
    if unknown:
        ap.error(f"--only {unknown[0]!r} is not one of {', '.join(PROBES)}")
    scratch = args.scratch.resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    timings = {}
    for name in wanted:
        if name == "compare":
            for dep in ("scan", "scan-math"):
                timings[dep] = run_probe(dep, scratch, args.rerun and dep in wanted)
        timings[name] = run_probe(name, scratch, args.rerun)

    from geoprobe.report.export import export_figures, figure_list

    figs = []
    for name in wanted:
        anchor = COMMANDS[name][4]
        by_anchor = {a: (c, f) for a, c, f in figure_list(load(name, scratch))}
        if anchor not in by_anchor:  # e.g. denoise without a length sweep
            anchor = next(iter(by_anchor))
        caption, fig = by_anchor[anchor]
        figs.append((name, caption, fig.update_layout(width=WIDTH)))
    t = time.perf_counter()
    paths = export_figures(figs, DOCS_FIGURES, "png", force=True, scale=1)
    print(f"rendered {len(paths)} doc figures in {time.perf_counter() - t:.1f} s (one kaleido batch)")
    for p in paths:
        size = p.stat().st_size
        flag = "" if size < MAX_BYTES else f"  <-- over {MAX_BYTES // 1000} kB"
        print(f"  {p.relative_to(ROOT)}: {size / 1000:.0f} kB{flag}")
    print("probe run times:", ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))


if __name__ == "__main__":
    main()
