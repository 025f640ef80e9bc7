"""Cutting candidate prompts out of documents: seeded, at sentence (or line) starts, ending at
a word boundary, with a length drawn uniformly from a token range."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jaxtyping import Int

from geoprobe.corpora.clean import line_starts, sentence_starts
from geoprobe.errors import GeoprobeError

#: a draw tries at most this many proposals per requested passage before giving up
PROPOSALS_PER_PASSAGE = 20
#: ... and stops early after this many batches in a row that found no new passage
STOP_AFTER_FRUITLESS = 3
#: proposals tokenised together
MAX_BATCH = 1024
_WORD_END = re.compile(r"\S(?=\s)")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    """One candidate prompt cut from real text."""

    text: str  # the candidate prompt
    domain: str
    source: str  # document id, e.g. "gensim:enwiki/Aristotle", "stdlib:json/decoder.py"
    n_tokens: int  # tokens under the tokenizer used (whitespace words if none)


def domain_rng(seed: int, domain: str) -> np.random.Generator:
    """The generator for one domain: seeded from (seed, domain name) only, so a domain's draw
    does not depend on which other domains are asked for."""
    if seed < 0:
        raise GeoprobeError(f"sampling seed {seed} is negative; pass a seed >= 0 to --seed")
    key = int.from_bytes(hashlib.sha256(domain.encode()).digest()[:8], "little")
    return np.random.default_rng([seed, key])


class _Counter:
    """Token counting under a Hugging Face tokenizer, or whitespace words when it is None."""

    def __init__(self, tokenizer: Any | None) -> None:
        self.tokenizer = tokenizer
        self.offsets = tokenizer is not None and bool(getattr(tokenizer, "is_fast", False))

    def counts(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        if self.tokenizer is None:
            return [len(t.split()) for t in texts]
        ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        return [len(x) for x in ids]

    def prefix_counts(self, windows: list[str], ends: list[Int[np.ndarray, " n"]]) -> list[Int[np.ndarray, " n"]]:
        """For each window, the token count of ``window[:e]`` for every candidate end ``e``."""
        if self.tokenizer is None:
            out = []
            for w, e in zip(windows, ends):
                word_ends = np.fromiter((m.end() for m in _WORD.finditer(w)), dtype=np.int64)
                out.append(np.searchsorted(word_ends, e, side="right"))
            return out
        if self.offsets:
            enc = self.tokenizer(windows, add_special_tokens=False, return_offsets_mapping=True)
            out = []
            for offs, e in zip(enc["offset_mapping"], ends):
                starts = np.fromiter((a for a, _b in offs), dtype=np.int64, count=len(offs))
                out.append(np.searchsorted(starts, e, side="left"))
            return out
        # a slow tokenizer has no offsets: tokenise every candidate prefix
        flat = [w[: int(x)] for w, e in zip(windows, ends) for x in e]
        counts = np.asarray(self.counts(flat), dtype=np.int64)
        out, i = [], 0
        for e in ends:
            out.append(counts[i : i + len(e)])
            i += len(e)
        return out


def _window_chars(max_tokens: int) -> int:
    return 16 * max_tokens + 64


def cut_domain(
    domain: str,
    docs: Sequence[tuple[str, str]],
    n: int,
    *,
    tokenizer: Any | None,
    min_tokens: int,
    max_tokens: int,
    seed: int,
) -> list[Passage]:
    """Up to ``n`` distinct passages from ``docs``; fewer when the proposal budget
    (``PROPOSALS_PER_PASSAGE * n + 200`` draws) runs out or ``STOP_AFTER_FRUITLESS`` batches
    in a row find nothing new (the domain is exhausted for this length range)."""
    rng = domain_rng(seed, domain)
    counter = _Counter(tokenizer)
    is_code = domain == "code"
    starts_cache: dict[int, list[int]] = {}
    width = _window_chars(max_tokens)
    accepted: list[Passage] = []
    seen: set[str] = set()
    budget = PROPOSALS_PER_PASSAGE * n + 200
    fruitless = 0  # consecutive batches that added nothing: the domain is exhausted
    if not docs or n <= 0:
        return accepted
    while len(accepted) < n and budget > 0 and fruitless < STOP_AFTER_FRUITLESS:
        k = min(budget, MAX_BATCH, max(32, 2 * (n - len(accepted))))
        budget -= k
        doc_idx = rng.integers(len(docs), size=k)
        targets = rng.integers(min_tokens, max_tokens + 1, size=k)
        where = rng.random(k)
        windows, ends = [], []
        for d, u in zip(doc_idx, where):
            d = int(d)
            if d not in starts_cache:
                text = docs[d][1]
                starts_cache[d] = line_starts(text) if is_code else sentence_starts(text)
            starts = starts_cache[d]
            text = docs[d][1]
            s = starts[int(u * len(starts))] if starts else 0
            w = text[s : s + width]
            e = [m.end() for m in _WORD_END.finditer(w)]
            if s + width >= len(text):
                e.append(len(w))  # the document's end is a word boundary too
            windows.append(w)
            ends.append(np.asarray(e, dtype=np.int64))
        prefix = counter.prefix_counts(windows, ends)
        proposals: list[tuple[int, str]] = []
        for i, (w, e, c) in enumerate(zip(windows, ends, prefix)):
            ok = np.nonzero((c <= targets[i]) & (c >= min_tokens))[0]
            if len(ok) == 0:
                continue
            text = w[: int(e[ok[-1]])].rstrip()
            proposals.append((i, text))
        verified = counter.counts([t for _i, t in proposals])
        before = len(accepted)
        for (i, text), count in zip(proposals, verified):
            if not (min_tokens <= count <= max_tokens) or text in seen:
                continue
            seen.add(text)
            accepted.append(Passage(text, domain, docs[int(doc_idx[i])][0], int(count)))
            if len(accepted) == n:
                break
        fruitless = fruitless + 1 if len(accepted) == before else 0
    return accepted
