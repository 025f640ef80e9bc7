"""``geoprobe windtunnel train|eval|report|run``: the Bayesian wind tunnels of arXiv 2512.22471.

Training resumes: each learner's checkpoints live in ``OUT/transformer`` and ``OUT/mlp``, and the
same command after a kill or Ctrl-C continues from the last one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer

from geoprobe.cli.app import app, out
from geoprobe.cli.common import check_figures, execute_run, print_rows, write_report
from geoprobe.cli.options import OUTPUT, OutputOptions, SeedOpt, ThreadsOpt, takes
from geoprobe.cli.progress import stage_progress
from geoprobe.models.loading import check_device
from geoprobe.rundir import RunOutputs
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.train import check_run_dir

wt = typer.Typer(
    help="Bayesian wind tunnels: tasks with exact posteriors, trained transformers vs MLPs.", no_args_is_help=True
)
app.add_typer(wt, name="windtunnel")

OUTPUTS = RunOutputs.of(
    WindTunnelResult, data={"transformer": check_run_dir, "mlp": check_run_dir}, partial="transformer"
)
EVAL_OUTPUTS = RunOutputs(result=WindTunnelResult.FILE, page=None, kind=WindTunnelResult.KIND)

TaskOpt = typer.Option("bijection", "--task", help="bijection | hmm")
ScaleOpt = typer.Option(
    "cpu",
    "--scale",
    help="tiny (seconds) | cpu (measured on 2 cores: bijection transformer 22 "
    "min, HMM transformer about an hour, MLPs 6-9 min) | paper (GPU)",
)
VocabOpt = typer.Option(None, "--vocab", help="task V: bijection symbols (2-100) or HMM emissions (2-10)")
LengthOpt = typer.Option(None, "--length", help="task K: predictions per sequence (bijection 1-200, HMM 1-500)")
StatesOpt = typer.Option(None, "--states", help="HMM hidden states S (2-10)")
RepeatOpt = typer.Option(None, "--repeat", help="bijection: probability that a key repeats an earlier one")
ConventionOpt = typer.Option(
    "geoprobe",
    "--convention",
    help="geoprobe | authors: the authors' exact task (bijection: 19 pairs, keys without replacement, "
    "a repeated query, one token range, no BOS; HMM: Dirichlet(1) clipped at 0.05, K = 15, their tokens)",
)
StepsOpt = typer.Option(None, "--steps", help="override the scale's number of steps (at most 1000000)")
DeviceOpt = typer.Option("cpu", "--device", help="training device: cpu | cuda | cuda:N (the paper scale wants a GPU)")


def default_dir(task: str, scale: str, convention: str = "geoprobe") -> Path:
    suffix = "-authors" if convention == "authors" else ""
    return Path("runs") / f"windtunnel-{task}-{scale}{suffix}"


def _config(
    task: str,
    scale: str,
    arch: str,
    seed: int,
    steps: Optional[int],
    n_eval: Optional[int] = None,
    n_probes: Optional[int] = None,
    geometry: bool = True,
    ablations: bool = True,
    convention: str = "geoprobe",
    **task_params: Any,
) -> Any:
    from geoprobe.windtunnel.config import WindTunnelConfig

    return WindTunnelConfig(
        task=task,
        scale=scale,
        arch=arch,
        seed=seed,
        steps=steps,
        n_eval=n_eval,  # type: ignore[arg-type]
        n_probes=n_probes,
        geometry=geometry,
        ablations=ablations,
        convention=convention,  # type: ignore[arg-type]
        **task_params,
    )


def _train(config: Any, run_dir: Path, resume: bool, threads: Optional[int], device: str = "cpu") -> None:
    from geoprobe.windtunnel.run import train_tunnel

    for arch in ("transformer", "mlp"):
        if (run_dir / arch).exists():
            check_run_dir(run_dir / arch)  # geoprobe trains only into directories it made
    with stage_progress() as progress:
        logs = train_tunnel(
            config.task,
            config.scale,
            run_dir,
            arch=config.arch,
            seed=config.seed,
            steps=config.steps,
            resume=resume,
            threads=threads,
            task_params=config.task_params(),
            device=device,
            progress=progress,
            convention=config.convention,
        )
    for arch, log in logs.items():
        if log["resumed_from"] == log["steps"]:
            out.print(f"{arch}: already trained ({log['steps']} steps), nothing to do")
            continue
        was = f" (resumed from step {log['resumed_from']})" if log["resumed_from"] is not None else ""
        out.print(
            f"{arch}: {log['n_params']:,} parameters, {log['steps']} steps in {log['seconds']:.0f} s{was}, "
            f"final loss {log['final_loss']:.4f}, {log['tokens_per_second']:,.0f} tokens/s"
        )
    out.print(f"wrote {run_dir}")


def _evaluate(run_dir: Path, config: Any) -> Any:
    from geoprobe.windtunnel.run import evaluate_tunnel

    with stage_progress() as progress:
        return evaluate_tunnel(
            run_dir,
            n_eval=config.n_eval,
            n_probes=config.n_probes,
            geometry=config.geometry,
            ablate=config.ablations,
            progress=progress,
        )


def print_summary(result: Any) -> None:
    from geoprobe.windtunnel.report import metrics_table

    print_rows(f"{result.name} ({result.scale}): entropy error against the analytic posterior", metrics_table(result))
    for c in result.checks():
        mark = "pass" if c["pass"] else "FAIL"
        out.print(f"  {mark}: {c['check']} {c['target']}: measured {c['measured']:.4g}")
    if result.geometry is not None:
        g = result.geometry
        out.print(
            f"  frame t90 ≈ step {g.t90_frame:.0f}, precision t90 ≈ step {g.t90_precision:.0f} "
            f"({'frame first' if g.dissociation else 'no dissociation'})"
        )
    if result.ablations is not None:
        a = result.ablations
        out.print(
            f"  hypothesis head: layer 0 head {a.hypothesis_head} "
            f"({'the most damaging head' if a.hypothesis_head_is_top else 'not the most damaging head'})"
        )


@wt.command("train")
def train_cmd(
    task: str = TaskOpt,
    scale: str = ScaleOpt,
    arch: str = typer.Option("both", "--arch", help="both | transformer | mlp"),
    steps: Optional[int] = StepsOpt,
    seed: int = SeedOpt,
    threads: Optional[int] = ThreadsOpt,
    vocab: Optional[int] = VocabOpt,
    length: Optional[int] = LengthOpt,
    states: Optional[int] = StatesOpt,
    repeat: Optional[float] = RepeatOpt,
    out_dir: Optional[Path] = typer.Option(None, "--out", help="run directory (default runs/windtunnel-TASK-SCALE)"),
    no_resume: bool = typer.Option(False, "--no-resume", help="refuse to continue an existing run"),
    device: str = DeviceOpt,
    convention: str = ConventionOpt,
) -> None:
    """Train the transformer and its capacity-matched MLP; resumes from the last checkpoint."""
    from geoprobe.outputs import OutputLock, check_location

    config = _config(
        task, scale, arch, seed, steps, convention=convention, vocab=vocab, length=length, states=states, repeat=repeat
    )
    run_dir = out_dir or default_dir(task, scale, convention)
    check_device(device)
    check_location(run_dir, writes="run", result=EVAL_OUTPUTS.result)
    with OutputLock(run_dir):
        _train(config, run_dir, not no_resume, threads, device)


@wt.command("eval")
def eval_cmd(
    run_dir: Path = typer.Argument(..., help="a run directory made by 'geoprobe windtunnel train'"),
    n_eval: Optional[int] = typer.Option(
        None, "--n-eval", help="held-out sequences (default: the scale's; at most 50000)"
    ),
    n_probes: Optional[int] = typer.Option(None, "--n-probes", help="probe prompts per checkpoint (at most 50000)"),
    no_geometry: bool = typer.Option(False, "--no-geometry", help="skip the per-checkpoint probes"),
    no_ablations: bool = typer.Option(False, "--no-ablations", help="skip the layer and head ablations"),
    force: bool = typer.Option(False, "--force", "--overwrite", help="replace a windtunnel.json geoprobe wrote"),
) -> None:
    """Score both learners against the analytic posterior; ablate and probe the transformer."""
    from geoprobe.windtunnel.train import read_spec

    spec = read_spec(run_dir / "transformer")
    config = _config(
        spec.task["name"],
        spec.scale if spec.scale in ("tiny", "cpu", "paper") else "cpu",
        "both",
        spec.train.seed,
        None,
        n_eval,
        n_probes,
        not no_geometry,
        not no_ablations,
        convention=spec.task.get("convention", "geoprobe"),
    )
    request = {
        "command": "windtunnel eval",
        "n_eval": n_eval,
        "n_probes": n_probes,
        "geometry": not no_geometry,
        "ablations": not no_ablations,
    }
    execute_run(
        run_dir,
        EVAL_OUTPUTS,
        request,
        OutputOptions(out=run_dir, force=force, in_place=True),
        lambda run: _evaluate(run_dir, config),
        print_summary,
    )


@wt.command("report")
def report_cmd(
    results: Path = typer.Argument(..., help="windtunnel.json, or the run directory holding it"),
    report_out: Optional[Path] = typer.Option(None, "--out", help="HTML file (default next to the results)"),
    force: bool = typer.Option(False, "--force", "--overwrite", help="replace a page geoprobe wrote"),
    figures: Optional[str] = typer.Option(
        None,
        "--figures",
        help="also write each figure as png|svg|pdf to figures/ beside the HTML file (kaleido + Chromium)",
    ),
) -> None:
    """Write the HTML report (figures, the paper's table, checks, provenance)."""
    from geoprobe.windtunnel.result import WindTunnelResult

    fmt = check_figures(figures)
    base = results if results.is_dir() else results.parent
    target = report_out or base / "windtunnel.html"
    result = WindTunnelResult.load(results)
    write_report(result, target, fmt, force)


@wt.command("run")
@takes(OUTPUT)
def run_cmd(
    output: OutputOptions,
    task: str = TaskOpt,
    scale: str = ScaleOpt,
    seed: int = SeedOpt,
    steps: Optional[int] = StepsOpt,
    threads: Optional[int] = ThreadsOpt,
    vocab: Optional[int] = VocabOpt,
    length: Optional[int] = LengthOpt,
    states: Optional[int] = StatesOpt,
    repeat: Optional[float] = RepeatOpt,
    device: str = DeviceOpt,
    seeds: Optional[str] = typer.Option(
        None,
        "--seeds",
        help="one run per seed, then the spread: a list (0,1,2) or a count (3: seeds from --seed); "
        "into OUT/seed-N/ and OUT/seeds.json (default OUT runs/windtunnel-TASK-SCALE-seeds)",
    ),
    convention: str = ConventionOpt,
) -> None:
    """train, eval and report in one go."""
    config = _config(
        task,
        scale,
        "both",
        seed,
        steps,
        convention=convention,
        vocab=vocab,
        length=length,
        states=states,
        repeat=repeat,
        seeds=seeds,
    )
    execute_tunnel(config, output, threads, device)


def tunnel_request(config: Any, threads: Optional[int] = None, device: str = "cpu") -> dict[str, Any]:
    """What ``windtunnel run`` records beside its windtunnel.json (the run is the same when this is)."""
    # as before --seeds and --convention: the defaults are not recorded
    cfg = {
        k: v
        for k, v in dataclasses.asdict(config).items()
        if not (k == "seeds" and v is None) and not (k == "convention" and v == "geoprobe")
    }
    return {"command": "windtunnel run", "config": cfg, "threads": threads, "device": device}


def check_learners(config: Any, run_dir: Path) -> None:
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


def execute_tunnel(config: Any, output: OutputOptions, threads: Optional[int] = None, device: str = "cpu") -> Any:
    """Train (resuming), evaluate and report one wind tunnel into ``output.out`` (default
    runs/windtunnel-TASK-SCALE); with ``config.seeds``, once per seed (geoprobe.cli.tunnel_seeds)."""
    check_device(device)
    if config.seeds is not None:
        from geoprobe.cli.tunnel_seeds import execute_seeds
        from geoprobe.windtunnel.seeds import seed_dir_name, seed_list

        single = default_dir(config.task, config.scale, config.convention)
        seeds_out = single.with_name(f"{single.name}-seeds")
        for s in seed_list(config.seeds, config.seed):  # a seed trained otherwise: its fix, not --force
            check_learners(
                dataclasses.replace(config, seed=s, seeds=None), (output.out or seeds_out) / seed_dir_name(s)
            )
        return execute_seeds(
            config,
            output,
            threads,
            device,
            run_one=execute_tunnel,
            request_of=tunnel_request,
            default_out=seeds_out,
        )
    run_dir = output.out or default_dir(config.task, config.scale, config.convention)
    check_learners(config, run_dir)
    request = tunnel_request(config, threads, device)

    def compute(run: Any) -> Any:
        _train(config, run_dir, True, threads, device)
        return _evaluate(run_dir, config)

    return execute_run(run_dir, OUTPUTS, request, output, compute, print_summary)
