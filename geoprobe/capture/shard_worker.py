"""What runs on a Ray worker of a data-parallel capture (:mod:`geoprobe.capture.parallel`): the actor that
loads the model once and captures shards of prompts, the driver's check of what each worker loaded, and
a tally of the workers' events for the command's summary line."""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from geoprobe.capture.assemble import PER_PROMPT
from geoprobe.capture.run import CaptureConfig
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions

#: the provenance fields every worker's model must share with the driver's
SAME_MODEL = ("model_id", "source", "weights", "tokenizer", "dtype", "versions")


class ShardWorker:
    """One Ray actor: the model, loaded once from ``load`` with ``threads`` torch threads, and the capture
    of one shard of prompts at a time (:meth:`capture`)."""

    def __init__(self, load: LoadOptions, threads: int | None) -> None:
        import os

        import torch

        if threads is not None:
            torch.set_num_threads(threads)
        self.model, self.error = None, None
        self.pid, self.threads = os.getpid(), torch.get_num_threads()
        try:
            self.model = load.load()
        except GeoprobeError as exc:  # told to the driver in one line (describe), not as a dead actor
            self.error = str(exc)

    def describe(self) -> dict[str, Any]:
        """Where this worker runs and what it loaded: node, pid, torch threads, the model's provenance (or
        the one-line error that stopped it loading)."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        if self.model is None:
            return {"node": node, "pid": self.pid, "error": self.error}
        return {"node": node, "pid": self.pid, "threads": self.threads, "provenance": self.model.provenance.to_dict()}

    def capture(
        self, prompts: list[str], config: CaptureConfig, seed: int | None
    ) -> tuple[dict[str, np.ndarray], dict[str, float]] | Exception:
        """The arrays of ``prompts`` (one row per prompt, in their order; ``n_tokens`` to check the
        tokenisation) and this worker's peak resident memory so far (``{"peak_rss_mib": …}``), or the
        GeoprobeError the capture raised (returned, so the driver raises it as is)."""
        from geoprobe.capture.run import capture

        try:
            with warnings.catch_warnings():  # the driver tells its own (cut prompts), once
                warnings.simplefilter("ignore")
                cap = capture(self.model, prompts, config, seed=seed)
        except GeoprobeError as exc:
            return exc
        names = ("n_tokens", *PER_PROMPT, "attn_entropy", "values", "keys", "queries", "attn_out", "attn_pattern")
        rows = {name: getattr(cap, name) for name in names if getattr(cap, name) is not None}
        return rows, {"peak_rss_mib": peak_rss_mib()}


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB (Linux: VmHWM; elsewhere ru_maxrss)."""
    import resource
    import sys
    from pathlib import Path

    status = Path("/proc/self/status")
    if status.exists():
        m = re.search(r"VmHWM:\s+(\d+)", status.read_text())
        if m:
            return int(m.group(1)) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (2**20 if sys.platform == "darwin" else 1024)


def check_worker(info: dict[str, Any], model: Any, load: LoadOptions) -> None:
    """Refuse a worker that could not load the model, or loaded one whose provenance differs from the
    driver's (other weights, tokenizer or package versions on its node)."""
    node = str(info.get("node", "?"))[:12]
    if info.get("error"):
        raise GeoprobeError(f"a Ray worker (node {node}) could not load --model {load.model!r}: {info['error']}")
    mine, theirs = model.provenance.to_dict(), info["provenance"]
    for key in SAME_MODEL:
        what, ours, its = key, mine.get(key), theirs.get(key)
        if key == "versions" and ours != its:
            pkg = next(k for k in {**ours, **its} if ours.get(k) != its.get(k))
            what, ours, its = f"{pkg} version", ours.get(pkg), its.get(pkg)
        if ours != its:
            raise GeoprobeError(
                f"the Ray worker on node {node} loaded {load.model!r} with {what} {its!r}, this process with "
                f"{ours!r}; every node needs the same weights and package versions"
            )


@dataclass
class WorkerTally:
    """An ``on_worker`` that counts: workers that started (and their nodes), shards, prompts and workers
    lost; ``str()`` says it in a few words (what ``geoprobe capture --executor ray`` prints)."""

    pids: set = dataclasses.field(default_factory=set)
    nodes: set = dataclasses.field(default_factory=set)
    shards: int = 0
    prompts: int = 0
    lost: int = 0

    def __call__(self, event: dict[str, Any]) -> None:
        if event["event"] == "ready":
            self.pids.add((event["node"], event["pid"]))
            self.nodes.add(event["node"])
        elif event["event"] == "shard":
            self.shards, self.prompts = self.shards + 1, self.prompts + event["prompts"]
        else:
            self.lost += 1

    def __str__(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'s' * (count != 1)}"

        lost = f", {self.lost} lost and replaced or re-queued" if self.lost else ""
        return (
            f"{n(len(self.pids), 'Ray worker')} on {n(len(self.nodes), 'node')} ({self.prompts} prompts in "
            f"{n(self.shards, 'shard')}{lost})"
        )
