"""``geoprobe sweep``: run every cell of a sweep file, each an ordinary run under ``OUT/cells/<id>/``,
with the manifest ``OUT/sweep.json``, the tidy table ``OUT/sweep.parquet`` and the page ``OUT/sweep.html``.

The driver (this module), in order:

1. reads and checks the sweep file and every cell's settings (:mod:`geoprobe.sweep.plan`), its arguments
   and OUT's location, and takes OUT's lock; decides, reading only, what to do with OUT
   (:func:`geoprobe.sweep.directory.survey`: a new sweep, a rerun, ``--force``, or a refusal);
2. with ``--executor ray``, joins the cluster (:mod:`geoprobe.cluster`) and checks that its nodes can hold
   the cells' threads: nothing is written before the cluster is reached;
3. writes the marker, reads every cell from disk (the cells are the truth: a finished one is adopted
   whatever the manifest said; one that does not verify is computed again with one line saying why) and
   writes the manifest;
4. hands the cells left to the executor (``local`` or ``ray``: geoprobe.sweep.executors) and writes each
   outcome as it arrives, into that cell's own directory only (its files and its record: O(1) per cell,
   however many cells the sweep has);
5. writes the manifest again (also when stopped), then the table and the page from the verified cells;
   for a scan sweep whose series have two or more checkpoints on shared prompts, after the table is written,
   the paired contrasts, emergence and tracking (geoprobe.sweep.contrasts: their rows added to the table,
   OUT/emergence.parquet, figures on the page; a failure there loses nothing already written).

A failed cell records its one-line error and the others go on."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Literal

from geoprobe.errors import ArgumentError, SweepError
from geoprobe.kinds import TABLE_KIND, file_kind
from geoprobe.outputs import OutputLock, check_location
from geoprobe.sweep.cell import CellOutcome, CellTask
from geoprobe.sweep.directory import (
    CELL_PLOTLYJS,
    CELLS,
    MANIFEST,
    PLOTLYJS,
    SWEEP_FILES,
    CellState,
    cell_dir,
    cell_mark,
    inspect_cell,
    now,
    remove,
    remove_strays,
    survey,
    write_cell_mark,
    write_identity,
)
from geoprobe.sweep.manifest import CellRecord, SweepManifest, read_manifest, record_of
from geoprobe.sweep.plan import Cell, Plan, located, make_plan
from geoprobe.sweep.spec import read_sweep

Executor = Literal["local", "ray"]
EXECUTORS = ("local", "ray")
#: progress(done, failed, running, total, eta_seconds or None)
Progress = Callable[[int, int, int, int, float | None], None]
#: provenance kept in the manifest for each done cell
KEPT = ("model_id", "source", "weights", "tokenizer", "dtype", "prompts_hash", "seed", "versions", "partial_weights")
__all__ = ["EXECUTORS", "SWEEP_FILES", "run_sweep"]


def machine_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_arguments(**args: Any) -> None:
    """The arguments of :func:`run_sweep` of the right types (an :class:`ArgumentError` naming the argument and
    the value: geoprobe.checks' shared validators) and consistent (a one-line SweepError naming the flag)."""
    from geoprobe.checks import bool_arg, callable_arg, name_arg, optional_str_arg, path_arg

    name_arg(args["sweep_file"], "sweep_file", "the path of a sweep file (TOML)")
    path_arg(args["out"], "out", "the sweep's directory such as 'runs/sweep'")
    bool_arg(args["force"], "force")
    bool_arg(args["arrays"], "arrays")
    threads = args["threads"]
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise ArgumentError(f"threads is {type(threads).__name__} ({threads!r}), not an integer; pass e.g. threads=2")
    callable_arg(args["progress"], "progress", "progress(done, failed, running, total, eta)")
    callable_arg(args["say"], "say", "say(line)")
    executor = optional_str_arg(args["executor"], "executor", "executor='local' or 'ray'")
    address = optional_str_arg(args["address"], "address", "address='auto', 'HOST:PORT' or 'ray://HOST:PORT'")
    if executor not in EXECUTORS:
        raise SweepError(f"--executor {executor!r} is not local or ray; pass --executor local or --executor ray")
    if address is not None and executor != "ray":
        raise SweepError(f"--address {address!r} is for --executor ray; drop it or pass --executor ray")
    if args["arrays"] and executor != "ray":
        raise SweepError("--arrays is for --executor ray (the local executor writes every file in place); drop it")
    if threads < 1:
        raise SweepError(f"--threads {threads} must be at least 1")
    resamples = args["contrast_resamples"]
    if isinstance(resamples, bool) or not isinstance(resamples, int):
        raise ArgumentError(
            f"contrast_resamples is {type(resamples).__name__} ({resamples!r}), not an integer; pass e.g. 1000"
        )
    if resamples != 0 and not 10 <= resamples <= 100_000:
        raise SweepError(f"--contrast-resamples {resamples} must be 0 (no contrasts) or 10 to 100,000")
    optional_str_arg(args["baseline"], "baseline", "baseline='<cell id or revision>'")
    if executor == "local" and threads > machine_cpus():
        raise SweepError(
            f"--threads {threads} is more than the {machine_cpus()} CPUs this machine has; pass --threads "
            f"{machine_cpus()} or fewer"
        )


def target_of(out: Any, plan: Plan) -> Path:
    if out is None and plan.spec.out is None:
        raise SweepError(f"sweep {plan.spec.path!r} names no [sweep] out; pass --out DIR")
    text = os.fspath(out) if out is not None else plan.spec.out
    if not text or "\0" in str(text):
        raise SweepError(f"--out {str(text)!r} is not a usable path (empty, or holds a NUL byte); pass a directory")
    return Path(text)


def run_sweep(
    sweep_file: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    executor: Executor = "local",
    address: str | None = None,
    force: bool = False,
    arrays: bool = False,
    threads: int = 1,
    progress: Progress | None = None,
    say: Callable[[str], None] = lambda line: None,
    contrast_resamples: int = 1000,
    baseline: str | None = None,
) -> SweepManifest:
    """Run the sweep ``sweep_file`` into ``out`` (default: the file's ``[sweep] out``) and return its
    manifest (module docs); the table and page are written once every cell has an outcome. ``address``
    (with ``executor="ray"``): None or ``local`` for a private Ray, ``auto`` for this machine's cluster, or
    ``HOST:PORT`` / ``ray://HOST:PORT``. ``force``: start the sweep in OUT again (only its own files are
    removed). ``say`` receives each line meant for the user. ``contrast_resamples``: bootstrap resamples of a
    scan sweep's paired contrasts and emergence (0: none computed); ``baseline``: the cell id or revision they
    are taken against (default: each series' step 0)."""
    check_arguments(**{k: v for k, v in locals().items()})
    from geoprobe.recipes import experiments

    plan = make_plan(read_sweep(sweep_file), here=executor == "local")
    target = target_of(out, plan)
    check_location(target, writes="sweep")
    result_cls = experiments()[plan.experiment].result
    with OutputLock(target):
        claim = survey(target, plan, force)
        cluster = _join(executor, address, threads, say)
        try:
            analysis = {"n_resamples": contrast_resamples, "baseline": baseline}
            return _run(plan, target, claim, result_cls, cluster, executor, arrays, threads, progress, say, analysis)
        finally:
            if cluster is not None:
                cluster.close()


def _join(executor: str, address: str | None, threads: int, say: Callable[[str], None]) -> Any:
    if executor != "ray":
        return None
    from geoprobe.cluster import connect

    cluster = connect(address)
    largest = cluster.largest()
    if threads > largest["CPU"]:
        cluster.close()
        raise SweepError(
            f"--threads {threads}: no node of {cluster.describe()} has that many CPUs (the largest has "
            f"{largest['CPU']:g}); pass --threads {int(largest['CPU']) or 1} or fewer"
        )
    say(f"joined {cluster.describe()}")
    return cluster


def _run(
    plan: Plan,
    target: Path,
    claim: Any,
    result_cls: type,
    cluster: Any,
    executor: str,
    arrays: bool,
    threads: int,
    progress: Progress | None,
    say: Callable[[str], None],
    analysis: dict[str, Any],
) -> SweepManifest:
    from geoprobe.report.page import write_plotlyjs
    from geoprobe.sweep import executors
    from geoprobe.sweep.memory import cell_memory

    for line in claim.said:
        say(line)
    remove(claim.remove)
    if claim.new or claim.said:  # the marker before anything else: a kill after any later write leaves a sweep
        write_identity(target, plan, claim.uid)
    (target / CELLS).mkdir(parents=True, exist_ok=True)
    write_plotlyjs(target / PLOTLYJS)  # once, before any cell's page loads it
    remove_strays(target, claim.uid)
    states = {c.id: inspect_cell(target, plan, c, claim.uid, result_cls) for c in plan.cells}
    records: dict[str, CellRecord] = {}
    for c in plan.cells:
        st = states[c.id]
        if st.why:
            say(st.why if st.state != "foreign" else f"cell {c.id} not run: {st.why}")
        records[c.id] = record_of(c.id, c.coordinates, c.training_step, st.mark, st.state == "done", result_cls.FILE)
        if st.state == "foreign":
            records[c.id] = _failed(records[c.id], st.why or "", None)
    if not claim.new and read_manifest(target) is None:
        say(f"{MANIFEST} was missing or damaged: rebuilt from the cells")
        (target / MANIFEST).unlink(missing_ok=True)  # the sweep's own name in its own directory: replaced
    book = _Book(plan, target, claim.uid, records, executor)
    book.write()
    todo = [c for c in plan.cells if states[c.id].state in ("absent", "ours")]
    for c in todo:  # the cell's own results that no longer read as its kind (truncated, garbled): replaced
        damaged = cell_dir(target, c.id) / result_cls.FILE
        if states[c.id].force and damaged.is_file() and file_kind(damaged) != result_cls.KIND:
            damaged.unlink()
    skipped = sum(st.state == "done" for st in states.values())
    if skipped:
        say(f"resuming: {skipped} of {len(plan.cells)} cells verified as finished, {len(todo)} to run")
    tasks = [_task(plan, target, c, claim.uid, states[c.id], executor, arrays, threads) for c in todo]
    by_id = {c.id: c for c in todo}
    tally = _Tally(len(tasks), progress)
    run = (
        executors.local(tasks, lambda t: cell_memory(t.coordinates), tally.running)
        if executor == "local"
        else executors.on_ray(tasks, cluster, lambda t: cell_memory(t.coordinates), tally.running)
    )
    try:
        for outcome in run:
            record = _finish(plan, target, claim.uid, by_id[outcome.id], outcome, book.records[outcome.id], result_cls)
            book.records[outcome.id] = record
            if record.status == "failed":
                say(f"cell {outcome.id} failed: {record.error}")
            tally.finished(record.status == "done")
    finally:
        book.write()
    from geoprobe.sweep.report import write_page
    from geoprobe.sweep.table import table_rows, write_table

    manifest = book.manifest()
    rows = table_rows(manifest, target)
    if write_table(manifest, target, rows) is None:
        say('sweep.parquet not written: it needs pyarrow (pip install "geoprobe-attention[ray]")')
    contrasts = _contrasts(manifest, target, rows, analysis, say)  # after the table: its failure loses nothing
    say(f"wrote {write_page(manifest, target, rows, contrasts)}")
    return manifest


def _contrasts(
    manifest: SweepManifest, target: Path, rows: list[dict[str, Any]], analysis: dict[str, Any], say: Callable
) -> Any:
    """A scan sweep's paired contrasts and emergence (geoprobe.sweep.contrasts): their rows added to
    sweep.parquet, OUT/emergence.parquet written; None when there are none to compute. A failure is said in
    one line and leaves the table of the cells' own rows as it was written."""
    from geoprobe.sweep.contrasts import series_contrasts
    from geoprobe.sweep.emergence import EMERGENCE, write_emergence
    from geoprobe.sweep.table import ROW_COLUMNS, write_table

    if manifest.experiment != "scan":
        return None
    stale = target / EMERGENCE  # an earlier run's, when this one has none (the sweep's own kind only)
    try:
        if not analysis["n_resamples"]:
            if file_kind(stale) == TABLE_KIND:
                stale.unlink()
            return None
        table = series_contrasts(target, rows=rows, n_resamples=analysis["n_resamples"], baseline=analysis["baseline"])
        for line in table.refused:
            say(line)
        if not table.rows and not table.emergence:
            if file_kind(stale) == TABLE_KIND:
                stale.unlink()
            return table if table.refused else None
        heads = {}
        for r in rows:
            heads.setdefault(r["cell"], {k: v for k, v in r.items() if k not in ROW_COLUMNS})
        if write_emergence(table.emergence, target, manifest.uid) is not None:  # refuses a file not geoprobe's
            write_table(manifest, target, rows + table.parquet_rows(heads))
        return table
    except Exception as exc:  # the sweep's own table and page must survive any failure here
        say(f"paired contrasts not computed ({type(exc).__name__}: {exc}); sweep.parquet holds the cells' own rows")
        return None


def _task(
    plan: Plan, target: Path, c: Cell, uid: str, st: CellState, executor: str, arrays: bool, threads: int
) -> CellTask:
    attempts = int((st.mark or {}).get("attempts") or 0) + 1
    mark = cell_mark(plan, c, uid, status="running", attempts=attempts, started=now())
    return CellTask(
        experiment=plan.experiment,
        tables=plan.spec.tables,
        sweep_file=str(Path(plan.spec.path).resolve()),
        coordinates=located(c.coordinates),
        cell_id=c.id,
        directory=str(cell_dir(target, c.id)) if executor == "local" else None,
        parent=str(target),
        arrays=arrays,
        threads=threads,
        mark=mark,
        force=st.force,
        plotlyjs=CELL_PLOTLYJS,
    )


def _failed(record: CellRecord, error: str, outcome: CellOutcome | None) -> CellRecord:
    from dataclasses import replace

    extra = {} if outcome is None else {"seconds": outcome.seconds, "node": outcome.node or None}
    return replace(record, status="failed", error=error, result=None, **extra)


def _finish(
    plan: Plan, target: Path, uid: str, c: Cell, outcome: CellOutcome, record: CellRecord, result_cls: type
) -> CellRecord:
    """Write one outcome into the cell's own directory (its files from a worker, its record's final status)
    and return its manifest record; a cell whose results do not verify against its coordinates fails."""
    from dataclasses import replace

    from geoprobe.kinds import CELL_MARK
    from geoprobe.sweep.cell import write_files

    d = cell_dir(target, c.id)
    attempts = record.attempts + (1 if outcome.attempt is None else outcome.attempt)
    base = dict(status="running", attempts=attempts, seconds=outcome.seconds, node=outcome.node or None)
    if outcome.error is None:
        n_params = outcome.n_params
        prov = {k: v for k, v in outcome.provenance.items() if k in KEPT}
        fields = dict(base, status="done", n_params=n_params, provenance=prov, finished=now())
        if outcome.files is not None:
            import json

            write_files({**outcome.files, CELL_MARK: json.dumps(cell_mark(plan, c, uid, **fields)).encode()}, d)
        st = inspect_cell(target, plan, c, uid, result_cls)
        if st.state == "done":
            if outcome.files is None:
                write_cell_mark(d, cell_mark(plan, c, uid, **fields))
            rel = f"{CELLS}/{c.id}/{result_cls.FILE}"
            kept = {k: fields[k] for k in ("seconds", "node", "attempts")}
            return replace(record, status="done", error=None, result=rel, n_params=n_params, provenance=prov, **kept)
        error = f"its results did not verify: {st.why}"
    else:
        error = outcome.error
    write_cell_mark(d, cell_mark(plan, c, uid, **dict(base, status="failed", error=error, finished=now())))
    return replace(_failed(record, error, outcome), attempts=attempts)


class _Book:
    """The manifest's records, by cell, written whole when the sweep starts and when it ends or stops."""

    def __init__(self, plan: Plan, target: Path, uid: str, records: dict[str, CellRecord], executor: str) -> None:
        self.plan, self.target, self.uid, self.records, self.executor = plan, target, uid, records, executor

    def manifest(self) -> SweepManifest:
        return SweepManifest(
            experiment=self.plan.experiment,
            sweep_file=str(Path(self.plan.spec.path).resolve()),
            digest=self.plan.digest,
            cells=tuple(self.records[c.id] for c in self.plan.cells),
            executor=self.executor,
            uid=self.uid,
            replicates=tuple(self.plan.spec.replicates),
            coordinates=self.plan.keys,
        )

    def write(self) -> None:
        self.manifest().write(self.target)


class _Tally:
    """Cells done, failed and running, for the progress callback (with an ETA once a cell has finished)."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.progress = total, progress
        self.done = self.failed = self.now = 0
        self.t0 = time.perf_counter()

    def running(self, n: int) -> None:
        self.now = n
        self._tell()

    def finished(self, ok: bool) -> None:
        self.done, self.failed = self.done + ok, self.failed + (not ok)
        self._tell()

    def _tell(self) -> None:
        if self.progress is None:
            return
        n = self.done + self.failed
        eta = (time.perf_counter() - self.t0) / n * (self.total - n) if n else None
        self.progress(self.done, self.failed, self.now, self.total, eta)
