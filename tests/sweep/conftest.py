"""One local sweep of six twin cells and one that cannot load, run once per session, that the other sweep
tests compare with."""

from __future__ import annotations

import pytest

from tests.sweep.kit import BAD, SIX, sweep_file


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """Six twin cells (three architectures × two seeds) and one that cannot load, run locally, uninterrupted."""
    from geoprobe.sweep import run_sweep

    tmp = tmp_path_factory.mktemp("reference")
    out = tmp / "out"
    manifest = run_sweep(sweep_file(tmp, SIX, BAD), out=out)
    return out, manifest
