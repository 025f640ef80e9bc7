"""``geoprobe capture``: final-token arrays of a prompt set, written as one capture directory."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer

from geoprobe.cli.app import app, err, out
from geoprobe.cli.common import open_model, say_prompts_read
from geoprobe.cli.options import EXECUTOR, LOAD, MAX_TOKENS_HELP, BatchOpt, SeedOpt, layers, takes
from geoprobe.cli.progress import stage_progress
from geoprobe.models.loading import LoadOptions


@app.command()
@takes(LOAD, EXECUTOR)
def capture(
    load: LoadOptions,
    executor: Any,
    prompts: str = typer.Option(
        "builtin",
        "--prompts",
        "-p",
        help="builtin (default), mixed, a corpus domain, or a prompt file (.txt/.jsonl/.json)",
    ),
    out_dir: Path = typer.Option(
        ..., "--out", "-o", help="capture directory to write (a new one, or one geoprobe wrote, with --overwrite)"
    ),
    layer_spec: Optional[str] = typer.Option(
        None, "--layers", help="comma-separated layer indices, negative from the end; default all"
    ),
    batch_size: int = BatchOpt,
    padding_side: str = typer.Option("right", "--padding-side", help="left|right"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP),
    attention: str = typer.Option("entropy", "--attention", help="entropy|distribution (keep the final-token rows)"),
    queries: bool = typer.Option(False, "--queries", help="also keep query vectors"),
    attn_out: bool = typer.Option(False, "--attn-out", help="also keep per-head attention outputs"),
    top_k: int = typer.Option(10, "--top-k", help="next tokens kept per prompt (at most 1000)"),
    seed: int = SeedOpt,
    overwrite: bool = typer.Option(
        False, "--overwrite", "--force", help="replace a capture geoprobe wrote in --out (never anything else)"
    ),
) -> None:
    """Capture final-token values, keys, attention and next-token distributions to --out."""
    from geoprobe.capture import CaptureConfig
    from geoprobe.capture import capture as run
    from geoprobe.capture.result import ensure_writable
    from geoprobe.capture.shard_worker import WorkerTally
    from geoprobe.outputs import OutputLock, check_free_space, check_location
    from geoprobe.prompts import prompt_source_kind, read_prompts, resolve_prompt_set

    config = CaptureConfig(
        layers=layers(layer_spec),
        queries=queries,
        attn_out=attn_out,
        attention=attention,
        top_k=top_k,
        batch_size=batch_size,
        padding_side=padding_side,
        **({} if max_tokens is None else {"max_tokens": max_tokens}),
    )
    tally = None if executor is None else WorkerTally()
    run_capture = run if executor is None else executor.bind(load, tally)  # checks the loading flags first
    if prompt_source_kind(prompts) == "file":
        say_prompts_read(prompts, read_prompts(prompts))  # a bad file fails before the model loads
    check_location(out_dir, writes="capture")
    with OutputLock(out_dir):
        ensure_writable(out_dir, overwrite)
        m = open_model(load)
        with err.status(f"resolving prompts {prompts} …"):
            pset = resolve_prompt_set(prompts, m, seed=seed)
        texts = list(pset.prompts)
        check_free_space(out_dir, config.nbytes(m.layout, len(texts), max(len(t) for t in texts)), "the capture")
        with stage_progress({"capture": "capturing", "tokenize": "tokenising"}) as progress:
            cap = run_capture(
                m,
                texts,
                config,
                seed=seed,
                progress=lambda done, total: progress("capture", done, total),
                tokenize_progress=lambda done, total: progress("tokenize", done, total),
            )
        cap = dataclasses.replace(cap, extra={**cap.extra, "prompt_set": pset.record()})  # which set, hash, seed
        cap.save(out_dir, overwrite=overwrite)
    if tally is not None:
        err.print(f"captured on {tally}", highlight=False)
    out.print(f"wrote {out_dir} ({cap.n_prompts} prompts × {len(cap.layers)} layers)")
