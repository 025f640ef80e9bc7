"""Stratified-entropy prompt sampling (arXiv 2512.23752 §4.2).

A prompt set should span the model's predictive uncertainty rather than reflect whichever
prompts someone wrote. The protocol: cut ~1000 candidate passages from real text
(:mod:`geoprobe.corpora`), compute the model's next-token entropy at each candidate's final
position, split the candidates into quintiles of that entropy, and draw the same number from
every quintile (default 15 → 75 prompts). A single domain is sampled the same way from its
own candidates.

* Quintiles are formed on **ranks** (ties broken by a seeded shuffle), so every stratum holds
  ⌊N/5⌋ or ⌈N/5⌉ candidates even when many entropies are equal; with fewer distinct entropy
  values than strata the strata would be arbitrary, which is an error.
* Candidate entropies need only the final-position logits: prompts are left-padded and
  batched, and the head is applied to the last position only (``logits_to_keep=1``). The
  value equals :func:`geoprobe.capture.capture`'s ``next_entropy`` (tested to 1e-4 bits).
* Entropies are cached per model (weights hash) and candidate text under
  ``$GEOPROBE_CACHE/entropy/`` (or ``$GEOPROBE_ENTROPY_CACHE``), so re-running a scan, or sampling a single domain
  after the
  mixed set, recomputes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar, Sequence

import numpy as np
from jaxtyping import Float, Int

import geoprobe.corpora as corpora  # called through the module: tests replace corpora.candidates
from geoprobe.checks import Limit, check_limits, check_no_bools
from geoprobe.corpora import CORPUS_VERSION, DOMAINS, CorpusUnavailable, UnknownDomain
from geoprobe.errors import GeoprobeError
from geoprobe.paths import atomic_write_text, cache_dir
from geoprobe.provenance import prompts_hash

MIXED = "mixed"


class SamplingError(GeoprobeError):
    """A prompt set that cannot be sampled as asked (too few candidates, no entropy spread)."""


@dataclass(frozen=True)
class SamplingConfig:
    """How a corpus prompt set is drawn. ``candidates`` is the pool size: split equally over the
    available domains for ``mixed``; all from one domain for a single domain."""

    candidates: int = 1000
    per_stratum: int = 15
    n_strata: int = 5
    min_tokens: int = 16
    max_tokens: int = 64
    batch_size: int = 32

    #: upper limits (docs/prompts.md): each candidate costs a forward pass; the corpus passages are
    #: cut to at most a few thousand tokens
    LIMITS: ClassVar[dict[str, Limit]] = {
        "candidates": Limit(100_000, "100× the default pool; each candidate costs a forward pass", "--candidates"),
        "per_stratum": Limit(20_000, "the candidate pool's limit over the default 5 quintiles", "--per-quintile"),
        "n_strata": Limit(100, "20× the paper's 5 quintiles", "sampling.n_strata"),
        "min_tokens": Limit(4096, "64× the default longest candidate of 64 tokens", "--min-tokens"),
        "max_tokens": Limit(4096, "64× the default longest candidate of 64 tokens", "--max-prompt-tokens"),
        "batch_size": Limit.batch("sampling.batch_size"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "sampling")
        check_limits(self, self.LIMITS)  # first: the checks below multiply these
        if self.n_strata < 2:
            raise SamplingError(f"{self.n_strata} entropy strata; stratified sampling needs at least 2 (n_strata)")
        if self.per_stratum < 1:
            raise SamplingError(
                f"{self.per_stratum} prompts per quintile must be at least 1; pass --per-quintile 1 or more"
            )
        if self.candidates < self.per_stratum * self.n_strata:
            raise SamplingError(
                f"--candidates {self.candidates} is below the {self.per_stratum * self.n_strata} prompts "
                f"to sample ({self.per_stratum} per quintile × {self.n_strata}); raise --candidates"
            )
        if not 1 <= self.min_tokens <= self.max_tokens:
            raise SamplingError(
                f"token range [{self.min_tokens}, {self.max_tokens}] is empty or below 1; "
                "fix --min-tokens/--max-prompt-tokens"
            )
        if self.batch_size < 1:
            raise SamplingError(f"batch size {self.batch_size} must be at least 1")

    @property
    def n_prompts(self) -> int:
        return self.per_stratum * self.n_strata


@dataclass(frozen=True)
class PromptSet:
    """A resolved prompt set: the texts and everything needed to reproduce them."""

    name: str  # "builtin", "mixed", a domain name, or a file path
    kind: str  # "builtin" | "corpus" | "file"
    prompts: tuple[str, ...]
    hash: str
    seed: int | None = None
    domains: tuple[str, ...] = ()  # per prompt, for corpus sets
    sources: tuple[str, ...] = ()  # per prompt, for corpus sets
    entropy: tuple[float, ...] = ()  # the sampling entropies (bits), for corpus sets
    stratum: tuple[int, ...] = ()  # quintile of each prompt, for corpus sets
    info: dict[str, Any] = field(default_factory=dict)  # corpus version, pool size, config, notes

    def __post_init__(self) -> None:
        n = len(self.prompts)
        for name in ("domains", "sources", "entropy", "stratum"):
            got = len(getattr(self, name))
            if got not in (0, n):
                raise ValueError(f"{name} has {got} entries for {n} prompts")

    def record(self) -> dict[str, Any]:
        """What a result stores about its prompts (no texts: they live in the capture)."""
        d = {
            "name": self.name,
            "kind": self.kind,
            "hash": self.hash,
            "seed": self.seed,
            "n": len(self.prompts),
            **self.info,
        }
        if self.domains:
            d["domain_counts"] = {k: self.domains.count(k) for k in sorted(set(self.domains))}
        return d


# -- strata -----------------------------------------------------------------------------------
def entropy_strata(entropy: Float[np.ndarray, " n"], n_strata: int = 5, *, seed: int = 0) -> Int[np.ndarray, " n"]:
    """Stratum (0 = lowest entropy) of every candidate: rank-based quantile groups of equal size.

    Ties are ordered by a seeded shuffle, so equal entropies are spread over neighbouring
    strata reproducibly. Raises SamplingError when there are fewer distinct values than strata."""
    h = np.asarray(entropy, dtype=np.float64)
    if h.ndim != 1 or not np.all(np.isfinite(h)):
        raise SamplingError("candidate entropies must be a finite 1-D array")
    distinct = np.unique(h).size
    if distinct < n_strata:
        raise SamplingError(
            f"the {h.size} candidates have {distinct} distinct next-token entropy value(s) "
            f"({'all equal to %.4g bits' % h[0] if distinct == 1 else 'too few'}); {n_strata} entropy quintiles are "
            "impossible: use another prompt set or more --candidates"
        )
    tiebreak = np.random.default_rng(seed).permutation(h.size)
    order = np.lexsort((tiebreak, h))
    ranks = np.empty(h.size, dtype=np.int64)
    ranks[order] = np.arange(h.size)
    return (ranks * n_strata) // h.size


def stratified_sample(
    entropy: Float[np.ndarray, " n"],
    per_stratum: int,
    n_strata: int = 5,
    *,
    seed: int = 0,
    what: str = "the candidates",
) -> tuple[Int[np.ndarray, " m"], Int[np.ndarray, " m"]]:
    """Indices of ``per_stratum`` candidates from each entropy stratum (sorted by stratum, then
    index), and their strata. Deterministic for a seed."""
    h = np.asarray(entropy, dtype=np.float64)
    need = per_stratum * n_strata
    if h.size < need:
        raise SamplingError(
            f"{what} has {h.size} candidate(s) but {need} are needed ({per_stratum} per quintile × "
            f"{n_strata}); lower --per-quintile or raise --candidates"
        )
    strata = entropy_strata(h, n_strata, seed=seed)
    rng = np.random.default_rng([seed, 1])
    picked = []
    for s in range(n_strata):
        members = np.flatnonzero(strata == s)
        if members.size < per_stratum:  # cannot happen with rank strata and h.size >= need; kept as a guard
            raise SamplingError(f"entropy quintile {s + 1} of {what} holds {members.size} < {per_stratum} candidates")
        picked.append(np.sort(rng.choice(members, size=per_stratum, replace=False)))
    idx = np.concatenate(picked)
    return idx, strata[idx]


# -- candidate entropies ----------------------------------------------------------------------
def _model_key(model: Any) -> str:
    p = model.provenance
    raw = json.dumps([p.model_id, p.source, p.weights, p.tokenizer, p.dtype], sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class EntropyCache:
    """Next-token entropies per (model, candidate text), one JSON file per model."""

    def __init__(self, model: Any, directory: os.PathLike | str | None = None) -> None:
        from pathlib import Path

        default = os.environ.get("GEOPROBE_ENTROPY_CACHE") or cache_dir() / "entropy"
        self.path = Path(directory or default) / f"{_model_key(model)}.json"
        self.model_id = model.provenance.model_id
        self._data: dict[str, float] = {}
        if self.path.exists():
            try:
                self._data = dict(json.loads(self.path.read_text(encoding="utf-8"))["entropy"])
            except (OSError, ValueError, KeyError, TypeError):
                self._data = {}  # a damaged cache is rebuilt, never trusted

    def get(self, texts: Sequence[str]) -> list[float | None]:
        return [self._data.get(_text_key(t)) for t in texts]

    def put(self, texts: Sequence[str], values: Sequence[float]) -> None:
        self._data.update({_text_key(t): float(v) for t, v in zip(texts, values)})
        atomic_write_text(self.path, json.dumps({"model": self.model_id, "entropy": self._data}))


def candidate_entropies(
    model: Any,
    texts: Sequence[str],
    *,
    batch_size: int = 32,
    cache: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Float[np.ndarray, " n"]:
    """Next-token entropy (bits) at the final position of every text, as capture computes it.

    Left-padded batches of similar length through the bridge with ``logits_to_keep=1``;
    cached per model and text unless ``cache=False``."""
    import torch

    from geoprobe.capture.run import entropy_bits, final_position_logits, tokenize

    store = EntropyCache(model) if cache else None
    known = store.get(texts) if store else [None] * len(texts)
    todo = [i for i, v in enumerate(known) if v is None]
    out = np.array([np.nan if v is None else v for v in known], dtype=np.float64)
    if progress is not None:
        progress(len(texts) - len(todo), len(texts))
    if todo:
        ids, _ = tokenize(model, [texts[i] for i in todo], None)
        done: list[int] = []
        for n_batch, (rows, logits) in enumerate(final_position_logits(model, ids, batch_size)):
            # the model's own logits (soft-capped where the architecture caps them)
            h = entropy_bits(torch.softmax(logits, dim=-1)).cpu().numpy()
            if not np.all(np.isfinite(h)):
                raise SamplingError("non-finite next-token entropy while sampling; rerun with --dtype float32")
            out[[todo[r] for r in rows]] = h
            done += [todo[r] for r in rows]
            if progress is not None:
                progress(len(texts) - len(todo) + len(done), len(texts))
            if store and n_batch % 8 == 7:  # an interrupted run keeps what it computed
                store.put([texts[i] for i in done], out[done])
        if store:
            store.put([texts[i] for i in todo], out[todo])
    return out


# -- resolving a named set ----------------------------------------------------------------------
def corpus_set_names() -> tuple[str, ...]:
    return (MIXED, *DOMAINS)


def is_corpus_set(name: str) -> bool:
    return name == MIXED or name in DOMAINS


def check_corpus_set(name: str) -> list[str]:
    """The domains a corpus set draws on, checked before any model is loaded.

    Raises UnknownDomain / CorpusUnavailable with one-line messages; for ``mixed`` the
    unavailable domains are skipped (returned list) as long as two remain."""
    avail = corpora.available_domains()
    if name == MIXED:
        usable = [d for d in DOMAINS if avail.get(d) is None]
        if len(usable) < 2:
            reasons = "; ".join(r for r in avail.values() if r)
            raise CorpusUnavailable(
                f"the mixed prompt set needs at least 2 corpus domains, {len(usable)} available ({reasons})"
            )
        return usable
    if name not in DOMAINS:
        raise UnknownDomain(
            f"unknown prompt set or domain {name!r}; available: builtin, {MIXED}, "
            f"{', '.join(d for d in DOMAINS if avail.get(d) is None)}, or a prompt file path "
            "(--prompts/--domain)"
        )
    if avail.get(name) is not None:
        raise CorpusUnavailable(avail[name])
    return [name]


def domain_pool(
    domains: Sequence[str], config: SamplingConfig, tokenizer: Any, seed: int, *, per_domain: int | None = None
) -> list[Any]:
    """Candidate passages: ``per_domain`` (default: the pool size split over ``domains``) from each."""
    k = per_domain or math.ceil(config.candidates / len(domains))
    pool = []
    for d in domains:  # one call per domain: a domain's candidates never depend on the others
        pool.extend(
            corpora.candidates(
                [d], k, tokenizer=tokenizer, min_tokens=config.min_tokens, max_tokens=config.max_tokens, seed=seed
            )
        )
    return pool


def sample_corpus_set(
    model: Any,
    name: str,
    config: SamplingConfig = SamplingConfig(),
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    pool: Sequence[Any] | None = None,
) -> PromptSet:
    """Stratified-entropy sample of corpus set ``name`` (``mixed`` or one domain) for ``model``."""
    domains = check_corpus_set(name)
    notes = []
    if pool is None:
        pool = domain_pool(domains, config, model.tokenizer, seed)
    texts = [c.text for c in pool]
    if name != MIXED:
        have = len(pool)
        if have < config.n_prompts:
            raise SamplingError(
                f"domain {name!r} yields {have} candidate passage(s) in the token range "
                f"[{config.min_tokens}, {config.max_tokens}] but {config.n_prompts} prompts are requested "
                f"({config.per_stratum} per quintile); lower --per-quintile to {have // config.n_strata} "
                "or widen the token range"
            )
        if have < config.candidates:
            notes.append(f"domain {name!r} yields {have} of the {config.candidates} candidates asked for")
    h = candidate_entropies(model, texts, batch_size=config.batch_size, progress=progress)
    idx, strata = stratified_sample(h, config.per_stratum, config.n_strata, seed=seed, what=f"prompt set {name!r}")
    prompts = tuple(texts[i] for i in idx)
    edges = [float(x) for x in np.quantile(h, np.linspace(0, 1, config.n_strata + 1))]
    info = {
        "corpus_version": CORPUS_VERSION,
        "pool": len(pool),
        "sampling": asdict(config),
        "entropy_quantiles": edges,
        "notes": notes,
    }
    return PromptSet(
        name=name,
        kind="corpus",
        prompts=prompts,
        hash=prompts_hash(prompts),
        seed=seed,
        domains=tuple(pool[i].domain for i in idx),
        sources=tuple(pool[i].source for i in idx),
        entropy=tuple(float(h[i]) for i in idx),
        stratum=tuple(int(s) for s in strata),
        info=info,
    )
