"""The dynamics page (geoprobe.dynamics.report): it renders with its figure anchor, and the numbers in
its steps-to-threshold and autograd tables are the result's, recomputed here from the loss curves."""

from __future__ import annotations

import dataclasses
import math
import re
from html import unescape

import numpy as np
import pytest
import scipy.stats

from geoprobe.dynamics.check import GradientCheck
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.dynamics.result import DynamicsResult, SeedRun
from geoprobe.dynamics.run import run_dynamics
from geoprobe.report.page import render


@pytest.fixture(scope="module")
def result() -> DynamicsResult:
    return run_dynamics(DynamicsConfig(length=60, steps=15, seeds=3))


def _table_after(html: str, heading: str) -> list[list[str]]:
    """The cells of the first table after ``heading`` (header row first)."""
    start = html.index(f"<h2>{heading}</h2>")
    table = html[start : html.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    return [[unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows]


def test_page_renders_its_sections_and_figure_anchor(result, tmp_path):
    html = result.report(tmp_path / "dynamics.html").read_text()
    assert 'id="loss-curves"' in html and 'id="fig-loss-curves"' in html
    for heading in (
        "Summary",
        "Steps to SGD&#x27;s final loss",
        "Figures",
        "The routing law and the value update against autograd",
        "Provenance",
    ):
        assert f"<h2>{heading}</h2>" in html
    assert [f.anchor for f in result.figures()] == ["loss-curves"]


def test_loss_figure_is_drawn_by_the_helper(result):
    """Each schedule its own ± 1 SD band (in its legend group), the floor a reference inside the y range."""
    from geoprobe.dynamics.report import loss_figure

    fig = loss_figure(result)
    traces = {t.name: t for t in fig.data}
    for name, key in (("SGD", "sgd"), ("EM-like", "em")):
        a = np.array([getattr(r, key) for r in result.runs])
        line, band = traces[name], traces[f"{name}: ± 1 SD over seeds"]
        assert line.mode == "lines" and list(line.y) == pytest.approx(a.mean(0))
        assert band.fill == "toself" and band.legendgroup == name
        assert list(band.y) == pytest.approx(list(a.mean(0) + a.std(0)) + list((a.mean(0) - a.std(0))[::-1]))
    floor = traces["H(Y_t | Y_t−1)"]
    assert set(floor.y) == {result.floor_nats}
    lo, hi = fig.layout.yaxis.range
    assert lo <= result.floor_nats and hi >= max(max(t.y) for t in fig.data)


def test_steps_table_holds_the_results_numbers(result):
    rows = _table_after(render(result), "Steps to SGD&#x27;s final loss")
    head, body, mean = rows[0], rows[1:-1], rows[-1]
    assert head == [
        "seed",
        "SGD final loss (nats)",
        "EM-like final loss (nats)",
        "SGD steps to threshold",
        "EM-like steps to threshold",
    ]
    threshold = np.mean([r.sgd[-1] for r in result.runs])  # the authors' target: SGD's mean final loss

    def first_below(losses):
        below = [i for i, v in enumerate(losses) if v < threshold]
        return below[0] if below else len(losses)

    steps = {"sgd": [], "em": []}
    for row, run in zip(body, result.runs):
        for k in steps:
            steps[k].append(first_below(getattr(run, k)))
        assert row == [
            str(run.seed),
            f"{run.sgd[-1]:.4f}",
            f"{run.em[-1]:.4f}",
            str(steps["sgd"][-1]),
            str(steps["em"][-1]),
        ]

    def t_mean(values, digits, clip=None):  # mean [t interval], 2 degrees of freedom for 3 seeds
        a = np.asarray(values, dtype=float)
        half = scipy.stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)
        lo, hi = a.mean() - half, a.mean() + half
        if clip is not None:
            lo, hi = max(lo, 0.0), min(hi, clip)
        return f"{a.mean():.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    assert mean == [
        "mean [95 % t interval]",
        t_mean([r.sgd[-1] for r in result.runs], 4),
        t_mean([r.em[-1] for r in result.runs], 4),
        t_mean(steps["sgd"], 1, clip=15),
        t_mean(steps["em"], 1, clip=15),
    ]


def test_autograd_table_holds_every_seeds_check(result):
    rows = _table_after(render(result), "The routing law and the value update against autograd")
    assert len(rows) == 1 + len(result.runs)
    for row, c, run in zip(rows[1:], result.gradient_checks, result.runs):
        assert c.seed == run.seed and c.max_relative < 1e-12  # rounding of float64
        assert row == [
            str(c.seed),
            f"{c.routing_max_abs_diff:.2e}",
            f"{c.routing_max_abs:.2e}",
            f"{c.value_max_abs_diff:.2e}",
            f"{c.value_max_abs:.2e}",
            f"{c.update_max_abs_diff:.2e}",
        ]
    assert rows[0][-1] == f"value update (η = {result.config.lr_value:g}): max |diff|"


def test_a_file_from_before_the_check_says_it_has_none():
    cfg = DynamicsConfig(length=10, steps=3, seeds=2)
    old = DynamicsResult(
        config=cfg,
        floor_nats=1.0,
        runs=(SeedRun(0, (3.0, 2.0, 1.0), (3.0, 0.5, 0.4)), SeedRun(1, (3.0, 2.0, 1.2), (3.0, 2.5, 0.9))),
    )
    d = old.to_dict()
    assert DynamicsResult.from_dict({k: v for k, v in d.items() if k != "gradient_checks"}) == old
    assert "Not in this file" in render(old)
    wrong_seed = GradientCheck(5, 0.0, 1.0, 0.0, 1.0, 0.0, 0.1)
    with pytest.raises(ValueError, match="one per seed"):
        dataclasses.replace(old, gradient_checks=(wrong_seed, wrong_seed))
