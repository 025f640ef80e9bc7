"""Real human-written text from several domains, read offline from installed packages, and
candidate prompts cut from it (arXiv 2512.23752 §4.2, §5.1).

>>> from geoprobe.corpora import DOMAINS, available_domains, candidates
>>> available_domains()["code"] is None
True
>>> ps = candidates(["code", "news"], 50, tokenizer=None, seed=0)   # words when no tokenizer

Each domain reads one or two installed packages (see docs/corpora.md); a missing one makes
only that domain unavailable, with a one-line message naming the package and its install
command. Nothing is downloaded and no corpus text is stored in geoprobe.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Any, Sequence

from geoprobe.corpora.cutting import Passage, cut_domain
from geoprobe.corpora.sources import (
    DOMAINS,
    READERS,
    CorpusUnavailable,
    UnknownDomain,
    unavailable_reason,
    unknown_domain,
)
from geoprobe.errors import GeoprobeError

#: identifies the sources, their cleaning and the cutting rules; it keys caches built on
#: candidates (entropies), so bump the leading number whenever any of these changes. The
#: suffix is the Python minor version, whose standard library is the code corpus.
CORPUS_VERSION = f"1+py{sys.version_info[0]}.{sys.version_info[1]}"

__all__ = [
    "CORPUS_VERSION",
    "DOMAINS",
    "CorpusUnavailable",
    "Passage",
    "UnknownDomain",
    "available_domains",
    "candidates",
    "documents",
]


def available_domains() -> dict[str, str | None]:
    """Every domain in :data:`DOMAINS` → ``None`` if its source is installed here, else the
    one-line reason (the package to install and the command). Reads no corpus text."""
    return {d: unavailable_reason(d) for d in DOMAINS}


def _check(domain: str) -> None:
    if domain not in DOMAINS:
        raise unknown_domain(domain)
    reason = unavailable_reason(domain)
    if reason is not None:
        raise CorpusUnavailable(reason)


@lru_cache(maxsize=None)
def _documents(domain: str) -> tuple[tuple[str, str], ...]:
    return tuple(READERS[domain]())


def documents(domain: str) -> list[tuple[str, str]]:
    """``(source id, cleaned text)`` of every document of ``domain``, in a fixed order.
    Read once per process, then cached. Raises :class:`UnknownDomain` or
    :class:`CorpusUnavailable`."""
    _check(domain)
    return list(_documents(domain))


def candidates(
    domains: Sequence[str],
    n_per_domain: int,
    *,
    tokenizer: Any | None = None,
    min_tokens: int = 16,
    max_tokens: int = 64,
    seed: int = 0,
) -> list[Passage]:
    """Up to ``n_per_domain`` distinct passages from each domain, in the order the domains are
    given. A passage starts at a sentence start (a line start for code) of a randomly chosen
    document and ends at a word boundary, its length under ``tokenizer`` (a Hugging Face
    tokenizer; whitespace words when ``None``) drawn uniformly from
    ``[min_tokens, max_tokens]``. Each domain's draw is seeded from ``(seed, domain)`` alone,
    so it does not depend on the other domains requested. A domain that cannot yield
    ``n_per_domain`` distinct passages gives what it can; callers should check the count."""
    if isinstance(domains, str):
        domains = [domains]
    if n_per_domain < 0:
        raise GeoprobeError(f"passages per domain {n_per_domain} is negative; pass a count >= 0")
    if min_tokens < 1 or max_tokens < min_tokens:
        raise GeoprobeError(
            f"token range [{min_tokens}, {max_tokens}] is empty or starts below 1; pass 1 <= min_tokens <= max_tokens"
        )
    unique = list(dict.fromkeys(domains))
    for d in unique:
        _check(d)
    out: list[Passage] = []
    for d in unique:
        out.extend(
            cut_domain(
                d,
                _documents(d),
                n_per_domain,
                tokenizer=tokenizer,
                min_tokens=min_tokens,
                max_tokens=max_tokens,
                seed=seed,
            )
        )
    return out
