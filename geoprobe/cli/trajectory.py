"""``geoprobe trajectory``: train a small Pythia-shaped GPT-NeoX on the bundled corpora on CPU, publishing
checkpoints on Pythia's schedule (docs/sweep.md). Interrupted, the same command resumes."""

from __future__ import annotations

from typing import Any, Optional

import typer

from geoprobe.cli.app import app, out
from geoprobe.cli.common import launch, prints
from geoprobe.cli.options import OUTPUT, OutputOptions, SeedOpt, ThreadsOpt, takes
from geoprobe.trajectory.experiment import EXPERIMENT
from geoprobe.trajectory.result import TrajectoryResult


@app.command("trajectory")
@takes(OUTPUT)
def trajectory_cmd(
    output: OutputOptions,
    steps: Optional[int] = typer.Option(None, "--steps", help="optimiser steps (default 3000, at most 1000000)"),
    seed: int = SeedOpt,
    layers: Optional[int] = typer.Option(
        None, "--layers", help="transformer layers (default 6, Pythia-14M's; at most 48)"
    ),
    hidden_size: Optional[int] = typer.Option(
        None, "--hidden-size", help="d_model (default 128, Pythia-14M's; at most 5120)"
    ),
    heads: Optional[int] = typer.Option(None, "--heads", help="attention heads (default 4, Pythia-14M's; at most 64)"),
    vocab_size: Optional[int] = typer.Option(
        None,
        "--vocab-size",
        help="byte-level BPE vocabulary trained on the corpus (default 4096, at least 258, at most 65536)",
    ),
    domains: Optional[str] = typer.Option(
        None, "--domains", help="comma-separated corpus domains to train on (default: all six)"
    ),
    seq_len: Optional[int] = typer.Option(
        None, "--seq-len", help="tokens per training sequence (default 128, at most 2048)"
    ),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="sequences per step (default 8, at most 1024)"),
    lr: Optional[float] = typer.Option(None, "--lr", help="peak learning rate (default 0.001, Pythia's small models)"),
    threads: Optional[int] = ThreadsOpt,
) -> None:
    """Train a small Pythia-shaped GPT-NeoX on the bundled corpora; checkpoints at steps 0, 1, 2, 4, …, 512, 1000, …"""
    from geoprobe.trajectory.config import TrajectoryConfig

    given = dict(
        steps=steps,
        layers=layers,
        hidden_size=hidden_size,
        heads=heads,
        vocab_size=vocab_size,
        seq_len=seq_len,
        batch_size=batch_size,
        lr=lr,
        domains=None if domains is None else tuple(d.strip() for d in domains.split(",") if d.strip()),
    )
    config = TrajectoryConfig(seed=seed, **{k: v for k, v in given.items() if v is not None})
    if threads is not None and threads < 1:
        from geoprobe.trajectory.config import TrajectoryError

        raise TrajectoryError(f"threads {threads!r} is not a positive integer; pass --threads 1 or more")
    from geoprobe.threads import torch_threads

    with torch_threads(threads):  # torch's CPU threads for this run (recorded in trajectory.json)
        launch(EXPERIMENT, config, None, output)


@prints(TrajectoryResult)
def print_trajectory(result: Any, reporter: Any = None) -> None:
    m, f, steps = result.model, result.final, result.config.steps
    was = f" (resumed from step {result.resumed_from})" if result.resumed_from is not None else ""
    if result.resumed_from == steps:
        was = " (already trained: nothing to do)"
    out.print(
        f"{m.n_params:,} parameters ({m.n_embedding_params:,} in embeddings); {steps:,} steps in "
        f"{result.train_s:.0f} s{was}; final loss {f.train_loss:.3f} (held-out {f.eval_loss:.3f}) nats/token; "
        f"{len(result.checkpoints)} checkpoints, {result.total_bytes / 1e6:.0f} MB",
        highlight=False,
        soft_wrap=True,
    )
