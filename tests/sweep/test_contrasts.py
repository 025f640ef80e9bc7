"""Paired contrasts across checkpoints (geoprobe.sweep.contrasts, geoprobe.sweep.checkpoints):

* against independent computations: every statistic's bootstrap draws equal a plain loop over the resamples
  (scipy/numpy/tracking, one resample at a time), and a contrast's interval is the percentile interval of the
  two cells' paired differences (1e-10; angles 1e-6 degrees);
* on planted structure: a shift planted from a known step is significant (Holm and the simultaneous
  interval) with the right sign from that step on and nowhere before; metrics that do not move are never
  significant;
* a series on two prompt sets is refused in one line naming both hashes and the fix;
* end to end through ``geoprobe sweep`` on a 4-checkpoint trajectory: a contrast's estimate equals the
  difference of the two cells' own results.json estimates (1e-12), the rows land in sweep.parquet with their
  columns, emergence.parquet is written, the page shows the figures."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.stats

from geoprobe.analysis.paired import percentile_interval
from geoprobe.analysis.stats import constant_columns, zscore
from geoprobe.analysis.tracking import axis_angle, linear_cka, principal_angles, routing_stability, top_subspace
from geoprobe.sweep.checkpoints import checkpoint_statistics
from geoprobe.sweep.contrasts import paired_series, series_indices
from tests.sweep import planted


def _pc1(x: np.ndarray) -> float:
    z = zscore(x[:, ~constant_columns(x)])
    s = np.linalg.svd(z, compute_uv=False)
    return float(s[0] ** 2 / (s**2).sum())


def test_every_statistic_equals_a_plain_loop_over_the_resamples():
    cells = planted.series(steps=(0, 8), n=40, flips=lambda s: 8 if s == 0 else 0, routing=lambda s: s / 8)
    a, final = cells
    run_idx, idx, hidx = series_indices("loop", 40, 1, 4, 30, seed=3)
    st = checkpoint_statistics(a, idx, hidx, final=final, pca_resamples=30, k=3)
    for layer in (0, 1):
        x, y = a.values[layer], final.values[layer]
        p, q = a.patterns[layer], final.patterns[layer]
        want = {
            "pc1": [_pc1(x[i]) for i in idx],
            "alignment_spearman": [scipy.stats.spearmanr(a.aligned[layer, i], a.next_entropy[i])[0] for i in idx],
            "attention_entropy": [a.per_prompt[layer, i].mean() for i in idx],
            "key_orthogonality": [a.per_head[layer, h].mean() for h in hidx],
            "cka_to_final": [linear_cka(x[i], y[i]) for i in idx],
            "pc1_angle_to_final": [axis_angle(top_subspace(x[i], 1)[0], top_subspace(y[i], 1)[0]) for i in idx],
            "subspace_angle_to_final": [
                np.degrees(principal_angles(top_subspace(x[i], 3), top_subspace(y[i], 3)).max()) for i in idx
            ],
            "routing_stability": [routing_stability(p[i], q[i]).mean() for i in idx],
        }
        for metric, plain in want.items():
            tol = 1e-6 if "angle" in metric else 1e-10
            np.testing.assert_allclose(st.draws[(metric, layer, None)].draws, plain, rtol=0, atol=tol, err_msg=metric)
    first, last = a.per_prompt[0], a.per_prompt[-1]
    plain = [100 * (1 - last[i].mean() / first[i].mean()) for i in idx]
    np.testing.assert_allclose(st.draws[("focusing_reduction", None, None)].draws, plain, rtol=0, atol=1e-10)


def test_a_contrast_is_the_percentile_interval_of_the_paired_differences():
    cells = planted.series(steps=(0, 4, 8), n=60)
    rows, _, why = paired_series("pair", cells, n_resamples=80, pca_resamples=80, seed=5)
    assert why is None
    _, idx, hidx = series_indices("pair", 60, 1, 4, 80, seed=5)
    final = cells[-1]
    stats = [checkpoint_statistics(c, idx, hidx, final=final, pca_resamples=80) for c in cells]
    for r in (r for r in rows if r.contrast == "step0"):
        k = [c.cell for c in cells].index(r.cell)
        key = (r.metric, r.layer, r.head)
        est = stats[k].draws[key].estimate - stats[0].draws[key].estimate
        lo, hi = percentile_interval(stats[k].draws[key].draws - stats[0].draws[key].draws)
        assert r.estimate == pytest.approx(est, abs=1e-12) and r.against == cells[0].cell
        assert (r.low, r.high) == pytest.approx((lo, hi), abs=1e-10)
        assert r.low_adj <= r.estimate <= r.high_adj and 0 <= r.p <= r.p_adj <= 1
    previous = [r for r in rows if r.contrast == "previous"]
    assert {r.against for r in previous if r.cell == cells[2].cell} == {cells[1].cell}


def test_a_planted_shift_is_found_from_its_step_on_with_the_right_sign_and_nothing_else_is():
    cells = planted.series(entropy=lambda s: -0.4 if s >= 8 else 0.0, n=150)
    rows, _, _ = paired_series("planted", cells, n_resamples=400, pca_resamples=100, seed=1)
    step0 = [r for r in rows if r.contrast == "step0"]
    for r in step0:
        significant = r.p_adj < 0.05 and (r.low_adj > 0 or r.high_adj < 0)
        if r.metric == "attention_entropy":
            assert significant == (r.step >= 8), (r.step, r.layer)
            assert not significant or r.estimate < 0 and r.high_adj < 0
        elif r.metric in ("pc1", "alignment_spearman", "key_orthogonality"):
            assert not significant, (r.metric, r.step, r.layer, r.p_adj)
    prev = {(r.metric, r.layer, r.step): r for r in rows if r.contrast == "previous"}
    assert all(prev[("attention_entropy", layer, 8)].p_adj < 0.05 for layer in (0, 1))  # the step it moved
    assert all(prev[("attention_entropy", layer, 16)].p_adj > 0.05 for layer in (0, 1))  # and then it stayed


def test_a_series_on_two_prompt_sets_is_refused_in_one_line():
    cells = planted.series(steps=(0, 1), n=20)
    other = planted.series(steps=(2,), n=20, prompt_hash="q" * 64)
    rows, emergence, why = paired_series("mixed-prompts", cells + other, n_resamples=20)
    assert rows == [] and emergence == [] and "\n" not in why
    assert "pppppppppppp" in why and "qqqqqqqqqqqq" in why and "[prompts] file" in why and "geoprobe sample" in why


TABLES = """
[capture]
attention = "distribution"
[prompts]
set = "builtin"
[analyses]
n_resamples = 50
pca_resamples = 10
null_draws = 10
n_permutations = 50
init_draws = 0
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A 4-checkpoint trajectory (steps 0, 1, 2, 4) swept on the built-in prompts, contrasts on 200 resamples."""
    from geoprobe.sweep import run_sweep
    from geoprobe.trajectory import train_trajectory
    from tests.trajectory.conftest import planted_documents, tiny

    tmp = tmp_path_factory.mktemp("contrasts")
    train_trajectory(tiny(steps=4, seed=3), out=tmp / "traj", documents=planted_documents(), threads=1)
    ck = tmp / "traj" / "checkpoints"
    revisions = ", ".join(f'"{ck / f"step{s}"}"' for s in (0, 1, 2, 4))
    spec = tmp / "s.toml"
    spec.write_text(f'[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["traj"]\nrevision = [{revisions}]\n' + TABLES)
    manifest = run_sweep(spec, out=tmp / "out", contrast_resamples=200)
    return tmp / "out", manifest


def test_contrasts_equal_the_difference_of_the_cells_own_estimates(swept):
    import pandas as pd

    out, manifest = swept
    t = pd.read_parquet(out / "sweep.parquet")
    cells = {c.training_step: c.id for c in manifest.cells}
    res = {s: json.loads((out / "cells" / c / "results.json").read_text()) for s, c in cells.items()}

    def own(step, metric, i):
        r = res[step]
        return {
            "alignment_spearman": lambda: r["alignment"]["spearman"][i]["value"],
            "pc1": lambda: r["manifold"]["pc1"][i]["value"],
            "attention_entropy": lambda: r["focusing"]["mean"][i]["value"],
            "key_orthogonality": lambda: r["orthogonality"]["layer_mean"][i],
            "focusing_reduction": lambda: r["focusing"]["reduction"]["value"],
        }[metric]()

    step0 = t[t["contrast"] == "step0"]
    checked = 0
    for _, row in step0[
        step0["metric"].isin(["alignment_spearman", "pc1", "attention_entropy", "key_orthogonality"])
    ].iterrows():
        step, i = int(row["training_step"]), res[0]["layers"].index(int(row["layer"]))
        assert row["estimate"] == pytest.approx(own(step, row["metric"], i) - own(0, row["metric"], i), abs=1e-12)
        checked += 1
    for _, row in step0[step0["metric"] == "focusing_reduction"].iterrows():
        step = int(row["training_step"])
        assert row["estimate"] == pytest.approx(
            own(step, "focusing_reduction", 0) - own(0, "focusing_reduction", 0), abs=1e-12
        )
        checked += 1
    assert checked == 3 * (4 * len(res[0]["layers"]) + 1)
    mine = t[t["contrast"] != ""]
    assert set(mine["contrast"]) == {"step0", "previous"} and mine["null"].eq(0.0).all()
    assert mine["p_adj"].notna().all() and (mine["low_adj"] <= mine["high_adj"]).all()
    own_rows = t[t["contrast"] == ""]
    assert own_rows["p_adj"].isna().all() and own_rows["low_adj"].isna().all()
    heads = own_rows[own_rows["head"].notna()]
    assert {"routing_stability", "attention_entropy", "key_orthogonality"} <= set(heads["metric"])
    tracking = own_rows[own_rows["metric"] == "cka_to_final"]
    assert tracking[tracking["training_step"] == 4]["estimate"].to_numpy() == pytest.approx(1.0, abs=1e-12)


def test_the_sweep_writes_emergence_and_the_page_shows_the_contrasts(swept):
    import pandas as pd

    from geoprobe.sweep.emergence import COLUMNS

    out, _ = swept
    e = pd.read_parquet(out / "emergence.parquet")
    assert tuple(e.columns) == COLUMNS and set(e["runs"]) == {1} and set(e["series"]) == {"traj"}
    assert any(m.startswith("frame_minus_") for m in e["metric"])
    page = (out / "sweep.html").read_text()
    for anchor in ("contrast-pc1", "tracking-routing_stability", "emergence-0", "Frame before precision"):
        assert anchor in page


def test_contrasts_off_and_a_failure_keep_the_table(swept, tmp_path, monkeypatch):
    """A failure inside the contrasts is one line and the cells' own rows stay in sweep.parquet;
    ``contrast_resamples=0`` adds nothing and removes the sweep's own emergence.parquet of an earlier run."""
    import shutil

    import pandas as pd

    from geoprobe.sweep import contrasts, run_sweep
    from geoprobe.sweep.manifest import read_manifest

    out, _ = swept
    spec = read_manifest(out).sweep_file
    copy = tmp_path / "out"
    shutil.copytree(out, copy)

    def boom(*a, **k):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(contrasts, "series_contrasts", boom)
    said = []
    run_sweep(spec, out=copy, say=said.append)
    assert any("paired contrasts not computed (RuntimeError: planted failure)" in line for line in said)
    t = pd.read_parquet(copy / "sweep.parquet")
    assert set(t["contrast"]) == {""} and len(t) > 0
    assert (copy / "emergence.parquet").exists()  # the earlier run's, kept: nothing replaced it
    monkeypatch.undo()
    run_sweep(spec, out=copy, contrast_resamples=0)
    assert set(pd.read_parquet(copy / "sweep.parquet")["contrast"]) == {""}
    assert not (copy / "emergence.parquet").exists()  # the sweep's own, of no run now: removed


def test_the_settings_are_checked_before_any_work(tmp_path):
    from geoprobe.errors import ArgumentError, SweepError
    from geoprobe.sweep import run_sweep

    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["twin:llama"]\n' + TABLES)
    with pytest.raises(SweepError, match="--contrast-resamples 5 must be 0"):
        run_sweep(spec, out=tmp_path / "o", contrast_resamples=5)
    with pytest.raises(ArgumentError, match="contrast_resamples is str"):
        run_sweep(spec, out=tmp_path / "o", contrast_resamples="many")
    with pytest.raises(ArgumentError, match="baseline"):
        run_sweep(spec, out=tmp_path / "o", baseline=3)
    assert not (tmp_path / "o").exists()
