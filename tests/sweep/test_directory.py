"""A sweep's directory read cell by cell (the cells are the truth): what a rerun adopts, what it computes
again and says why, what is never its own; and what OUT may be before anything is written."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from geoprobe.errors import ForeignOutputError, SweepError
from geoprobe.kinds import CELL_MARK, RECORD, SWEEP_MARK
from geoprobe.scan.result import ScanResult
from geoprobe.sweep.directory import identity, inspect_cell, survey
from geoprobe.sweep.plan import make_plan
from geoprobe.sweep.spec import read_sweep
from tests.sweep.kit import cell_of, copy_of


@pytest.fixture
def copied(reference, tmp_path):
    spec, out = copy_of(reference, tmp_path)
    plan = make_plan(read_sweep(spec))
    uid = identity(out).uid
    return plan, out, uid, reference[1]


def _state(plan, out, uid, cell_id):
    cell = next(c for c in plan.cells if c.id == cell_id)
    return inspect_cell(out, plan, cell, uid, ScanResult)


def _edit_json(path, **changes):
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


def test_every_finished_cell_verifies_whatever_the_manifest_says(copied):
    """Was: a kill between a cell's last write and the manifest's rewrite left the cell "pending" for ever,
    each rerun failing with "results.json already exists"."""
    plan, out, uid, manifest = copied
    m = json.loads((out / "sweep.json").read_text())
    for c in m["cells"]:
        c["status"], c["result"] = "pending", None
    (out / "sweep.json").write_text(json.dumps(m))
    states = {c.id: _state(plan, out, uid, c.id).state for c in plan.cells}
    assert sorted(states.values()) == ["done"] * 6 + ["ours"]  # the cell that failed is computed again


@pytest.mark.parametrize(
    "damage, state, why",
    [
        ("results_missing", "ours", "its results.json is missing; computing it again"),
        ("results_truncated", "ours", "has no matching run record"),
        ("results_edited", "ours", "has no matching run record"),
        ("record_missing", "ours", "has no matching run record"),
        ("page_missing", "ours", "its page is missing; writing it from its results"),
        ("other_model", "ours", "its results are of model 'twin:llama:tiny', not 'twin:qwen3:tiny'"),
        ("other_seed", "ours", "its results are made with seed = 0, not 1"),
        ("mark_other_coordinates", "ours", "its record names other coordinates"),
        ("mark_other_settings", "ours", "its record names other settings"),
        ("mark_running", "done", None),
        ("mark_missing", "foreign", "holds files this sweep did not write"),
        ("mark_garbled", "foreign", "holds files this sweep did not write"),
        ("mark_other_sweep", "foreign", "is a cell of another sweep"),
        ("dir_symlink", "foreign", "is a symbolic link; geoprobe never writes through it"),
        ("results_symlink", "foreign", "its results.json is a symbolic link"),
        ("dir_empty", "ours", None),
    ],
)
def test_a_damaged_cell_is_computed_again_or_never_touched(copied, tmp_path, damage, state, why):
    plan, out, uid, manifest = copied
    cid = cell_of(manifest, "twin:qwen3", 1)
    d = out / "cells" / cid
    llama = out / "cells" / cell_of(manifest, "twin:llama", 1)
    llama0 = out / "cells" / cell_of(manifest, "twin:llama", 0)
    if damage == "results_missing":
        (d / "results.json").unlink()
    elif damage == "results_truncated":
        (d / "results.json").write_bytes((d / "results.json").read_bytes()[:100])
    elif damage == "results_edited":
        (d / "results.json").write_text(
            (d / "results.json").read_text().replace('"n_prompts": 160', '"n_prompts": 161')
        )
    elif damage == "record_missing":
        (d / RECORD).unlink()
    elif damage == "page_missing":
        (d / "report.html").unlink()
    elif damage == "other_model":  # another cell's scan (of another model) copied over this one, record and all
        for name in ("results.json", RECORD):
            shutil.copy(llama / name, d / name)
    elif damage == "other_seed":
        for name in ("results.json", RECORD):
            shutil.copy(out / "cells" / cell_of(manifest, "twin:qwen3", 0) / name, d / name)
    elif damage == "mark_other_coordinates":
        _edit_json(d / CELL_MARK, coordinates={"model": "twin:qwen3", "seed": 7})
    elif damage == "mark_other_settings":
        _edit_json(d / CELL_MARK, digest="0" * 64)
    elif damage == "mark_running":  # killed after the run's last write, before the record's final status
        _edit_json(d / CELL_MARK, status="running")
    elif damage == "mark_missing":
        (d / CELL_MARK).unlink()
    elif damage == "mark_garbled":
        (d / CELL_MARK).write_text("{")
    elif damage == "mark_other_sweep":
        _edit_json(d / CELL_MARK, sweep="f" * 32)
    elif damage == "dir_symlink":
        shutil.rmtree(d)
        os.symlink(llama0, d)
    elif damage == "results_symlink":
        (d / "results.json").unlink()
        os.symlink(llama0 / "results.json", d / "results.json")
    elif damage == "dir_empty":
        shutil.rmtree(d)
        d.mkdir()
    got = _state(plan, out, uid, cid)
    assert got.state == state
    assert (got.why is None) if why is None else (why in got.why and "\n" not in got.why)
    assert got.force == (
        damage
        in (
            "results_missing",  # its capture and page from before are replaced (was: "capture already exists")
            "results_truncated",
            "results_edited",
            "record_missing",
            "other_model",
            "other_seed",
            "mark_other_coordinates",
            "mark_other_settings",
        )
    )


def test_survey_refuses_before_anything_is_written(copied, tmp_path):
    plan, out, uid, _ = copied
    other = make_plan(read_sweep(_other_sweep(tmp_path)))
    with pytest.raises(SweepError, match="holds a sweep of other settings .*pass --force"):
        survey(out, other, force=False)
    link = tmp_path / "elsewhere"
    link.mkdir()
    shutil.move(out / "cells", link / "cells")
    os.symlink(link / "cells", out / "cells")  # was: the sweep's writes went through it, outside OUT
    with pytest.raises(SweepError, match="cells' is a symbolic link .*a sweep writes its cells only into its own"):
        survey(out, plan, force=False)
    os.unlink(out / "cells")
    (out / "cells").write_text("x")
    with pytest.raises(SweepError, match="cells' is not a directory"):
        survey(out, plan, force=False)


def test_force_removes_only_what_carries_the_sweeps_mark(copied, tmp_path):
    """Was: --force deleted cells/NOTES.txt, a user's cells/my_analysis/ and a nested sweep under cells/."""
    plan, out, uid, manifest = copied
    (out / "cells" / "NOTES.txt").write_text("mine")
    (out / "cells" / "my_analysis").mkdir()
    (out / "cells" / "my_analysis" / "fit.py").write_text("mine")
    (out / "notes.md").write_text("mine")
    foreign_cell = out / "cells" / cell_of(manifest, "twin:gemma2", 0)
    _edit_json(foreign_cell / CELL_MARK, sweep="f" * 32)  # another sweep's cell: not this one's to remove
    other = make_plan(read_sweep(_other_sweep(tmp_path)))
    claim = survey(out, other, force=True)
    removed = {p.name for p in claim.remove}
    ours = {c.id for c in manifest.cells} - {foreign_cell.name}
    # the marker and manifest are rewritten, not removed: a kill part-way through leaves a sweep to --force again
    assert removed == ours | {"sweep.parquet", "sweep.html"}
    assert claim.new and claim.uid != uid
    inside = out / "cells" / cell_of(manifest, "twin:llama", 0) / "NOTES.txt"
    inside.write_text("mine")
    with pytest.raises(ForeignOutputError, match="NOTES.txt' is not the sweep's own .* move it away"):
        survey(out, other, force=True)


def test_the_sweeps_identity_survives_a_lost_marker_or_manifest(copied, tmp_path):
    """Was: a deleted sweep.json made the finished cells "not written by geoprobe"; a damaged one said
    "pass --force" and --force said the same."""
    plan, out, uid, _ = copied
    (out / "sweep.json").unlink()
    claim = survey(out, plan, force=False)
    assert claim.uid == uid and not claim.new and not claim.remove  # the run rebuilds it (test_contract.py)
    (out / SWEEP_MARK).write_text("{garbled")
    (out / "sweep.json").write_text("{garbled")
    with pytest.raises(SweepError, match="neither read as a sweep's: geoprobe cannot tell this sweep is its own"):
        survey(out, plan, force=True)


def _other_sweep(tmp_path):
    from tests.sweep.kit import sweep_file

    return sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [5]', name="other.toml")


def test_a_lock_left_by_a_kill_is_removed_and_a_held_one_kept(copied):
    """Was (the hostile round, a kill just before a finished cell's lock file was removed): the rerun adopted the
    cell without running it, so ``cells/.<id>.geoprobe.lock`` stayed for ever."""
    from geoprobe.outputs import OutputLock
    from geoprobe.sweep.directory import remove_strays

    plan, out, uid, manifest = copied
    stale, held = (cell_of(manifest, "twin:llama", s) for s in (0, 1))
    (out / "cells" / f".{stale}.geoprobe.lock").write_text("12345")  # its process is gone: nobody holds it
    with OutputLock(out / "cells" / held):
        remove_strays(out, uid)
        left = sorted(p.name for p in (out / "cells").iterdir() if p.name.endswith(".lock"))
    assert left == [f".{held}.geoprobe.lock"]
    assert not any(p.name.endswith(".lock") for p in (out / "cells").iterdir())  # released: its holder removed it
