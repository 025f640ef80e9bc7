"""Data-parallel capture on Ray: one model, many prompts, several workers, one Capture.

:meth:`DataParallel.capture` starts ``workers`` Ray actors (:class:`ShardWorker`), each of which loads
the model once from its picklable description (:class:`~geoprobe.models.loading.LoadOptions`, what
``--model``, ``--revision``, ``--dtype``, ``--device``, … describe), and streams shards of the prompts
to them: a shard is ``chunk_batches`` capture batches (by default as many as give each worker four
shards, 1 to :data:`CHUNK_MAX`), at most ``in_flight`` shards are
queued on an actor at a time, and each finished shard is copied into the capture's arrays and dropped.

The result equals :func:`geoprobe.capture.capture` in one process: the driver tokenises, sorts and cuts
the prompts into batches exactly as that function does (:func:`~geoprobe.capture.run.plan_capture`), a
worker computes whole batches (the same prompts, padding and shapes as in one process), and the driver
puts every row back at its prompt's index. So the prompt order, ``config``, ``n_tokens``,
``attn_pattern`` (as long as the longest prompt of all), W_K (computed by the driver) and the
provenance (the prompts hash of all prompts, the seed) are those of the single-process run, and the
arrays equal a one-thread run's bit for bit (each worker runs ``threads`` torch threads, 1 by default; a
run on more threads sums in another order and differs in the last float32 bit).

What the driver holds: the model (loaded once in the driver, on ``--device``: it tokenises, computes
W_K and gives the provenance; every worker's model must have the same provenance, or the capture is
refused), the prompts, the finished capture's arrays (allocated once at full size, as in one
process: the memory check of :func:`~geoprobe.capture.run.check_arrays_memory` applies), and at most
``workers × in_flight`` shard results not yet copied in. What each worker holds: one model and the
capture of one shard (at most ``chunk_batches × batch_size`` prompts) at a time.

Faults: a worker that dies (its process, or its node) loses only its shards in flight; they go back
to the queue for the other workers, and a replacement actor is started where the cluster has room.
A shard lost more than ``retries`` times, or no live worker for ``patience_s`` seconds, stops the capture with
one line. An error of the capture itself (an empty prompt, NaN activations) is raised as it is, never
retried. With ``checkpoint_dir`` every finished batch is kept as :func:`geoprobe.capture.capture`
keeps it (the same files), so a capture stopped in either executor resumes in either.

Why plain actors, not Ray Data ``map_batches`` with an actor pool: the driver must control which
prompts form a batch (to compute exactly the single-process batches) and put rows back by index;
a capture's rows are multi-dimensional float32 arrays that Ray Data would turn into Arrow tensor
columns and back; and retrying a lost shard, bounding what is in flight and checking each worker's
model are a few lines here. Ray Data's streaming executor would add its own block sizes, ordering
and backpressure rules on top without buying anything this needs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from geoprobe.capture.assemble import PER_PROMPT, CaptureArrays
from geoprobe.capture.memory import WORKER_OVERHEAD
from geoprobe.capture.result import Capture
from geoprobe.capture.run import CaptureConfig, capture_key_weights, plan_capture
from geoprobe.capture.shard_worker import ShardWorker, check_worker
from geoprobe.errors import CaptureError, GeoprobeError
from geoprobe.models.loading import LoadOptions

INSTALL = 'pip install "geoprobe-attention[ray]"'
WORKERS_MAX = 4096
CHUNK_MAX = 8  #: batches per shard by default at most: a worker holds one shard's arrays at a time
_ADDRESS = re.compile(r"^(auto|local|ray://[^\s/:]+:\d{1,5}|[^\s/:]+:\d{1,5})$")


def import_ray() -> Any:
    """The ``ray`` module, or a one-line GeoprobeError saying what to install."""
    try:
        import ray
    except ImportError:
        raise GeoprobeError(f"--executor ray needs Ray, which is not installed here: {INSTALL}") from None
    return ray


def check_address(address: str | None) -> str | None:
    """``--address``: None or ``local`` (a private local Ray for this command, whatever cluster runs on this
    machine), ``auto`` (this machine's cluster: $RAY_ADDRESS, else the one ``ray start`` last started; an error
    when there is none), ``ray://HOST:PORT`` (Ray Client) or ``HOST:PORT`` (a cluster's GCS address)."""
    if address is None or _ADDRESS.match(address):
        return address
    raise GeoprobeError(f"--address {address!r} is not auto, local, ray://HOST:PORT or HOST:PORT; pass one of them")


@dataclass
class _Slot:
    actor: Any
    busy: int = 0
    info: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class DataParallel:
    """Capture one model over many prompts on ``workers`` Ray actors (None: as many as the cluster has
    CPUs and memory for, or GPUs where the model runs on CUDA; :meth:`resources`) of ``threads`` torch
    threads and CPUs each, on the Ray cluster at ``address`` (:func:`check_address`; a process already connected
    with ``ray.init`` uses that connection). See the module docs for the streaming and the faults.

    ``capture`` starts the workers, captures and stops them; ``with dp.pool(load) as pool:`` keeps
    them for several captures (``pool.capture``), and ``pool.wait_ready()`` waits until every one has
    loaded its model (to time the capture alone, or to be sure that all of them take part)."""

    workers: int | None = None
    address: str | None = None
    threads: int = 1
    chunk_batches: int | None = None
    in_flight: int = 2
    retries: int = 3
    patience_s: float = 600.0

    def check(self) -> "DataParallel":
        """Cheap checks before any work: the settings, and that Ray is installed."""
        if self.workers is not None and not 1 <= self.workers <= WORKERS_MAX:
            raise GeoprobeError(f"--workers {self.workers} is not 1 to {WORKERS_MAX}; pass --workers 1 or more")
        for name in ("threads", "chunk_batches", "in_flight"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise GeoprobeError(f"{name} {getattr(self, name)} must be at least 1")
        check_address(self.address)
        import_ray()
        return self

    def bind(
        self, load: LoadOptions, on_worker: Callable[[dict[str, Any]], None] | None = None
    ) -> Callable[..., Capture]:
        """A function with :func:`geoprobe.capture.capture`'s signature that captures on Ray workers loading
        ``load`` (its ``model`` argument is the driver's copy of that model); ``on_worker``: as in
        :meth:`WorkerPool.capture`. ``load`` is checked here (:func:`load_arg`), before any model loads."""
        load = load_arg(load)

        def run(model: Any, prompts: Sequence[str], config: CaptureConfig = CaptureConfig(), **kw: Any) -> Capture:
            return self.capture(load, prompts, config, model=model, on_worker=on_worker, **kw)

        return run

    @contextlib.contextmanager
    def pool(
        self,
        load: LoadOptions | str,
        *,
        model: Any = None,
        on_worker: Callable[[dict[str, Any]], None] | None = None,
    ) -> Iterator["WorkerPool"]:
        """Connect to Ray (:func:`connect`), start the workers, yield their :class:`WorkerPool`, and stop
        them (and disconnect, if connected here) on the way out. ``load``: the model (a name or
        LoadOptions); ``model``: the driver's copy (loaded here if None); ``on_worker``: see
        :meth:`WorkerPool.capture`."""
        self.check()
        load = load_arg(load)
        ray = import_ray()
        m = load.load() if model is None else model
        owns = connect(ray, self.address)
        try:
            pool = WorkerPool(ray, self, load, m, on_worker or (lambda event: None))
            try:
                yield pool
            finally:
                pool.close()
        finally:
            if owns:
                ray.shutdown()

    def capture(
        self,
        load: LoadOptions | str,
        prompts: Sequence[str],
        config: CaptureConfig = CaptureConfig(),
        *,
        model: Any = None,
        on_worker: Callable[[dict[str, Any]], None] | None = None,
        **kw: Any,
    ) -> Capture:
        """The capture of ``prompts`` by the model ``load`` describes (a name or LoadOptions; ``model``: the
        driver's copy if it has one, else loaded here), computed on Ray workers started for it;
        the keyword arguments are :meth:`WorkerPool.capture`'s. Prompts a checkpoint already holds
        start no worker."""
        self.check()
        load = load_arg(load)
        m = load.load() if model is None else model
        _, plan = plan_capture(m, prompts, config, **_plan_args(kw))
        if plan.todo:
            with self.pool(load, model=m, on_worker=on_worker) as pool:
                pool.run(plan)
        return plan.capture(capture_key_weights(m, plan.config, plan.layers))

    def resources(self, ray: Any, load: LoadOptions, model: Any) -> tuple[int, dict[str, Any]]:
        """(workers, Ray options of one), after checking that the cluster has room for that many: 1 GPU
        each with ``--device cuda``, else ``threads`` CPUs and :func:`worker_memory` bytes each (Ray
        then places no more workers on a node than its memory holds)."""
        gpu = load.device.startswith("cuda")
        have = ray.cluster_resources()
        needs = {"GPU": 1} if gpu else {"CPU": self.threads, "memory": worker_memory(model)}
        fits = min(int(have.get(unit, 0) // need) for unit, need in needs.items())
        n = self.workers if self.workers is not None else max(1, fits)
        if n > fits:
            unit = next(u for u, need in needs.items() if n * need > have.get(u, 0))
            got = have.get(unit, 0)
            if unit == "memory":
                what, total = (
                    f"{n} × {needs[unit] / 2**30:.1f} GiB of memory (one model each)",
                    f"{got / 2**30:.1f} GiB",
                )
            else:
                what, total = f"{n * needs[unit]} {unit}s ({needs[unit]} per worker)", f"{int(got)}"
            raise GeoprobeError(
                f"--workers {n} needs {what}, and the Ray cluster has {total}; "
                + (f"pass --workers {fits} or fewer, or add nodes" if fits else "add nodes with that resource")
            )
        return n, {
            "num_cpus": self.threads,
            "num_gpus": 1 if gpu else 0,
            **({} if gpu else {"memory": needs["memory"]}),
            "max_restarts": 0,  # a lost worker is replaced by the pool, its shards re-queued
            "scheduling_strategy": "SPREAD",
        }


def worker_memory(model: Any) -> int:
    """Bytes a CPU worker asks Ray for: the model's weights and buffers plus :data:`WORKER_OVERHEAD`
    (its Python, torch and transformers, and a batch's forward pass; the worker's own capture checks
    its batches against the memory its node really has, docs/capture.md)."""
    hf = model.hf_model
    tensors = [*hf.parameters(), *hf.buffers()]
    return int(sum(t.numel() * t.element_size() for t in tensors)) + WORKER_OVERHEAD


def load_arg(load: Any) -> LoadOptions:
    """``load`` as checked LoadOptions (a model name is the default loading of that model). ``--device-map``
    is refused: it spreads one model over the devices of one machine, and a Ray worker sees only the one
    CPU or GPU it asked for."""
    if isinstance(load, str):
        load = LoadOptions(load).check()
    if not isinstance(load, LoadOptions):
        raise GeoprobeError(f"load is {type(load).__name__}, not LoadOptions or a model name")
    if load.device_map is not None:
        raise GeoprobeError(
            f"--device-map {load.device_map!r} does not apply to --executor ray: each Ray worker loads the whole "
            "model on its own device (--device cpu, or one GPU each with --device cuda); drop --device-map or "
            "use --executor local"
        )
    return load


def _plan_args(kw: dict[str, Any]) -> dict[str, Any]:
    allowed = ("seed", "progress", "checkpoint_dir", "on_resume", "tokenize_progress", "work_factor")
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    return kw


class WorkerPool:
    """The Ray actors of one :meth:`DataParallel.pool`: started at once, replaced when lost (up to
    ``retries`` times as many as were asked for), stopped by :meth:`close`."""

    def __init__(self, ray: Any, dp: DataParallel, load: LoadOptions, model: Any, tell: Callable[[dict], None]):
        self.ray, self.dp, self.load, self.model, self.tell = ray, dp, load, model, tell
        self.n, opts = dp.resources(ray, load, model)
        self.worker_load = dataclasses.replace(load, device="cuda") if opts["num_gpus"] else load  # Ray picks one
        self.actor_class = ray.remote(ShardWorker).options(**opts)
        self.lost_errors = (
            ray.exceptions.RayActorError,
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.NodeDiedError,
        )
        self.starting: dict[Any, _Slot] = {}
        self.live: list[_Slot] = []
        self.dead: list[_Slot] = []
        self.spawned = 0
        self.last = time.monotonic()
        for _ in range(self.n):
            self.spawn()

    def spawn(self) -> None:
        slot = _Slot(self.actor_class.remote(self.worker_load, self.dp.threads))
        self.starting[slot.actor.describe.remote()] = slot
        self.spawned += 1

    def lose(self, slot: _Slot) -> None:
        """``slot``'s actor is gone (it died, or its node): drop it and start a replacement while allowed."""
        if any(d is slot for d in self.dead):
            return
        self.dead.append(slot)
        self.tell({"event": "lost", **slot.info})
        if any(s is slot for s in self.live):
            self.live.remove(slot)
        self.ray.kill(slot.actor, no_restart=True)
        if self.spawned < self.n * (1 + self.dp.retries):
            self.spawn()

    def started(self, ref: Any) -> None:
        """The worker whose ``describe`` is ``ref`` answered: check its model and put it to work."""
        slot = self.starting.pop(ref)
        try:
            info = self.ray.get(ref)
        except self.lost_errors:
            self.lose(slot)
            return
        check_worker(info, self.model, self.load)
        slot.info = {k: info[k] for k in ("node", "pid", "threads")}
        self.tell({"event": "ready", **slot.info})
        self.live.append(slot)
        self.last = time.monotonic()

    def wait(self, refs: list[Any]) -> Any:
        """The first of ``refs`` to finish, or None after 5 s; an error once no worker has been live for
        ``patience_s`` seconds."""
        if not self.live and not self.starting:
            raise GeoprobeError("every Ray worker was lost and no replacement could start; check the cluster")
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=5.0)
        if not ready and not self.live and time.monotonic() - self.last > self.dp.patience_s:
            raise GeoprobeError(
                f"no Ray worker has been running for {self.dp.patience_s:.0f} s (none could start: the cluster "
                "may lack the CPUs, GPUs or memory they ask for); check `ray status`"
            )
        return ready[0] if ready else None

    def wait_ready(self) -> int:
        """Wait until every worker started so far has loaded its model (or was lost); how many are live."""
        while self.starting:
            ref = self.wait(list(self.starting))
            if ref is not None:
                self.started(ref)
        return len(self.live)

    def capture(self, prompts: Sequence[str], config: CaptureConfig = CaptureConfig(), **kw: Any) -> Capture:
        """The capture of ``prompts`` on these workers; the keyword arguments are
        :func:`geoprobe.capture.capture`'s (``seed``, ``progress``, ``checkpoint_dir``, ``on_resume``,
        ``tokenize_progress``, ``work_factor``), with the same meaning. The pool's ``on_worker(event)`` is
        called with ``{"event": "ready" | "shard" | "lost", "node", "pid", …}`` as workers start, finish a
        shard (``"prompts"``: how many; ``"peak_rss_mib"``: the worker's peak resident memory so far) and
        are lost."""
        _, plan = plan_capture(self.model, prompts, config, **_plan_args(kw))
        self.run(plan)
        return plan.capture(capture_key_weights(self.model, plan.config, plan.layers))

    def run(self, plan: CaptureArrays) -> None:
        """Compute the batches ``plan.todo`` on the workers and put each into ``plan`` (see the module docs)."""
        shard_config = dataclasses.replace(plan.config, key_weights=False, sort_by_length=False)
        per = self.dp.chunk_batches or max(1, min(CHUNK_MAX, len(plan.todo) // (4 * max(1, self.n))))
        queue = deque(tuple(plan.todo[i : i + per]) for i in range(0, len(plan.todo), per))
        tries: Counter = Counter()
        running: dict[Any, tuple[_Slot, tuple[int, ...]]] = {}
        try:
            while queue or running:
                for slot in self.live:
                    while queue and slot.busy < self.dp.in_flight:
                        shard = queue.popleft()
                        texts = [plan.prompts[i] for b in shard for i in plan.batches[b]]
                        running[slot.actor.capture.remote(texts, shard_config, plan.seed)] = (slot, shard)
                        slot.busy += 1
                ref = self.wait([*self.starting, *running])
                if ref is None:
                    continue
                if ref in self.starting:
                    self.started(ref)
                    continue
                slot, shard = running.pop(ref)
                slot.busy -= 1
                try:
                    rows = self.ray.get(ref)
                except self.lost_errors as exc:
                    tries[shard] += 1
                    if tries[shard] > self.dp.retries:
                        first = plan.batches[shard[0]][0]
                        raise GeoprobeError(
                            f"a shard of {len(shard)} batch(es) (from prompt #{first}) was lost {tries[shard]} times "
                            f"with its Ray worker ({type(exc).__name__}); check the cluster's nodes"
                        ) from None
                    queue.appendleft(shard)
                    self.lose(slot)
                    continue
                if isinstance(rows, Exception):
                    raise rows
                rows, stats = rows
                store(plan, shard, rows)
                self.tell({"event": "shard", **slot.info, "prompts": sum(len(plan.batches[b]) for b in shard), **stats})
                self.last = time.monotonic()
        finally:
            for ref, (slot, _) in running.items():  # an error or an interrupt: nothing more for this capture
                slot.busy = 0
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref, force=False)

    def close(self) -> None:
        """Stop every worker (live or still starting)."""
        for slot in [*self.live, *self.starting.values()]:
            self.ray.kill(slot.actor, no_restart=True)
        self.live, self.starting = [], {}


def connect(ray: Any, address: str | None) -> bool:
    """Join Ray (:func:`geoprobe.cluster.connect`: None or ``local`` a private local Ray, ``auto`` this
    machine's cluster, ``HOST:PORT`` / ``ray://HOST:PORT`` another; unreachable addresses fail at once, every
    node's versions are checked) unless this process already is connected; True if it connected here (and
    so should disconnect when done)."""
    from geoprobe.cluster import connect as join

    if ray.is_initialized():
        return False
    return join(address).owned


def store(plan: CaptureArrays, shard: tuple[int, ...], rows: dict[str, np.ndarray]) -> None:
    """Put a worker's capture of the batches ``shard`` (rows in the batches' order) into ``plan``."""
    rows = dict(rows)
    index = np.concatenate([plan.batches[b] for b in shard])
    if not np.array_equal(rows.pop("n_tokens"), plan.lengths[index]):
        raise CaptureError(
            "a Ray worker tokenised the prompts differently from this process; install the same tokenizer "
            "(transformers, tokenizers) and weights on every node"
        )
    start = 0
    for b in shard:
        k = len(plan.batches[b])
        plan.put(
            b,
            {name: a[start : start + k] if name in PER_PROMPT else a[:, start : start + k] for name, a in rows.items()},
        )
        plan.finished(b)
        start += k
