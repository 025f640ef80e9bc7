"""The prompt sets of a domain comparison: built from sampled candidates, written as JSON lines."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from jaxtyping import Float, Int

from geoprobe.paths import atomic_write_text
from geoprobe.provenance import prompts_hash
from geoprobe.sampling import PromptSet


def prompt_set(
    name: str,
    pool: Sequence[Any],
    idx: Int[np.ndarray, " n"],
    h: Float[np.ndarray, " N"],
    strata: Int[np.ndarray, " n"] | None,
    seed: int,
    info: dict[str, Any],
) -> PromptSet:
    """The PromptSet of the candidates ``pool[idx]`` (entropies ``h``, entropy strata ``strata``)."""
    texts = tuple(pool[i].text for i in idx)
    return PromptSet(
        name=name,
        kind="corpus",
        prompts=texts,
        hash=prompts_hash(texts),
        seed=seed,
        domains=tuple(pool[i].domain for i in idx),
        sources=tuple(pool[i].source for i in idx),
        entropy=tuple(float(h[i]) for i in idx),
        stratum=() if strata is None else tuple(int(s) for s in strata),
        info=info,
    )


def write_prompt_sets(sets: dict[str, PromptSet], path: str | os.PathLike) -> Path:
    """Every sampled prompt as JSON lines (set, domain, source, sampling entropy, quintile,
    text): ``geoprobe scan --prompts FILE`` reads the ``prompt`` field back."""
    lines = []
    for name, s in sets.items():
        for i, text in enumerate(s.prompts):
            lines.append(
                json.dumps(
                    {
                        "set": name,
                        "domain": s.domains[i] if s.domains else None,
                        "source": s.sources[i] if s.sources else None,
                        "entropy_bits": round(s.entropy[i], 6) if s.entropy else None,
                        "quintile": s.stratum[i] + 1 if s.stratum else None,
                        "prompt": text,
                    },
                    ensure_ascii=False,
                )
            )
    return atomic_write_text(path, "\n".join(lines) + "\n")
