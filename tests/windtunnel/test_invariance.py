"""Semantic invariance (arXiv 2512.22471, Figure 8): relabelling an HMM's hidden states, and the measure on
planted predictives (an exactly equivariant learner changes nothing; others change by what was planted)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from geoprobe.windtunnel.invariance import (
    random_permutations,
    relabel,
    relabel_batch,
    semantic_invariance,
    tunnel_invariance,
)
from geoprobe.windtunnel.tasks import HMMTask, entropy_bits
from tests.windtunnel.enumeration import hmm_path_posterior


@pytest.mark.parametrize("header", ["indexed", "plain"])
def test_relabelled_batch_is_the_same_hmm_with_states_renamed(header):
    task = HMMTask(S=3, V=4, K=4, header=header)
    batch = task.sample(12, np.random.default_rng(3))
    perm = random_permutations(12, 3, np.random.default_rng(4))
    moved = relabel_batch(task, batch, perm)
    n_values = task.S * task.S + task.S * task.V
    for b in range(12):
        T, E = task.decode_header(batch.ids[b])
        T2, E2 = task.decode_header(moved.ids[b])
        for i, j in itertools.product(range(3), repeat=2):
            assert T2[perm[b, i], perm[b, j]] == T[i, j]
        for i, o in itertools.product(range(3), range(4)):
            assert E2[perm[b, i], o] == E[i, o]
        obs = batch.ids[b, task.header_len :] - task.vocab.index("o0")
        # the posterior of the renamed HMM, by enumeration over paths, is the old one renamed
        assert np.allclose(moved.targets[b], hmm_path_posterior(T2, E2, obs), atol=1e-12)
        assert np.allclose(moved.targets[b][:, perm[b]], batch.targets[b], atol=1e-12)
        assert (moved.labels[b] == perm[b][batch.labels[b]]).all()
    changed = moved.ids != batch.ids
    assert not changed[:, task.header_len :].any()  # the observations are the same
    assert changed.sum(1).max() <= n_values and changed.any(1).all()


def test_random_permutations_are_permutations_and_never_the_identity():
    p = random_permutations(500, 2, np.random.default_rng(0))
    assert (p == [1, 0]).all()  # S = 2: the only non-identity permutation
    p = random_permutations(400, 4, np.random.default_rng(1))
    assert (np.sort(p, 1) == np.arange(4)).all() and not (p == np.arange(4)).all(1).any()


def _predictive(rng: np.random.Generator, n: int, K: int, S: int) -> np.ndarray:
    return rng.dirichlet(np.full(S, 0.7), size=(n, K))


def test_an_exactly_equivariant_learner_changes_nothing():
    rng = np.random.default_rng(0)
    n, K, S = 64, 5, 4
    posterior, before = _predictive(rng, n, K, S), _predictive(rng, n, K, S)
    perm = random_permutations(n, S, rng)
    m = semantic_invariance("eq", before, relabel(before, perm), posterior, perm)
    assert m.n == n and m.K == K
    assert np.allclose(m.error_before, m.error_after, atol=1e-12)
    assert abs(m.change.value) < 1e-12 and abs(m.change.low) < 1e-12 and abs(m.change.high) < 1e-12
    assert m.equivariance_tv.value < 1e-12
    assert m.kl_before == pytest.approx(m.kl_after, abs=1e-12) and m.kl_before > 0.01


def test_a_learner_that_ignores_the_renaming_keeps_its_entropy_error_but_not_its_answers():
    n, K, S = 20, 3, 3
    before = np.zeros((n, K, S))
    before[..., 0] = 1.0  # certain of state 0 everywhere
    posterior = np.full((n, K, S), 1 / S)
    perm = np.tile([1, 0, 2], (n, 1))  # states 0 and 1 swap names
    m = semantic_invariance("blind", before, before, posterior, perm)  # the same answers after the renaming
    assert abs(m.change.value) < 1e-12  # entropy cannot see labels ...
    assert m.equivariance_tv.value == pytest.approx(1.0, abs=1e-12)  # ... TV sees all of it: mass on 0, should be on 1


def test_a_planted_calibration_change_is_measured():
    rng = np.random.default_rng(5)
    n, K, S = 50, 4, 5
    posterior = _predictive(rng, n, K, S)
    perm = random_permutations(n, S, rng)
    after = np.full((n, K, S), 1 / S)  # exact before, uniform after
    m = semantic_invariance("planted", posterior, after, posterior, perm)
    planted = (np.log2(S) - entropy_bits(posterior)).mean(1)  # |log2 S − H| = log2 S − H per prediction
    assert np.allclose(m.error_before, 0.0, atol=1e-12)
    assert np.allclose(m.error_after, planted, atol=1e-12)
    assert m.change.value == pytest.approx(planted.mean(), abs=1e-12)
    assert m.change.low <= planted.mean() <= m.change.high
    assert m.kl_before == pytest.approx(0.0, abs=1e-12) and m.kl_after > 0


class _Oracle(torch.nn.Module):
    """A 'model' that reads the HMM from the header and answers with the exact filtering posterior (so it is
    equivariant by construction) — or, with ``blind``, with the posterior of the prompt's states in the
    original naming (it ignores the renaming)."""

    def __init__(self, task: HMMTask, originals: dict[bytes, np.ndarray] | None = None) -> None:
        super().__init__()
        self.task, self.originals = task, originals

    def forward(self, input_ids: torch.Tensor) -> object:
        from geoprobe.windtunnel.tasks import forward_posterior

        ids = input_ids.numpy()
        t = self.task
        logits = np.full((*ids.shape, len(t.vocab)), -1e9)
        for b, row in enumerate(ids):
            T, E = t.decode_header(row)
            obs = row[t.header_len :] - t.vocab.index("o0")
            p = forward_posterior(T[None], E[None], obs[None])[0]
            if self.originals is not None:
                p = self.originals[row[t.header_len :].tobytes()]
            logits[b, t.header_len :, t.answer_ids] = np.log(p).T
        return type("Out", (), {"logits": torch.as_tensor(logits)})()


def test_tunnel_invariance_of_an_exact_learner_is_zero_and_of_a_blind_one_is_not():
    from geoprobe.windtunnel.tasks import Batch

    task = HMMTask(S=3, V=3, K=8)
    full = task.sample(40, np.random.default_rng(9))
    _, first = np.unique(full.ids[:, task.header_len :], axis=0, return_index=True)  # the blind one keys on these
    keep = np.sort(first)
    batch = Batch(full.ids[keep], full.targets[keep], full.positions, full.labels[keep])
    exact = tunnel_invariance("oracle", _Oracle(task), task, batch, batch.targets, seed=0)
    assert exact.n == len(keep) > 30 and max(exact.error_before) < 1e-9 and max(exact.error_after) < 1e-9
    assert exact.equivariance_tv.value < 1e-9 and exact.kl_after < 1e-9
    originals = {row[task.header_len :].tobytes(): p for row, p in zip(batch.ids, batch.targets)}
    blind = tunnel_invariance("blind", _Oracle(task, originals), task, batch, batch.targets, seed=0)
    assert abs(blind.change.value) < 1e-9  # the same entropies ...
    assert blind.equivariance_tv.value > 0.1 and blind.kl_after > 0.1  # ... on the wrong states


class _EncodedHMM(HMMTask):
    """geoprobe's plain-header HMM exposing ``encode``/``decode`` in hundredths, the interface of the authors'
    token format: relabel_batch must take that path and give the same HMMs as the header path."""

    def decode(self, ids):
        T, E = self.decode_header(ids)
        obs = np.asarray(ids)[self.header_len :] - self.vocab.index("o0")
        return np.rint(T * 100).astype(np.int64), np.rint(E * 100).astype(np.int64), obs

    def encode(self, T, E, obs):
        n = len(obs)
        ids = np.empty((n, self.header_len + obs.shape[1]), dtype=np.int64)
        ids[:, 0], ids[:, self.header_len - 1] = 1, 2
        ids[:, 1 : self.header_len - 1] = 3 + np.concatenate([T.reshape(n, -1), E.reshape(n, -1)], axis=1)
        ids[:, self.header_len :] = self.vocab.index("o0") + obs
        return ids


def test_a_task_with_encode_and_decode_is_relabelled_through_them():
    plain, coded = HMMTask(S=4, V=3, K=5, header="plain"), _EncodedHMM(S=4, V=3, K=5, header="plain")
    batch = plain.sample(30, np.random.default_rng(11))
    assert (coded.encode(*map(np.stack, zip(*(coded.decode(r) for r in batch.ids)))) == batch.ids).all()
    perm = random_permutations(30, 4, np.random.default_rng(12))
    a, b = relabel_batch(plain, batch, perm), relabel_batch(coded, batch, perm)
    assert (a.ids == b.ids).all() and np.allclose(a.targets, b.targets, atol=1e-15)
    assert (a.labels == b.labels).all()
