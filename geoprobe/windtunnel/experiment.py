"""``windtunnel`` as an experiment: train (resuming), evaluate and report one wind tunnel into
``runs/windtunnel-TASK-SCALE`` (transformer/, mlp/, windtunnel.json, windtunnel.html), or with ``seeds``
one complete run per seed and the spread across them (``OUT/seed-N/``, ``OUT/seeds.json``,
``OUT/seeds.html``). Training resumes from each learner's last checkpoint; a sweep resumes per seed (a
seed finished with the same settings is read back). Also ``geoprobe windtunnel train`` and ``eval``:
:func:`train_locked` and :func:`evaluate_into`."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Mapping

from geoprobe.experiment import Experiment, OutputOptions, Reporter, run_into
from geoprobe.experiment.runner import finished
from geoprobe.models.options import LoadOptions, check_device
from geoprobe.outputs import check_replaceable_dir
from geoprobe.provenance import package_versions
from geoprobe.rundir import RunOutputs
from geoprobe.windtunnel.config import WindTunnelConfig
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.seeds import TunnelSeeds, seed_dir_name, seed_list
from geoprobe.windtunnel.train import check_run_dir

OUTPUTS = RunOutputs.of(
    WindTunnelResult, data={"transformer": check_run_dir, "mlp": check_run_dir}, partial="transformer"
)
EVAL_OUTPUTS = RunOutputs(result=WindTunnelResult.FILE, page=None, kind=WindTunnelResult.KIND)
#: what a seed directory may hold (an ordinary wind-tunnel run directory)
SEED_DIR_FILES = ("transformer", "mlp", "windtunnel.json", "windtunnel.html", "figures")


def default_dir(task: str, scale: str, convention: str = "geoprobe") -> Path:
    suffix = "-authors" if convention == "authors" else ""
    return Path("runs") / f"windtunnel-{task}-{scale}{suffix}"


def check_seed_dir(path: Path) -> None:
    """``path`` is a seed's run directory geoprobe wrote, or a one-line error."""
    check_replaceable_dir(path, SEED_DIR_FILES, "windtunnel.json")


def tunnel_request(config: WindTunnelConfig, device: str = "cpu") -> dict[str, Any]:
    """What ``windtunnel run`` records beside its windtunnel.json (the run is the same when this is)."""
    # as before --seeds and --convention: the defaults are not recorded; threads beside the config
    cfg = {
        k: v
        for k, v in dataclasses.asdict(config).items()
        if not (k == "seeds" and v is None) and not (k == "convention" and v == "geoprobe") and k != "threads"
    }
    return {"command": "windtunnel run", "config": cfg, "threads": config.threads, "device": device}


def check_learners(config: WindTunnelConfig, run_dir: Path) -> None:
    """Before the run directory is claimed: the learners already trained in ``run_dir`` resume with
    ``config``. A run trained with other settings is refused naming the setting to pass (or another
    --out), not --force: --force re-evaluates and rewrites the page, it never retrains."""
    from geoprobe.windtunnel.run import check_tunnel

    check_tunnel(
        config.task,
        config.scale,
        run_dir,
        arch=config.arch,
        seed=config.seed,
        steps=config.steps,
        task_params=config.task_params(),
        convention=config.convention,
    )


def train_into(config: WindTunnelConfig, run_dir: Path, resume: bool, device: str, reporter: Reporter) -> None:
    """Train ``config``'s learners into ``run_dir`` (resuming from their checkpoints) and say how it went."""
    from geoprobe.windtunnel.run import train_tunnel

    for arch in ("transformer", "mlp"):
        if (run_dir / arch).exists():
            check_run_dir(run_dir / arch)  # geoprobe trains only into directories it made
    logs = train_tunnel(
        config.task,
        config.scale,
        run_dir,
        arch=config.arch,
        seed=config.seed,
        steps=config.steps,
        resume=resume,
        threads=config.threads,
        task_params=config.task_params(),
        device=device,
        progress=reporter,
        convention=config.convention,
    )
    for arch, log in logs.items():
        if log["resumed_from"] == log["steps"]:
            reporter.say(f"{arch}: already trained ({log['steps']} steps), nothing to do")
            continue
        was = f" (resumed from step {log['resumed_from']})" if log["resumed_from"] is not None else ""
        reporter.say(
            f"{arch}: {log['n_params']:,} parameters, {log['steps']} steps in {log['seconds']:.0f} s{was}, "
            f"final loss {log['final_loss']:.4f}, {log['tokens_per_second']:,.0f} tokens/s"
        )
    reporter.say(f"wrote {run_dir}")


def train_locked(config: WindTunnelConfig, run_dir: Path, resume: bool, device: str, reporter: Reporter) -> None:
    """``geoprobe windtunnel train``: the location checked and locked, then :func:`train_into`."""
    from geoprobe.outputs import OutputLock, check_location

    check_device(device)
    check_location(run_dir, writes="run", result=EVAL_OUTPUTS.result)
    with OutputLock(run_dir):
        train_into(config, run_dir, resume, device, reporter)


def evaluate(run_dir: Path, config: WindTunnelConfig, reporter: Reporter) -> WindTunnelResult:
    from geoprobe.windtunnel.run import evaluate_tunnel

    return evaluate_tunnel(
        run_dir,
        n_eval=config.n_eval,
        n_probes=config.n_probes,
        geometry=config.geometry,
        ablate=config.ablations,
        progress=reporter,
    )


def evaluate_into(run_dir: Path, config: WindTunnelConfig, force: bool, reporter: Reporter) -> WindTunnelResult:
    """``geoprobe windtunnel eval``: score the learners trained in ``run_dir``; windtunnel.json written there."""
    request = {
        "command": "windtunnel eval",
        "n_eval": config.n_eval,
        "n_probes": config.n_probes,
        "geometry": config.geometry,
        "ablations": config.ablations,
    }
    output = OutputOptions(out=run_dir, force=force, in_place=True)
    compute = lambda run: evaluate(run_dir, config, reporter)  # noqa: E731
    return run_into(run_dir, EVAL_OUTPUTS, WindTunnelResult, request, output, compute, reporter)


def execute(config: WindTunnelConfig, load: LoadOptions, output: OutputOptions, reporter: Reporter) -> Any:
    """Train (resuming), evaluate and report one wind tunnel into ``output.out`` (default
    runs/windtunnel-TASK-SCALE); with ``config.seeds``, once per seed (:func:`execute_seeds`).
    ``load.device``: the training device (the one loading setting a wind tunnel honours)."""
    device = check_device(load.device)
    if config.seeds is not None:
        single = default_dir(config.task, config.scale, config.convention)
        seeds_out = single.with_name(f"{single.name}-seeds")
        for s in seed_list(config.seeds, config.seed):  # a seed trained otherwise: its fix, not --force
            one = dataclasses.replace(config, seed=s, seeds=None)
            check_learners(one, (output.out or seeds_out) / seed_dir_name(s))
        return execute_seeds(config, dataclasses.replace(output, out=output.out or seeds_out), device, reporter)
    run_dir = output.out or default_dir(config.task, config.scale, config.convention)
    check_learners(config, run_dir)

    def compute(run: Any) -> WindTunnelResult:
        train_into(config, run_dir, True, device, reporter)
        return evaluate(run_dir, config, reporter)

    request = tunnel_request(config, device)
    return run_into(run_dir, OUTPUTS, WindTunnelResult, request, output, compute, reporter)


def execute_seeds(config: WindTunnelConfig, output: OutputOptions, device: str, reporter: Reporter) -> TunnelSeeds:
    """Train, evaluate and report ``config`` once per seed of ``config.seeds`` into ``output.out/seed-N``,
    then the spread (``seeds.json``, ``seeds.html``). Nothing is overwritten silently: a seed whose
    windtunnel.json was made by the same settings is reused (so a rerun after a kill resumes: finished
    seeds are read back, an unfinished one resumes training from its last checkpoint); a seed directory
    made with other settings is refused in one line unless --force (which re-evaluates every seed;
    training still resumes, it never restarts); a finished seeds.json is refused without --force."""
    assert output.out is not None
    seeds = seed_list(config.seeds, config.seed)  # type: ignore[arg-type]
    top = output.out
    names = {s: seed_dir_name(s) for s in seeds}
    outputs = RunOutputs.of(TunnelSeeds, data={n: check_seed_dir for n in names.values()}, partial=names[seeds[0]])
    request = {
        "command": "windtunnel run --seeds",
        "config": {k: v for k, v in dataclasses.asdict(config).items() if k != "threads"},
        "seeds": list(seeds),
        "threads": config.threads,
        "device": device,
    }

    def compute(run: Any) -> TunnelSeeds:
        t0 = time.perf_counter()
        results = {}
        for i, s in enumerate(seeds):
            one = dataclasses.replace(config, seed=s, seeds=None)
            seed_dir = top / names[s]
            reporter.say(f"seed {s} ({i + 1} of {len(seeds)}): {seed_dir}")
            if not output.force and finished(seed_dir, WindTunnelResult, tunnel_request(one, device), output.figures):
                reporter.say(f"seed {s}: already evaluated with these settings, reading {seed_dir / 'windtunnel.json'}")
                results[s] = WindTunnelResult.load(seed_dir)
                continue
            sub = OutputOptions(out=seed_dir, force=output.force, figures=output.figures, parent=top)
            results[s] = execute(one, LoadOptions(device=device), sub, reporter)
        prov = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seeds": list(seeds),
            "run_dir": str(top),
            "seconds": time.perf_counter() - t0,
            "versions": package_versions(),
        }
        return TunnelSeeds.from_results(results, names, prov)

    return run_into(top, outputs, TunnelSeeds, request, output, compute, reporter)


def with_flags(config: WindTunnelConfig, v: Mapping[str, Any]) -> WindTunnelConfig:
    return config if v.get("seed") is None else dataclasses.replace(config, seed=v["seed"])


def tiny() -> tuple[WindTunnelConfig, None]:
    """The HMM tunnel at the seconds scale, 12 steps."""
    return WindTunnelConfig(task="hmm", scale="tiny", steps=12), None


EXPERIMENT = Experiment(
    command="windtunnel",
    config=WindTunnelConfig,
    results=(WindTunnelResult, TunnelSeeds),
    execute=execute,
    tiny=tiny,
    loads=("device",),
    flags=frozenset({"device", "seed"}),
    with_flags=with_flags,
    where="its [windtunnel] table (geoprobe windtunnel run --help)",
    resumes="the training checkpoints",
    cli="windtunnel run",
    resumed_by=("windtunnel train",),
)
