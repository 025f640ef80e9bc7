"""Data-parallel capture on a real Ray cluster on this machine (the session's ``ray_cluster``: a head
with no CPUs and two one-CPU worker nodes): the arrays, order, config and provenance of two actors'
capture equal one process's; a worker node lost mid-capture still yields the whole, equal capture;
without Ray the one-line refusal."""

from __future__ import annotations

import sys
import time

import pytest

from geoprobe.capture import CaptureConfig, capture
from geoprobe.capture.parallel import INSTALL, DataParallel, check_address
from geoprobe.capture.shard_worker import check_worker
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions
from tests.capture.same_capture import assert_same_capture, one_torch_thread

TWIN = "twin:llama-3.2-1b"


def varied_prompts(n: int) -> list[str]:
    """``n`` prompts of 2 to 13 words, in no order of length (so sorting and padding both matter)."""
    return [" ".join(["word"] * (1 + (7 * i) % 11)) + f" number {i}" for i in range(n)]


@pytest.fixture
def one_thread():
    with one_torch_thread():
        yield


def test_two_actors_equal_one_process(ray_cluster, one_thread, twin_factory):
    model = twin_factory("llama-3.2-1b")
    prompts = varied_prompts(23)  # batches of 2 (the last of 1), shards of 3 batches: 6, 6, 6, 5 prompts
    config = CaptureConfig(batch_size=2, attention="distribution", queries=True, attn_out=True)
    ref = capture(model, prompts, config, seed=3)
    events: list[dict] = []
    done: list[int] = []
    with DataParallel(workers=2, chunk_batches=3).pool(TWIN, model=model, on_worker=events.append) as pool:
        assert pool.wait_ready() == 2  # both have loaded the model: both take part
        got = pool.capture(prompts, config, seed=3, progress=lambda d, n: done.append(d))
    assert_same_capture(got, ref)
    assert got.provenance.prompts_hash == ref.provenance.prompts_hash and got.provenance.seed == 3
    assert len(set(got.n_tokens)) > 5 and got.attn_pattern.shape[-1] == max(got.n_tokens)  # the longest of all
    ready = [e for e in events if e["event"] == "ready"]
    shards = [e for e in events if e["event"] == "shard"]
    assert len(ready) == 2 and len({e["node"] for e in ready}) == 2  # one actor on each worker node
    assert all(e["threads"] == 1 for e in ready)
    assert sorted(e["prompts"] for e in shards) == [5, 6, 6, 6]
    assert done[-1] == 23 and done == sorted(done)


def test_a_bad_prompt_is_refused_as_in_one_process_before_any_worker_starts(ray_cluster, twin_factory):
    prompts = varied_prompts(5)
    with pytest.raises(GeoprobeError) as local:
        capture(twin_factory("llama-3.2-1b"), [*prompts, " "], CaptureConfig(batch_size=2))
    with pytest.raises(GeoprobeError) as parallel:
        DataParallel(workers=1).capture(TWIN, [*prompts, " "], CaptureConfig(batch_size=2))
    assert str(parallel.value) == str(local.value) == "prompt #5 is empty; remove it from the --prompts file"


def test_a_worker_node_lost_mid_capture_still_yields_the_whole_capture(ray_cluster, one_thread, twin_factory):
    """A third node joins; the fixture's first worker node is held by another actor, so the two capture
    workers run on the second node and the new one; the new node is removed once a shard is back.
    Its worker's shards in flight go back to the queue, the survivor computes them (the replacement
    actor finds no free CPU and is never used), and the capture equals one process's."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    model = twin_factory("llama-3.2-1b")
    prompts = varied_prompts(40)
    config = CaptureConfig(batch_size=2)
    ref = capture(model, prompts, config, seed=0)
    doomed = ray_cluster.add_node(num_cpus=1)
    ray_cluster.wait_for_nodes()
    fixture_nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
    held = next(n for n in fixture_nodes if n != doomed.node_id)
    blocker = (
        ray.remote(num_cpus=1)(_Holder).options(scheduling_strategy=NodeAffinitySchedulingStrategy(held, soft=False))
    ).remote()
    events: list[dict] = []

    def watch(event: dict) -> None:
        events.append(event)
        if event["event"] == "shard" and doomed in ray_cluster.worker_nodes:
            assert any(e["event"] == "ready" and e["node"] == doomed.node_id for e in events)
            ray_cluster.remove_node(doomed)

    try:
        ray.get(blocker.ping.remote())
        with DataParallel(workers=2, chunk_batches=2).pool(TWIN, model=model, on_worker=watch) as pool:
            assert pool.wait_ready() == 2
            t0 = time.monotonic()
            got = pool.capture(prompts, config, seed=0)
            took = time.monotonic() - t0
    finally:
        ray.kill(blocker)
        if doomed in ray_cluster.worker_nodes:
            ray_cluster.remove_node(doomed)
    assert_same_capture(got, ref)
    assert [e["node"] for e in events if e["event"] == "lost"] == [doomed.node_id]
    after = events.index(next(e for e in events if e["event"] == "lost"))
    # the other worker computed the rest, the lost shards among them (a shard the lost worker finished
    # before its node went is kept: its rows had already reached the driver)
    assert any(e["event"] == "shard" and e["node"] != doomed.node_id for e in events[after:])
    assert sum(e["prompts"] for e in events if e["event"] == "shard") == len(prompts)  # none written twice
    print(f"capture with a node lost: {took:.1f} s")


class _Holder:
    """An actor that only holds a CPU of its node."""

    def ping(self) -> bool:
        return True


def test_without_ray_the_one_line_refusal(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(GeoprobeError) as exc:
        DataParallel(workers=2).check()
    assert str(exc.value) == f"--executor ray needs Ray, which is not installed here: {INSTALL}"
    assert INSTALL == 'pip install "geoprobe-attention[ray]"'


@pytest.mark.parametrize("address", [None, "auto", "local", "ray://head.example:10001", "10.0.0.1:6379"])
def test_addresses_accepted(address):
    assert check_address(address) == address


@pytest.mark.parametrize("address", ["", "ray://head", "http://head:80", "head", "ray://head:port"])
def test_addresses_refused(address):
    with pytest.raises(GeoprobeError, match="^--address .* is not auto, local, ray://HOST:PORT or HOST:PORT"):
        check_address(address)


def test_a_worker_with_other_weights_or_versions_is_refused(twin_factory):
    model = twin_factory("llama-3.2-1b")
    mine = model.provenance.to_dict()
    check_worker({"node": "n1", "provenance": dict(mine, created="later")}, model, LoadOptions(TWIN))
    other = dict(mine, weights="seed=1")
    with pytest.raises(GeoprobeError, match="^the Ray worker on node n1 loaded 'twin:llama-3.2-1b' with weights "):
        check_worker({"node": "n1", "provenance": other}, model, LoadOptions(TWIN))
    versions = dict(mine, versions=dict(mine["versions"], torch="0.0.1"))
    with pytest.raises(GeoprobeError, match="with torch version '0.0.1', this process with "):
        check_worker({"node": "n1", "provenance": versions}, model, LoadOptions(TWIN))
    with pytest.raises(GeoprobeError, match="^a Ray worker \\(node n1\\) could not load --model 'twin:llama-3.2-1b': "):
        check_worker({"node": "n1", "error": "no such model"}, model, LoadOptions(TWIN))


def test_more_workers_than_the_cluster_has_cpus_is_refused(ray_cluster):
    import ray

    have = int(ray.cluster_resources()["CPU"])
    with pytest.raises(GeoprobeError) as exc:
        DataParallel(workers=have + 3).capture(TWIN, varied_prompts(3), CaptureConfig(batch_size=2))
    assert str(exc.value) == (
        f"--workers {have + 3} needs {have + 3} CPUs (1 per worker), and the Ray cluster has {have}; "
        f"pass --workers {have} or fewer, or add nodes"
    )


def test_more_workers_than_the_cluster_has_memory_for_is_refused(ray_cluster, monkeypatch):
    """Each CPU worker asks Ray for its model's bytes and WORKER_OVERHEAD (planted huge here)."""
    import ray

    from geoprobe.capture import parallel

    monkeypatch.setattr(parallel, "WORKER_OVERHEAD", 10**15)
    have = ray.cluster_resources()["memory"] / 2**30
    with pytest.raises(GeoprobeError) as exc:
        DataParallel(workers=1).capture(TWIN, varied_prompts(3), CaptureConfig(batch_size=2))
    assert str(exc.value).startswith("--workers 1 needs 1 × 9313")
    assert str(exc.value).endswith(
        f"GiB of memory (one model each), and the Ray cluster has {have:.1f} GiB; add nodes with that resource"
    )


def test_a_device_map_is_refused_before_any_model_loads():
    with pytest.raises(GeoprobeError, match=r"^--device-map 'auto' does not apply to --executor ray: each Ray worker"):
        DataParallel(workers=2).bind(LoadOptions("org/some-model", device_map="auto"))
