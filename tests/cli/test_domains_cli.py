"""Corpus prompt sets, `compare-domains`, `sample` and `compare` end to end, and their bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geoprobe.domains import DomainComparison
from geoprobe.scan import ScanResult
from tests.cli.test_cli import run_cli
from tests.conftest import requires_smollm2

SMALL = ["--candidates", "60", "--per-quintile", "4", "--min-tokens", "8", "--max-prompt-tokens", "32"]
FAST_SCAN = ["--no-init-baseline", "--batch-size", "8"]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOPROBE_ENTROPY_CACHE", str(tmp_path / "entropy"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_prompts_lists_every_set_with_availability(capsys, monkeypatch):
    from geoprobe.corpora import DOMAINS

    code, out, _ = run_cli(["prompts", "--json"], capsys, monkeypatch)
    rows = {r["set"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"builtin", "mixed", *DOMAINS}
    assert rows["builtin"]["available"] and rows["code"]["available"]  # the stdlib is always here


def test_scan_domain_on_a_twin_records_the_sampled_set(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    code, stdout, err = run_cli(
        [
            "scan",
            "--model",
            "twin:llama-3.2-1b",
            "--domain",
            "code",
            *SMALL,
            *FAST_SCAN,
            "--seed",
            "3",
            "--out",
            str(out),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    res = ScanResult.load(out / "results.json")
    ps = res.prompt_set
    assert ps["name"] == "code" and ps["kind"] == "corpus" and ps["seed"] == 3 and ps["n"] == 20
    assert ps["domain_counts"] == {"code": 20} and ps["sampling"]["per_stratum"] == 4
    assert ps["hash"] == res.provenance["prompts_hash"] and res.config.prompts == "code"
    assert "set code" in stdout and ps["hash"][:12] in stdout


def test_capture_of_a_corpus_set_records_it(tmp_path, capsys, monkeypatch):
    from geoprobe.capture import Capture

    code, _, err = run_cli(
        [
            "capture",
            "--model",
            "twin:llama-3.2-1b",
            "--prompts",
            "news",
            "--layers",
            "-1",
            "--seed",
            "5",
            "--out",
            str(tmp_path / "cap"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    cap = Capture.load(tmp_path / "cap")
    ps = cap.extra["prompt_set"]
    assert ps["name"] == "news" and ps["seed"] == 5 and ps["n"] == cap.n_prompts == 75
    assert ps["hash"] == cap.provenance.prompts_hash and ps["domain_counts"] == {"news": 75}


def test_sample_then_scan_two_models_on_the_same_prompts_then_compare(tmp_path, capsys, monkeypatch):
    pfile = tmp_path / "p.jsonl"
    code, out, err = run_cli(
        ["sample", "--model", "twin:llama-3.2-1b", "--prompts", "mixed", *SMALL, "--out", str(pfile)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    rows = [json.loads(line) for line in pfile.read_text(encoding="utf-8").splitlines()]
    assert (
        len(rows) == 20 and {r["quintile"] for r in rows} == {1, 2, 3, 4, 5} and len({r["domain"] for r in rows}) >= 3
    )
    runs = []
    for model in ("twin:llama-3.2-1b", "twin:pythia-410m"):
        runs.append(tmp_path / model.replace(":", "-"))
        code, out, err = run_cli(
            ["scan", "--model", model, "--prompts", str(pfile), *FAST_SCAN, "--out", str(runs[-1])], capsys, monkeypatch
        )
        assert code == 0, err
    hashes = {ScanResult.load(r / "results.json").provenance["prompts_hash"] for r in runs}
    assert len(hashes) == 1  # both models saw exactly the sampled prompts
    code, out, err = run_cli(["compare", *map(str, runs), "--out", str(tmp_path / "cmp")], capsys, monkeypatch)
    assert code == 0, err
    doc = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert doc["kind"] == "geoprobe.compare" and doc["global_pca"] is not None
    assert len(doc["global_pca"]["prompts"]) == 20 and "warning" not in err
    assert (tmp_path / "cmp" / "compare.html").stat().st_size > 1_000_000
    # again without --force: refused, nothing changed
    before = (tmp_path / "cmp" / "comparison.json").read_bytes()
    code, out, err = run_cli(["compare", *map(str, runs), "--out", str(tmp_path / "cmp")], capsys, monkeypatch)
    assert code == 2 and "--force" in _one_error_line(err)
    assert (tmp_path / "cmp" / "comparison.json").read_bytes() == before


def test_compare_warns_when_models_saw_different_prompts(tmp_path, capsys, monkeypatch):
    runs = []
    for i, model in enumerate(("twin:llama-3.2-1b", "twin:mistral-7b")):
        p = tmp_path / f"p{i}.txt"
        p.write_text("\n".join(f"Prompt {i}-{j} says that the weather" for j in range(12)), encoding="utf-8")
        runs.append(tmp_path / f"run{i}")
        code, out, err = run_cli(
            ["scan", "--model", model, "--prompts", str(p), *FAST_SCAN, "--out", str(runs[-1])], capsys, monkeypatch
        )
        assert code == 0, err
    hashes = [ScanResult.load(r / "results.json").provenance["prompts_hash"][:12] for r in runs]
    code, out, err = run_cli(["compare", *map(str, runs), "--out", str(tmp_path / "cmp")], capsys, monkeypatch)
    assert code == 0, err
    assert "warning" in err and all(h in err for h in hashes)
    # said once, as a warning (it was printed again as a note after the table)
    flat = " ".join(err.split())  # rich wraps the lines at the console's width
    # each set named by its own name (issue 39 case 3: "different mixed prompt sets (mixed … vs builtin …)")
    assert flat.count("scanned on different prompt sets (") == 1 and "mixed prompt sets" not in flat, err
    assert flat.startswith("warning: models"), err
    stored = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert stored["global_pca"] is None and any("different prompt sets (" in n for n in stored["notes"])


def test_compare_domains_on_a_twin_writes_table_report_and_prompts(tmp_path, capsys, monkeypatch):
    out = tmp_path / "dom"
    args = [
        "compare-domains",
        "--model",
        "twin:llama-3.2-1b",
        "--domains",
        "math,code",
        "--domain-candidates",
        "40",
        *SMALL,
        "--n-resamples",
        "50",
        "--n-permutations",
        "50",
        "--out",
        str(out),
    ]
    code, stdout, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    cmp = DomainComparison.load(out / "domains.json")
    assert cmp.domains == ("math", "code") and set(cmp.sets) == {
        "mixed",
        "math",
        "math-control",
        "code",
        "code-control",
    }
    assert {s.n for s in cmp.sets.values()} == {20}
    assert cmp.versus_mixed("math") is not None and cmp.get("math-control", "math") is not None
    rows = [json.loads(line) for line in (out / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]
    by_set: dict = {}
    for r in rows:
        by_set.setdefault(r["set"], []).append(r)
    assert {r["domain"] for r in by_set["math"]} == {"math"}
    # a control comes from other domains and never reuses the mixed set's prompts
    assert "math" not in {r["domain"] for r in by_set["math-control"]}
    assert not {r["prompt"] for r in by_set["math-control"]} & {r["prompt"] for r in by_set["mixed"]}
    assert set(cmp.balance) == {"math", "code"}
    html = (out / "domains.html").read_text(encoding="utf-8")
    assert "79.6 / 99.7" in html and 'id="fig-differences"' in html
    assert "mixed" in stdout and "layer 2" in stdout
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and "--force" in _one_error_line(err)


def test_too_few_candidates_in_a_domain_says_how_many(tmp_path, capsys, monkeypatch):
    import geoprobe.corpora as corpora

    real = corpora.candidates
    monkeypatch.setattr(corpora, "candidates", lambda domains, n, **k: real(domains, min(n, 12), **k))
    code, _, err = run_cli(
        ["scan", "--model", "twin:llama-3.2-1b", "--domain", "math", *SMALL, "--out", str(tmp_path / "o")],
        capsys,
        monkeypatch,
    )
    line = _one_error_line(err)
    assert code == 2 and "yields 12 candidate passage(s)" in line and "--per-quintile" in line
    assert not (tmp_path / "o").exists()


def test_equal_entropies_make_quintiles_impossible(tmp_path, capsys, monkeypatch):
    import geoprobe.sampling as sampling

    monkeypatch.setattr(sampling, "candidate_entropies", lambda model, texts, **k: np.full(len(texts), 0.5))
    code, _, err = run_cli(
        ["scan", "--model", "twin:llama-3.2-1b", "--prompts", "mixed", *SMALL, "--out", str(tmp_path / "o")],
        capsys,
        monkeypatch,
    )
    line = _one_error_line(err)
    assert code == 2 and "1 distinct" in line and "impossible" in line


@pytest.mark.parametrize(
    "args, needle",
    [
        (["scan", "--domain", "poetry"], "unknown prompt set or domain 'poetry'; available: builtin, mixed,"),
        (["scan", "--prompts", "poetry"], "unknown prompt set or domain 'poetry'"),
        (["compare-domains", "--domains", "math,poetry"], "'poetry'"),
        (["scan", "--prompts", "math", "--domain", "code"], "disagree"),
        (["scan", "--domain", "math", "--per-quintile", "0"], "--per-quintile"),
        (["compare-domains", "--domain-candidates", "10"], "--domain-candidates 10 is below the 75"),
        (["sample", "--prompts", "builtin", "--out", "{tmp}/p.jsonl"], "not a corpus set"),
        (["compare", "{tmp}/nothing"], "compare"),
    ],
)
def test_bad_input_gets_one_line(args, needle, tmp_path, capsys, monkeypatch):
    argv = [a.format(tmp=tmp_path) for a in args]
    if argv[0] in ("scan", "compare-domains", "sample"):
        argv += ["--model", "twin:llama-3.2-1b"]
    if argv[0] in ("scan", "compare-domains"):
        argv += ["--out", str(tmp_path / "o")]
    code, _, err = run_cli(argv, capsys, monkeypatch)
    line = _one_error_line(err)
    assert code != 0 and needle in line, line
    assert not (tmp_path / "o").exists()


@requires_smollm2
@pytest.mark.slow
def test_compare_domains_on_smollm2_end_to_end(tmp_path, capsys, monkeypatch):
    """Real weights: the math set's sampled entropies span the quintiles, the table is complete."""
    out = tmp_path / "dom"
    code, stdout, err = run_cli(
        [
            "compare-domains",
            "--model",
            "smollm2-135m",
            "--domains",
            "math",
            "--domain-candidates",
            "60",
            *SMALL,
            "--n-resamples",
            "100",
            "--n-permutations",
            "100",
            "--out",
            str(out),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    cmp = DomainComparison.load(out / "domains.json")
    assert cmp.model == "smollm2-135m" and cmp.layer == 29
    for s in cmp.sets.values():
        assert 0 < s.pc1.value < 1 and s.pc1.low <= s.pc1.value <= s.pc1.high and s.pr.value >= 1
    sets = cmp.provenance["sets"]
    assert sets["math"]["domain_counts"] == {"math": 20} and sets["mixed"]["corpus_version"].startswith("1")
    assert max(sets["math"]["entropy_quantiles"]) > min(sets["math"]["entropy_quantiles"])


def test_run_a_domains_recipe(tmp_path, capsys, monkeypatch):
    recipe = tmp_path / "d.toml"
    recipe.write_text(
        '[probe]\ncommand = "compare-domains"\n[domains]\nrun = ["code"]\ndomain_candidates = 30\n'
        "[sampling]\ncandidates = 60\nper_quintile = 4\nmin_tokens = 8\nmax_tokens = 32\n"
        "[analyses]\nn_resamples = 50\nn_permutations = 50\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    code, _, err = run_cli(
        ["run", str(recipe), "--model", "twin:llama-3.2-1b", "--seed", "2", "--out", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    cmp = DomainComparison.load(out / "domains.json")
    assert cmp.domains == ("code",) and cmp.provenance["config"]["seed"] == 2
    code, _, err = run_cli(
        ["run", str(recipe), "--model", "twin:llama-3.2-1b", "--layers", "0", "--out", str(tmp_path / "o2")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "--layers is not used by recipe" in _one_error_line(err)


def test_compare_models_recipe_scans_every_model_on_the_same_prompts(tmp_path, capsys, monkeypatch):
    from geoprobe.compare.config import CompareModelsConfig
    from geoprobe.recipes import load_probe

    shipped = load_probe(__import__("pathlib").Path(__file__).resolve().parents[2] / "probes" / "compare.toml")
    assert shipped.command == "compare-models" and shipped.config.sampler == "smollm2-135m"
    assert isinstance(shipped.config, CompareModelsConfig) and shipped.config.sets == ("mixed", "math")
    recipe = tmp_path / "c.toml"
    recipe.write_text(
        '[probe]\ncommand = "compare-models"\n[models]\nrun = ["twin:llama-3.2-1b", "twin:phi-2"]\n'
        'sets = ["mixed", "code"]\n[sampling]\ncandidates = 60\nper_quintile = 4\nmin_tokens = 8\n'
        "max_tokens = 32\n[analyses]\ninit_baseline = false\nn_resamples = 50\npca_resamples = 20\n"
        "null_draws = 20\nn_permutations = 50\n",
        encoding="utf-8",
    )
    out = tmp_path / "cmp"
    code, stdout, err = run_cli(["run", str(recipe), "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    doc = json.loads((out / "comparison.json").read_text())
    assert len(doc["rows"]) == 2 and doc["global_pca"] is not None and "warning" not in err
    res = ScanResult.load(out / "twin-phi-2-code" / "results.json")
    assert res.prompt_set["domain"] == "code" and res.prompt_set["sampled_set"] == "code"
    mixed = {
        ScanResult.load(out / f"{m}-mixed").provenance["prompts_hash"] for m in ("twin-llama-3.2-1b", "twin-phi-2")
    }
    assert len(mixed) == 1
    bad = tmp_path / "bad.toml"
    bad.write_text('[probe]\ncommand = "compare-models"\n[models]\nrun = ["twin:phi-2"]\n', encoding="utf-8")
    code, _, err = run_cli(["run", str(bad), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 2 and "at least two distinct models" in _one_error_line(err)


@pytest.mark.parametrize("module", ["geoprobe.cli", "geoprobe"])
def test_corpus_commands_exist_when_run_as_a_module(module):
    import os
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", module, "prompts", "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert {row["set"] for row in json.loads(r.stdout)} >= {"mixed", "builtin", "math"}
