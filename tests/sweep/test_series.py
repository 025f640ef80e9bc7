"""Series, runs, tokens and duplicates of sweep cells (geoprobe.sweep.series), on planted cells: the run of a
twin is its weight seed, of a trajectory checkpoint its training seed, of PolyPythias its ``-seedN``; tokens
from the trajectory's manifest or Pythia's batch; a later checkpoint of a series with an earlier one's weights
is a duplicate, left out by ``series_cells`` unless asked; and the page pools over runs, never over analysis
seeds. End to end through ``geoprobe sweep``: test_series_sweep.py."""

from __future__ import annotations

import json

import pytest
from scipy import stats

from geoprobe.sweep.series import (
    PYTHIA_TOKENS_PER_STEP,
    Trajectories,
    cell_facts,
    duplicates,
    pythia,
    runs,
    series_cells,
    series_groups,
)


@pytest.mark.parametrize(
    "name, want",
    [
        ("EleutherAI/pythia-160m-seed3", ("pythia-160m", "seed3")),
        ("eleutherai/Pythia-410M-seed9", ("pythia-410m", "seed9")),
        ("EleutherAI/pythia-160m-data-seed1", ("pythia-160m", "data-seed1")),
        ("EleutherAI/pythia-160m-weight-seed2", ("pythia-160m", "weight-seed2")),
        ("pythia-160m", ("pythia-160m", "seed1234")),
        ("EleutherAI/pythia-1.4b-deduped", ("pythia-1.4b-deduped", "seed1234")),
        ("EleutherAI/pythia-14m-seed1", ("pythia-14m", "seed1")),
        ("EleutherAI/pythia-160m-v0", None),
        ("twin:pythia-160m", None),
        ("smollm2-135m", None),
        (None, None),
    ],
)
def test_pythia_and_polypythias_names(name, want):
    assert pythia(name) == want


def test_a_pythia_step_counts_pythias_tokens():
    """The Pythia README: 299,892,736,000 tokens over the 143,000 steps; step1 of PolyPythias is 2M tokens."""
    facts = cell_facts({"model": "EleutherAI/pythia-160m-seed3", "revision": "step143000"}, {}, 143000, Trajectories())
    assert facts["tokens"] == 299_892_736_000 and (facts["series"], facts["run"]) == ("pythia-160m", "seed3")
    assert PYTHIA_TOKENS_PER_STEP == 2_097_152
    assert cell_facts({"model": "pythia-160m"}, {}, None, Trajectories())["tokens"] is None  # no step, no tokens


def test_the_run_of_a_twin_is_its_weight_seed():
    t = Trajectories()
    by_name = cell_facts({"model": "twin:gpt2@3"}, {}, None, t)
    by_flag = cell_facts({"model": "twin:gpt2", "weight_seed": 3}, {}, None, t)
    by_prov = cell_facts({"model": "twin:gpt2"}, {"weight_seed": 5, "weights_sha256": "ab"}, None, t)
    old = cell_facts({"model": "twin:gpt2"}, {"weights": "random-init seed=7"}, None, t)
    assert (by_name["series"], by_name["run"]) == (by_flag["series"], by_flag["run"]) == ("twin:gpt2", "seed3")
    assert (by_prov["run"], by_prov["weights_sha256"], old["run"]) == ("seed5", "ab", "seed7")
    assert by_name["tokens"] is None


def _trajectory(root, seed, steps, tokens_per_step=1024):
    """A trajectory.json as geoprobe trajectory writes one (only what the sweep reads) and its directories."""
    for s in steps:
        (root / "checkpoints" / f"step{s}").mkdir(parents=True)
    d = {
        "kind": "geoprobe.trajectory",
        "config": {"seed": seed},
        "checkpoints": [{"step": s, "path": f"checkpoints/step{s}", "tokens": s * tokens_per_step} for s in steps],
    }
    (root / "trajectory.json").write_text(json.dumps(d))


def test_the_run_and_tokens_of_a_trajectory_checkpoint_and_of_any_other_directory(tmp_path):
    _trajectory(tmp_path / "a", 0, (0, 8))
    _trajectory(tmp_path / "b", 1, (0, 8), tokens_per_step=512)
    (tmp_path / "plain" / "step8").mkdir(parents=True)
    t = Trajectories()
    a8 = cell_facts({"model": "m", "revision": str(tmp_path / "a/checkpoints/step8")}, {}, 8, t)
    b8 = cell_facts({"model": "m", "revision": str(tmp_path / "b/checkpoints/step8")}, {}, 8, t)
    local = {"source": "local", "model_id": str(tmp_path / "plain/step8"), "weights": "sha256:" + "c" * 64}
    plain = cell_facts({"model": "m", "revision": str(tmp_path / "plain/step8")}, local, 8, t)
    assert (a8["series"], a8["run"], a8["tokens"]) == ("m", "seed0", 8192)
    assert (b8["run"], b8["tokens"]) == ("seed1", 4096)
    assert (plain["run"], plain["tokens"], plain["weights_sha256"]) == (str(tmp_path / "plain"), None, "c" * 64)
    assert (tmp_path / "a") in t.read  # each trajectory.json read once, then remembered


def test_two_trajectories_of_one_seed_in_one_series_are_two_runs(tmp_path):
    _trajectory(tmp_path / "a", 0, (8,))
    _trajectory(tmp_path / "b", 0, (8,))
    t = Trajectories()
    facts = [cell_facts({"model": "m", "revision": str(tmp_path / x / "checkpoints/step8")}, {}, 8, t) for x in "ab"]
    other = cell_facts({"model": "other", "revision": str(tmp_path / "a/checkpoints/step8")}, {}, 8, t)
    runs([*facts, other])
    assert [f["run"] for f in facts] == [f"seed0 ({tmp_path / 'a'})", f"seed0 ({tmp_path / 'b'})"]
    assert other["run"] == "seed0" and all("root" not in f for f in [*facts, other])


def _head(cell, step, digest, **more):
    return {
        "cell": cell,
        "series": "s",
        "run": "seed0",
        "seed": 0,
        "training_step": step,
        "revision": f"step{step}",
        "weights_sha256": digest,
        **more,
    }


def test_a_later_checkpoint_with_an_earlier_ones_weights_is_its_duplicate():
    """EleutherAI/pythia #205 planted: step 143000 serves step 0's weights (listed first, to show that the
    order is the training step's, not the table's); another series, another analysis seed and unknown weights
    are never duplicates."""
    heads = [
        _head("s143000", 143000, "A"),
        _head("s0", 0, "A"),
        _head("s1", 1, "B"),
        _head("s512", 512, "B"),
        _head("s1000", 1000, "C"),
        _head("other-run", 143000, "A", run="seed1"),
        _head("other-seed", 143000, "A", seed=1),
        _head("unknown1", 2, None),
        _head("unknown2", 4, None),
    ]
    assert duplicates(heads) == {"s143000": "s0", "s512": "s1"}


def test_series_cells_leaves_duplicates_out_unless_asked_from_rows_or_a_dataframe():
    import pandas as pd

    rows = [
        {"cell": "a", "training_step": 0, "duplicate_of": None, "metric": "pc1", "estimate": 0.1},
        {"cell": "b", "training_step": 8, "duplicate_of": "a", "metric": "pc1", "estimate": 0.1},
        {"cell": "c", "training_step": 4, "duplicate_of": None, "metric": "pc1", "estimate": 0.3},
    ]
    assert [r["cell"] for r in series_cells(rows)] == ["a", "c"]
    assert series_cells(rows, include_duplicates=True) == rows
    frame = pd.DataFrame(rows)
    assert series_cells(frame)["cell"].tolist() == ["a", "c"]
    assert series_cells(frame, include_duplicates=True)["cell"].tolist() == ["a", "b", "c"]
    groups = series_groups([{**r, "series": "s", "run": "seed0"} for r in rows], include_duplicates=True)
    assert [[r["cell"] for r in g] for g in groups] == [["a", "c", "b"]]  # by training step
    # a column the table does not know that differs between one cell's rows is the rows' own, not a series
    wide = [{**r, "series": "s", "run": "seed0", "quantile": q} for r in rows for q in (0.1, 0.9)]
    assert [len(g) for g in series_groups(wide)] == [4]
    assert len(series_groups([*wide, {**wide[0], "cell": "z", "run": "seed1"}])) == 2  # another run


def test_the_page_pools_over_runs_when_declared_and_never_over_analysis_seeds():
    """Three PolyPythias runs of one size at one step, at two analysis seeds: with replicates = ["run"] one
    point per analysis seed, the mean over the three runs with a t-interval (checked against scipy); without
    replicates one line per run (six points)."""
    from geoprobe.sweep.manifest import CellRecord, SweepManifest
    from geoprobe.sweep.report import SweepPage

    values = {
        ("seed1", 0): 0.20,
        ("seed2", 0): 0.26,
        ("seed3", 0): 0.35,
        ("seed1", 1): 0.5,
        ("seed2", 1): 0.6,
        ("seed3", 1): 0.9,
    }
    records, rows = [], []
    for (run, seed), v in values.items():
        cell, model = f"{run}-{seed}", f"EleutherAI/pythia-160m-{run}"
        coords = {"model": model, "revision": "step512", "seed": seed}
        records.append(CellRecord(id=cell, coordinates=coords, status="done", training_step=512))
        rows.append(
            {
                "cell": cell,
                "series": "pythia-160m",
                "run": run,
                "training_step": 512,
                "n_params": 1,
                "duplicate_of": None,
                "metric": "pc1",
                "layer": 0,
                "estimate": v,
                "low": v - 0.01,
                "high": v + 0.01,
            }
        )

    def page(replicates):
        m = SweepManifest(
            experiment="scan",
            sweep_file="s.toml",
            digest="d",
            cells=tuple(records),
            replicates=replicates,
            coordinates=("model", "revision", "seed"),
        )
        return SweepPage(m, tuple(rows))

    pooled = page(("run",)).by_step("pc1", "last")
    assert [(p.series, p.k) for p in pooled] == [("seed=0", 3), ("seed=1", 3)]
    for p, seed in zip(pooled, (0, 1)):
        vals = [v for (_, s), v in values.items() if s == seed]
        half = stats.t.ppf(0.975, 2) * stats.tstd(vals) / 3**0.5
        assert p.estimate == pytest.approx(sum(vals) / 3) and p.high - p.estimate == pytest.approx(half)
    assert "over training runs" in page(("run",)).note()
    apart = page(()).by_step("pc1", "last")
    assert len(apart) == 6 and {p.k for p in apart} == {1}
    assert {p.series for p in apart} == {f"seed={s}, run={r}" for r, s in values}
