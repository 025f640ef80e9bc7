"""The manifest: derived from the cells' own records, written atomically, read back equal; a damaged one
is None (the driver rebuilds it from the cells, never refuses for it)."""

from __future__ import annotations

from geoprobe.sweep.manifest import CellRecord, SweepManifest, read_manifest, record_of


def _manifest(*statuses):
    cells = tuple(CellRecord(f"c{i}", {"seed": i}, status=s) for i, s in enumerate(statuses))
    return SweepManifest(experiment="scan", sweep_file="s.toml", digest="d", cells=cells, uid="u", replicates=("seed",))


def test_round_trip_counts_and_keys(tmp_path):
    m = _manifest("done", "failed", "pending")
    m.write(tmp_path)
    back = read_manifest(tmp_path)
    assert back == m and back.counts() == {"done": 1, "failed": 1, "pending": 1}
    assert back.keys() == ["seed"] and back.replicates == ("seed",)
    assert read_manifest(tmp_path / "nothing") is None


def test_a_damaged_manifest_reads_as_none_for_the_cells_to_rebuild(tmp_path):
    """Was: "sweep.json is damaged; pass --force" — and --force printed the same error."""
    for text in ('{"kind": "geoprobe.sweep", "version": 2, "cells": 3}', "{not json", ""):
        (tmp_path / "sweep.json").write_text(text)
        assert read_manifest(tmp_path) is None
    cells = '[{"id": "c0", "coordinates": {}, "status": "exploded"}]'  # was: unexpected KeyError
    (tmp_path / "sweep.json").write_text(
        '{"kind": "geoprobe.sweep", "version": 2, "experiment": "scan", "sweep_file": "s", "digest": "d", '
        f'"cells": {cells}}}'
    )
    assert read_manifest(tmp_path) is None


def test_a_record_is_read_from_the_cells_own_record():
    mark = {"status": "failed", "error": "boom", "attempts": 2, "seconds": 1.5, "node": "vm (node 1a2b3c4d)"}
    r = record_of("c", {"seed": 0}, None, mark, False, "results.json")
    assert (r.status, r.error, r.attempts, r.node, r.result) == ("failed", "boom", 2, "vm (node 1a2b3c4d)", None)
    done = record_of("c", {"seed": 0}, 8, {"status": "running", "n_params": 5}, True, "results.json")
    assert (done.status, done.result, done.n_params, done.training_step) == ("done", "cells/c/results.json", 5, 8)
    assert record_of("c", {}, None, None, False, "results.json").status == "pending"
