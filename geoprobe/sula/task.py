"""The SULA in-context Bayesian-updating task (arXiv 2512.23752 §4.3, §5.2): prompts whose
exact Bayesian posterior is known in closed form.

A prompt holds k labelled examples and a query, in one fixed, configurable format (default
``"{word}: {label}"`` joined by ``", "``, then ``"test:"``)::

    happy: bip, storm: bip, gift: pim, test:

* A latent class y ∈ {L1, L2} is drawn uniformly per prompt (uniform prior).
* Each example's label agrees with y with probability a (``agreement``, default 0.9; the
  likelihood ratio a : 1 − a), independently; the carrier word is drawn from 35 "positive"
  and 35 "negative" plain English words and carries no evidence (only the labels do).
* With n1 L1-labels and n2 L2-labels the posterior is, exactly,
  ``P(y = L1 | examples) = a^n1 (1−a)^n2 / (a^n1 (1−a)^n2 + (1−a)^n1 a^n2)``
  ``= 1 / (1 + ((1−a)/a)^(n1−n2))``, the predictive for the query's label is
  ``P(label = L1) = a p + (1 − a)(1 − p)``.
* Two analytic targets, both in bits (docs/sula.md): the **predictive entropy**
  ``h(q) = −q log2 q − (1 − q) log2 (1 − q)`` of the query label's predictive q (label noise
  included; ``SulaPrompt.entropy_bits``), and the **posterior entropy** ``h(p)`` of the posterior
  over which label is the rule (``SulaPrompt.posterior_entropy_bits``), the paper's
  "analytical posterior entropy H_Bayes(k)" (§5.2) and the authors' released pipeline's
  ``bayes_entropy``.

Controls (§5.2), each with its own analytic posterior:

* ``lexical_remap``: the same draws with another label pair (same posterior);
* ``shuffled``: every example label drawn independently of y with p = 0.5 (no evidence:
  posterior 0.5, predictive 0.5, H = 1 bit);
* ``ablated``: the same draws with every carrier word replaced by one fixed placeholder
  (labels kept, so the posterior is that of the unmasked prompt).

The main condition and the controls share one seeded stream of (y, words, agreement) draws, so
prompt i of ``lexical_remap`` or ``ablated`` is prompt i of ``main`` with labels or words changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from geoprobe.serial import Record
from geoprobe.sula.config import CONDITIONS, SulaConfig, SulaError

POSITIVE_WORDS: tuple[str, ...] = (
    "happy",
    "joy",
    "love",
    "sunny",
    "bright",
    "kind",
    "gentle",
    "calm",
    "peace",
    "smile",
    "warm",
    "friend",
    "hope",
    "gift",
    "honest",
    "brave",
    "proud",
    "sweet",
    "fresh",
    "clean",
    "lucky",
    "fun",
    "safe",
    "rich",
    "strong",
    "healthy",
    "glad",
    "cheer",
    "good",
    "great",
    "nice",
    "lovely",
    "pleasant",
    "success",
    "win",
)
NEGATIVE_WORDS: tuple[str, ...] = (
    "sad",
    "angry",
    "hate",
    "dark",
    "cruel",
    "pain",
    "fear",
    "cold",
    "enemy",
    "sick",
    "lost",
    "poor",
    "weak",
    "ugly",
    "dirty",
    "fail",
    "war",
    "death",
    "hurt",
    "bad",
    "awful",
    "bitter",
    "lonely",
    "gloomy",
    "broken",
    "danger",
    "guilt",
    "harsh",
    "rude",
    "tired",
    "worry",
    "evil",
    "grief",
    "shame",
    "storm",
)
CARRIER_WORDS: tuple[str, ...] = POSITIVE_WORDS + NEGATIVE_WORDS

# Nonsense labels that are one token (with their leading space) in the SmolLM2 tokenizer, which
# the tiny twins share; ``choose_labels`` picks the first single-token pair for any tokenizer.
LABEL_CANDIDATES: tuple[str, ...] = (
    "bip",
    "pim",
    "kel",
    "pom",
    "zig",
    "lum",
    "gor",
    "vex",
    "dax",
    "wug",
    "blick",
    "fep",
    "toma",
    "lorp",
)


# -- closed forms -----------------------------------------------------------------------------
def posterior_l1(n1: int | np.ndarray, n2: int | np.ndarray, agreement: float = 0.9) -> Any:
    """P(y = L1 | n1 L1-labels, n2 L2-labels) under a uniform prior and label agreement ``a``:
    ``a^n1 (1−a)^n2 / (a^n1 (1−a)^n2 + (1−a)^n1 a^n2)``, computed as a logistic in n1 − n2."""
    import scipy.special

    a = float(agreement)
    d = np.asarray(n1, dtype=np.float64) - np.asarray(n2, dtype=np.float64)
    out = np.asarray(scipy.special.expit(d * math.log(a / (1.0 - a))), dtype=np.float64)
    return float(out) if out.shape == () else out


def predictive_l1(posterior: float | np.ndarray, agreement: float = 0.9) -> Any:
    """P(query label = L1) = a p + (1 − a)(1 − p)."""
    a = float(agreement)
    out = a * np.asarray(posterior, dtype=np.float64) + (1.0 - a) * (1.0 - np.asarray(posterior, dtype=np.float64))
    return float(out) if out.shape == () else out


def binary_entropy_bits(q: float | np.ndarray) -> Any:
    """−q log2 q − (1 − q) log2 (1 − q); 0 · log 0 = 0."""
    q = np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(q > 0, q * np.log2(q), 0.0) + np.where(q < 1, (1 - q) * np.log2(1 - q), 0.0))
    return float(h) if h.shape == () else h


@dataclass(frozen=True)
class SulaPrompt:
    """One prompt and its exact Bayesian quantities. ``y`` is 1 (L1) or 2 (L2); ``posterior``
    is P(y = L1 | examples), ``predictive`` P(query label = L1), ``entropy_bits`` the
    predictive entropy h(predictive) and ``posterior_entropy_bits`` the posterior entropy
    h(posterior) (the paper's target)."""

    text: str
    k: int
    n1: int
    n2: int
    y: int
    posterior: float
    predictive: float
    entropy_bits: float
    condition: str
    posterior_entropy_bits: float = math.nan


def _example(config: SulaConfig, word: str, label: str) -> str:
    return config.example_format.replace("{word}", word).replace("{label}", label)


def render(config: SulaConfig, words: Sequence[str], labels: Sequence[str]) -> str:
    """The prompt text: examples joined by the separator, then the query."""
    parts = [_example(config, w, lab) for w, lab in zip(words, labels)]
    return config.separator.join([*parts, config.query])


def generate(config: SulaConfig = SulaConfig()) -> tuple[SulaPrompt, ...]:
    """``n_per_k`` prompts for every k of ``config`` (in k order), deterministic for the seed.

    The (y, words, agreement) draws depend only on the seed, k and the prompt's index, never on
    the condition, so controls are paired with the main prompts."""
    a = config.agreement
    cond = config.condition
    L1, L2 = config.labels_for(cond)
    out = []
    for k in config.k_values:
        rng = np.random.default_rng([config.seed, k])
        shuffle_rng = np.random.default_rng([config.seed, k, 1])
        for _ in range(config.n_per_k):
            y = 1 if rng.random() < 0.5 else 2
            agree = rng.random(k) < a
            replace_words = k > len(CARRIER_WORDS)
            widx = rng.choice(len(CARRIER_WORDS), size=k, replace=replace_words)
            coin = shuffle_rng.random(k) < 0.5  # drawn in every condition: streams stay aligned
            if cond == "shuffled":
                is_l1 = coin
            else:
                is_l1 = agree if y == 1 else ~agree
            words = [config.placeholder if cond == "ablated" else CARRIER_WORDS[i] for i in widx]
            labels = [L1 if b else L2 for b in is_l1]
            n1 = int(is_l1.sum())
            n2 = k - n1
            if cond == "shuffled":
                post = 0.5
            else:
                post = posterior_l1(n1, n2, a)
            pred = predictive_l1(post, a) if cond != "shuffled" else 0.5
            # entropies from the majority side's posterior, so that prompts with the same |n1 − n2| get
            # bit-identical entropies (h(expit(x)) and h(expit(−x)) differ in the last bits): exact ties
            sure = 0.5 if cond == "shuffled" else posterior_l1(max(n1, n2), min(n1, n2), a)
            sure_pred = 0.5 if cond == "shuffled" else predictive_l1(sure, a)
            out.append(
                SulaPrompt(
                    text=render(config, words, labels),
                    k=k,
                    n1=n1,
                    n2=n2,
                    y=y,
                    posterior=post,
                    predictive=pred,
                    entropy_bits=binary_entropy_bits(sure_pred),
                    condition=cond,
                    posterior_entropy_bits=binary_entropy_bits(sure),
                )
            )
    return tuple(out)


def generate_all(config: SulaConfig = SulaConfig()) -> dict[str, tuple[SulaPrompt, ...]]:
    """The main condition and the three controls, paired prompt by prompt."""
    return {c: generate(replace(config, condition=c)) for c in CONDITIONS}


# -- tokenisation -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LabelTokens(Record):
    """How the two labels are scored: the token id of each (its only token, or with
    ``first_token`` its first), and how each tokenises after the format's lead text."""

    labels: tuple[str, str]
    ids: tuple[int, int]
    tokens: tuple[tuple[str, ...], tuple[str, ...]]
    first_token: bool = False


def _pieces(tokenizer: Any, text: str) -> tuple[list[int], list[str]]:
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    toks = [tokenizer.decode([i]) for i in ids]
    return ids, toks


def label_tokens(tokenizer: Any, labels: Sequence[str], *, lead: str = " ", first_token: bool = False) -> LabelTokens:
    """Token ids of ``lead + label`` (the label as it follows the separator) for both labels.

    Raises SulaError when a label is not one token (unless ``first_token``) or when the two
    labels would be scored by the same token."""
    ids, toks = [], []
    for lab in labels:
        i, t = _pieces(tokenizer, lead + lab)
        if not i:
            raise SulaError(f"label {lead + lab!r} has no tokens; choose another label")
        if len(i) != 1 and not first_token:
            raise SulaError(
                f"label {lead + lab!r} tokenises as {t} ({len(i)} tokens); pass single-token labels to --labels "
                "(e.g. bip,pim) or score each label by its first token with --first-token (first_token = true "
                "in a recipe or a config)"
            )
        ids.append(i[0])
        toks.append(tuple(t))
    if ids[0] == ids[1]:
        raise SulaError(
            f"labels {labels[0]!r} and {labels[1]!r} share their first token {toks[0][0]!r}; "
            "pass --labels whose first tokens differ"
        )
    return LabelTokens(
        labels=(labels[0], labels[1]), ids=(ids[0], ids[1]), tokens=(toks[0], toks[1]), first_token=first_token
    )


def choose_labels(
    tokenizer: Any, candidates: Sequence[str] = LABEL_CANDIDATES, *, lead: str = " ", exclude: Sequence[str] = ()
) -> tuple[str, str]:
    """The first two ``candidates`` (not in ``exclude``) that are each one token after ``lead``
    and distinct tokens; SulaError naming how many were single tokens if fewer than two are."""
    found: list[str] = []
    seen: set[int] = set()
    for c in candidates:
        if c in exclude:
            continue
        ids, _ = _pieces(tokenizer, lead + c)
        if len(ids) == 1 and ids[0] not in seen:
            found.append(c)
            seen.add(ids[0])
            if len(found) == 2:
                return found[0], found[1]
    raise SulaError(
        f"{len(found)} of the {len(candidates)} candidate labels are single tokens for this tokenizer "
        f"(need 2): {found}; pass other candidates or first_token=True"
    )


def check_context(model: Any, prompts: Sequence[SulaPrompt] | Sequence[str]) -> int:
    """The longest prompt's token count; SulaError when it exceeds the model's context."""
    texts = [p.text if isinstance(p, SulaPrompt) else p for p in prompts]
    ks = [p.k if isinstance(p, SulaPrompt) else None for p in prompts]
    enc = model.tokenizer(list(texts), add_special_tokens=True)["input_ids"]
    lengths = [len(e) for e in enc]
    i = int(np.argmax(lengths))
    ctx = int(model.context_length)
    if lengths[i] > ctx:
        name = getattr(model, "model_id", None) or getattr(getattr(model, "provenance", None), "model_id", "the model")
        what = f"k = {ks[i]} makes prompts" if ks[i] is not None else "the longest prompt has"
        raise SulaError(f"{what} of {lengths[i]:,} tokens but {name}'s context is {ctx:,}; lower --k")
    return lengths[i]


def prompt_arrays(prompts: Sequence[SulaPrompt]) -> dict[str, np.ndarray]:
    """Per-prompt columns (k, n1, n2, y, posterior, predictive, entropy_bits,
    posterior_entropy_bits) as arrays."""
    cols = ("k", "n1", "n2", "y", "posterior", "predictive", "entropy_bits", "posterior_entropy_bits")
    return {c: np.array([getattr(p, c) for p in prompts]) for c in cols}


__all__ = [
    "CARRIER_WORDS",
    "LABEL_CANDIDATES",
    "NEGATIVE_WORDS",
    "POSITIVE_WORDS",
    "LabelTokens",
    "SulaPrompt",
    "binary_entropy_bits",
    "check_context",
    "choose_labels",
    "generate",
    "generate_all",
    "label_tokens",
    "posterior_l1",
    "predictive_l1",
    "prompt_arrays",
    "render",
]
