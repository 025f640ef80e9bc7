"""geoprobe.sweep.cell: what a cell is sent with, and how its coordinates split into loading and settings."""

from __future__ import annotations

from pathlib import Path

from geoprobe.models.loading import load_fields
from geoprobe.sweep.plan import located, split


def test_a_checkpoint_directory_is_sent_absolute_and_becomes_the_model(tmp_path, monkeypatch):
    """Was: a relative checkpoint directory reached a Ray worker as written, and the worker (its own
    working directory) looked for it there; now the driver makes it absolute before sending."""
    (tmp_path / "ck" / "step8").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    coords = {"model": "series", "revision": "ck/step8", "seed": 0}
    sent = located(coords)
    assert sent["revision"] == str((tmp_path / "ck" / "step8").resolve()) and Path(sent["revision"]).is_absolute()
    assert coords["revision"] == "ck/step8"  # the cell's own coordinates (its id, the table) are unchanged
    monkeypatch.chdir(tmp_path.parent)  # elsewhere, as a worker would be
    load, rest = split(sent, {f.name for f in load_fields()})
    assert load == {"model": sent["revision"], "revision": None} and rest == {"seed": 0}


def test_hub_revisions_aliases_and_missing_paths_are_sent_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    coords = {"model": "pythia-410m", "revision": "step512"}
    assert located(coords) == coords
    assert located({"model": "runs/none/here"}) == {"model": "runs/none/here"}
    (tmp_path / "runs" / "mine").mkdir(parents=True)
    assert located({"model": "runs/mine"}) == {"model": str((tmp_path / "runs" / "mine").resolve())}
    (tmp_path / "pythia-410m").mkdir()  # here load_model would load this directory, so the worker must too
    assert located(coords)["model"] == str((tmp_path / "pythia-410m").resolve())
