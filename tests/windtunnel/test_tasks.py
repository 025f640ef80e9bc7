"""Wind-tunnel tasks: the analytic posteriors against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from geoprobe.errors import GeoprobeError
from geoprobe.windtunnel.tasks import BijectionTask, HMMTask, entropy_bits, forward_posterior, make_task
from tests.windtunnel.enumeration import hmm_path_posterior


def _brute_bijection(V, keys, vals, t):
    """P(π(keys[t]) = y | pairs before t) by enumerating all V! bijections."""
    counts = np.zeros(V)
    for perm in itertools.permutations(range(V)):
        if all(perm[keys[s]] == vals[s] for s in range(t)):
            counts[perm[keys[t]]] += 1
    return counts / counts.sum()


def test_bijection_posterior_matches_enumeration():
    task = BijectionTask(V=5, K=7, repeat=0.4)
    b = task.sample(6, np.random.default_rng(3))
    keys = b.ids[:, 1::2] - 2
    vals = b.ids[:, 2::2] - 2 - task.V
    assert np.array_equal(vals, b.labels)
    for i in range(len(keys)):
        for t in range(task.K):
            np.testing.assert_allclose(b.targets[i, t], _brute_bijection(task.V, keys[i], vals[i], t), atol=1e-12)


def test_bijection_entropy_is_log2_of_unseen_outputs():
    task = BijectionTask(V=20, K=20, repeat=0.0)  # every key new until all are used
    b = task.sample(50, np.random.default_rng(0))
    expect = np.log2(20 - np.arange(20))
    np.testing.assert_allclose(b.entropy, np.broadcast_to(expect, b.entropy.shape), atol=1e-12)
    # every row is a permutation of the keys: no key repeats
    assert all(len(set(r)) == 20 for r in b.ids[:, 1::2])


def test_bijection_repeats_are_point_masses():
    task = BijectionTask(V=8, K=16, repeat=0.5)
    b = task.sample(40, np.random.default_rng(1))
    keys = b.ids[:, 1::2]
    for i in range(40):
        for t in range(16):
            if keys[i, t] in keys[i, :t]:
                assert b.entropy[i, t] == pytest.approx(0.0)
                assert b.targets[i, t, b.labels[i, t]] == 1.0
    # the realised output has positive analytic probability everywhere
    assert (np.take_along_axis(b.targets, b.labels[..., None], -1) > 0).all()


@pytest.mark.parametrize("header", ["indexed", "plain"])
def test_hmm_forward_posterior_matches_enumeration(header):
    task = HMMTask(S=3, V=3, K=5, header=header)
    b = task.sample(4, np.random.default_rng(2))
    for i in range(4):
        T, E = task.decode_header(b.ids[i])
        np.testing.assert_allclose(T.sum(1), 1.0)
        np.testing.assert_allclose(E.sum(1), 1.0)
        obs = b.ids[i, task.header_len :] - 3 - 101
        np.testing.assert_allclose(b.targets[i], hmm_path_posterior(T, E, obs), atol=1e-12)


def test_hmm_header_is_the_generating_hmm():
    task = HMMTask()
    rng = np.random.default_rng(5)
    for cols in (task.S, task.V):
        h = task.random_matrices(500, rng, cols)
        assert (h.sum(-1) == 100).all()
        assert h.min() >= 5  # the 0.05 floor survives rounding
    b = task.sample(3, rng)
    assert b.ids.shape == (3, task.seq_len)
    words = [task.vocab[i] for i in b.ids[0, :7]]
    assert (
        words[0] == "<bos>" and words[1::2] == ["t0_0", "t0_1", "t0_2"] and all(w.startswith("p") for w in words[2::2])
    )
    T, E = task.decode_header(b.ids[0])
    assert T.shape == (task.S, task.S) and E.shape == (task.S, task.V) and np.allclose(E.sum(1), 1)
    assert [task.vocab[i] for i in b.ids[0, [0, task.header_len - 1]]] == ["<bos>", "<sep>"]
    assert set(np.unique(b.ids[:, task.header_len :])) <= set(range(104, 104 + task.V))
    assert not np.isin(task.answer_ids, b.ids).any()  # answer tokens never occur in the input


def test_forward_posterior_with_uninformative_emissions_is_the_prior_chain():
    S = 3
    T = np.tile(np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]), (1, 1, 1))
    E = np.full((1, S, 2), 0.5)
    post = forward_posterior(T, E, np.zeros((1, 4), dtype=int))
    np.testing.assert_allclose(post[0], np.full((4, S), 1 / S), atol=1e-12)


def test_entropy_bits_planted():
    assert entropy_bits(np.full(8, 1 / 8)) == pytest.approx(3.0)
    assert entropy_bits(np.array([1.0, 0.0])) == pytest.approx(0.0)


def test_sampling_is_seeded():
    t = HMMTask(K=6)
    a, b = t.sample(5, np.random.default_rng(9)), t.sample(5, np.random.default_rng(9))
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.targets, b.targets)


@pytest.mark.parametrize(
    "name,params,flag",
    [
        ("bijection", dict(V=1), "--vocab"),
        ("bijection", dict(V=101), "--vocab"),
        ("bijection", dict(K=0), "--length"),
        ("hmm", dict(S=11), "--states"),
        ("hmm", dict(V=1), "--vocab"),
        ("hmm", dict(K=501), "--length"),
        ("bijection", dict(repeat=1.5), "--repeat"),
    ],
)
def test_out_of_range_parameters_are_one_line_errors(name, params, flag):
    with pytest.raises(GeoprobeError) as e:
        make_task(name, **params)
    msg = str(e.value)
    assert flag in msg and str(next(iter(params.values()))) in msg and "\n" not in msg


def test_unknown_task():
    with pytest.raises(GeoprobeError, match="bijection|hmm"):
        make_task("sudoku")
