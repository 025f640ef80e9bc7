"""The authors' bijection query: the one prediction that needs key matching.

In the authors' convention (docs/windtunnel.md) a sequence ends with a query that repeats one of
the context keys; its posterior is a point mass on that key's value. The authors train on it and
score the entropy calibration only at the key positions, where every key is new and the posterior
is uniform over the values not yet shown — a prediction that needs no key matching (an MLP learns
it). This module scores the query on its own, so a reader can see whether a learner matches keys:

* ``kl`` — mean KL(point mass ‖ model) = mean −log2 q(π(query)) in bits; a learner that ignores
  the key and spreads its mass over the V values scores log2 V (``chance_kl``);
* ``accuracy`` — how often the model's most probable value is π(query) (chance 1 / V).

Each with a percentile bootstrap CI over sequences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.stats import Estimate, bootstrap_ci
from geoprobe.serial import Record


@dataclass(frozen=True, eq=False)
class QueryScore(Record):
    """One learner on the query prediction of ``n`` held-out sequences (module docstring)."""

    label: str
    n: int
    kl: Estimate
    accuracy: Estimate
    chance_kl: float  # log2 V: the KL of a learner that ignores the key


def query_score(
    label: str,
    probs: Float[np.ndarray, "n A"],
    answers: Int[np.ndarray, " n"],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
) -> QueryScore:
    """Score the model's distribution ``probs`` at the query against the true values ``answers``."""
    p = np.asarray(probs, dtype=np.float64)
    a = np.asarray(answers, dtype=np.int64)
    if p.ndim != 2 or a.shape != (p.shape[0],) or a.min() < 0 or a.max() >= p.shape[1]:
        raise ValueError(f"probabilities {p.shape} and answers {a.shape} do not match")
    rows = np.arange(len(a))
    kl = -np.log2(np.maximum(p[rows, a], 1e-300))
    hit = (p.argmax(axis=1) == a).astype(np.float64)
    kw = dict(confidence=confidence, n_resamples=n_resamples, random_state=random_state, method="percentile")
    return QueryScore(
        label=label,
        n=len(a),
        kl=bootstrap_ci(kl, **kw),
        accuracy=bootstrap_ci(hit, **kw),
        chance_kl=math.log2(p.shape[1]),
    )


def query_table(scores: dict[str, QueryScore]) -> list[dict[str, str]]:
    """Rows for the report page: one per learner."""
    return [
        {
            "learner": s.label,
            "query KL (bits)": f"{s.kl:.3f}",
            "chance KL (bits)": f"{s.chance_kl:.3f}",
            "accuracy": f"{s.accuracy:.3f}",
            "n": str(s.n),
        }
        for s in scores.values()
    ]


__all__ = ["QueryScore", "query_score", "query_table"]
