"""The Ray executor on a real Ray cluster on this machine (the session's ``ray_cluster``: a head and two
one-CPU worker nodes): the same table as the local executor, a worker node lost mid-sweep (the sweep
finishes, nothing lost, no cell written twice), a cell that cannot load (recorded, the others finish,
exit 1), Ctrl-C on the driver (the rerun finishes the rest) and SIGTERM (143)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

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
    assert removed and m.counts() == {"done": 6, "failed": 0, "pending": 0}, [
        (c.id, c.attempts, c.node, c.error) for c in m.cells if c.status != "done"
    ]
    assert sorted(writes.values()) == [1] * 6  # no cell written twice
    _same_table(rows(out), rows(reference[0]))
    # each cell records the Ray node that finished it and how often a worker started it (was: attempts 1 and the
    # host name "vm" for cells Ray had retried on another node): only the cell whose return set off the removal
    # may have finished on the removed node, every other on a node still alive
    gone = extra.node_id[:8]
    assert all(c.node and "(node " in c.node and c.attempts >= 1 for c in m.cells)
    nodes = [c.node.split("(node ")[1].rstrip(")") for c in m.cells]
    alive = {n["NodeID"][:8] for n in __import__("ray").nodes() if n["Alive"]}
    assert nodes.count(gone) <= 1 and {n for n in nodes if n != gone} <= alive


def test_a_cell_that_cannot_load_is_recorded_and_the_others_finish(ray_cluster, tmp_path):
    m = run_sweep(sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]', BAD), out=tmp_path / "o", executor="ray")
    assert m.counts() == {"done": 1, "failed": 1, "pending": 0}
    failed = next(c for c in m.cells if c.status == "failed")
    assert "nosuchthing" in failed.error


def test_six_cells_stopped_by_ctrl_c_then_rerun_equal_the_local_executor(ray_cluster, reference, tmp_path):
    """Six cells on the cluster, Ctrl-C on the driver after four (the finished cells kept, no scratch
    left), the rerun computes the other two: every cell's results and the table equal the local
    executor's. (The CLI's resume on Ray is the SIGTERM test's.)"""
    spec, out = sweep_file(tmp_path, SIX), tmp_path / "out"
    running: list[int] = []

    def interrupt(done, failed, now, total, eta):
        running.append(now)
        if done == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out=out, executor="ray", progress=interrupt)
    statuses = [c["status"] for c in json.loads((out / "sweep.json").read_text())["cells"]]
    assert statuses.count("done") == 4 and statuses.count("pending") == 2
    uid = json.loads((out / ".geoprobe-sweep.json").read_text())["uid"]
    assert not list(Path(tempfile.gettempdir()).glob(f"geoprobe-cell-{uid[:12]}-*"))  # was: left on every interrupt
    again: list[int] = []
    m = run_sweep(spec, out=out, executor="ray", progress=lambda d, f, r, t, e: again.append(r))
    assert m.counts() == {"done": 6, "failed": 0, "pending": 0}
    # the cluster's two CPUs (was: 3 running on a 2-CPU cluster)
    assert max(running) == 2 and max(again) <= 2 and again[-1] == 0
    ref, _ = reference
    _same_table(rows(out), rows(ref))
    for c in m.cells:
        assert masked(out / c.result) == masked(ref / c.result)
        assert not (out / "cells" / c.id / "capture").exists()  # arrays stay on the worker unless asked for


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


def test_a_cell_no_node_can_place_fails_at_once_and_threads_beyond_every_node_are_refused(
    ray_cluster, tmp_path, capsys, monkeypatch
):
    """Was: ``--threads 3`` on a cluster of one-CPU nodes, or ``device = "cuda"`` on a CPU cluster, waited for
    ever (only memory was checked). The threads are refused before anything is written; a cell asking for a
    GPU no node has fails at once with its request and the largest node, and the others finish."""
    from tests.cli.test_cli import run_cli

    spec = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]')
    code, _, err = run_cli(
        ["sweep", str(spec), "--out", str(tmp_path / "o"), "--executor", "ray", "--threads", "3"], capsys, monkeypatch
    )
    assert code == 2 and "--threads 3: no node of" in err and "(the largest has 1)" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
    spec = sweep_file(
        tmp_path,
        'model = ["twin:llama"]\nseed = [0]',
        '[[cell]]\nmodel = "twin:llama"\ndevice = "cuda"\n',
        name="g.toml",
    )
    m = run_sweep(spec, out=tmp_path / "g", executor="ray")
    failed = next(c for c in m.cells if c.status == "failed")
    assert m.counts()["done"] == 1 and failed.seconds == 0.0 and failed.attempts == 0  # never started
    assert "asks for 1 CPU, 1 GPU" in failed.error and "the largest offer 1 CPUs, 0 GPUs" in failed.error


def test_a_cluster_running_another_geoprobe_is_refused_in_one_line(ray_cluster, tmp_path, monkeypatch):
    """Was: on a cluster started from another environment every cell failed with OwnerDiedError. Every node
    is asked which Python, Ray and geoprobe it runs, before anything is written."""
    from geoprobe import cluster

    real = cluster.versions
    monkeypatch.setattr(cluster, "versions", lambda: {**real(), "geoprobe": "9.9.9"})  # this process's, not the nodes'
    monkeypatch.setattr(cluster, "_probed", {})
    with pytest.raises(cluster.ClusterError, match=r"runs geoprobe 0\.\d+\.\d+, this process geoprobe 9\.9\.9"):
        run_sweep(sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]'), out=tmp_path / "o", executor="ray")
    assert not (tmp_path / "o").exists()


def _cli(args, cwd, timeout=240):
    import os
    import subprocess
    import sys

    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(
        [sys.executable, "-m", "geoprobe", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_an_unreachable_address_fails_at_once_and_writes_nothing(tmp_path):
    """Was: ``--address 127.0.0.1:1`` retried for minutes, filling stderr with Ray's C++ lines, and wrote a
    sweep.json of pending cells."""
    import time

    spec = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]')
    t0 = time.monotonic()
    r = _cli(["sweep", str(spec), "--out", "o", "--executor", "ray", "--address", "127.0.0.1:1"], tmp_path)
    assert time.monotonic() - t0 < 30 and r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: cannot reach a Ray cluster at --address '127.0.0.1:1' (Connection refused, within 5 s): is it started "
        "there (`ray start --head` on that machine), and the port open?"
    ]
    assert not (tmp_path / "o").exists()


def test_without_an_address_a_private_ray_not_the_machines_cluster(ray_cluster, tmp_path):
    """Was: without --address, --executor ray joined whatever cluster was last started on the machine (Ray's
    address file): here the session's three-node cluster. Now a private Ray for the command (one node: this
    machine); --address joins a cluster (the SIGTERM test below joins the session's)."""
    spec = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]')
    r = _cli(["sweep", str(spec), "--out", "o", "--executor", "ray"], tmp_path)
    assert r.returncode == 0, r.stderr
    joined = [ln for ln in r.stderr.splitlines() if ln.startswith("joined ")]
    assert joined and joined[0].startswith("joined a private local Ray: 1 node,")


def test_sigterm_on_a_ray_sweep_says_so_exits_143_and_leaves_no_scratch(ray_cluster, tmp_path, capsys, monkeypatch):
    """Was: exit 134 with Ray's C++ stack, and the cells' scratch directories left in the temporary directory."""
    import os
    import signal
    import subprocess
    import sys
    import time

    spec = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0, 1]')
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    args = ["sweep", str(spec), "--out", "o", "--executor", "ray", "--address", ray_cluster.address]
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoprobe", *args], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not list((tmp_path / "o" / "cells").glob("*/results.json")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, err
    assert f"joined the Ray cluster at {ray_cluster.address} (this process's connection)" not in err
    assert any(
        ln.startswith(f"joined the Ray cluster at {ray_cluster.address}: 3 nodes, 2 CPUs") for ln in err.splitlines()
    )
    lines = [ln for ln in err.splitlines() if ln.startswith(("interrupted", "error", "Traceback", "***"))]
    assert lines == [
        "interrupted (SIGTERM); rerun the same command to resume (the finished cells and each unfinished "
        "cell's resumable state are kept)"
    ], err
    uid = json.loads((tmp_path / "o" / ".geoprobe-sweep.json").read_text())["uid"]
    time.sleep(1)
    assert not list(Path(tempfile.gettempdir()).glob(f"geoprobe-cell-{uid[:12]}-*"))
    from tests.cli.test_cli import run_cli

    # the same command resumes; in this process, already joined to the same cluster (its workers warm)
    code, _, err = run_cli(args, capsys, monkeypatch, cwd=tmp_path)
    assert code == 0 and "resuming:" in err, err
