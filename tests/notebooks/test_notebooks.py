"""Every notebook runs top to bottom (stored without outputs; executed here with nbclient)."""
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import requires_smollm2

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


@requires_smollm2
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GEOPROBE_NOTEBOOK_OUT", str(tmp_path))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    if path.name == "01_scan.ipynb":
        assert (tmp_path / "report.html").stat().st_size > 1_000_000
        shown = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                 if "application/vnd.plotly.v1+json" in o.get("data", {}) or "text/html" in o.get("data", {})]
        assert len(shown) >= 5  # the scorecard and the figures rendered inline
