"""With HF_HUB_OFFLINE=1 nothing opens a network connection: every socket connect, name lookup and
create_connection is blocked and recorded (the ``no_network`` fixture of tests/conftest.py) while
real commands run end to end. The fresh .gguf parse and dequantisation runs under the same blocker
in tests/models/test_loading.py (test_gguf_cache_makes_the_second_load_use_safetensors)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from tests.cli.test_cli import run_cli
from tests.conftest import requires_smollm2


def test_the_blocker_records_what_it_refuses(no_network):
    with pytest.raises(AssertionError):
        socket.create_connection(("huggingface.co", 443), timeout=1)
    with pytest.raises(AssertionError):
        socket.getaddrinfo("huggingface.co", 443)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(AssertionError):
        s.connect(("127.0.0.1", 9))
    a, b = socket.socketpair(socket.AF_UNIX)  # local IPC is not the network
    a.sendall(b"x")
    assert b.recv(1) == b"x"
    a.close(), b.close()
    assert [k for k, _ in no_network] == ["create_connection", "getaddrinfo", "connect"]


def test_models_lists_everything_offline(no_network, capsys, monkeypatch):
    code, out, err = run_cli(["models", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert {r["alias"] for r in json.loads(out)} >= {"pythia-410m", "smollm2-135m", "llama-3.2-1b"}
    assert no_network == []


def test_scan_on_a_twin_end_to_end_offline(no_network, tmp_path, capsys, monkeypatch):
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"Prompt {i} says that the river" for i in range(12)), encoding="utf-8")
    out_dir = tmp_path / "scan"
    code, out, err = run_cli(
        ["scan", "--model", "twin:pythia-410m", "--prompts", str(prompts), "--out", str(out_dir), "--seed", "0"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert json.loads((out_dir / "results.json").read_text())["n_prompts"] == 12
    assert (out_dir / "report.html").is_file()
    assert no_network == []


@requires_smollm2
def test_smollm2_capture_offline(no_network, tmp_path, capsys, monkeypatch):
    """The embedded real model through the CLI (from the dequantised cache when it is warm)."""
    prompts = tmp_path / "p.txt"
    prompts.write_text("The capital of France is\nOne, two, three,\n", encoding="utf-8")
    code, out, err = run_cli(
        [
            "capture",
            "--model",
            "smollm2-135m",
            "--prompts",
            str(prompts),
            "--layers",
            "0,-1",
            "--out",
            str(tmp_path / "cap"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    from geoprobe.capture import Capture

    cap = Capture.load(tmp_path / "cap")
    assert cap.n_prompts == 2 and cap.provenance.source == "gguf"
    assert no_network == []


def test_importing_geoprobe_without_the_offline_flag_opens_no_connection(tmp_path):
    """Import time only (cheap): a fresh interpreter with HF_HUB_OFFLINE unset imports the CLI."""
    code = textwrap.dedent("""
        import json, socket, sys
        attempts = []
        def refuse(kind):
            def f(*a, **k):
                attempts.append([kind, repr(a[:2])])
                raise OSError("blocked")
            return f
        socket.socket.connect = refuse("connect")
        socket.socket.connect_ex = refuse("connect_ex")
        socket.create_connection = refuse("create_connection")
        socket.getaddrinfo = refuse("getaddrinfo")
        import geoprobe, geoprobe.cli  # every subcommand module registers on import
        from huggingface_hub import constants
        print(json.dumps({"attempts": attempts, "offline": constants.HF_HUB_OFFLINE}))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_HOME"] = str(tmp_path / "hf")  # an empty cache: nothing to read instead of asking the hub
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["offline"] is False  # the flag really was unset in the child
    assert report["attempts"] == []
