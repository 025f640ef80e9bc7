"""Distance profiles of final-token attention, and prompts of an exact token length.

Capture keeps ``attn_pattern[l, i, h, t]``: the final token's attention to the t-th real token of
prompt i (t = 0 the first token, t = n_tokens[i] − 1 the final token itself). The distance of
key t from the query is Δ = n_tokens[i] − 1 − t, so Δ = 0 is the final token attending to itself.

For a window Δ = 0..D and the first K positions excluded as attention sinks:

* ``sink[l, i, h]``  = Σ_{t < K} attn_pattern[l, i, h, t]   (the mass the sink positions hold)
* ``window[l, i, h, Δ]`` = attn_pattern[l, i, h, n_tokens[i] − 1 − Δ]   (raw, not renormalised)
* the head's profile p(Δ) = mean_i window[l, i, h, Δ] / Σ_Δ mean_i window[l, i, h, Δ]
  (mean over prompts first, then renormalised over the window: a ratio estimator whose
  bootstrap resamples prompts and renormalises the same way).

Every prompt must have n_tokens ≥ D + 1 + K so that no window position is a sink position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jaxtyping import Float, Int

from geoprobe.errors import GeoprobeError

#: the offline corpus domains tried, in order, for long prompts
SOURCE_DOMAINS = ("encyclopedic", "news", "fiction", "code")


@dataclass(frozen=True)
class DistanceWindows:
    """Per-prompt windows of final-token attention by distance (see the module docstring)."""

    window: Float[np.ndarray, "L n H Dp1"]
    sink: Float[np.ndarray, "L n H"]
    exclude_first: int

    @property
    def max_distance(self) -> int:
        return self.window.shape[-1] - 1

    def profile(self, weights: Float[np.ndarray, " n"] | None = None) -> Float[np.ndarray, "L H Dp1"]:
        """Mean over prompts (optionally weighted), renormalised over the window."""
        w = self.window.mean(1) if weights is None else np.einsum("n,lnhd->lhd", weights, self.window)
        return w / np.maximum(w.sum(-1, keepdims=True), 1e-300)


def distance_windows(
    attn_pattern: Float[np.ndarray, "L n H T"],
    n_tokens: Int[np.ndarray, " n"],
    max_distance: int,
    exclude_first: int = 1,
) -> DistanceWindows:
    """Slice captured final-token attention into distance windows Δ = 0..``max_distance``."""
    a = np.asarray(attn_pattern, dtype=np.float64)
    n_tok = np.asarray(n_tokens, dtype=np.int64)
    if a.ndim != 4 or a.shape[1] != n_tok.shape[0]:
        raise ValueError(f"attn_pattern {a.shape} must be (L, n, H, T) with n = {n_tok.shape[0]} prompts")
    if max_distance < 2:
        raise GeoprobeError(
            f"max distance {max_distance} leaves fewer than 3 distances to fit; pass --max-distance 2 or more"
        )
    if exclude_first < 0:
        raise GeoprobeError(f"--exclude-first {exclude_first} is negative; pass 0 or more")
    need = max_distance + 1 + exclude_first
    short = int(n_tok.min())
    if short < need:
        raise GeoprobeError(
            f"prompts of {short} tokens are too short for --max-distance {max_distance} with "
            f"--exclude-first {exclude_first} (needs {need} tokens); pass --max-distance "
            f"{short - 1 - exclude_first} or less, or longer prompts"
        )
    L, n, H, _ = a.shape
    idx = n_tok[:, None] - 1 - np.arange(max_distance + 1)[None, :]  # (n, D+1) key positions
    window = np.take_along_axis(a, np.broadcast_to(idx[None, :, None, :], (L, n, H, max_distance + 1)), axis=3)
    sink = a[..., :exclude_first].sum(-1) if exclude_first else np.zeros((L, n, H))
    return DistanceWindows(window=window, sink=sink, exclude_first=exclude_first)


# -- prompts of an exact length ------------------------------------------------------------------
def _special_count(tokenizer: Any) -> int:
    return len(tokenizer("a", add_special_tokens=True)["input_ids"]) - len(
        tokenizer("a", add_special_tokens=False)["input_ids"]
    )


def _corpus() -> tuple[str, list[str]]:
    from geoprobe.corpora import available_domains, documents

    avail = available_domains()
    for d in SOURCE_DOMAINS:
        if avail.get(d) is None:
            return d, [t for _, t in documents(d)]
    from geoprobe.prompts import builtin_prompts

    return "builtin (concatenated)", [" ".join(builtin_prompts())]


def token_windows(
    tokenizer: Any, length: int, n: int, seed: int = 0, *, texts: Sequence[str] | None = None
) -> tuple[list[str], dict[str, Any]]:
    """``n`` distinct prompts that tokenize (with the tokenizer's special tokens) to exactly
    ``length`` tokens: contiguous token windows of long offline documents (the first available of
    :data:`SOURCE_DOMAINS`, or ``texts``), decoded and checked by re-encoding; a window whose
    re-encoding differs in length is skipped. Returns (prompts, a record of the source)."""
    if length < 2:
        raise GeoprobeError(f"prompt length {length} is below 2 tokens; pass --lengths of 2 or more")
    source, docs = ("given texts", list(texts)) if texts is not None else _corpus()
    body = length - _special_count(tokenizer)
    rng = np.random.default_rng([seed, length])
    order = rng.permutation(len(docs))
    out: list[str] = []
    seen: set[str] = set()
    tries = 0
    cache: dict[int, list[int]] = {}
    for _ in range(8):
        for di in order:
            if len(out) >= n:
                break
            if di not in cache:  # the first ~8 windows' worth of text (a token is rarely over 12 characters)
                cache[di] = tokenizer(docs[di][: 8 * length * 12], add_special_tokens=False)["input_ids"]
            ids = cache[di]
            if len(ids) < body + 1:
                continue
            start = int(rng.integers(0, len(ids) - body + 1))
            text = tokenizer.decode(ids[start : start + body])
            tries += 1
            if text in seen or not text.strip():
                continue
            if len(tokenizer(text, add_special_tokens=True)["input_ids"]) == length:
                out.append(text)
                seen.add(text)
        if len(out) >= n:
            break
    if len(out) < n:
        raise GeoprobeError(
            f"found only {len(out)} distinct prompts of {length} tokens in the {source} corpus "
            f"(need --n-prompts {n}); pass smaller --lengths or --n-prompts"
        )
    return out, {"source": source, "length": length, "n": n, "seed": seed, "windows_tried": tries}
