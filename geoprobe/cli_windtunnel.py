"""`geoprobe windtunnel train|eval|report|run`: the Bayesian wind tunnels of arXiv 2512.22471.

Registered on :data:`geoprobe.cli.app`; errors follow the CLI's rule (one line, exit 2)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from geoprobe.cli import (FiguresOpt, ForceOpt, SeedOpt, app, check_figures, claim_run_dir, out, print_rows, stage_progress,
                          write_figures)
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import check_device

wt = typer.Typer(help="Bayesian wind tunnels: tasks with exact posteriors, trained transformers vs MLPs.",
                 no_args_is_help=True)
app.add_typer(wt, name="windtunnel")

TaskOpt = typer.Option("bijection", "--task", help="bijection | hmm")
ScaleOpt = typer.Option("cpu", "--scale", help="tiny (seconds) | cpu (measured on 2 cores: bijection transformer 22 min, HMM transformer about an hour, MLPs 6-9 min) | paper (GPU)")
RunDirOpt = typer.Option(None, "--out", help="run directory (default runs/windtunnel-TASK-SCALE)")


def _default_dir(task: str, scale: str) -> Path:
    return Path("runs") / f"windtunnel-{task}-{scale}"


def _train(config, run_dir: Path, resume: bool, threads: Optional[int], device: str = "cpu") -> None:
    from geoprobe.windtunnel.run import train_tunnel

    with stage_progress() as progress:
        logs = train_tunnel(config.task, config.scale, run_dir, arch=config.arch, seed=config.seed,
                            steps=config.steps, resume=resume, threads=threads, task_params=config.task_params(),
                            device=device, progress=progress)
    for arch, log in logs.items():
        if log["resumed_from"] == log["steps"]:
            out.print(f"{arch}: already trained ({log['steps']} steps), nothing to do")
            continue
        was = f" (resumed from step {log['resumed_from']})" if log["resumed_from"] is not None else ""
        out.print(f"{arch}: {log['n_params']:,} parameters, {log['steps']} steps in {log['seconds']:.0f} s{was}, "
                  f"final loss {log['final_loss']:.4f}, {log['tokens_per_second']:,.0f} tokens/s")
    out.print(f"wrote {run_dir}")


def _evaluate(run_dir: Path, config, force: bool) -> Path:
    from geoprobe.windtunnel.run import evaluate_tunnel

    target = run_dir / "windtunnel.json"
    if target.exists() and not force:  # the run directory is the input here: no --out to change
        raise GeoprobeError(f"{str(target)!r} already exists; pass --force to replace it")
    with stage_progress() as progress:
        result = evaluate_tunnel(run_dir, n_eval=config.n_eval, n_probes=config.n_probes,
                                 geometry=config.geometry, ablate=config.ablations, progress=progress)
    result.save(target)
    _print_summary(result)
    out.print(f"wrote {target}")
    return target


def _print_summary(result) -> None:
    from geoprobe.windtunnel.result import metrics_table

    print_rows(f"{result.name} ({result.scale}): entropy error against the analytic posterior", metrics_table(result))
    for c in result.checks():
        mark = "pass" if c["pass"] else "FAIL"
        out.print(f"  {mark}: {c['check']} {c['target']}: measured {c['measured']:.4g}")
    if result.geometry is not None:
        g = result.geometry
        out.print(f"  frame t90 ≈ step {g.t90_frame:.0f}, precision t90 ≈ step {g.t90_precision:.0f} "
                  f"({'frame first' if g.dissociation else 'no dissociation'})")
    if result.ablations is not None:
        a = result.ablations
        out.print(f"  hypothesis head: layer 0 head {a.hypothesis_head} "
                  f"({'the most damaging head' if a.hypothesis_head_is_top else 'not the most damaging head'})")


def _report(results: Path, target: Path, force: bool, figures: Optional[str] = None) -> Path:
    from geoprobe.report.windtunnel import write_windtunnel_report
    from geoprobe.windtunnel.result import WindTunnelResult

    result = WindTunnelResult.load(results)
    path = write_windtunnel_report(result, target, force=force)
    out.print(f"wrote {path}")
    write_figures(result, target.parent, figures, force)
    return path


def _config(task: str, scale: str, arch: str, seed: int, steps: Optional[int], n_eval: Optional[int] = None,
            n_probes: Optional[int] = None, geometry: bool = True, ablations: bool = True, **task_params):
    from geoprobe.windtunnel.run import WindTunnelConfig

    return WindTunnelConfig(task=task, scale=scale, arch=arch, seed=seed, steps=steps, n_eval=n_eval,  # type: ignore[arg-type]
                            n_probes=n_probes, geometry=geometry, ablations=ablations, **task_params)


VocabOpt = typer.Option(None, "--vocab", help="task V: bijection symbols (2-100) or HMM emissions (2-10)")
LengthOpt = typer.Option(None, "--length", help="task K: predictions per sequence (bijection 1-200, HMM 1-500)")
StatesOpt = typer.Option(None, "--states", help="HMM hidden states S (2-10)")
RepeatOpt = typer.Option(None, "--repeat", help="bijection: probability that a key repeats an earlier one")


@wt.command("train")
def train_cmd(
    task: str = TaskOpt,
    scale: str = ScaleOpt,
    arch: str = typer.Option("both", "--arch", help="both | transformer | mlp"),
    steps: Optional[int] = typer.Option(None, "--steps", help="override the scale's number of steps"),
    seed: int = SeedOpt,
    threads: Optional[int] = typer.Option(None, "--threads", help="torch CPU threads (default: torch's)"),
    vocab: Optional[int] = VocabOpt,
    length: Optional[int] = LengthOpt,
    states: Optional[int] = StatesOpt,
    repeat: Optional[float] = RepeatOpt,
    out_dir: Optional[Path] = RunDirOpt,
    no_resume: bool = typer.Option(False, "--no-resume", help="refuse to continue an existing run"),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N (the paper scale wants a GPU)"),
) -> None:
    """Train the transformer and its capacity-matched MLP; resumes from the last checkpoint."""
    config = _config(task, scale, arch, seed, steps, vocab=vocab, length=length, states=states, repeat=repeat)
    _train(config, out_dir or _default_dir(task, scale), not no_resume, threads, check_device(device))


@wt.command("eval")
def eval_cmd(
    run_dir: Path = typer.Argument(..., help="a run directory made by 'geoprobe windtunnel train'"),
    n_eval: Optional[int] = typer.Option(None, "--n-eval", help="held-out sequences (default: the scale's)"),
    n_probes: Optional[int] = typer.Option(None, "--n-probes", help="probe prompts per checkpoint"),
    no_geometry: bool = typer.Option(False, "--no-geometry", help="skip the per-checkpoint probes"),
    no_ablations: bool = typer.Option(False, "--no-ablations", help="skip the layer and head ablations"),
    force: bool = ForceOpt,
) -> None:
    """Score both learners against the analytic posterior; ablate and probe the transformer."""
    from geoprobe.windtunnel.train import read_spec

    spec = read_spec(run_dir / "transformer")
    config = _config(spec.task["name"], spec.scale if spec.scale in ("tiny", "cpu", "paper") else "cpu", "both",
                     spec.train.seed, None, n_eval, n_probes, not no_geometry, not no_ablations)
    _evaluate(run_dir, config, force)


@wt.command("report")
def report_cmd(
    results: Path = typer.Argument(..., help="windtunnel.json, or the run directory holding it"),
    report_out: Optional[Path] = typer.Option(None, "--out", help="HTML file (default next to the results)"),
    force: bool = ForceOpt,
    figures: Optional[str] = typer.Option(None, "--figures", help="also write each figure as png|svg|pdf to "
                                          "figures/ beside the HTML file (kaleido + Chromium)"),
) -> None:
    """Write the HTML report (figures, the paper's table, checks, provenance)."""
    base = results if results.is_dir() else results.parent
    target = report_out or base / "windtunnel.html"
    figures = check_figures(figures, target.parent, force)
    _report(results, target, force, figures)


@wt.command("run")
def run_cmd(
    task: str = TaskOpt,
    scale: str = ScaleOpt,
    seed: int = SeedOpt,
    steps: Optional[int] = typer.Option(None, "--steps"),
    threads: Optional[int] = typer.Option(None, "--threads"),
    vocab: Optional[int] = VocabOpt,
    length: Optional[int] = LengthOpt,
    states: Optional[int] = StatesOpt,
    repeat: Optional[float] = RepeatOpt,
    out_dir: Optional[Path] = RunDirOpt,
    force: bool = ForceOpt,
    device: str = typer.Option("cpu", "--device", help="training device: cpu | cuda | cuda:N"),
    figures: Optional[str] = FiguresOpt,
) -> None:
    """train, eval and report in one go."""
    run_tunnel(_config(task, scale, "both", seed, steps, vocab=vocab, length=length, states=states, repeat=repeat),
               out_dir, force, threads, check_device(device), figures)


def run_tunnel(config, out_dir: Optional[Path], force: bool, threads: Optional[int] = None,
               device: str = "cpu", figures: Optional[str] = None) -> None:
    run_dir = claim_run_dir(out_dir or _default_dir(config.task, config.scale), ("windtunnel.json", "windtunnel.html"),
                            force)
    figures = check_figures(figures, run_dir, force)  # before any training
    _train(config, run_dir, True, threads, device)
    results = _evaluate(run_dir, config, True)
    _report(results, run_dir / "windtunnel.html", True, figures)


def run_recipe(probe, out_dir: Optional[Path], force: bool, seed: Optional[int], figures: Optional[str] = None) -> None:
    """``geoprobe run probes/windtunnel.toml``: the recipe's config, --seed overriding."""
    from dataclasses import replace

    config = probe.config if seed is None else replace(probe.config, seed=seed)
    run_tunnel(config, out_dir, force, figures=figures)
