"""Two `geoprobe scan` runs with the same seed on CPU, in separate processes, agree bit for bit:
every number of results.json except the wall-clock keys (WALL_CLOCK_KEYS), and every capture array."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.scan.test_resume import comparable  # drops geoprobe.scan.run.WALL_CLOCK_KEYS

ROOT = Path(__file__).resolve().parents[2]


def _diff(a, b, where: str = "") -> list[str]:
    """Paths where ``a`` and ``b`` differ (floats compared with ==, types must match)."""
    if type(a) is not type(b):
        return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
    if isinstance(a, dict):
        keys = list(dict.fromkeys([*a, *b]))
        return [
            d
            for k in keys
            for d in (
                _diff(a.get(k), b.get(k), f"{where}.{k}") if k in a and k in b else [f"{where}.{k}: only in one run"]
            )
        ]
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def test_two_scans_with_one_seed_are_bit_identical(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(
        "\n".join(f"Line {i}: the river that runs past the old mill in town {3 * i} is" for i in range(16)),
        encoding="utf-8",
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    runs = [tmp_path / "a", tmp_path / "b"]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "geoprobe.cli",
                "scan",
                "--model",
                "twin:llama-3.2-1b",
                "--prompts",
                str(prompts),
                "--out",
                str(out),
                "--batch-size",
                "4",
                "--seed",
                "7",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in runs
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]

    raw = [json.loads((out / "results.json").read_text(encoding="utf-8")) for out in runs]
    for d in raw:  # the excluded keys exist (so the constant names real wall-clock fields)
        assert isinstance(d["timings"], dict) and d["timings"] and isinstance(d["provenance"]["created"], str)
    a, b = (comparable(out / "results.json") for out in runs)
    assert a["provenance"]["seed"] == 7 and a["manifold"] and a["scorecard"]
    assert _diff(a, b) == []

    from safetensors.numpy import load_file

    arrays = [load_file(str(out / "capture" / "arrays.safetensors")) for out in runs]
    assert sorted(arrays[0]) == sorted(arrays[1]) and {"values", "keys", "attn_entropy", "w_k"} <= set(arrays[0])
    for k in arrays[0]:
        assert arrays[0][k].dtype == arrays[1][k].dtype and arrays[0][k].tobytes() == arrays[1][k].tobytes(), k
