"""``geoprobe sample``: a stratified-entropy prompt set drawn with a model and written as prompt lines, to
scan other models on the same prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from geoprobe.cli.app import app, out
from geoprobe.cli.common import open_model
from geoprobe.cli.options import LOAD, SeedOpt, takes
from geoprobe.cli.progress import stage_progress
from geoprobe.cli.scan import CandidatesOpt, MaxTokOpt, MinTokOpt, PerQuintileOpt
from geoprobe.errors import GeoprobeError, OutputExistsError
from geoprobe.kinds import PROMPTS_KIND
from geoprobe.models.loading import LoadOptions


def sampling_config(candidates, per_quintile, min_tokens, max_prompt_tokens) -> Any:
    """The SamplingConfig the corpus-sampling flags ask for (the defaults where not given)."""
    from geoprobe.sampling import SamplingConfig
    from geoprobe.scan.experiment import sampling_changes

    given = sampling_changes(
        dict(
            candidates=candidates, per_quintile=per_quintile, min_tokens=min_tokens, max_prompt_tokens=max_prompt_tokens
        )
    )
    return SamplingConfig(**{k: v for k, v in given.items() if v is not None})


@app.command()
@takes(LOAD)
def sample(
    load: LoadOptions,
    prompts: str = typer.Option("mixed", "--prompts", "-p", help="mixed or a corpus domain"),
    out_file: Path = typer.Option(..., "--out", "-o", help="JSON-lines file to write (one sampled prompt per line)"),
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    seed: int = SeedOpt,
    force: bool = typer.Option(
        False, "--force", "--overwrite", help="replace a file geoprobe wrote (never anything else)"
    ),
) -> None:
    """Draw a stratified-entropy prompt set with a model and write it, to scan other models on the same prompts."""
    from geoprobe.outputs import OutputLock, check_location, check_prompts_name, check_same_kind
    from geoprobe.prompts import prompt_source_kind, write_prompt_sets
    from geoprobe.sampling import sample_corpus_set

    if prompt_source_kind(prompts) != "corpus":
        raise GeoprobeError(
            f"--prompts {prompts!r} is not a corpus set; sample draws from mixed or a domain "
            "(geoprobe prompts lists them)"
        )
    cfg = sampling_config(candidates, per_quintile, min_tokens, max_prompt_tokens)
    check_prompts_name(out_file)
    check_same_kind(out_file, PROMPTS_KIND)
    check_location(out_file, directory=False)
    with OutputLock(out_file):
        if out_file.exists() or out_file.is_symlink():
            check_same_kind(out_file, PROMPTS_KIND)  # again, under the lock
            if not force:
                raise OutputExistsError(
                    f"{str(out_file)!r} already exists; pass --force to replace it or choose another --out"
                )
        m = open_model(load)
        with stage_progress({"sampling": "entropy of candidates"}) as progress:
            pset = sample_corpus_set(m, prompts, cfg, seed=seed, progress=lambda d, n: progress("sampling", d, n))
        write_prompt_sets({pset.name: pset}, out_file)
    out.print(
        f"wrote {out_file}: {len(pset.prompts)} prompts of set {pset.name} (sha256 {pset.hash[:12]}, seed {seed}); "
        f"scan any model on them with --prompts {out_file}"
    )
