"""Where a sweep's cells run. geoprobe describes each cell (:class:`~geoprobe.sweep.cell.CellTask`) and
an executor places it: ``local`` runs them in this process, one after another; ``ray`` makes each a Ray
task with the resources it needs and lets Ray place it on a cluster. Both yield each cell's outcome as
it finishes; the driver (``geoprobe.sweep.run``) writes it."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from geoprobe.errors import SweepError
from geoprobe.sweep.cell import CellOutcome, CellTask, run_cell
from geoprobe.sweep.memory import CELL_OVERHEAD

#: how many times Ray runs a cell again when its worker or node dies (never when the cell itself fails)
MAX_RETRIES = 3


def local(tasks: Sequence[CellTask], on_start: Callable[[CellTask], None] = lambda t: None) -> Iterator[CellOutcome]:
    """Run ``tasks`` here, one after another."""
    for task in tasks:
        on_start(task)
        yield run_cell(task)


def ray_module() -> Any:
    """The ``ray`` package, or a one-line SweepError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SweepError(
            'Ray is not installed: --executor ray needs the extra: pip install "geoprobe-attention[ray]" '
            "(or use --executor local)"
        ) from None
    return ray


def connect(address: str | None) -> Any:
    """Ray connected to ``address`` (``auto``: the cluster this machine belongs to; ``ray://HOST:PORT``:
    a remote one; None: the one already connected, else a new one on this machine)."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    try:
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SweepError(f"cannot connect to the Ray cluster at --address {address!r}: {exc}") from None
    return ray


def resources(task: CellTask, memory: int | None) -> dict[str, Any]:
    """The Ray resources of one cell: ``num_cpus`` its threads, ``num_gpus`` 1 where it runs on CUDA,
    ``memory`` geoprobe's estimate where there is one."""
    device = str(task.coordinates.get("device", "") or "")
    out: dict[str, Any] = {"num_cpus": max(1, task.threads), "num_gpus": 1 if device.startswith("cuda") else 0}
    if memory:
        out["memory"] = int(memory)
    return out


def on_ray(
    tasks: Sequence[CellTask],
    address: str | None,
    memory: Callable[[CellTask], int | None] = lambda t: None,
    on_start: Callable[[CellTask], None] = lambda t: None,
) -> Iterator[CellOutcome]:
    """Each task a Ray task (:func:`resources`; retried up to :data:`MAX_RETRIES` times when its worker
    or node dies, never when the cell fails: :func:`run_cell` returns that failure). Outcomes are
    yielded in the order cells finish; a cell that asks for more memory than any node of the cluster
    has fails at once (Ray would wait for such a node forever). ``on_start`` is told of a cell when a
    slot of the cluster's CPUs is free for it (Ray's own placement is not observed). Interrupted
    (Ctrl-C), the cells still queued or running are cancelled."""
    ray = connect(address)
    remote = ray.remote(run_cell)
    largest = max((n["Resources"].get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0)
    slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
    pending: dict[Any, CellTask] = {}
    queued: list[CellTask] = []
    too_big: list[CellOutcome] = []
    for task in tasks:
        need = resources(task, memory(task))
        if largest and need.get("memory", 0) > largest:
            too_big.append(CellOutcome(task.cell_id, _too_big(need["memory"], largest), 0.0, ""))
            continue
        ref = remote.options(max_retries=MAX_RETRIES, retry_exceptions=False, **need)
        pending[ref.remote(task)] = task
        queued.append(task)
    yield from too_big
    used = 0
    while queued and used + max(1, queued[0].threads) <= slots:
        used += max(1, queued[0].threads)
        on_start(queued.pop(0))
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(done[0])
            if queued:
                on_start(queued.pop(0))
            try:
                yield ray.get(done[0])
            except ray.exceptions.RayError as exc:  # retries spent: the worker or node kept dying
                line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                yield CellOutcome(task.cell_id, f"Ray could not run the cell ({type(exc).__name__}): {line}", 0.0, "")
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def _too_big(need: int, largest: int) -> str:
    return (
        f"the cell needs {need / 2**30:.1f} GiB of memory (its weights at its dtype plus "
        f"{CELL_OVERHEAD / 2**30:.0f} GiB) and the cluster's largest node offers {largest / 2**30:.1f} GiB to Ray; "
        "add a larger node, or give the cell a smaller dtype"
    )
