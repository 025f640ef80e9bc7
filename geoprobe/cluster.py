"""Joining Ray, for every geoprobe command that places work on a cluster (``geoprobe sweep --executor
ray``, ``geoprobe scan|capture --executor ray``). geoprobe describes the work; Ray places it.

``--address``, as Ray's own command line distinguishes them:

* none (or ``local``): a private Ray started for this command on this machine, whatever cluster may be
  running here already (Ray's ``ray.init()`` would join the one last started, silently);
* ``auto``: the cluster this machine belongs to (``RAY_ADDRESS``, else the one ``ray start`` last started);
* ``HOST:PORT`` (a cluster's GCS) or ``ray://HOST:PORT`` (Ray Client).

Before ``ray.init``, an address is tried with one TCP connection (:data:`REACH_TIMEOUT_S`): an address
where nothing listens fails at once in one line, not after minutes of Ray's retries. Ray's own causes
(token authentication, versions, a refused connection) are kept in the line. Once joined, the cluster is
described in one line (address, nodes, CPUs, GPUs, memory) and every node is asked, with one small task,
which Python, Ray and geoprobe it runs: a node that differs from this process is refused in one line
naming both. ``ray.init`` installs its own SIGTERM handler; the process's own (the CLI's: say so, keep
what is finished, exit 143) is put back. This module depends on nothing of geoprobe's but its errors and
version, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import re
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from geoprobe.errors import GeoprobeError

#: seconds one TCP connection to a cluster's address may take before it counts as unreachable
REACH_TIMEOUT_S = 5.0
#: seconds every node has to answer which versions it runs
PROBE_TIMEOUT_S = 60.0
#: versions a node must share with this process
VERSION_KEYS = ("python", "ray", "geoprobe")
_probed: dict[str, dict[str, str]] = {}  # node id -> its versions, asked once per process


class ClusterError(GeoprobeError):
    """A Ray cluster that cannot be joined or used: unreachable, refused, or running other versions."""


def ray_module(what: str = "--executor ray") -> Any:
    """The ``ray`` package, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ClusterError(
            f'Ray is not installed: {what} needs the extra: pip install "geoprobe-attention[ray]" (or use '
            "--executor local)"
        ) from None
    return ray


def versions() -> dict[str, str]:
    """The Python, Ray and geoprobe versions of this process (what every node must run too)."""
    import ray

    from geoprobe.version import __version__

    return {"python": platform.python_version(), "ray": ray.__version__, "geoprobe": __version__}


@dataclass
class Cluster:
    """A joined Ray cluster: the ``ray`` module, the ``address`` joined (in words), whether this process
    started the connection (``owned``: it disconnects at the end, and a private Ray stops with it), and
    the nodes alive when it was joined (id, host, CPU, GPU, memory in bytes)."""

    ray: Any
    address: str
    owned: bool
    private: bool
    nodes: list[dict[str, Any]] = field(default_factory=list)

    def refresh(self) -> None:
        self.nodes = [
            {
                "id": n["NodeID"],
                "host": n.get("NodeManagerHostname") or n.get("NodeManagerAddress", "?"),
                "CPU": float(n["Resources"].get("CPU", 0)),
                "GPU": float(n["Resources"].get("GPU", 0)),
                "memory": float(n["Resources"].get("memory", 0)),
            }
            for n in self.ray.nodes()
            if n.get("Alive")
        ]

    def describe(self) -> str:
        cpus = sum(n["CPU"] for n in self.nodes)
        gpus = sum(n["GPU"] for n in self.nodes)
        mem = sum(n["memory"] for n in self.nodes) / 2**30
        return (
            f"{self.address}: {len(self.nodes)} node{'s' * (len(self.nodes) != 1)}, {cpus:g} CPU{'s' * (cpus != 1)}, "
            f"{gpus:g} GPU{'s' * (gpus != 1)}, "
            f"{mem:.1f} GiB of memory for tasks"
        )

    def largest(self) -> dict[str, float]:
        """The most of each resource any one node offers."""
        return {k: max((n[k] for n in self.nodes), default=0.0) for k in ("CPU", "GPU", "memory")}

    def fits(self, need: Mapping[str, float]) -> bool:
        """Whether some node offers all of ``need`` (CPU, GPU, memory) at once."""
        return any(all(n[k] >= need.get(k, 0) for k in ("CPU", "GPU", "memory")) for n in self.nodes)

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()

    def on_every_node(self, fn: Callable[..., Any], *args: Any, timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
        """``fn(*args)`` run once on every alive node (no CPU asked), node id -> its return (or the
        exception Ray raised); nodes that did not answer within ``timeout`` are left out."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = self.ray.remote(num_cpus=0, max_retries=0)(fn)
        pinned = {n["id"]: NodeAffinitySchedulingStrategy(n["id"], soft=False) for n in self.nodes}
        refs = {node: remote.options(scheduling_strategy=how).remote(*args) for node, how in pinned.items()}
        ready, _ = self.ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout)
        out: dict[str, Any] = {}
        for node, ref in refs.items():
            if ref in ready:
                try:
                    out[node] = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - reported by the caller, with the node
                    out[node] = exc
        return out


def _reach(address: str) -> None:
    """One TCP connection to ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``), or a one-line error."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(
            f"--address {address!r} is not HOST:PORT, ray://HOST:PORT, auto or local; pass one of them (`ray "
            "status` on the cluster's head shows its address)"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(
            f"cannot reach a Ray cluster at --address {address!r} ({exc.strerror or type(exc).__name__}, within "
            f"{REACH_TIMEOUT_S:g} s): is it started there (`ray start --head` on that machine), and the port open?"
        ) from None


def resolve(address: str | None) -> str | None:
    """What ``address`` points at before joining: None for a private local Ray; for ``auto``, the address Ray
    would join (``RAY_ADDRESS``, else the cluster ``ray start`` last started here), or a one-line error."""
    if address in (None, "", "local"):
        return None
    if address != "auto":
        return address
    from ray._private.services import get_ray_address_from_environment  # Ray's own lookup

    try:
        found = get_ray_address_from_environment("auto", None)
    except ConnectionError:
        found = None
    if not found or found == "auto":
        raise ClusterError(
            "--address auto: no Ray cluster is running on this machine (none in RAY_ADDRESS, none started by `ray "
            "start`); start one with `ray start --head`, pass its address, or drop --address for a private Ray"
        )
    return found


#: words of Ray's own log lines (its C++ client writes them to stderr while it retries) that name the cause
_CAUSES = ("Unauthenticated", "InvalidAuthToken", "auth", "version", "Version", "refused", "Permission")
_LOG_PREFIX = re.compile(r"^\[[^\]]*\]\s*(?:\S+:\d+:\s*)?")


@contextlib.contextmanager
def _stderr_kept(box: list[str]) -> Iterator[None]:
    """Keep what is written to file descriptor 2 (Ray's C++ client logs each retry there) in ``box`` instead
    of the terminal: the cause goes into geoprobe's one line, the flood does not."""
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read().decode(errors="replace"))


def _cause(exc: BaseException, logged: str = "") -> str:
    """The cause of a failed join in words: the first of Ray's own lines that names one, else the exception."""
    text = " ".join(str(exc).split())
    found = next((ln for ln in logged.splitlines() if any(w in ln for w in _CAUSES)), None)
    if found is not None:
        text = f"{text} ({_LOG_PREFIX.sub('', found).strip()[:200]})"
    if "auth" in text.lower():
        return (
            f"{text[:300]}; the cluster uses Ray's token authentication and this process has no token or another: "
            "set RAY_AUTH_MODE=token and the cluster's token (RAY_AUTH_TOKEN, or its token file) here as on its "
            "nodes (docs/scale.md)"
        )
    return text[:300] or type(exc).__name__


def connect(address: str | None, *, check_versions: bool = True) -> Cluster:
    """Join the cluster ``address`` names (module docs) and describe it; a process already connected
    keeps its connection (a notebook that called ``ray.init`` itself)."""
    ray = ray_module()
    if ray.is_initialized():
        joined = str(ray.get_runtime_context().gcs_address)
        if address is not None and _same_host_port(resolve(address), joined) is False:
            raise ClusterError(
                f"this process is already connected to the Ray cluster at {joined} (ray.init), and --address "
                f"{address!r} names another; drop --address to use that connection, or call ray.shutdown() first"
            )
        cluster = Cluster(ray, f"the Ray cluster at {joined} (this process's connection)", owned=False, private=False)
    else:
        target = resolve(address)
        if target is not None:
            _reach(target)
        main = threading.current_thread() is threading.main_thread()
        before = signal.getsignal(signal.SIGTERM) if main else None
        logged: list[str] = []
        try:
            local = {"include_dashboard": False} if target is None else {}
            with contextlib.nullcontext() if target is None else _stderr_kept(logged):
                ray.init(address=target or "local", log_to_driver=False, logging_level=logging.WARNING, **local)
        except Exception as exc:  # noqa: BLE001 - Ray raises many types here; each becomes one line with its cause
            where = "a private local Ray" if target is None else f"the Ray cluster at --address {address!r}"
            raise ClusterError(
                f"could not join {where}: {type(exc).__name__}: {_cause(exc, ''.join(logged))}"
            ) from None
        finally:
            if main and before is not None:
                signal.signal(signal.SIGTERM, before)
        words = "a private local Ray" if target is None else f"the Ray cluster at {target}"
        cluster = Cluster(ray, words, owned=True, private=target is None)
    cluster.refresh()
    if check_versions:
        try:
            check_nodes(cluster)
        except BaseException:
            cluster.close()
            raise
    return cluster


def _same_host_port(a: str | None, b: str) -> bool:
    """Whether two ``HOST:PORT`` addresses name one GCS (hosts compared as resolved IPs); None (a private
    Ray) names none that is already running."""
    if a is None:
        return False

    def norm(x: str) -> tuple[str, str]:
        host, _, port = x.removeprefix("ray://").rpartition(":")
        try:
            host = socket.gethostbyname(host.strip("[]"))
        except OSError:
            pass
        return ("127.0.0.1" if host.startswith("127.") else host), port

    return norm(a) == norm(b)


def _versions_here() -> dict[str, str]:
    try:
        return versions()
    except ImportError as exc:  # geoprobe itself cannot be imported on that node
        return {"error": f"{type(exc).__name__}: {exc}"}


def check_nodes(cluster: Cluster) -> None:
    """Every node runs this process's Python, Ray and geoprobe, or one line naming the first that does not."""
    here = versions()
    todo = [n for n in cluster.nodes if n["id"] not in _probed]
    if todo:
        answers = Cluster(cluster.ray, cluster.address, False, False, todo).on_every_node(_versions_here)
        for n in todo:
            got = answers.get(n["id"])
            if got is None:
                raise ClusterError(
                    f"node {n['host']} ({n['id'][:8]}) of {cluster.address} did not start a worker within "
                    f"{PROBE_TIMEOUT_S:g} s; check it with `ray status`, or remove it from the cluster"
                )
            if isinstance(got, BaseException) or "error" in got:
                why = got["error"] if isinstance(got, dict) else _cause(got)
                raise ClusterError(
                    f"node {n['host']} ({n['id'][:8]}) of {cluster.address} cannot run geoprobe ({why}); install "
                    f"geoprobe {here['geoprobe']} with Ray {here['ray']} under Python {here['python']} there"
                )
            _probed[n["id"]] = got
    for n in cluster.nodes:
        got = _probed[n["id"]]
        for key in VERSION_KEYS:
            if got.get(key) != here[key]:
                raise ClusterError(
                    f"node {n['host']} ({n['id'][:8]}) of {cluster.address} runs {key} {got.get(key)}, this process "
                    f"{key} {here[key]}: every node must run the same Python, Ray and geoprobe (start its workers "
                    "from the same environment), or pass --address local for a private Ray"
                )


def environment_note() -> str | None:
    """A line when ``RAY_ADDRESS`` is set in the environment (Ray would join it instead of what was asked)."""
    value = os.environ.get("RAY_ADDRESS")
    return None if not value else f"RAY_ADDRESS={value} is set; geoprobe joins it only with --address auto"
