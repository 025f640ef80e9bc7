"""Wind-tunnel tasks with exact Bayesian posteriors (arXiv 2512.22471 §3).

Every sequence is a list of token ids in a small word-level vocabulary; the model reads a
prediction at ``K`` positions per sequence, and the task gives the analytic predictive
distribution over its ``A`` answer tokens at each of them.

**Bijection** (V symbols, K queries): a fresh uniformly random bijection π of {0..V-1} per
sequence. Each key repeats an earlier key (uniformly among those seen) with probability
``repeat``, and is otherwise a uniformly random key not seen yet (a repeat when none is left).
The posterior does not depend on how keys are chosen (they are independent of π); the mix
matters for learning: with keys drawn uniformly with replacement the best predictor without
key matching is exactly uniform, so training sits on a plateau with no partial credit, while
fresh keys reward the elimination of used outputs first. The sequence is
``<bos> k x1 v π(x1) … k xK v π(xK)`` written as tokens ``k{x}`` / ``v{y}``, and the prediction
for π(x_t) is read at the key ``k{x_t}``. The posterior: a point mass on π(x_t) if x_t was seen
before, else uniform over the V − m outputs not yet seen (m = distinct keys so far), entropy
log2(V − m) — the issue's log2(V − k + 1) after k − 1 distinct pairs.

**HMM** (S hidden states, V emissions, K steps): a fresh HMM per sequence. Rows of the
transition T (S × S) and emission E (S × V) matrices are Dirichlet(α) draws lifted to a
floor (``p = floor + (1 − C·floor)·Dirichlet``, so every entry is at least ``floor``; α = 0.5 by
default, see docs/windtunnel.md for why), then rounded to hundredths (the largest entry
absorbs the rounding so rows sum to exactly 1); the rounded matrices *are* the HMM (they generate the data and
define the posterior), and they are written into a header as tokens ``p0``..``p100``. The
initial state is uniform. The sequence is ``<bos> T(row-major) E(row-major) <sep> o1 … oK``;
with the default ``header="indexed"`` every value is preceded by a token naming its entry
(``t{i}_{j} p37 … e{i}_{o} p12 …``), so reading an entry is a lookup by content, not by absolute
position (``header="plain"`` writes the values alone, as the authors do). The prediction at ``o_t`` is the
filtering posterior P(s_t | o_1..o_t) from the forward
algorithm over answer tokens ``s0``..``s{S-1}`` (which never occur in the input).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal, Union

import numpy as np
from jaxtyping import Float, Int

from geoprobe.errors import GeoprobeError

TaskName = Literal["bijection", "hmm"]
_LN2 = math.log(2.0)


class TaskError(GeoprobeError):
    """A wind-tunnel task parameter out of range."""


def check_range(name: str, value: int, lo: int, hi: int, flag: str) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not lo <= value <= hi:
        raise TaskError(f"{name} = {value!r} is out of range [{lo}, {hi}]; pass {flag} between {lo} and {hi}")


@dataclass(frozen=True)
class Batch:
    """``ids`` (n, T) token ids; ``targets`` (n, K, A) analytic predictive distributions over
    the answer tokens; ``positions`` (K,) where each prediction is read (same for every row);
    ``labels`` (n, K) the answer that actually happened (a draw from the predictive)."""

    ids: Int[np.ndarray, "n T"]
    targets: Float[np.ndarray, "n K A"]
    positions: Int[np.ndarray, " K"]
    labels: Int[np.ndarray, "n K"]  # the realised answer (bijection output, HMM hidden state)

    def __post_init__(self) -> None:
        n, T = self.ids.shape
        if self.targets.shape[:2] != (n, len(self.positions)) or self.positions.max() >= T:
            raise ValueError(
                f"inconsistent batch: ids {self.ids.shape}, targets {self.targets.shape}, "
                f"positions up to {self.positions.max()}"
            )

    def head(self, k: int) -> "Batch":
        """The first ``k`` predictions (the scored ones; a task may train on more, e.g. the authors' query)."""
        if k == len(self.positions):
            return self
        return Batch(self.ids, self.targets[:, :k], self.positions[:k], self.labels[:, :k])

    @property
    def entropy(self) -> Float[np.ndarray, "n K"]:
        """Analytic predictive entropy in bits at every prediction."""
        return entropy_bits(self.targets)


def entropy_bits(p: Float[np.ndarray, "... A"]) -> Float[np.ndarray, "..."]:
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(-1) / _LN2


@dataclass(frozen=True)
class BijectionTask:
    """Bijection learning with V symbols and K queries (paper: V = 20, K = 20)."""

    V: int = 20
    K: int = 20
    repeat: float = 0.25
    name: Literal["bijection"] = "bijection"
    bos: ClassVar[bool] = True  # sequences start with <bos> (the authors' convention has none)

    def __post_init__(self) -> None:
        check_range("V (bijection symbols)", self.V, 2, 100, "--vocab")
        check_range("K (bijection queries)", self.K, 1, 200, "--length")
        if not 0.0 <= self.repeat <= 1.0:
            raise TaskError(f"repeat probability {self.repeat} is outside [0, 1]; pass --repeat between 0 and 1")

    # -- vocabulary ----------------------------------------------------------------------
    @cached_property
    def vocab(self) -> tuple[str, ...]:
        return ("<pad>", "<bos>", *(f"k{i}" for i in range(self.V)), *(f"v{i}" for i in range(self.V)))

    @property
    def answer_ids(self) -> Int[np.ndarray, " A"]:
        return np.arange(2 + self.V, 2 + 2 * self.V)

    @property
    def seq_len(self) -> int:
        return 1 + 2 * self.K

    def with_length(self, K: int) -> "BijectionTask":
        return BijectionTask(self.V, K, self.repeat)

    # -- sampling ------------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator) -> Batch:
        V, K = self.V, self.K
        perm = np.argsort(rng.random((n, V)), axis=1)  # a uniform random bijection per row
        keys = np.empty((n, K), dtype=np.int64)
        seen = np.zeros((n, V), dtype=bool)
        rows = np.arange(n)
        for t in range(K):
            fresh_left = ~seen.all(1)
            repeat = (rng.random(n) < self.repeat) & seen.any(1) | ~fresh_left
            pool = np.where(repeat[:, None], seen, ~seen)
            keys[:, t] = np.where(pool, rng.random((n, V)), -1.0).argmax(1)
            seen[rows, keys[:, t]] = True
        vals = np.take_along_axis(perm, keys, axis=1)
        ids = np.empty((n, 1 + 2 * K), dtype=np.int64)
        ids[:, 0] = 1
        ids[:, 1::2] = 2 + keys
        ids[:, 2::2] = 2 + V + vals
        return Batch(ids, self.posterior(keys, vals), 1 + 2 * np.arange(K), vals)

    def posterior(self, keys: Int[np.ndarray, "n K"], vals: Int[np.ndarray, "n K"]) -> Float[np.ndarray, "n K V"]:
        """The analytic predictive distribution over outputs before each pair's output is shown."""
        n, K = keys.shape
        V = self.V
        out = np.zeros((n, K, V))
        seen_val = np.zeros((n, V), dtype=bool)
        seen_key = np.zeros((n, V), dtype=bool)
        rows = np.arange(n)
        for t in range(K):
            repeat = seen_key[rows, keys[:, t]]
            free = ~seen_val
            out[:, t] = free / np.maximum(free.sum(1, keepdims=True), 1)
            out[repeat, t] = 0.0
            out[rows[repeat], t, vals[repeat, t]] = 1.0
            seen_key[rows, keys[:, t]] = True
            seen_val[rows, vals[:, t]] = True
        return out

    def describe(self) -> str:
        log10 = math.lgamma(self.V + 1) / math.log(10)
        return f"bijection V={self.V} K={self.K} repeat={self.repeat} ({log10:.1f} log10 hypotheses)"


@dataclass(frozen=True)
class HMMTask:
    """HMM state tracking with S states, V emissions, K steps (paper: S = V = 5, K = 20)."""

    S: int = 5
    V: int = 5
    K: int = 20
    alpha: float = 0.5
    floor: float = 0.05
    header: Literal["indexed", "plain"] = "indexed"
    name: Literal["hmm"] = "hmm"
    bos: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_range("S (HMM states)", self.S, 2, 10, "--states")
        check_range("V (HMM emissions)", self.V, 2, 10, "--vocab")
        check_range("K (HMM steps)", self.K, 1, 500, "--length")
        if not self.alpha > 0:
            raise TaskError(f"Dirichlet alpha = {self.alpha} must be > 0")
        if self.header not in ("indexed", "plain"):
            raise TaskError(f"header {self.header!r} is not indexed|plain")
        if not 0 <= self.floor * max(self.S, self.V) < 1:
            raise TaskError(
                f"probability floor {self.floor} times {max(self.S, self.V)} must be below 1; "
                "lower the floor or the number of states/emissions"
            )

    @cached_property
    def vocab(self) -> tuple[str, ...]:
        return (
            "<pad>",
            "<bos>",
            "<sep>",
            *(f"p{i}" for i in range(101)),
            *(f"o{i}" for i in range(self.V)),
            *(f"s{i}" for i in range(self.S)),
            *(f"t{i}_{j}" for i in range(self.S) for j in range(self.S)),
            *(f"e{i}_{o}" for i in range(self.S) for o in range(self.V)),
        )

    @property
    def answer_ids(self) -> Int[np.ndarray, " A"]:
        start = 3 + 101 + self.V
        return np.arange(start, start + self.S)

    @property
    def _per_entry(self) -> int:
        return 2 if self.header == "indexed" else 1

    @property
    def header_len(self) -> int:
        return 1 + self._per_entry * (self.S * self.S + self.S * self.V) + 1

    def decode_header(self, ids: Int[np.ndarray, " T"]) -> tuple[np.ndarray, np.ndarray]:
        """(T, E) as probabilities from one sequence's header."""
        vals = (np.asarray(ids[1 : self.header_len - 1])[self._per_entry - 1 :: self._per_entry] - 3) / 100.0
        n_t = self.S * self.S
        return vals[:n_t].reshape(self.S, self.S), vals[n_t:].reshape(self.S, self.V)

    @property
    def seq_len(self) -> int:
        return self.header_len + self.K

    def with_length(self, K: int) -> "HMMTask":
        return HMMTask(self.S, self.V, K, self.alpha, self.floor, self.header)

    def random_matrices(self, n: int, rng: np.random.Generator, cols: int) -> Int[np.ndarray, "n S cols"]:
        """Row-stochastic matrices in integer hundredths, every entry >= floor (rounded)."""
        p = self.floor + (1.0 - cols * self.floor) * rng.dirichlet(np.full(cols, self.alpha), size=(n, self.S))
        h = np.floor(p * 100 + 0.5).astype(np.int64)
        fix = 100 - h.sum(-1)
        big = h.argmax(-1)
        np.put_along_axis(h, big[..., None], np.take_along_axis(h, big[..., None], -1) + fix[..., None], -1)
        return h

    def sample(self, n: int, rng: np.random.Generator) -> Batch:
        S, V, K = self.S, self.V, self.K
        T = self.random_matrices(n, rng, S)
        E = self.random_matrices(n, rng, V)
        Tp, Ep = T / 100.0, E / 100.0
        states = np.empty((n, K), dtype=np.int64)
        obs = np.empty((n, K), dtype=np.int64)
        rows = np.arange(n)
        s = rng.integers(0, S, size=n)
        for t in range(K):
            if t:
                s = draw_rows(Tp[rows, s], rng)
            states[:, t] = s
            obs[:, t] = draw_rows(Ep[rows, s], rng)
        ids = np.empty((n, self.seq_len), dtype=np.int64)
        ids[:, 0] = 1
        values = 3 + np.concatenate([T.reshape(n, -1), E.reshape(n, -1)], axis=1)
        if self.header == "indexed":  # each value preceded by the token naming its entry
            first_index = 3 + 101 + V + S
            ids[:, 1 : self.header_len - 1 : 2] = first_index + np.arange(S * S + S * V)
            ids[:, 2 : self.header_len - 1 : 2] = values
        else:
            ids[:, 1 : self.header_len - 1] = values
        ids[:, self.header_len - 1] = 2
        ids[:, self.header_len :] = 3 + 101 + obs
        return Batch(ids, forward_posterior(Tp, Ep, obs), self.header_len + np.arange(K), states)

    def describe(self) -> str:
        return (
            f"HMM S={self.S} V={self.V} K={self.K} (Dirichlet α={self.alpha}, floor {self.floor}, {self.header} header)"
        )


def draw_rows(p: Float[np.ndarray, "n C"], rng: np.random.Generator) -> Int[np.ndarray, " n"]:
    """One categorical draw per row of ``p`` (rows sum to 1), by inverse CDF."""
    u = rng.random((p.shape[0], 1))
    return np.minimum((u > np.cumsum(p, axis=1)).sum(1), p.shape[1] - 1)


def forward_posterior(
    T: Float[np.ndarray, "n S S"], E: Float[np.ndarray, "n S V"], obs: Int[np.ndarray, "n K"]
) -> Float[np.ndarray, "n K S"]:
    """Filtering posteriors P(s_t | o_1..o_t) by the normalised forward algorithm (uniform start)."""
    n, S, _ = T.shape
    K = obs.shape[1]
    rows = np.arange(n)
    out = np.empty((n, K, S))
    belief = np.full((n, S), 1.0 / S)
    for t in range(K):
        prior = belief if t == 0 else np.einsum("ni,nij->nj", belief, T)
        a = prior * E[rows, :, obs[:, t]]
        belief = a / a.sum(1, keepdims=True)
        out[:, t] = belief
    return out


Task = Union[BijectionTask, HMMTask]


def make_task(name: str, **params: Any) -> Task:
    """A geoprobe-convention task by name with only the parameters given (others at the paper's values;
    ``geoprobe.windtunnel.conventions.make_task`` also builds the authors' tasks)."""
    if name == "bijection":
        return BijectionTask(**params)
    if name == "hmm":
        return HMMTask(**params)
    raise TaskError(f"task {name!r} is not bijection|hmm; pass --task bijection or --task hmm")


def task_from_dict(d: dict) -> Task:
    d = dict(d)
    return make_task(d.pop("name"), **d)
