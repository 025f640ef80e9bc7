"""`geoprobe scan`, `run` and `report` end to end on the embedded SmolLM2 and on twins."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from geoprobe.scan import ScanResult
from tests.cli.test_cli import run_cli
from tests.conftest import requires_smollm2

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smollm2_scan(tmp_path_factory):
    """One real scan of the embedded model with the default prompts, in a subprocess (as a user runs it)."""
    out = tmp_path_factory.mktemp("scan") / "run"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run(
        [sys.executable, "-m", "geoprobe.cli", "scan", "--out", str(out), "--scatter-layers", "10"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return out, r


@requires_smollm2
@pytest.mark.slow
def test_scan_of_the_embedded_model_end_to_end(smollm2_scan):
    out, r = smollm2_scan
    assert r.returncode == 0, r.stderr[-2000:]
    res = ScanResult.load(out / "results.json")
    assert res.model == "smollm2-135m" and res.n_layers == 30 and res.layers == tuple(range(30))
    prov = res.provenance
    assert prov["source"] == "gguf" and len(prov["weights"]) >= 16 and len(prov["prompts_hash"]) == 64
    assert prov["seed"] == 0 and prov["versions"]["torch"].startswith("2.")
    assert [c.key for c in res.scorecard.criteria] == ["value_manifold", "key_orthogonality", "attention_focusing"]
    for c in res.scorecard.criteria:  # every criterion has a finite value, a CI (not a count), a null verdict
        assert c.beats_null in (True, False) and c.contrast.low <= c.contrast.value <= c.contrast.high
        assert c.passes == (c.threshold_met and c.beats_null)  # passes only when it also beats its null
        if c.key != "key_orthogonality":
            assert c.value.low <= c.value.high
        else:  # a fraction of layers is a count: no interval
            assert np.isnan(c.value.low) and np.isnan(c.value.high)
    assert res.init_null.source == "twin" and res.init_null.draws == 3  # random-init draws of its architecture
    # orthogonality of the trained W_K versus the architecture's own init (both measured)
    assert res.orthogonality.init_per_head is not None
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="manifold-scatter-29"' in html and 'id="manifold-scatter-10"' in html
    assert "SmolLM2" in r.stdout or "smollm2" in r.stdout
    assert res.timings["capture_s"] > 0 and res.timings["analyse_s"] > 0


@requires_smollm2
@pytest.mark.slow
def test_existing_run_is_refused_and_report_rebuilds_without_the_model(smollm2_scan, tmp_path, capsys, monkeypatch):
    out, r = smollm2_scan
    assert r.returncode == 0, r.stderr[-2000:]
    before = (out / "results.json").read_bytes()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    # the refusals in this process (the scan above is the subprocess run); the rebuild below in a fresh one
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run_cli(["scan", "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "--force" in err and "Traceback" not in err
    assert (out / "results.json").read_bytes() == before
    # report: refuses to overwrite, rebuilds with --force or to a new file; no model is loaded
    code, _, err = run_cli(["report", str(out / "results.json")], capsys, monkeypatch)
    assert code == 2 and "already exists" in err
    new = tmp_path / "again.html"
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from geoprobe.cli import main; sys.argv=['geoprobe',"
            f"'report',{str(out / 'results.json')!r},'--out',{str(new)!r}]; main();"
            "import sys as s; assert 'transformer_lens' not in s.modules, 'loaded a model'",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert code.returncode == 0, code.stderr
    assert new.stat().st_size > 1_000_000  # plotly.js embedded


def test_run_probe_recipe_on_a_twin(tmp_path, capsys, monkeypatch):
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"Line {i}: the quick brown fox" for i in range(10)), encoding="utf-8")
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        f'[probe]\nname = "mini"\ncommand = "scan"\n[prompts]\nfile = "{prompts.name}"\n[analyses]\n'
        'run = ["manifold", "alignment", "focusing"]\nnull_draws = 20\npca_resamples = 20\n'
    )
    code, out, err = run_cli(
        ["run", str(recipe), "--model", "twin:llama-3.2-1b", "--out", str(tmp_path / "o"), "--layers", "0,-1"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    res = ScanResult.load(tmp_path / "o")
    assert res.layers == (0, 2) and res.orthogonality is None and res.config.null_draws == 20


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--prompts", "{few}"], "needs at least 10"),
        (["--prompts", "{ok}", "--layers", "0,7"], "layer 7 is out of range for a model with 3 layers (0..2)"),
        (["--prompts", "{ok}", "--batch-size", "0"], "batch size 0 must be at least 1"),
    ],
)
def test_scan_bad_input_one_line_errors(tmp_path, capsys, monkeypatch, args, needle):
    few = tmp_path / "few.txt"
    few.write_text("a b c\nd e f\nthe cat\n", encoding="utf-8")
    ok = tmp_path / "ok.txt"
    ok.write_text("\n".join(f"sentence {i} is here" for i in range(10)), encoding="utf-8")
    args = [a.format(few=few, ok=ok) for a in args]
    code, out, err = run_cli(
        ["scan", "--model", "twin:llama-3.2-1b", "--out", str(tmp_path / "o"), *args], capsys, monkeypatch
    )
    assert code == 2 and needle in err, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert not (tmp_path / "o" / "results.json").exists()


def test_duplicate_prompts_warn_with_the_count(tmp_path, capsys, monkeypatch):
    p = tmp_path / "dup.txt"
    p.write_text("\n".join([f"unique prompt {i} goes" for i in range(10)] + ["unique prompt 3 goes"] * 2))
    code, out, err = run_cli(
        [
            "scan",
            "--model",
            "twin:llama-3.2-1b",
            "--prompts",
            str(p),
            "--out",
            str(tmp_path / "o"),
            "--layers",
            "-1",
            "--no-init-baseline",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert "2 duplicate prompt(s) dropped" in err
    res = ScanResult.load(tmp_path / "o" / "results.json")
    assert res.n_prompts == 10 and any("2 duplicate" in n for n in res.notes)


def test_report_of_an_incompatible_results_file(tmp_path, capsys, monkeypatch):
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"kind": "geoprobe.scan", "version": 0, "geoprobe": "0.0.1"}))
    code, out, err = run_cli(["report", str(p)], capsys, monkeypatch)
    assert code == 2 and "scan results file version 0" in err and "re-run geoprobe scan" in err


def test_permutation_null_and_cis_on_every_layer(tmp_path, capsys, monkeypatch):
    p = tmp_path / "p.txt"
    words = "apple river music stone cloud paper tiger light engine garden silver window".split()
    p.write_text("\n".join(f"Sentence {i} is about the {w}" for i, w in enumerate(words)))  # distinct final tokens
    code, out, err = run_cli(
        [
            "scan",
            "--model",
            "twin:llama-3.2-1b",
            "--prompts",
            str(p),
            "--out",
            str(tmp_path / "o"),
            "--null",
            "permute",
            "--ci-layers",
            "all",
            "--no-init-baseline",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    res = ScanResult.load(tmp_path / "o")
    assert res.config.null_kind == "permute" and res.config.ci_layers == "all"
    assert all(b.kind == "permute" for b in res.manifold.null)
    assert all(e.low <= e.value <= e.high for e in res.manifold.pc1)  # finite CIs on every layer
    assert all(e.low == e.low for e in res.alignment.spearman)  # not NaN
    code, out, err = run_cli(
        ["scan", "--model", "twin:llama-3.2-1b", "--prompts", str(p), "--out", str(tmp_path / "o2"), "--null", "bogus"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "pass --null gaussian|permute" in err and "\n" not in err.strip()
