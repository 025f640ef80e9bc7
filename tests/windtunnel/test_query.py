"""The authors' bijection query score (geoprobe.windtunnel.query) on planted predictives, against
closed forms: a learner that matches keys, one that ignores them, and one with a planted mass."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geoprobe.windtunnel.query import QueryScore, query_score, query_table


def _answers(n: int, V: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, V, size=n)


def test_a_key_matching_learner_scores_zero_and_a_key_blind_one_chance():
    V, n = 20, 400
    a = _answers(n, V)
    exact = np.eye(V)[a]
    s = query_score("exact", exact, a)
    assert s.kl.value == pytest.approx(0.0, abs=1e-12) and s.accuracy.value == 1.0
    blind = np.full((n, V), 1.0 / V)
    s = query_score("blind", blind, a)
    assert s.kl.value == pytest.approx(math.log2(V), abs=1e-12) == s.chance_kl
    assert s.kl.low == pytest.approx(s.kl.high)  # every sequence scores log2 V


def test_planted_mass_on_the_answer_gives_its_closed_form_kl_and_accuracy():
    V, n, c = 8, 2000, 0.3
    a = _answers(n, V, 1)
    p = np.full((n, V), (1 - c) / (V - 1))
    p[np.arange(n), a] = c  # 0.3 > 0.1: always the argmax
    s = query_score("planted", p, a)
    assert s.kl.value == pytest.approx(-math.log2(c), abs=1e-12) and s.accuracy.value == 1.0
    # half the rows wrong: the answer gets (1 - c) / (V - 1) and another value gets c
    wrong = np.arange(n) % 2 == 0
    q = p.copy()
    q[np.flatnonzero(wrong), a[wrong]] = (1 - c) / (V - 1)
    q[np.flatnonzero(wrong), (a[wrong] + 1) % V] = c
    s = query_score("half", q, a)
    expect = 0.5 * -math.log2(c) + 0.5 * -math.log2((1 - c) / (V - 1))
    assert s.kl.value == pytest.approx(expect, abs=1e-12) and s.accuracy.value == pytest.approx(0.5)
    se = math.sqrt(0.25 / n)
    assert s.accuracy.low < 0.5 < s.accuracy.high and s.accuracy.high - s.accuracy.low < 6 * se


def test_round_trip_table_and_bad_shapes():
    V, n = 5, 50
    a = _answers(n, V, 2)
    s = query_score("mlp", np.full((n, V), 0.2), a)
    assert QueryScore.from_dict(s.to_dict()) == s
    (row,) = query_table({"mlp": s})
    assert row["learner"] == "mlp" and row["chance KL (bits)"] == f"{math.log2(V):.3f}"
    with pytest.raises(ValueError, match="do not match"):
        query_score("x", np.full((n, V), 0.2), a[:-1])
    with pytest.raises(ValueError, match="do not match"):
        query_score("x", np.full((n, V), 0.2), np.full(n, V))
