"""The prompt sets of a domain comparison, built from sampled candidates (written as JSON lines by
:func:`geoprobe.prompts.write_prompt_sets`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from jaxtyping import Float, Int

from geoprobe.prompts import write_prompt_sets
from geoprobe.provenance import prompts_hash
from geoprobe.sampling import PromptSet

__all__ = ["prompt_set", "write_prompt_sets"]  # write_prompt_sets: geoprobe.prompts', read here as before


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
