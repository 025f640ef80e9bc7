"""The manifest: written atomically, read back equal, and merged on a rerun so that only finished cells
whose results file is still there are skipped."""

from __future__ import annotations

import dataclasses

import pytest

from geoprobe.errors import SweepError
from geoprobe.sweep.manifest import CellRecord, SweepManifest, merged, read_manifest


def _manifest(*statuses):
    cells = tuple(CellRecord(f"c{i}", {"seed": i}, status=s) for i, s in enumerate(statuses))
    return SweepManifest(experiment="scan", sweep_file="s.toml", digest="d", cells=cells)


def test_round_trip_and_counts(tmp_path):
    m = _manifest("done", "failed", "pending")
    m.write(tmp_path)
    back = read_manifest(tmp_path)
    assert back == m and back.counts() == {"done": 1, "failed": 1, "pending": 1}
    assert read_manifest(tmp_path / "nothing") is None


def test_merge_keeps_only_done_cells_with_their_results_file(tmp_path):
    (tmp_path / "cells" / "c0").mkdir(parents=True)
    (tmp_path / "cells" / "c0" / "results.json").write_text("{}")
    old = _manifest("done", "done", "failed")
    old = old.with_cell(dataclasses.replace(old.cell("c0"), result="cells/c0/results.json"))
    old = old.with_cell(dataclasses.replace(old.cell("c1"), result="cells/c1/results.json"))  # file gone
    fresh = _manifest("pending", "pending", "pending")
    m = merged(old, fresh, tmp_path)
    assert [c.status for c in m.cells] == ["done", "pending", "pending"]
    assert merged(None, fresh, tmp_path) is fresh


def test_a_damaged_manifest_is_one_line(tmp_path):
    (tmp_path / "sweep.json").write_text('{"kind": "geoprobe.sweep", "version": 1, "cells": 3}')
    with pytest.raises(SweepError, match="damaged.*--force"):
        read_manifest(tmp_path)
