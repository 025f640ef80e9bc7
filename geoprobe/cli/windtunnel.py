"""``geoprobe windtunnel train|eval|report|run``: the Bayesian wind tunnels of arXiv 2512.22471
(geoprobe.windtunnel.experiment runs them).

Training resumes: each learner's checkpoints live in ``OUT/transformer`` and ``OUT/mlp``, and the
same command after a kill or Ctrl-C continues from the last one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from geoprobe.cli.app import app, out
from geoprobe.cli.common import check_figures, launch, print_rows, prints, reporting, write_report
from geoprobe.cli.options import OUTPUT, OutputOptions, SeedOpt, ThreadsOpt, takes
from geoprobe.models.loading import LoadOptions
from geoprobe.text import number
from geoprobe.windtunnel.experiment import EXPERIMENT, default_dir, evaluate_into, train_locked
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.scales import SCALES
from geoprobe.windtunnel.seeds import TunnelSeeds

wt = typer.Typer(
    help="Bayesian wind tunnels: tasks with exact posteriors, trained transformers vs MLPs.", no_args_is_help=True
)
app.add_typer(wt, name="windtunnel")

TaskOpt = typer.Option("bijection", "--task", help="bijection | hmm")
ScaleOpt = typer.Option(
    "cpu",
    "--scale",
    help="tiny (seconds, tests) | small (minutes a seed on one core, for seed statistics) | cpu (measured on 2 "
    "cores: bijection transformer 22 min, HMM transformer about an hour, MLPs 6-9 min) | paper (GPU)",
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
    threads: Optional[int] = None,
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
        threads=threads,
        **task_params,
    )


@prints(WindTunnelResult)
def print_summary(result: Any, reporter: Any = None) -> None:
    from geoprobe.windtunnel.report import metrics_table

    print_rows(f"{result.name} ({result.scale}): entropy error against the analytic posterior", metrics_table(result))
    for c in result.checks():
        mark = "pass" if c["pass"] else "FAIL"
        out.print(f"  {mark}: {c['check']} {c['target']}: measured {c['measured']:.4g}")
    if result.geometry is not None:
        from geoprobe.windtunnel.report import step_text

        g, span = result.geometry, result.geometry.t90_interval
        within = (
            f", d = {number(span.difference, '+.3f')} (log(step + 1), 95 % over prompts)" if span is not None else ""
        )
        out.print(
            f"  frame t90 {step_text(g.t90_frame)}, precision t90 {step_text(g.t90_precision)}"
            f"{within}; one seed: not testable (--seeds 0,1,2,3,4 tests it over seeds)"
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
    config = _config(
        task,
        scale,
        arch,
        seed,
        steps,
        convention=convention,
        threads=threads,
        vocab=vocab,
        length=length,
        states=states,
        repeat=repeat,
    )
    with reporting() as reporter:
        train_locked(config, out_dir or default_dir(task, scale, convention), not no_resume, device, reporter)


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
        spec.scale if spec.scale in SCALES else "cpu",
        "both",
        spec.train.seed,
        None,
        n_eval,
        n_probes,
        not no_geometry,
        not no_ablations,
        convention=spec.task.get("convention", "geoprobe"),
    )
    with reporting() as reporter:
        evaluate_into(run_dir, config, force, reporter)


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
        threads=threads,
    )
    launch(EXPERIMENT, config, LoadOptions(device=device), output)


@prints(TunnelSeeds)
def print_spread(result: Any, reporter: Any = None) -> None:
    rows = [r for r in result.spread_rows() if r["measure (bits)"] == "MAE paper def."]
    print_rows(f"{result.name} ({result.scale}): entropy MAE across seeds {list(result.seeds)}", rows)
    fp = result.frame_precision
    if fp is not None:
        print_rows(f"{result.name} ({result.scale}): frame vs precision over seeds", fp.rows())
        out.print(f"  {fp.summary()}")
