"""The wind-tunnel tasks as the authors' released code runs them (``--convention authors``).

Protocol facts from the authors' repository ``vishalmisra/bayesian-wind-tunnel`` (our own code; the
file each fact comes from is named in docs/windtunnel.md, "Conventions"):

**Bijection** (``configs/bijection_v20.yaml``, ``src/data/bijection.py``, ``src/utils/entropy.py``):
V = 20 symbols, L = 19 key–value pairs with keys drawn **without replacement**, then one query key
drawn uniformly from the context keys (so it always repeats one). Keys and values share **one**
token range (symbol ``x{i}`` is token i for both), there is no BOS: ``k1 v1 … kL vL q``
(2L + 1 tokens). The entropy calibration is scored at the L key positions (the prediction of
π(k_t) from the prefix that ends with k_t): H_Bayes = log2(V − t + 1), t = 1..L. The query position
(a point mass) is where the authors' loss sits; it is trained here too but not scored. ``K`` is L.

**HMM** (``src/data/hmm.py``, ``experiments/paper1_hmm/train.py``): every row of T (S × S) and
E (S × V) is Dirichlet(1), clipped below at 0.05 and renormalised, then rounded to hundredths with
every entry at least 0.05 and the row fixed to sum to 1 (a shortfall is added one hundredth at a time
to the smallest entries, an excess taken from the largest ones above 0.05); the rounded matrices
generate the data and define the posterior. K = 15 (their training default), uniform initial state.
Tokens: ``[TRANS] T(row-major) [EMIT] E(row-major) [SEP] [OBS] o1 [OBS] o2 … [OBS] oK``, with one
token per probability 0.05, 0.06, …, 1.00. The prediction of P(s_t | o_1..o_t) is read at the token
``o_t``; the loss is the cross-entropy against that posterior at every observation.

Token ids 0 and 1 stay ``<pad>`` (the MLP's filler) and ``<bos>`` (never written in a sequence: the
checkpoint's tokenizer prepends nothing), so every learner and probe works unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np
from jaxtyping import Float, Int

from geoprobe.windtunnel.tasks import Batch, BijectionTask, TaskError, check_range, draw_rows, forward_posterior

FLOOR_CENTS = 5  # the authors' 0.05 minimum, in hundredths
N_PROB_TOKENS = 101 - FLOOR_CENTS  # 0.05 .. 1.00


@dataclass(frozen=True)
class AuthorsBijectionTask:
    """The authors' bijection: V symbols, K = L pairs (keys without replacement), one repeated query."""

    V: int = 20
    K: int = 19
    name: Literal["bijection"] = "bijection"
    convention: Literal["authors"] = "authors"
    bos: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_range("V (bijection symbols)", self.V, 2, 100, "--vocab")
        check_range("K (bijection pairs, keys without replacement)", self.K, 1, self.V, "--length")

    @cached_property
    def vocab(self) -> tuple[str, ...]:
        return ("<pad>", "<bos>", *(f"x{i}" for i in range(self.V)))

    @property
    def answer_ids(self) -> Int[np.ndarray, " A"]:
        return np.arange(2, 2 + self.V)

    @property
    def seq_len(self) -> int:
        return 2 * self.K + 1

    def with_length(self, K: int) -> "AuthorsBijectionTask":
        return AuthorsBijectionTask(self.V, K)

    def sample(self, n: int, rng: np.random.Generator) -> Batch:
        """K key predictions (scored) then the query's (trained on, not scored): K + 1 in all."""
        V, K = self.V, self.K
        rows = np.arange(n)
        perm = np.argsort(rng.random((n, V)), axis=1)  # a uniform random bijection per row
        keys = np.argsort(rng.random((n, V)), axis=1)[:, :K]  # K distinct keys in uniform random order
        query = keys[rows, rng.integers(0, K, size=n)]
        all_keys = np.concatenate([keys, query[:, None]], axis=1)
        vals = np.take_along_axis(perm, all_keys, axis=1)
        ids = np.empty((n, self.seq_len), dtype=np.int64)
        ids[:, 0 : 2 * K : 2] = 2 + keys
        ids[:, 1 : 2 * K : 2] = 2 + vals[:, :K]
        ids[:, 2 * K] = 2 + query
        positions = np.append(2 * np.arange(K), 2 * K)
        return Batch(ids, self.posterior(all_keys, vals), positions, vals)

    def posterior(self, keys: Int[np.ndarray, "n P"], vals: Int[np.ndarray, "n P"]) -> Float[np.ndarray, "n P V"]:
        """The analytic predictive before each output is shown (point mass on a repeated key's value,
        else uniform over the outputs not yet seen): the same computation as geoprobe's bijection."""
        return BijectionTask(self.V, keys.shape[1], 0.0).posterior(keys, vals)

    def decode(self, ids: Int[np.ndarray, " T"]) -> tuple[np.ndarray, np.ndarray, int]:
        """(keys, values, query) of one sequence."""
        x = np.asarray(ids) - 2
        return x[0 : 2 * self.K : 2], x[1 : 2 * self.K : 2], int(x[2 * self.K])

    def describe(self) -> str:
        return f"bijection V={self.V} K={self.K} pairs + 1 query (authors' convention)"


def clip_renormalise(raw: Float[np.ndarray, "... C"], floor: float = FLOOR_CENTS / 100) -> Float[np.ndarray, "... C"]:
    """The authors' rows before rounding: ``max(raw, floor)`` renormalised."""
    p = np.maximum(raw, floor)
    return p / p.sum(-1, keepdims=True)


def discretise(p: Float[np.ndarray, "... C"]) -> Int[np.ndarray, "... C"]:
    """Rows in integer hundredths by the authors' rule: round to two decimals, raise entries below 0.05
    to 0.05, then cycle through the entries in ascending order adding one hundredth to each below 1.00
    until the row sums to 100 (or in descending order taking one from each above 0.05). Ties are ordered
    by index (numpy's small-array argsort)."""
    shape = p.shape
    cents = np.rint(np.round(np.asarray(p, dtype=np.float64), 2).reshape(-1, shape[-1]) * 100.0).astype(np.int64)
    cents = np.maximum(cents, FLOOR_CENTS)
    C = cents.shape[1]
    diff = 100 - cents.sum(1)
    up = np.argsort(cents, axis=1, kind="stable")
    down = np.argsort(-cents, axis=1, kind="stable")
    r = np.arange(len(cents))
    idx = 0
    while np.any(diff != 0):
        j_up, j_down = up[r, idx % C], down[r, idx % C]
        add = (diff > 0) & (cents[r, j_up] < 100)
        take = (diff < 0) & (cents[r, j_down] > FLOOR_CENTS)
        cents[r[add], j_up[add]] += 1
        diff[add] -= 1
        cents[r[take], j_down[take]] -= 1
        diff[take] += 1
        idx += 1
    return cents.reshape(shape)


@dataclass(frozen=True)
class AuthorsHMMTask:
    """The authors' HMM: S states, V emissions, K steps; Dirichlet(1) rows clipped at 0.05."""

    S: int = 5
    V: int = 5
    K: int = 15
    name: Literal["hmm"] = "hmm"
    convention: Literal["authors"] = "authors"
    bos: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_range("S (HMM states)", self.S, 2, 10, "--states")
        check_range("V (HMM emissions)", self.V, 2, 10, "--vocab")
        check_range("K (HMM steps)", self.K, 1, 500, "--length")

    @cached_property
    def vocab(self) -> tuple[str, ...]:
        probs = (f"{c / 100:.2f}" for c in range(FLOOR_CENTS, 101))
        return (
            "<pad>",
            "<bos>",
            *probs,
            "[TRANS]",
            "[EMIT]",
            "[SEP]",
            "[OBS]",
            *(f"o{i}" for i in range(self.V)),
            *(f"s{i}" for i in range(self.S)),
        )

    @property
    def _special(self) -> int:
        return 2 + N_PROB_TOKENS  # id of [TRANS]; [EMIT], [SEP], [OBS] follow

    @property
    def answer_ids(self) -> Int[np.ndarray, " A"]:
        start = self._special + 4 + self.V
        return np.arange(start, start + self.S)

    @property
    def header_len(self) -> int:
        return 3 + self.S * self.S + self.S * self.V

    @property
    def seq_len(self) -> int:
        return self.header_len + 2 * self.K

    def with_length(self, K: int) -> "AuthorsHMMTask":
        return AuthorsHMMTask(self.S, self.V, K)

    def random_matrices(self, n: int, rng: np.random.Generator, cols: int) -> Int[np.ndarray, "n S cols"]:
        """Row-stochastic matrices in integer hundredths: Dirichlet(1), clipped, renormalised, rounded."""
        return discretise(clip_renormalise(rng.dirichlet(np.ones(cols), size=(n, self.S))))

    def encode(
        self, T: Int[np.ndarray, "n S S"], E: Int[np.ndarray, "n S V"], obs: Int[np.ndarray, "n K"]
    ) -> Int[np.ndarray, "n L"]:
        """Token ids of the authors' format from matrices in hundredths and observations."""
        n = len(obs)
        trans, emit, sep, obs_tok = (self._special + i for i in range(4))
        ids = np.empty((n, self.header_len + 2 * obs.shape[1]), dtype=np.int64)
        nt, ne = self.S * self.S, self.S * self.V
        ids[:, 0] = trans
        ids[:, 1 : 1 + nt] = 2 + T.reshape(n, -1) - FLOOR_CENTS
        ids[:, 1 + nt] = emit
        ids[:, 2 + nt : 2 + nt + ne] = 2 + E.reshape(n, -1) - FLOOR_CENTS
        ids[:, 2 + nt + ne] = sep
        ids[:, self.header_len :: 2] = obs_tok
        ids[:, self.header_len + 1 :: 2] = self._special + 4 + obs
        return ids

    def decode(self, ids: Int[np.ndarray, " L"]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T, E) in hundredths and the observations of one sequence (the inverse of ``encode``)."""
        ids = np.asarray(ids)
        nt, ne = self.S * self.S, self.S * self.V
        T = ids[1 : 1 + nt] - 2 + FLOOR_CENTS
        E = ids[2 + nt : 2 + nt + ne] - 2 + FLOOR_CENTS
        obs = ids[self.header_len + 1 :: 2] - self._special - 4
        return T.reshape(self.S, self.S), E.reshape(self.S, self.V), obs

    def sample(self, n: int, rng: np.random.Generator) -> Batch:
        S, K = self.S, self.K
        T = self.random_matrices(n, rng, S)
        E = self.random_matrices(n, rng, self.V)
        Tp, Ep = T / 100.0, E / 100.0
        rows = np.arange(n)
        states = np.empty((n, K), dtype=np.int64)
        obs = np.empty((n, K), dtype=np.int64)
        s = rng.integers(0, S, size=n)
        for t in range(K):
            if t:
                s = draw_rows(Tp[rows, s], rng)
            states[:, t] = s
            obs[:, t] = draw_rows(Ep[rows, s], rng)
        positions = self.header_len + 1 + 2 * np.arange(K)
        return Batch(self.encode(T, E, obs), forward_posterior(Tp, Ep, obs), positions, states)

    def describe(self) -> str:
        return f"HMM S={self.S} V={self.V} K={self.K} (authors' convention: Dirichlet(1) clipped at 0.05)"


AuthorsTask = AuthorsBijectionTask | AuthorsHMMTask


def make_authors_task(name: str, **params: Any) -> AuthorsTask:
    if name == "bijection":
        if "repeat" in params:
            raise TaskError(
                "--repeat is a geoprobe-convention parameter (the authors' keys never repeat, their query "
                "always does); drop it or pass --convention geoprobe"
            )
        return AuthorsBijectionTask(**params)
    if name == "hmm":
        return AuthorsHMMTask(**params)
    raise TaskError(f"task {name!r} is not bijection|hmm; pass --task bijection or --task hmm")


#: per (task, scale): the task at that scale, its evaluation lengths (training length first), and the
#: notes that replace geoprobe's task notes in run.json
AUTHORS_SCALES: dict[tuple[str, str], tuple[dict[str, int], tuple[int, ...]]] = {
    ("bijection", "tiny"): (dict(V=6, K=5), (5,)),
    ("bijection", "small"): (dict(V=10, K=9), (9,)),
    ("bijection", "cpu"): (dict(V=20, K=19), (19,)),
    ("bijection", "paper"): (dict(V=20, K=19), (19,)),
    ("hmm", "tiny"): (dict(S=3, V=3, K=6), (6, 9)),
    ("hmm", "small"): (dict(S=3, V=3, K=10), (10, 15)),
    ("hmm", "cpu"): (dict(S=5, V=5, K=15), (15, 20, 30, 50)),
    ("hmm", "paper"): (dict(S=5, V=5, K=15), (15, 20, 30, 50)),
}
AUTHORS_NOTES = {
    "bijection": (
        "authors' convention: V = 20, 19 pairs with keys without replacement, one query repeating a context "
        "key, one token range, no BOS; scored at the 19 key positions (query trained on, not scored)",
    ),
    "hmm": (
        "authors' convention: Dirichlet(1) rows clipped at 0.05 and renormalised, K = 15, "
        "[TRANS] [EMIT] [SEP] [OBS] format with probability tokens 0.05-1.00, no BOS",
    ),
}
#: geoprobe-convention notes that describe the geoprobe task (dropped under the authors' convention)
GEOPROBE_TASK_NOTES = ("keys repeat an earlier key", "indexed header", "Dirichlet α")


__all__ = [
    "AUTHORS_NOTES",
    "AUTHORS_SCALES",
    "AuthorsBijectionTask",
    "AuthorsHMMTask",
    "AuthorsTask",
    "GEOPROBE_TASK_NOTES",
    "clip_renormalise",
    "discretise",
    "make_authors_task",
]
