"""``compare_domains``: mixed vs every restricted domain (and its matched control) at one layer,
from the value vectors of each prompt set to a :class:`DomainComparison` (no model involved)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.contrast import check_counts, contrast_families, value_matrix
from geoprobe.analysis.stats import RandomState
from geoprobe.domains.config import CONTROL_SUFFIX, KINDS
from geoprobe.domains.result import DomainComparison, SetSummary
from geoprobe.sampling import MIXED


def compare_domains(
    values: Mapping[str, Float[np.ndarray, "n D"]],
    *,
    kinds: Mapping[str, str],
    domain_of: Mapping[str, str | None],
    entropies: Mapping[str, Float[np.ndarray, " n"]],
    n_tokens: Mapping[str, Float[np.ndarray, " n"]],
    prompts_hash: Mapping[str, str],
    balance: Mapping[str, Mapping[str, float]] | None = None,
    model: str = "",
    layer: int = -1,
    provenance: Mapping[str, Any] | None = None,
    n_resamples: int = 1000,
    n_permutations: int = 1000,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    allow_unequal: bool = False,
    null_draws: int = 200,
    notes: Sequence[str] = (),
) -> DomainComparison:
    """Mixed vs every restricted domain (and its matched control) at one layer.

    ``values[name]`` is the (n, D) matrix of one set's final-token value vectors. Set names:
    ``"mixed"`` (kind "mixed", domain None), one restricted set per domain named after it
    (kind "restricted", ``domain_of[d] == d``) and optionally ``"<d>-control"`` (kind
    "control", ``domain_of == d``). ``entropies`` (next-token entropy, bits) and ``n_tokens``
    give the descriptive columns; ``balance`` the SMDs of each control's match (``balance()``).
    Contrasts per domain: mixed → d, mixed → d-control, d-control → d; each family is
    Bonferroni-adjusted over the domains that have it. Every set must have the same n unless
    ``allow_unequal``."""
    check_counts(n_resamples, n_permutations, null_draws, confidence)
    names = list(values)
    for what, m in (
        ("kinds", kinds),
        ("domain_of", domain_of),
        ("entropies", entropies),
        ("n_tokens", n_tokens),
        ("prompts_hash", prompts_hash),
    ):
        if set(m) != set(names):
            raise ValueError(f"{what} covers sets {sorted(m)}, values covers {sorted(names)}; give every set in both")
    if MIXED not in names or kinds[MIXED] != "mixed":
        raise ValueError(f"a set named {MIXED!r} of kind 'mixed' is needed; sets are {sorted(names)}")
    domains: list[str] = []
    for name in names:
        kind, dom = kinds[name], domain_of[name]
        if kind not in KINDS:
            raise ValueError(f"set {name!r}: kind {kind!r} is not one of {KINDS}")
        if kind == "mixed" and name != MIXED:
            raise ValueError(f"set {name!r} is of kind 'mixed'; only one mixed set, named {MIXED!r}, is allowed")
        if kind == "restricted":
            if dom != name:
                raise ValueError(f"restricted set {name!r} must be named after its domain (domain_of is {dom!r})")
            domains.append(name)
    for name in names:
        if kinds[name] == "control" and (
            domain_of[name] not in domains or name != f"{domain_of[name]}{CONTROL_SUFFIX}"
        ):
            raise ValueError(
                f"control set {name!r} (domain {domain_of[name]!r}) must be named '<domain>{CONTROL_SUFFIX}' "
                f"after a restricted domain; domains are {domains}"
            )
    if not domains:
        raise ValueError(f"no restricted set among {sorted(names)}; give at least one domain")
    xs = {k: value_matrix(values[k], k) for k in names}
    dims = {k: x.shape[1] for k, x in xs.items()}
    if len(set(dims.values())) != 1:
        raise ValueError(f"sets have different numbers of coordinates {dims}; use one layer of one model")
    sizes = {k: x.shape[0] for k, x in xs.items()}
    if len(set(sizes.values())) > 1 and not allow_unequal:
        raise ValueError(
            f"sets differ in size {sizes}: PC1 of standardised data is biased upward by an amount that "
            f"depends on n when n ≲ D; sample every set at the same size (e.g. {min(sizes.values())} "
            "prompts each), or pass allow_unequal=True and compare each set with its own null band"
        )
    desc: dict[str, tuple[float, float]] = {}
    for k in names:
        e = np.asarray(entropies[k], dtype=np.float64).reshape(-1)
        t = np.asarray(n_tokens[k], dtype=np.float64).reshape(-1)
        if e.shape != (sizes[k],) or t.shape != (sizes[k],):
            raise ValueError(
                f"set {k!r}: entropies {e.shape} and n_tokens {t.shape} must have one entry per prompt ({sizes[k]})"
            )
        desc[k] = (float(e.mean()), float(t.mean()))
    families: dict[str, list[tuple[str, str]]] = {"restricted-mixed": [], "control-mixed": [], "restricted-control": []}
    for d in domains:
        families["restricted-mixed"].append((MIXED, d))
        if d + CONTROL_SUFFIX in xs:
            families["control-mixed"].append((MIXED, d + CONTROL_SUFFIX))
            families["restricted-control"].append((d + CONTROL_SUFFIX, d))
    stats, contrasts = contrast_families(
        xs,
        list(families.values()),
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        confidence=confidence,
        random_state=random_state,
        null_draws=null_draws,
    )
    sets = {}
    for k in names:
        est = stats[k].estimates()
        sets[k] = SetSummary(
            name=k,
            kind=kinds[k],
            domain=domain_of[k],
            n=sizes[k],  # type: ignore[arg-type]
            prompts_hash=str(prompts_hash[k]),
            pc1=est["pc1"],
            pc12=est["pc12"],
            pr=est["pr"],
            null=stats[k].null,
            mean_entropy=desc[k][0],
            mean_tokens=desc[k][1],
        )
    auto = list(notes)
    if len(set(sizes.values())) > 1:
        auto.append(f"sets differ in size {sizes}; PC1 depends on n, so compare each set with its own null band")
    for k in names:
        if not sets[k].beats_null_pc1:
            auto.append(
                f"set {k!r}: PC1 {100 * sets[k].pc1.value:.1f} % does not exceed its Gaussian null band "
                f"(upper {100 * sets[k].null.pc1.high:.1f} %)"
            )
    missing = [d for d in domains if d + CONTROL_SUFFIX not in xs]
    if missing:
        auto.append(
            f"no matched control for {missing}: restricted vs mixed cannot separate inference mode from "
            "lexical narrowness there"
        )
    bal = {str(d): {str(f): float(v) for f, v in b.items()} for d, b in dict(balance or {}).items()}
    for d, b in bal.items():
        off = {f: round(v, 2) for f, v in b.items() if not abs(v) < 0.1}
        if off:
            auto.append(f"control for {d!r} is imbalanced (|SMD| >= 0.1): {off}")
    return DomainComparison(
        model=model,
        layer=layer,
        sets=sets,
        contrasts=tuple(contrasts),
        domains=tuple(domains),
        balance=bal,
        provenance=dict(provenance or {}),
        notes=tuple(auto),
    )
