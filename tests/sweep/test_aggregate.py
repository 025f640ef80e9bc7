"""How the sweep's page combines cells, on planted values: only declared replicates are pooled (mean and a
Student-t interval across them, checked against scipy), every other varying coordinate is a series, a cell
alone keeps its own CI, and CI endpoints are never averaged."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from geoprobe.sweep.aggregate import pool, run_of, varying

KEYS = ["model", "max_tokens", "seed"]


def _cell(model, max_tokens, seed, value, step=0):
    return {
        "model": model,
        "max_tokens": max_tokens,
        "seed": seed,
        "step": step,
        "value": value,
        "cell": f"{model}{seed}",
    }


def test_without_replicates_every_cell_is_its_own_point_with_its_own_ci():
    """Was: max_tokens 2 and 64 (0.188, 0.233) drawn as 0.211, "mean over seeds", a value no cell measured."""
    cells = [_cell("m", 2, 0, (0.188, 0.15, 0.22)), _cell("m", 64, 0, (0.233, 0.20, 0.27))]
    series = varying(cells, KEYS)
    pts = pool(cells, x="step", keys=KEYS, series_keys=series, replicates=())
    assert series == ["max_tokens"]
    assert [(p.series, p.estimate, p.low, p.high, p.k) for p in pts] == [
        ("max_tokens=2", 0.188, 0.15, 0.22, 1),
        ("max_tokens=64", 0.233, 0.20, 0.27, 1),
    ]


def test_declared_replicates_are_pooled_with_a_t_interval_across_them():
    vals = [0.31, 0.25, 0.40]
    cells = [_cell("m", 64, s, (v, v - 0.01, v + 0.01)) for s, v in enumerate(vals)]
    cells.append(_cell("m", 2, 0, (0.5, 0.4, 0.6)))
    series = [k for k in varying(cells, KEYS) if k != "seed"]
    pts = {p.series: p for p in pool(cells, x="step", keys=KEYS, series_keys=series, replicates=("seed",))}
    mean = sum(vals) / 3
    half = stats.t.ppf(0.975, 2) * stats.tstd(vals) / math.sqrt(3)
    p = pts["max_tokens=64"]
    assert p.k == 3 and p.estimate == pytest.approx(mean, abs=1e-15)
    assert (p.low, p.high) == pytest.approx((mean - half, mean + half), abs=1e-12)
    assert abs((p.high - p.low) / 2 - 0.01) > 0.05  # never an average of the cells' own ±0.01 intervals
    assert pts["max_tokens=2"].k == 1 and "3 replicates (seed)" in p.how


def test_cells_that_differ_in_anything_but_a_replicate_are_never_pooled():
    """Two models at one step with replicates declared: two points, never one mean of both models."""
    cells = [_cell("a", 64, 0, (0.1, 0.0, 0.2)), _cell("b", 64, 0, (0.9, 0.8, 1.0))]
    pts = pool(cells, x="step", keys=KEYS, series_keys=[], replicates=("seed",))
    assert sorted(p.estimate for p in pts) == [0.1, 0.9] and {p.k for p in pts} == {1}


@pytest.mark.parametrize(
    "revision, run",
    [
        ("runs/a/checkpoints/step512", "runs/a/checkpoints"),
        ("/abs/b/step0/", "/abs/b"),
        ("step512", None),
        (None, None),
    ],
)
def test_the_training_run_of_a_revision(revision, run):
    assert run_of(revision) == run
