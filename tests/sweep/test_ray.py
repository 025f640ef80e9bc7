"""The Ray executor on a real Ray cluster on this machine (the session's ``ray_cluster``: a head and two
one-CPU worker nodes): the same table as the local executor, a worker node lost mid-sweep (the sweep
finishes, nothing lost, no cell written twice), a cell that cannot load (recorded, the others finish,
exit 1), and Ctrl-C on the driver (130; the rerun finishes the rest)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geoprobe.sweep import cell as cell_module
from geoprobe.sweep import run_sweep
from tests.sweep.kit import BAD, SIX, masked, rows, sweep_file


def _same_table(a, b):
    """Every metric of ``a`` within 1e-6 of ``b``'s, row for row."""
    assert list(a["cell"]) == list(b["cell"]) and list(a["metric"]) == list(b["metric"])
    np.testing.assert_allclose(a["estimate"].astype(float), b["estimate"].astype(float), atol=1e-6, equal_nan=True)
    for col in ("low", "high", "null"):
        np.testing.assert_allclose(a[col].astype(float), b[col].astype(float), atol=1e-6, equal_nan=True)


def test_six_cells_on_the_cluster_equal_the_local_executor(ray_cluster, reference, tmp_path):
    out = tmp_path / "ray"
    m = run_sweep(sweep_file(tmp_path, SIX), out=out, executor="ray")
    assert m.counts() == {"done": 6, "failed": 0, "pending": 0}
    ref, manifest = reference
    _same_table(rows(out), rows(ref))
    for c in m.cells:
        assert masked(out / c.result) == masked(ref / c.result)
        assert not (out / "cells" / c.id / "capture").exists()  # arrays stay on the worker unless asked for


def test_a_worker_node_lost_mid_sweep(ray_cluster, reference, tmp_path, monkeypatch):
    extra = ray_cluster.add_node(num_cpus=1)
    ray_cluster.wait_for_nodes()
    writes: dict[str, int] = {}
    real = cell_module.write_files

    def counted(files, run_dir):
        writes[run_dir.name] = writes.get(run_dir.name, 0) + 1
        return real(files, run_dir)

    monkeypatch.setattr(cell_module, "write_files", counted)
    removed = []

    def progress(done, failed, running, total, eta):
        if done + failed == 1 and not removed:  # the first cell is back: take a node away under the others
            ray_cluster.remove_node(extra)
            removed.append(True)

    out = tmp_path / "out"
    m = run_sweep(sweep_file(tmp_path, SIX), out=out, executor="ray", progress=progress)
    assert removed and m.counts() == {"done": 6, "failed": 0, "pending": 0}
    assert sorted(writes.values()) == [1] * 6  # no cell written twice
    _same_table(rows(out), rows(reference[0]))


def test_a_cell_that_cannot_load_is_recorded_and_the_others_finish(ray_cluster, tmp_path):
    m = run_sweep(sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]', BAD), out=tmp_path / "o", executor="ray")
    assert m.counts() == {"done": 1, "failed": 1, "pending": 0}
    failed = next(c for c in m.cells if c.status == "failed")
    assert "nosuchthing" in failed.error


def test_ctrl_c_on_the_driver_then_a_rerun(ray_cluster, reference, tmp_path, capsys, monkeypatch):
    from tests.cli.test_cli import run_cli

    spec, out = sweep_file(tmp_path, SIX), tmp_path / "out"

    def interrupt(done, failed, running, total, eta):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out=out, executor="ray", progress=interrupt)
    statuses = [c["status"] for c in json.loads((out / "sweep.json").read_text())["cells"]]
    assert statuses.count("done") == 2 and statuses.count("pending") == 4
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out), "--executor", "ray"], capsys, monkeypatch)
    assert code == 0, err
    _same_table(rows(out), rows(reference[0]))


def test_each_cell_asks_for_its_memory_and_one_no_node_can_hold_fails_at_once(ray_cluster, tmp_path, monkeypatch):
    """Was: cells asked Ray for CPUs only. Now each asks for geoprobe's estimate of its memory (weights at
    its dtype plus the overhead); a cell bigger than every node is failed at once with both sizes, where
    Ray would have waited forever for such a node, and the others finish."""
    from geoprobe.sweep import executors, memory

    real, asked = memory.cell_memory, []
    monkeypatch.setattr(memory, "cell_memory", lambda c: 1 << 50 if c.get("seed") == 1 else real(c))
    monkeypatch.setattr(executors, "resources", lambda t, m, f=executors.resources: asked.append(f(t, m)) or asked[-1])
    spec = sweep_file(tmp_path, 'model = ["twin:llama-3.2-1b"]\nseed = [0, 1]')
    m = run_sweep(spec, out=tmp_path / "o", executor="ray")
    assert m.counts() == {"done": 1, "failed": 1, "pending": 0}
    failed = next(c for c in m.cells if c.status == "failed")
    assert failed.coordinates["seed"] == 1
    assert "asks for 1 CPU, 0 GPU and 1048576.0 GiB of memory" in failed.error
    assert "no node of the cluster has them all (the largest offer" in failed.error
    assert asked[0] == {"num_cpus": 1, "num_gpus": 0, "memory": real({"model": "twin:llama-3.2-1b", "seed": 0})}
