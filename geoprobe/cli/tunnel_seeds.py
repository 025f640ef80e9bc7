"""``geoprobe windtunnel run --seeds``: one complete run per seed, then the spread across seeds.

Layout (``OUT`` defaults to runs/windtunnel-TASK-SCALE-seeds)::

    OUT/seed-0/   an ordinary run directory (transformer/, mlp/, windtunnel.json, windtunnel.html)
    OUT/seed-1/   …
    OUT/seeds.json, OUT/seeds.html   the spread across seeds (TunnelSeeds)

Nothing is overwritten silently: a seed whose windtunnel.json was made by the same settings is reused
(so a rerun after a kill resumes: finished seeds are read back, an unfinished one resumes training from
its last checkpoint); a seed directory made with other settings is refused in one line unless --force
(which re-evaluates every seed; training still resumes, it never restarts); a finished seeds.json is
refused without --force, as for every run directory."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable, Optional

from geoprobe.cli.app import out
from geoprobe.cli.common import execute_run, print_rows
from geoprobe.cli.options import OutputOptions
from geoprobe.outputs import check_replaceable_dir, figures_dir
from geoprobe.provenance import package_versions
from geoprobe.rundir import RunOutputs, recorded_request
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.seeds import TunnelSeeds, seed_dir_name, seed_list

#: what a seed directory may hold (an ordinary wind-tunnel run directory)
SEED_DIR_FILES = ("transformer", "mlp", "windtunnel.json", "windtunnel.html", "figures")


def check_seed_dir(path: Path) -> None:
    """``path`` is a seed's run directory geoprobe wrote, or a one-line error."""
    check_replaceable_dir(path, SEED_DIR_FILES, "windtunnel.json")


def _done(seed_dir: Path, request: dict[str, Any], figures: Optional[str]) -> bool:
    """The seed's results, page (and requested figures) are there, made by this very request."""
    result, page = WindTunnelResult.FILE, str(WindTunnelResult.PAGE)
    if not (seed_dir / result).is_file() or not (seed_dir / page).is_file():
        return False
    if figures and not any(figures_dir(seed_dir).glob(f"*.{figures}")):
        return False
    return recorded_request(seed_dir, result) == json.loads(json.dumps(request, default=str))


def print_spread(result: TunnelSeeds) -> None:
    rows = [r for r in result.spread_rows() if r["measure (bits)"] == "MAE paper def."]
    print_rows(f"{result.name} ({result.scale}): entropy MAE across seeds {list(result.seeds)}", rows)


def execute_seeds(
    config: Any,
    output: OutputOptions,
    threads: Optional[int],
    device: str,
    *,
    run_one: Callable[[Any, OutputOptions, Optional[int], str], Any],
    request_of: Callable[[Any, Optional[int], str], dict[str, Any]],
    default_out: Path,
) -> Any:
    """Train, evaluate and report ``config`` once per seed of ``config.seeds``, then the spread:
    ``run_one(config, output, threads, device)`` runs one seed (``execute_tunnel``), ``request_of`` is
    what it records beside its windtunnel.json (``tunnel_request``); ``default_out`` is ``OUT`` when
    ``--out`` is not given (the single run's default directory plus ``-seeds``)."""
    seeds = seed_list(config.seeds, config.seed)
    top = output.out or default_out
    names = {s: seed_dir_name(s) for s in seeds}
    outputs = RunOutputs.of(TunnelSeeds, data={n: check_seed_dir for n in names.values()}, partial=names[seeds[0]])
    request = {
        "command": "windtunnel run --seeds",
        "config": dataclasses.asdict(config),
        "seeds": list(seeds),
        "threads": threads,
        "device": device,
    }

    def compute(run: Any) -> TunnelSeeds:
        t0 = time.perf_counter()
        results = {}
        for i, s in enumerate(seeds):
            one = dataclasses.replace(config, seed=s, seeds=None)
            seed_dir = top / names[s]
            out.print(f"seed {s} ({i + 1} of {len(seeds)}): {seed_dir}", highlight=False)
            if not output.force and _done(seed_dir, request_of(one, threads, device), output.figures):
                out.print(f"seed {s}: already evaluated with these settings, reading {seed_dir / 'windtunnel.json'}")
                results[s] = WindTunnelResult.load(seed_dir)
                continue
            sub = OutputOptions(out=seed_dir, force=output.force, figures=output.figures, parent=top)
            results[s] = run_one(one, sub, threads, device)
        prov = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seeds": list(seeds),
            "run_dir": str(top),
            "seconds": time.perf_counter() - t0,
            "versions": package_versions(),
        }
        return TunnelSeeds.from_results(results, names, prov)

    return execute_run(top, outputs, request, output, compute, print_spread)
