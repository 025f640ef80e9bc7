"""geoprobe.cluster without a cluster: which address means what, an unreachable one refused at once, Ray's
own cause kept in the line, what a node can hold, and a node that cannot run geoprobe named."""

from __future__ import annotations

import socket
import time

import pytest

from geoprobe import cluster
from geoprobe.cluster import Cluster, ClusterError


def test_no_address_or_local_is_a_private_ray_and_auto_needs_a_cluster(monkeypatch):
    assert cluster.resolve(None) is None and cluster.resolve("local") is None
    assert cluster.resolve("10.0.0.1:6379") == "10.0.0.1:6379"
    import ray._private.services as services

    def none(addr, temp_dir):
        raise ConnectionError("Could not find any running Ray instance")

    monkeypatch.setattr(services, "get_ray_address_from_environment", none)
    with pytest.raises(ClusterError, match="--address auto: no Ray cluster is running on this machine"):
        cluster.resolve("auto")


def test_an_address_where_nothing_listens_fails_within_seconds():
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=f"cannot reach a Ray cluster at --address '127.0.0.1:{port}'"):
        cluster._reach(f"127.0.0.1:{port}")
    assert time.monotonic() - t0 <= cluster.REACH_TIMEOUT_S + 1
    with pytest.raises(ClusterError, match="is not HOST:PORT, ray://HOST:PORT, auto or local"):
        cluster._reach("head-node")


def test_rays_own_cause_is_kept_and_explained():
    """Was: "cannot connect to the Ray cluster … Failed to connect", the cause (token authentication) only in
    Ray's C++ lines on stderr."""
    logged = (
        "[2026-11-27 20:56:40,143 W 17662 17662] gcs_client.cc:210: Failed to get cluster ID from GCS server: "
        "Unauthenticated: RPC error: InvalidAuthToken: Authentication token is missing or incorrect\n"
    )
    line = cluster._cause(ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379"), logged)
    assert line.startswith("Failed to connect to Ray cluster at 10.0.0.1:6379 (Failed to get cluster ID from GCS")
    assert "InvalidAuthToken" in line and "set RAY_AUTH_MODE=token and the cluster's token" in line
    assert cluster._cause(RuntimeError("boom"), "") == "boom"


def test_same_gcs_address():
    assert cluster._same_host_port("localhost:6379", "127.0.0.1:6379")
    assert not cluster._same_host_port("127.0.0.1:6380", "127.0.0.1:6379")
    assert not cluster._same_host_port(None, "127.0.0.1:6379")


def _fake(nodes) -> Cluster:
    c = Cluster(ray=None, address="a test cluster", owned=False, private=False)
    c.nodes = [{"id": f"{i:032x}", "host": f"n{i}", **n} for i, n in enumerate(nodes)]
    return c


def test_what_one_node_can_hold():
    c = _fake([{"CPU": 4.0, "GPU": 0.0, "memory": 8e9}, {"CPU": 1.0, "GPU": 1.0, "memory": 2e9}])
    assert c.largest() == {"CPU": 4.0, "GPU": 1.0, "memory": 8e9}
    assert c.fits({"CPU": 4, "GPU": 0, "memory": 8e9}) and c.fits({"CPU": 1, "GPU": 1, "memory": 1e9})
    assert not c.fits({"CPU": 2, "GPU": 1, "memory": 0})  # the largest of each, but on no one node
    assert c.describe() == "a test cluster: 2 nodes, 5 CPUs, 1 GPU, 9.3 GiB of memory for tasks"


def test_a_node_that_cannot_run_geoprobe_is_named(monkeypatch):
    c = _fake([{"CPU": 1.0, "GPU": 0.0, "memory": 1e9}])
    monkeypatch.setattr(cluster, "_probed", {})
    monkeypatch.setattr(
        Cluster,
        "on_every_node",
        lambda self, fn, *a, **k: {n["id"]: {"error": "ModuleNotFoundError: geoprobe"} for n in self.nodes},
    )
    with pytest.raises(
        ClusterError, match=r"node n0 \(00000000\) of a test cluster cannot run geoprobe \(ModuleNotFound"
    ):
        cluster.check_nodes(c)
    monkeypatch.setattr(Cluster, "on_every_node", lambda self, fn, *a, **k: {})
    with pytest.raises(ClusterError, match="did not start a worker within"):
        cluster.check_nodes(c)
