"""Issue 18, part 1: the architectures of the issue's sample, each a tiny random-init twin
(``twin:MODEL_TYPE``), end to end through the CLI.

Every type runs ``scan`` (capture, W_K with its random-init baseline built from the same config,
every analyser, the report) and ``intervene`` (a full cut along the entropy axis, edits inside
geoprobe's attention function or, for GPT-Neo/Bloom (and GPT-J before transformers 5.24), on the V
projection; CodeGen, refused before 5.24, from 5.24 on). One type per
mechanism also runs ``sula``, ``positional`` and ``compare`` (against a Llama twin's scan on the
same prompts): absolute positions (gpt2), ALiBi computed inline (bloom), inline SDPA (falcon),
soft-capping + sliding window (gemma2), mixture of experts (qwen3_moe), multi-query (gpt_bigcode).
Correctness per type (entropy vs eager, values vs the V projection, W_K) is in
tests/models/test_attention.py; this file checks that every command reaches them.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.cli.test_cli import run_cli
from tests.models.test_attention import skip_where_inline

TYPES = (
    "gpt2",
    "opt",
    "gpt_neo",
    "bloom",
    "gptj",
    "codegen",
    "stablelm",
    "cohere",
    "gpt_bigcode",
    "falcon",
    "phi3",
    "qwen3",
    "olmo2",
    "qwen2",
    "gemma",
    "gemma2",
    "starcoder2",
    "qwen3_moe",
    "olmoe",
)
ALL_COMMANDS = ("gpt2", "bloom", "falcon", "gemma2", "qwen3_moe", "gpt_bigcode")
SCAN = ["--batch-size", "6"]


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    p = tmp_path_factory.mktemp("reach") / "p.txt"
    p.write_text(
        "".join(
            f"Sentence {i}: the {w} walked to the market and bought\n"
            for i, w in enumerate("cat dog fox owl bee ant elk yak emu cow hen pig".split())
        )
    )
    return p


@pytest.fixture(scope="module")
def reference(prompts, tmp_path_factory):
    """A Llama twin's scan of the same prompts, the other side of every ``compare``."""
    from tests.cli.test_cli import run_main

    out = tmp_path_factory.mktemp("reach") / "llama"
    args = ["scan", "--model", "twin:llama", "--prompts", str(prompts), *SCAN, "--no-init-baseline", "--out", str(out)]
    code, _, err = run_main(args)
    assert code == 0, err
    return out


@pytest.mark.parametrize("model_type", TYPES)
def test_every_command_reaches_the_architecture(model_type, prompts, reference, tmp_path, capsys, monkeypatch):
    skip_where_inline(model_type)  # CodeGen: from transformers 5.24 on
    model = f"twin:{model_type}"
    scan_dir = tmp_path / "scan"
    code, _, err = run_cli(
        ["scan", "--model", model, "--prompts", str(prompts), *SCAN, "--out", str(scan_dir)], capsys, monkeypatch
    )
    assert code == 0, err
    res = json.loads((scan_dir / "results.json").read_text())
    assert res["provenance"]["model_id"] == f"{model}:tiny" and res["n_prompts"] == 12
    orth = res["orthogonality"]
    assert orth is not None and orth["init_label"], "no random-init W_K baseline"
    assert (scan_dir / "report.html").stat().st_size > 10_000

    code, _, err = run_cli(
        [
            "intervene",
            "--model",
            model,
            "--layers",
            "1",
            "--strength",
            "1",
            "--n-per-k",
            "4",
            "--controls",
            "1",
            "--n-resamples",
            "20",
            "--out",
            str(tmp_path / "iv"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    rows = json.loads((tmp_path / "iv" / "intervene.json").read_text())["rows"]
    assert any(r["metrics"]["kl"]["value"] > 0 for r in rows)

    if model_type not in ALL_COMMANDS:
        return
    code, _, err = run_cli(
        [
            "sula",
            "--model",
            model,
            "--k",
            "0,1,2",
            "--n-per-k",
            "4",
            "--n-resamples",
            "50",
            "--out",
            str(tmp_path / "sula"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    code, _, err = run_cli(
        [
            "positional",
            "--model",
            model,
            "--lengths",
            "8,16",
            "--n-prompts",
            "4",
            "--n-resamples",
            "10",
            "--layers",
            "-1",
            "--out",
            str(tmp_path / "pos"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    d = json.loads((tmp_path / "pos" / "positional.json").read_text())
    assert d["provenance"]["model_id"] == f"{model}:tiny"
    code, _, err = run_cli(
        ["compare", str(reference), str(scan_dir), "--out", str(tmp_path / "cmp")], capsys, monkeypatch
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert doc["kind"] == "geoprobe.compare" and math.isfinite(len(doc["global_pca"]["prompts"]))
