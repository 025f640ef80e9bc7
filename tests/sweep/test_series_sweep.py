"""Runs, weight seeds and verified series end to end through ``geoprobe sweep`` (tiny scan cells):

* a 2-model × 2-weight-seed twin sweep gives different estimates across weight seeds and identical ones for
  a repeated equal seed (``twin:llama@1`` against ``twin:llama`` with ``weight_seed = 1``); before, a sweep's
  seed never reached a twin's weights;
* a ``geoprobe trajectory`` series in which one checkpoint directory holds another's weights (copied over
  it, as EleutherAI/pythia #205 serves the final weights from most step branches): ``run`` is the training
  seed, ``tokens`` the manifest's, ``weights_sha256`` the files', and the copy is ``duplicate_of`` the
  earlier checkpoint, named on the page and left out by ``series_cells``."""

from __future__ import annotations

import shutil

import pytest

from tests.cli.test_cli import run_cli
from tests.sweep.kit import TABLES, rows


def test_twin_weight_seeds_are_seeds_and_equal_seeds_give_equal_estimates(tmp_path):
    from geoprobe.sweep import run_sweep

    spec = tmp_path / "s.toml"
    spec.write_text(
        '[sweep]\nexperiment = "scan"\nreplicates = ["run"]\n[grid]\nmodel = ["twin:llama", "twin:qwen3"]\n'
        'weight_seed = [0, 1]\n[[cell]]\nmodel = "twin:llama@1"\n' + TABLES
    )
    manifest = run_sweep(spec, out=tmp_path / "out")
    assert manifest.counts()["done"] == 5
    t = rows(tmp_path / "out")
    ids = {(c.coordinates["model"], c.coordinates.get("weight_seed")): c.id for c in manifest.cells}

    def cell(model, seed):
        mine = t[t["cell"] == ids[(model, seed)]].sort_values(["metric", "layer"]).reset_index(drop=True)
        return mine

    for model in ("twin:llama", "twin:qwen3"):
        a, b = cell(model, 0), cell(model, 1)
        assert set(a["run"]) == {"seed0"} and set(b["run"]) == {"seed1"} and set(a["series"]) == {model}
        assert a["weights_sha256"].iloc[0] != b["weights_sha256"].iloc[0]
        for metric in ("pc1", "key_orthogonality", "attention_entropy"):
            x, y = a[a["metric"] == metric]["estimate"], b[b["metric"] == metric]["estimate"]
            assert len(x) == 3 and (x.to_numpy() != y.to_numpy()).all(), metric  # every layer moved
    again, one = cell("twin:llama@1", None), cell("twin:llama", 1)
    assert again["estimate"].tolist() == one["estimate"].tolist() and set(again["run"]) == {"seed1"}
    assert again["weights_sha256"].iloc[0] == one["weights_sha256"].iloc[0]
    # the same twin written twice is one run's checkpoint twice: the later cell is flagged, the page says so
    assert set(again["duplicate_of"]) == {ids[("twin:llama", 1)]} and one["duplicate_of"].isna().all()
    import json

    prov = json.loads((tmp_path / "out" / "cells" / ids[("twin:qwen3", 1)] / "results.json").read_text())
    assert (prov["provenance"]["weight_seed"], prov["provenance"]["weights"]) == (1, "random-init seed=1")
    page = (tmp_path / "out" / "sweep.html").read_text()
    assert "over training runs" in page and "Identical weights" in page


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory):
    """A 2-step trajectory on planted documents (checkpoints 0, 1, 2) at training seed 5."""
    from geoprobe.trajectory import train_trajectory
    from tests.trajectory.conftest import planted_documents, tiny

    out = tmp_path_factory.mktemp("trajectory")
    return train_trajectory(tiny(steps=2, seed=5), out=out, documents=planted_documents(), threads=1), out


def test_a_checkpoint_with_another_ones_weights_is_flagged_through_geoprobe_sweep(
    trajectory, tmp_path, capsys, monkeypatch
):
    from geoprobe.models.fingerprint import local_weights_hash
    from geoprobe.sweep.series import series_cells

    result, root = trajectory
    series = tmp_path / "t"
    shutil.copytree(root, series)
    ck = series / "checkpoints"
    shutil.copy2(ck / "step2" / "model.safetensors", ck / "step1" / "model.safetensors")  # step1 serves step2's
    spec = tmp_path / "s.toml"
    revisions = ", ".join(f'"{ck / f"step{s}"}"' for s in (0, 1, 2))
    spec.write_text(f'[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["traj"]\nrevision = [{revisions}]\n' + TABLES)
    out = tmp_path / "out"
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    t = rows(out)
    by_step = {s: t[t["training_step"] == s] for s in (0, 1, 2)}
    cell = {s: by_step[s]["cell"].iloc[0] for s in by_step}
    for s, mine in by_step.items():
        assert set(mine["run"]) == {"seed5"} and set(mine["series"]) == {"traj"}
        assert set(mine["tokens"]) == {result.checkpoint(s).tokens} and result.checkpoint(s).tokens == s * 4 * 16
        assert set(mine["weights_sha256"]) == {local_weights_hash(ck / f"step{s}").removeprefix("sha256:")}
    assert set(by_step[2]["duplicate_of"]) == {cell[1]}  # the later step repeats the earlier one's weights
    assert by_step[0]["duplicate_of"].isna().all() and by_step[1]["duplicate_of"].isna().all()
    own = {s: by_step[s][by_step[s]["contrast"] == ""] for s in by_step}  # not the paired contrasts
    pc1 = {s: own[s][own[s]["metric"] == "pc1"]["estimate"].tolist() for s in by_step}
    assert pc1[1] == pc1[2] != pc1[0]  # the same weights measure the same
    kept = series_cells(t)
    assert set(kept["cell"]) == {cell[0], cell[1]}
    assert set(series_cells(t, include_duplicates=True)["cell"]) == set(cell.values())
    page = (out / "sweep.html").read_text()
    assert "Identical weights" in page and f"{cell[2]} = {cell[1]}" in page
