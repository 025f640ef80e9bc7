"""Where a sweep's cells run. geoprobe describes each cell (:class:`~geoprobe.sweep.cell.CellTask`) and
an executor places it: ``local`` runs them in this process, one after another; ``ray`` makes each a Ray
task with the resources it needs and lets Ray place it on a cluster (:mod:`geoprobe.cluster`). Both
yield each cell's outcome as it finishes, and tell how many cells are running; the driver
(``geoprobe.sweep.run``) writes each outcome.

A cell that cannot be placed fails at once with its request and what is there, where Ray (or the
machine) would wait for ever or run out of memory: more memory than this machine has free (local), or
CPUs, GPUs and memory that no node of the cluster offers together (Ray)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

from geoprobe.sweep.cell import CellOutcome, CellTask, remove_scratch, run_cell, sweep_scratch
from geoprobe.sweep.memory import CELL_OVERHEAD

#: how many times Ray runs a cell again when its worker or node dies (never when the cell itself fails)
MAX_RETRIES = 3
#: seconds the driver waits for cancelled cells, and then for every node to remove their scratch directories
CLEANUP_TIMEOUT_S = 10.0
Running = Callable[[int], None]


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def local(
    tasks: Sequence[CellTask], memory: Callable[[CellTask], int | None], on_running: Running = lambda n: None
) -> Iterator[CellOutcome]:
    """Run ``tasks`` here, one after another; a cell whose memory estimate (``memory``) exceeds what this
    machine has free for its device fails at once."""
    from geoprobe.capture.memory import memory_budget

    budgets: dict[str, tuple[int, str] | None] = {}
    for task in tasks:
        device = str(task.coordinates.get("device") or "cpu")
        if device not in budgets:
            budgets[device] = memory_budget(device)
        need, budget = memory(task), budgets[device]
        if need and budget is not None and need > budget[0]:
            line = (
                f"the cell needs about {_gib(need)} of memory (its weights at its dtype plus {_gib(CELL_OVERHEAD)}) "
                f"and {device} here has {_gib(budget[0])} for it ({budget[1]}); run it on a larger machine "
                "(--executor ray) or give it a smaller dtype"
            )
            yield CellOutcome(task.cell_id, line, 0.0, "", attempt=0)  # never started
            continue
        on_running(1)
        try:
            outcome = run_cell(task)
        finally:
            on_running(0)
        yield outcome


def resources(task: CellTask, memory: int | None) -> dict[str, Any]:
    """The Ray resources of one cell: ``num_cpus`` its threads, ``num_gpus`` 1 where it runs on CUDA,
    ``memory`` geoprobe's estimate where there is one."""
    device = str(task.coordinates.get("device", "") or "")
    out: dict[str, Any] = {"num_cpus": max(1, task.threads), "num_gpus": 1 if device.startswith("cuda") else 0}
    if memory:
        out["memory"] = int(memory)
    return out


def unplaceable(need: dict[str, Any], largest: dict[str, float]) -> str:
    """The line of a cell no node can hold: its request and the most any node offers."""
    return (
        f"the cell asks for {need['num_cpus']} CPU, {need['num_gpus']} GPU and "
        f"{_gib(need.get('memory', 0))} of memory (its weights at its dtype plus {_gib(CELL_OVERHEAD)}) on one node, "
        f"and no node of the cluster has them all (the largest offer {largest['CPU']:g} CPUs, {largest['GPU']:g} "
        f"GPUs, {_gib(largest['memory'])}); add such a node, or lower --threads, the dtype or the device"
    )


class AttemptLog:
    """A tiny Ray actor on the driver's node that counts the starts of each cell (Ray starts a cell again
    when its worker or node dies; the cell itself cannot tell)."""

    def __init__(self) -> None:
        self.starts: dict[str, int] = {}

    def started(self, cell_id: str) -> int:
        self.starts[cell_id] = self.starts.get(cell_id, 0) + 1
        return self.starts[cell_id]

    def count(self, cell_id: str) -> int:
        return self.starts.get(cell_id, 0)


def ray_cell(task: CellTask, log: Any) -> CellOutcome:
    """One cell on a Ray worker: its start counted in ``log``, then :func:`run_cell`."""
    import dataclasses

    import ray

    attempt = ray.get(log.started.remote(task.cell_id))
    mark = {**task.mark, "attempts": int(task.mark.get("attempts", 1)) + attempt - 1}
    outcome = run_cell(dataclasses.replace(task, mark=mark))
    return dataclasses.replace(outcome, attempt=attempt)


def _log_actor(ray: Any) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor = ray.remote(num_cpus=0)(AttemptLog)
    try:
        here = ray.get_runtime_context().get_node_id()
        return actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True)).remote()
    except Exception:  # noqa: BLE001 - a Ray Client driver is on no node: Ray places the log
        return actor.remote()


def on_ray(
    tasks: Sequence[CellTask],
    cluster: Any,
    memory: Callable[[CellTask], int | None],
    on_running: Running = lambda n: None,
) -> Iterator[CellOutcome]:
    """Each task a Ray task on ``cluster`` (a :class:`geoprobe.cluster.Cluster`; :func:`resources`; retried up
    to :data:`MAX_RETRIES` times when its worker or node dies, never when the cell fails: :func:`run_cell`
    returns that failure). Outcomes are yielded in the order cells finish; a cell no node can hold fails at
    once. ``on_running`` is told how many cells the cluster's CPUs can run at once among those left (Ray's
    own placement is not observed). Stopped (Ctrl-C, SIGTERM, an error), the cells still queued or running
    are cancelled; on every exit each node's scratch directories of this sweep are removed."""
    ray = cluster.ray
    log = _log_actor(ray)
    remote = ray.remote(ray_cell)
    pending: dict[Any, CellTask] = {}
    unplaced: list[CellOutcome] = []
    for task in tasks:
        need = resources(task, memory(task))
        if not cluster.fits({"CPU": need["num_cpus"], "GPU": need["num_gpus"], "memory": need.get("memory", 0)}):
            unplaced.append(CellOutcome(task.cell_id, unplaceable(need, cluster.largest()), 0.0, "", attempt=0))
            continue
        ref = remote.options(max_retries=MAX_RETRIES, retry_exceptions=False, **need).remote(task, log)
        pending[ref] = task
    threads = max([1, *(t.threads for t in pending.values())])

    def running() -> None:
        slots = sum(int(n["CPU"] // threads) for n in cluster.nodes)
        on_running(min(len(pending), max(1, slots)))

    prefixes = {sweep_scratch(str(t.mark.get("sweep", ""))) for t in tasks}
    try:
        yield from unplaced
        running()
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(done[0])
            cluster.refresh()
            running()
            try:
                yield ray.get(done[0])
            except ray.exceptions.RayError as exc:  # retries spent: the worker or node kept dying
                line = " ".join(str(exc).split())[:300] or type(exc).__name__
                starts = None  # how often a worker started it (the log may be gone with its node)
                with contextlib.suppress(Exception):
                    starts = ray.get(log.count.remote(task.cell_id), timeout=CLEANUP_TIMEOUT_S)
                yield CellOutcome(
                    task.cell_id,
                    f"Ray could not run the cell ({type(exc).__name__}): {line}",
                    0.0,
                    "",
                    attempt=starts,
                )
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        if pending:
            with contextlib.suppress(Exception):
                ray.wait(list(pending), num_returns=len(pending), timeout=CLEANUP_TIMEOUT_S)
        for prefix in prefixes:
            cleanup(cluster, prefix)
        with contextlib.suppress(Exception):
            ray.kill(log)


def cleanup(cluster: Any, prefix: str) -> None:
    """Remove the scratch directories ``prefix*`` on every node of ``cluster`` and on this machine."""
    remove_scratch(prefix)
    with contextlib.suppress(Exception):  # best effort: a node that does not answer keeps its own
        cluster.on_every_node(remove_scratch, prefix, timeout=CLEANUP_TIMEOUT_S)
