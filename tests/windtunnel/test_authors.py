"""``--convention authors``: the wind-tunnel tasks exactly as the authors' released code generates them
(geoprobe/windtunnel/authors.py), checked against enumeration, brute force and Monte-Carlo."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from geoprobe.errors import GeoprobeError
from geoprobe.windtunnel.authors import (
    AuthorsBijectionTask,
    AuthorsHMMTask,
    clip_renormalise,
    discretise,
)
from geoprobe.windtunnel.config import WindTunnelConfig
from geoprobe.windtunnel.conventions import make_task, task_from_dict
from geoprobe.windtunnel.evaluate import eval_batch
from geoprobe.windtunnel.geometry import probe_prompts
from geoprobe.windtunnel.nets import word_tokenizer
from geoprobe.windtunnel.scales import run_specs, scale_spec
from geoprobe.windtunnel.tasks import BijectionTask, HMMTask, TaskError
from geoprobe.windtunnel.train import RunSpec
from tests.windtunnel.enumeration import hmm_path_posterior


# -- bijection ---------------------------------------------------------------------------------
def test_bijection_sequences_have_the_authors_layout():
    task = AuthorsBijectionTask(V=20, K=19)
    b = task.sample(2000, np.random.default_rng(0))
    assert b.ids.shape == (2000, 39) and task.seq_len == 39
    assert b.ids.min() >= 2 and b.ids.max() < 22  # one token range x0..x19 for keys and values, no <bos>/<pad>
    assert list(b.positions) == [*range(0, 38, 2), 38]  # 19 keys, then the query
    for row in b.ids[:200]:
        keys, vals, q = task.decode(row)
        assert len(set(keys)) == 19  # keys without replacement
        assert q in keys  # the query always repeats a context key
        assert len(set(vals)) == 19  # a bijection: distinct keys show distinct values
    keys = b.ids[:, 0:38:2] - 2
    q = b.ids[:, 38] - 2
    assert all(len(set(k)) == 19 for k in keys) and np.all((keys == q[:, None]).sum(1) == 1)
    # the query's label is the value shown with its key
    vals = b.ids[:, 1:38:2] - 2
    at = (keys == q[:, None]).argmax(1)
    assert np.array_equal(b.labels[:, -1], vals[np.arange(2000), at])


def test_bijection_keys_and_query_are_uniform_monte_carlo():
    """Every key equally likely at every pair position, the query uniform over the 19 context keys."""
    task = AuthorsBijectionTask(V=20, K=19)
    n = 20000
    b = task.sample(n, np.random.default_rng(1))
    keys = b.ids[:, 0:38:2] - 2
    p = 1 / 20
    se = math.sqrt(p * (1 - p) / n)
    for t in (0, 9, 18):
        freq = np.bincount(keys[:, t], minlength=20) / n
        assert np.all(np.abs(freq - p) < 5 * se), (t, freq)
    slot = (keys == (b.ids[:, 38] - 2)[:, None]).argmax(1)
    freq = np.bincount(slot, minlength=19) / n
    se = math.sqrt((1 / 19) * (18 / 19) / n)
    assert np.all(np.abs(freq - 1 / 19) < 5 * se)


def _enumerated_posterior(V, pairs, key):
    """P(π(key) = y | pairs) by enumerating every bijection of V symbols consistent with the pairs."""
    counts = np.zeros(V)
    for perm in itertools.permutations(range(V)):
        if all(perm[k] == v for k, v in pairs):
            counts[perm[key]] += 1
    return counts / counts.sum()


def test_bijection_posterior_matches_enumeration_over_all_bijections():
    task = AuthorsBijectionTask(V=5, K=4)
    b = task.sample(40, np.random.default_rng(2))
    for i in range(40):
        keys, vals, q = task.decode(b.ids[i])
        all_keys = [*keys, q]
        for t, key in enumerate(all_keys):
            want = _enumerated_posterior(5, list(zip(keys[:t], vals[:t])), key)
            np.testing.assert_allclose(b.targets[i, t], want, atol=1e-12)


def test_bijection_entropy_is_the_staircase_at_keys_and_zero_at_the_query():
    task = AuthorsBijectionTask(V=20, K=19)
    b = task.sample(64, np.random.default_rng(3))
    want = np.log2(20 - np.arange(19))  # log2(V − t + 1), t = 1..19
    np.testing.assert_allclose(b.entropy[:, :19], np.broadcast_to(want, (64, 19)), atol=1e-12)
    np.testing.assert_allclose(b.entropy[:, 19], 0.0, atol=1e-12)
    ev = eval_batch(task, 32, seed=0)  # scored where the authors score: the 19 key positions only
    assert ev.targets.shape == (32, 19, 20) and list(ev.positions) == list(range(0, 38, 2))


def test_bijection_parameters_are_checked_in_one_line():
    with pytest.raises(TaskError, match=r"K \(bijection pairs.*--length between 1 and 20"):
        AuthorsBijectionTask(V=20, K=21)
    with pytest.raises(TaskError, match="--repeat is a geoprobe-convention parameter.*--convention geoprobe"):
        make_task("bijection", "authors", repeat=0.25)
    with pytest.raises(TaskError, match="--convention geoprobe or authors"):
        make_task("bijection", "theirs")
    with pytest.raises(GeoprobeError, match="--convention"):
        WindTunnelConfig(task="bijection", scale="tiny", convention="authors", repeat=0.3)


# -- HMM ---------------------------------------------------------------------------------------
def _their_rule(row):
    """The rounding rule, one row at a time, written out as a loop (index order among ties)."""
    cents = [max(int(np.rint(round(float(x), 2) * 100)), 5) for x in row]
    diff = 100 - sum(cents)
    order = sorted(range(len(cents)), key=lambda j: (cents[j], j) if diff > 0 else (-cents[j], j))
    i = 0
    while diff != 0:
        j = order[i % len(cents)]
        if diff > 0 and cents[j] < 100:
            cents[j] += 1
            diff -= 1
        elif diff < 0 and cents[j] > 5:
            cents[j] -= 1
            diff += 1
        i += 1
    return cents


@pytest.mark.parametrize("C", [2, 3, 5, 10])
def test_discretise_equals_the_row_by_row_rule(C):
    rng = np.random.default_rng(C)
    p = clip_renormalise(rng.dirichlet(np.ones(C), size=3000))
    got = discretise(p)
    want = np.array([_their_rule(r) for r in p])
    assert np.array_equal(got, want)
    assert np.all(got.sum(1) == 100) and got.min() >= 5


def test_clip_renormalise_clips_the_dirichlet_1_share_the_beta_marginal_predicts():
    """A Dirichlet(1) entry is Beta(1, C − 1): P(x < 0.05) = 1 − 0.95^(C − 1); clipped rows renormalise."""
    C, n = 5, 40000
    raw = np.random.default_rng(4).dirichlet(np.ones(C), size=n)
    p = clip_renormalise(raw)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    share = float((raw < 0.05).mean())
    want = 1 - 0.95 ** (C - 1)
    se = math.sqrt(want * (1 - want) / (n * C))
    assert abs(share - want) < 5 * se
    assert np.all(p >= 0.05 / (1 + C * 0.05) - 1e-12)


def test_hmm_rows_match_a_monte_carlo_of_the_same_procedure():
    """The task's matrices against an independent run of Dirichlet(1) → clip → renormalise → round
    (another generator, the loop rule): per-entry means and the share at the 0.05 floor within 5 SE; and
    far from geoprobe's Dirichlet(0.5) lifted to the floor (so the check can fail)."""
    task = AuthorsHMMTask(S=5, V=5, K=3)
    n = 4000
    ours = task.random_matrices(n, np.random.default_rng(5), 5).reshape(-1, 5) / 100
    ref_p = clip_renormalise(np.random.default_rng(6).dirichlet(np.ones(5), size=n * 5))
    ref = np.array([_their_rule(r) for r in ref_p]) / 100
    for stat in (lambda x: x, lambda x: (x == 0.05).astype(float)):
        a, b = stat(ours), stat(ref)
        se = np.sqrt(a.var(0) / len(a) + b.var(0) / len(b))
        assert np.all(np.abs(a.mean(0) - b.mean(0)) < 5 * se), (a.mean(0), b.mean(0))
    geo = HMMTask(S=5, V=5, K=3).random_matrices(n, np.random.default_rng(7), 5).reshape(-1, 5) / 100
    a, b = (ours == 0.05).mean(), (geo == 0.05).mean()
    assert abs(a - b) > 10 * math.sqrt(a * (1 - a) / ours.size + b * (1 - b) / geo.size)


def test_hmm_token_format_round_trips():
    task = AuthorsHMMTask(S=5, V=5, K=15)
    b = task.sample(50, np.random.default_rng(8))
    assert b.ids.shape == (50, 53 + 30) and task.header_len == 53
    words = [task.vocab[i] for i in b.ids[0]]
    assert words[0] == "[TRANS]" and words[26] == "[EMIT]" and words[52] == "[SEP]"
    assert words[53::2] == ["[OBS]"] * 15 and all(w.startswith("o") for w in words[54::2])
    assert "<bos>" not in words and all(float(w) >= 0.05 for w in words[1:26] + words[27:52])
    for i in range(50):
        T, E, obs = task.decode(b.ids[i])
        assert np.all(T.sum(1) == 100) and np.all(E.sum(1) == 100) and T.min() >= 5 and E.min() >= 5
        assert np.array_equal(task.encode(T[None], E[None], obs[None])[0], b.ids[i])
    T0, E0, _ = task.decode(b.ids[0])  # the words are the probabilities themselves
    assert words[1:26] == [f"{c / 100:.2f}" for c in T0.ravel()] and words[27:52] == [
        f"{c / 100:.2f}" for c in E0.ravel()
    ]
    pos_words = {task.vocab[i] for i in b.ids[:, b.positions].ravel()}
    assert pos_words <= {f"o{j}" for j in range(5)}  # predictions are read at the observation tokens
    assert {task.vocab[i] for i in task.answer_ids} == {f"s{j}" for j in range(5)}
    assert not np.isin(b.ids, task.answer_ids).any()  # answer tokens never occur in the input


def test_hmm_posterior_matches_enumeration_of_state_paths():
    task = AuthorsHMMTask(S=3, V=3, K=4)
    b = task.sample(20, np.random.default_rng(9))
    for i in range(20):
        T, E, obs = task.decode(b.ids[i])
        T, E = T / 100, E / 100
        np.testing.assert_allclose(b.targets[i, :4], hmm_path_posterior(T, E, obs[:4]), atol=1e-12)


def test_hmm_states_and_observations_follow_the_matrices_monte_carlo():
    """First-state uniform; P(o_1 = o) = mean over the sequence's HMM of E[s, o] / S, per sequence."""
    task = AuthorsHMMTask(S=3, V=3, K=2)
    n = 20000
    b = task.sample(n, np.random.default_rng(10))
    freq = np.bincount(b.labels[:, 0], minlength=3) / n
    assert np.all(np.abs(freq - 1 / 3) < 5 * math.sqrt(2 / 9 / n))
    E = np.stack([task.decode(r)[1] for r in b.ids]) / 100
    p_o1 = E.mean(1)  # (n, V): the uniform start's emission probabilities
    obs1 = np.stack([task.decode(r)[2][0] for r in b.ids])
    hit = (obs1[:, None] == np.arange(3)).astype(float)
    resid = hit - p_o1
    assert np.all(np.abs(resid.mean(0)) < 5 * resid.std(0) / math.sqrt(n))


# -- scales, run specs, tokenizer ----------------------------------------------------------------
def test_authors_scales_and_run_json():
    sc = scale_spec("hmm", "cpu", "authors")
    assert sc.task == dict(S=5, V=5, K=15) and sc.eval_lengths == (15, 20, 30, 50)
    assert not any("Dirichlet α" in n or "indexed header" in n for n in sc.notes)
    assert scale_spec("hmm", "cpu") is scale_spec("hmm", "cpu", "geoprobe")  # geoprobe's unchanged
    tf, ml = run_specs("bijection", "tiny", convention="authors")
    assert tf.task == {"V": 6, "K": 5, "name": "bijection", "convention": "authors"}
    back = RunSpec.from_json(json.loads(tf.json_text()), "run.json")
    assert isinstance(back.task_obj, AuthorsBijectionTask) and back.differences(tf) == []
    geo, _ = run_specs("bijection", "tiny")
    assert "convention" not in geo.task and isinstance(geo.task_obj, BijectionTask)
    assert tf.differences(geo)  # a geoprobe run directory refuses the authors' task and back
    assert isinstance(task_from_dict({"S": 3, "V": 3, "K": 6, "alpha": 0.5, "name": "hmm"}), HMMTask)


def test_no_bos_tokenizer_reads_probe_prompts_back_to_the_sequence():
    task = AuthorsBijectionTask(V=6, K=5)
    tok = word_tokenizer(task.vocab, bos=task.bos)
    texts, analytic, which = probe_prompts(task, 16, seed=0)
    b = task.sample(16, np.random.default_rng([0 + 20_000_033, task.K]))
    for i, text in enumerate(texts):
        ids = tok(text)["input_ids"]
        assert ids == list(b.ids[i, : b.positions[which[i]] + 1])  # no <bos> prepended, nothing dropped
    assert word_tokenizer(BijectionTask(V=6, K=6).vocab)("k1")["input_ids"] == [1, 3]  # geoprobe's keeps it


def test_figure_8_relabels_the_authors_hmm_through_its_tokens():
    """Renaming the hidden states rewrites the [TRANS]/[EMIT] values; the posterior follows the renaming."""
    from geoprobe.windtunnel.invariance import relabel_batch

    task = AuthorsHMMTask(S=3, V=3, K=5)
    b = task.sample(30, np.random.default_rng(11))
    perm = np.stack([np.random.default_rng(i).permutation(3) for i in range(30)])
    r = relabel_batch(task, b, perm)
    assert np.array_equal(r.ids[:, task.header_len :], b.ids[:, task.header_len :])  # the same observations
    np.testing.assert_allclose(np.take_along_axis(r.targets, perm[:, None, :], 2), b.targets, atol=1e-12)
