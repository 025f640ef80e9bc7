"""`geoprobe compare-domains`: mixed-domain vs domain-restricted value manifolds (arXiv
2512.23752 §5.1, Table 1) with matched controls.

For one model and one layer (default: the final layer):

1. candidate passages: the mixed pool exactly as ``geoprobe scan --prompts mixed`` cuts it
   (``ceil(candidates / n_domains)`` per available domain) and ``domain_candidates`` more from
   each compared domain (:func:`geoprobe.corpora.candidates`);
2. **one** capture of every distinct candidate at the layer: it gives each candidate's
   next-token entropy (stored in the per-model entropy cache of :mod:`geoprobe.sampling`) and
   its value vectors, so nothing runs twice;
3. the mixed set: a stratified-entropy sample of the mixed pool; each restricted set: the same
   from its domain's pool (15 per quintile → 75 prompts by default);
4. per domain a **matched control**: mixed-domain candidates from the *other* domains (never
   the mixed set's own prompts) matched 1:1 to the restricted set on token length and the
   mean and sd of their tokens' log frequency (frequencies counted over every candidate), by
   optimal assignment; its balance (standardised mean differences) is reported;
5. :func:`geoprobe.domains.compare.compare_domains`: PC1, PC1+PC2 and participation ratio of
   every set with bootstrap CIs and matched nulls, and the differences restricted − mixed,
   control − mixed and restricted − control with bootstrap CIs and permutation p-values.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from geoprobe.analysis.token_match import balance, match_features, matched_control, token_counts
from geoprobe.capture.run import CaptureConfig, capture, resolve_layers
from geoprobe.checks import config_arg, model_arg
from geoprobe.corpora import CORPUS_VERSION, DOMAINS, CorpusUnavailable, available_domains, candidates
from geoprobe.domains.compare import compare_domains
from geoprobe.domains.config import DomainsConfig
from geoprobe.domains.prompt_sets import prompt_set
from geoprobe.domains.result import CONTROL_SUFFIX, DomainComparison
from geoprobe.sampling import MIXED, EntropyCache, SamplingError, check_corpus_set, stratified_sample

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class DomainRun:
    """What a run produced besides the comparison: every sampled set's prompts and metadata."""

    comparison: DomainComparison
    sets: dict[str, Any] = field(default_factory=dict)  # name -> PromptSet
    capture: Any = None
    timings: dict[str, float] = field(default_factory=dict)


def check_domains(requested: Sequence[str] | None) -> list[str]:
    avail = available_domains()
    if requested:
        for d in requested:
            check_corpus_set(d)  # unknown → lists the available ones; missing package → names it
        return list(dict.fromkeys(requested))
    usable = [d for d in DOMAINS if avail.get(d) is None]
    if not usable:
        raise CorpusUnavailable("no corpus domain is available here; " + "; ".join(r for r in avail.values() if r))
    return usable


def compare_domains_run(
    model: Any,
    config: DomainsConfig = DomainsConfig(),
    *,
    progress: Progress | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
) -> DomainRun:
    """Sample, capture and compare (see the module docstring). ``model`` is a LoadedModel. With
    ``checkpoint_dir`` every finished batch of the one capture is kept there, and a rerun resumes from
    them (:mod:`geoprobe.capture.checkpoint`)."""
    model, config = model_arg(model), config_arg(config, DomainsConfig)
    sc, seed = config.sampling, config.seed
    domains = check_domains(config.domains)
    all_domains = check_domains(None)  # the mixed set always draws on every available domain
    if len(all_domains) < 2:
        raise SamplingError(f"the mixed set needs at least 2 corpus domains, {len(all_domains)} available here")
    (layer,) = resolve_layers((config.layer,), model.layout.n_layers, flag="--layer (domains.layer in a recipe)")
    timings: dict[str, float] = {}
    t = time.perf_counter()
    per_mixed = math.ceil(sc.candidates / len(all_domains))

    def cut(d: str, k: int) -> list[Any]:
        return candidates(
            [d], k, tokenizer=model.tokenizer, min_tokens=sc.min_tokens, max_tokens=sc.max_tokens, seed=seed
        )

    # the mixed pool is exactly `geoprobe scan --prompts mixed`'s; each domain adds its own pool
    mixed_pool = [c for d in all_domains for c in cut(d, per_mixed)]
    pools = {d: cut(d, config.domain_candidates) for d in domains}
    union = list({c.text: c for c in [*mixed_pool, *(c for d in domains for c in pools[d])]}.values())
    timings["candidates_s"] = time.perf_counter() - t

    # one pass over every candidate gives both its next-token entropy and its values at the layer
    t = time.perf_counter()
    cap = capture(
        model,
        [c.text for c in union],
        CaptureConfig(layers=(layer,), keys=False, key_weights=False, batch_size=sc.batch_size),
        seed=seed,
        progress=None if progress is None else (lambda a, b: progress("capture", a, b)),
        checkpoint_dir=checkpoint_dir,
    )
    timings["capture_s"] = time.perf_counter() - t
    h_all = cap.next_entropy.astype(np.float64)
    EntropyCache(model).put(list(cap.prompts), h_all)  # later scans of these sets recompute nothing
    at = {c.text: i for i, c in enumerate(union)}
    info = {"corpus_version": CORPUS_VERSION, "sampling": asdict(sc)}

    t = time.perf_counter()
    mix = np.array([at[c.text] for c in mixed_pool])
    idx, strata = stratified_sample(h_all[mix], sc.per_stratum, sc.n_strata, seed=seed, what="the mixed pool")
    sets = {
        MIXED: prompt_set(
            MIXED,
            union,
            mix[idx],
            h_all,
            strata,
            seed,
            {**info, "pool": len(mixed_pool), "entropy_quantiles": _quantiles(h_all[mix], sc.n_strata)},
        )
    }
    for d in domains:
        if len(pools[d]) < sc.n_prompts:
            raise SamplingError(
                f"domain {d!r} yields {len(pools[d])} candidate passage(s) in the token range "
                f"[{sc.min_tokens}, {sc.max_tokens}] but {sc.n_prompts} are needed; lower --per-quintile "
                f"to {len(pools[d]) // sc.n_strata} or widen the token range"
            )
        own = np.array([at[c.text] for c in pools[d]])
        idx, strata = stratified_sample(h_all[own], sc.per_stratum, sc.n_strata, seed=seed, what=f"domain {d!r}")
        sets[d] = prompt_set(
            d,
            union,
            own[idx],
            h_all,
            strata,
            seed,
            {**info, "pool": len(pools[d]), "entropy_quantiles": _quantiles(h_all[own], sc.n_strata)},
        )

    bal: dict[str, dict[str, float]] = {}
    if config.controls:
        ids = model.tokenizer([c.text for c in union], add_special_tokens=False)["input_ids"]
        feats = match_features(ids, token_counts(ids))
        taken = {at[p] for p in sets[MIXED].prompts}
        for d in domains:
            target = feats[[at[p] for p in sets[d].prompts]]
            exclude = sorted(taken | {i for i, c in enumerate(union) if c.domain == d})
            pick = matched_control(feats, target, exclude=exclude, random_state=seed)
            bal[d] = balance(feats[pick], target)
            sets[d + CONTROL_SUFFIX] = prompt_set(
                d + CONTROL_SUFFIX,
                union,
                pick,
                h_all,
                None,
                seed,
                {**info, "matched_to": d, "pool": len(union) - len(exclude)},
            )
    timings["sampling_s"] = time.perf_counter() - t
    row = {p: i for i, p in enumerate(cap.prompts)}
    flat = cap.values_flat(layer).astype(np.float64)
    t = time.perf_counter()
    names = list(sets)
    kinds = {k: ("mixed" if k == MIXED else "control" if k.endswith(CONTROL_SUFFIX) else "restricted") for k in names}
    domain_of = {k: (None if k == MIXED else k.removesuffix(CONTROL_SUFFIX)) for k in names}
    rows = {k: [row[p] for p in sets[k].prompts] for k in names}
    cmp = compare_domains(
        {k: flat[rows[k]] for k in names},
        kinds=kinds,
        domain_of=domain_of,
        entropies={k: cap.next_entropy[rows[k]] for k in names},
        n_tokens={k: cap.n_tokens[rows[k]] for k in names},
        prompts_hash={k: sets[k].hash for k in names},
        balance=bal,
        model=cap.provenance.model_id,
        layer=layer,
        provenance={
            **cap.provenance.to_dict(),
            "config": _config_dict(config),
            "corpus_version": CORPUS_VERSION,
            "sets": {k: s.record() for k, s in sets.items()},
        },
        n_resamples=config.n_resamples,
        n_permutations=config.n_permutations,
        null_draws=config.null_draws,
        confidence=config.confidence,
        random_state=seed,
    )
    timings["analyse_s"] = time.perf_counter() - t
    cmp = replace(cmp, provenance={**cmp.provenance, "timings": timings})
    return DomainRun(comparison=cmp, sets=sets, capture=cap, timings=timings)


def _quantiles(h: np.ndarray, n_strata: int) -> list[float]:
    return [float(x) for x in np.quantile(h, np.linspace(0, 1, n_strata + 1))]


def _config_dict(config: DomainsConfig) -> dict[str, Any]:
    d = asdict(config)
    d["domains"] = None if config.domains is None else list(config.domains)
    return d
