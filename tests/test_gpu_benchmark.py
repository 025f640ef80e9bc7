"""The GPU run's CPU dry run (benchmarks/gpu/bench_gpu.py --dry-run): the same script, on the CPU with
tiny twins and one trial, so that it cannot rot between the tasks that are lent a GPU machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu" / "bench_gpu.py"


@pytest.fixture(scope="module")
def dry(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("gpu-dry")
    p = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out)], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)  # fmt: skip
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads((out / "gpu.json").read_text()), out


def test_every_section_ran(dry):
    r, out = dry
    for name in ("correct", "fast", "end_to_end"):
        assert "error" not in r[name], r[name].get("traceback")
    assert (out / "gpu.md").read_text().count("\n| ") >= 8


def test_capture_equals_the_models_own_eager_forward(dry):
    """float32 within 1e-4 of the prompt-alone eager forward on four architectures; bfloat16 within the
    stated tolerance of the float32 reference (keys included: pre-rotary in half precision too)."""
    c = dry[0]["correct"]
    for alias in ("pythia-410m", "phi-2", "llama-3.2-1b", "mistral-7b"):
        assert c[alias]["float32_ok"], c[alias]["float32"]
        assert c[alias]["bfloat16_ok"], c[alias]["bfloat16"]
        assert c[alias]["bfloat16"]["keys_l2_median"] < 0.03


def test_speed_rows_and_end_to_end(dry):
    r, out = dry
    rows = r["fast"]["rows"]
    assert [(x["tokens"], x["batch"]) for x in rows] == [(16, 1), (16, 4), (64, 1), (64, 4)]
    for x in rows:
        assert x["bare"]["n"] == 1 and x["ratio"]["geoprobe"] > 0
        assert "transformer_lens" in x["ratio"], x.get("transformer_lens_error")
    e = r["end_to_end"]
    assert e["scan"]["rc"] == 0, e["scan"]["tail"]
    assert e["sweep"]["rc"] == 0 and e["sweep"]["cells_done"] == 4, e["sweep"]["tail"]
    assert (out / "scan-results.json").exists() and (out / "sweep.parquet").exists()
