"""`geoprobe intervene` end to end on a twin, the result file, and bad input."""

from __future__ import annotations

import json
import math

import pytest

from geoprobe.intervene import InterventionResult, paper_experiments
from tests.cli.test_cli import run_cli

SMALL = ["--n-per-k", "4", "--controls", "2", "--n-resamples", "50"]


def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_paper_layers_at_the_same_relative_depth():
    assert paper_experiments(24) == ((12,), (23,), (8, 12, 16, 20, 23))  # Pythia-410M itself
    assert paper_experiments(30) == ((15,), (29,), (10, 15, 20, 25, 29))  # SmolLM2-135M
    assert all(0 <= x < 3 for e in paper_experiments(3) for x in e)


def test_intervene_on_a_twin_end_to_end(tmp_path, capsys, monkeypatch):
    out = tmp_path / "iv"
    code, stdout, err = run_cli(
        [
            "intervene",
            "--model",
            "twin:llama-3.2-1b",
            "--layers",
            "1",
            "--strength",
            "0.5,1",
            *SMALL,
            "--out",
            str(out),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    res = InterventionResult.load(out / "intervene.json")
    assert res.experiments() == [((1,), 0.5), ((1,), 1.0)] and len(res.rows) == 2 * 3
    full = next(r for r in res.rows if r.axis == "entropy" and r.strength == 1.0)
    half = next(r for r in res.rows if r.axis == "entropy" and r.strength == 0.5)
    # the full cut removes the axis coordinate at the edited layer: its correlation is undefined
    assert math.isnan(full.metrics["axis_entropy_rho"].value)
    assert math.isfinite(half.metrics["axis_entropy_rho"].value)
    assert full.metrics["kl"].value > 0 and 0 <= full.metrics["top1_agreement"].value <= 1
    assert res.baseline["top1_agreement"].value == 1.0 and "sula_mae" in res.baseline
    html = (out / "intervene.html").read_text(encoding="utf-8")
    assert "0.27 → 0.07" in html and 'id="fig-dose-response"' in html
    assert InterventionResult.from_dict(res.to_dict()).to_dict() == res.to_dict()
    # the verdict: one per strength, the full cut leads; the report and the terminal start with it
    v = res.verdict
    assert [x.strength for x in res.verdicts] == [0.5, 1.0] and v.strength == 1.0 and v.layers == (1,)
    assert [t.target for t in v.targets] == ["posterior entropy", "predictive entropy"]
    for t, key in zip(v.targets, ("sula_mae_posterior", "sula_mae")):
        # mean change of |Ĥ − H| per prompt is the change of the MAE the rows report
        assert t.axis_change.value == pytest.approx(full.metrics[key].value - res.baseline[key].value, abs=1e-12)
        ctrl = [r.metrics[key].value for r in res.rows if r.strength == 1.0 and r.axis != "entropy"]
        assert t.random_change.value == pytest.approx(sum(ctrl) / len(ctrl) - res.baseline[key].value, abs=1e-12)
        assert t.outcome in ("reads out", "steers", "inconclusive") and t.n_controls == 2
    assert [ln for ln in stdout.splitlines() if ln.strip()][0].startswith(
        "Verdict (layers 1, cut 1): against the posterior"
    )
    assert html.index(v.line[:40]) < html.index("Effects: entropy axis vs random axes")
    assert "verdicts" in json.loads((out / "intervene.json").read_text(encoding="utf-8"))
    code, _, err = run_cli(
        ["intervene", "--model", "twin:llama-3.2-1b", *SMALL, "--out", str(out)], capsys, monkeypatch
    )
    assert code == 2 and "--force" in _one_error_line(err)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--strength", "1.5"], "outside [0, 1]; pass --strength"),
        (["--layers", "7"], "--layers"),
        (["--op", "flip"], "--op cut|only|shift"),
        (["--controls", "0"], "--controls 0"),
        (["--n-per-k", "1"], "too few SULA prompts"),
        (["--strength", "a"], "--strength 'a'"),
    ],
)
def test_bad_intervene_input_gets_one_line(args, needle, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["intervene", "--model", "twin:llama-3.2-1b", "--out", str(tmp_path / "o"), *args], capsys, monkeypatch
    )
    line = _one_error_line(err)
    assert code == 2 and needle in line, line
    assert not (tmp_path / "o").exists()


def test_recipes_run_through_geoprobe_run(tmp_path, capsys, monkeypatch):
    from geoprobe.sula import SulaResult

    s = tmp_path / "s.toml"
    s.write_text('[probe]\ncommand = "sula"\n[sula]\nk_values = [0, 2]\nn_per_k = 4\n[analyses]\nn_resamples = 50\n')
    code, _, err = run_cli(
        ["run", str(s), "--model", "twin:llama-3.2-1b", "--seed", "3", "--out", str(tmp_path / "a")],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert SulaResult.load(tmp_path / "a" / "sula.json").config.seed == 3
    i = tmp_path / "i.toml"
    i.write_text(
        '[probe]\ncommand = "intervene"\n[intervene]\nexperiments = [[1]]\nstrengths = [1.0]\n'
        "n_controls = 2\nn_per_k = 4\n[analyses]\nn_resamples = 50\n"
    )
    code, _, err = run_cli(
        ["run", str(i), "--model", "twin:llama-3.2-1b", "--out", str(tmp_path / "b")], capsys, monkeypatch
    )
    assert code == 0, err
    assert InterventionResult.load(tmp_path / "b").experiments() == [((1,), 1.0)]


def test_intervene_on_a_qwen2_type_twin_end_to_end(tmp_path, capsys, monkeypatch):
    """An architecture without a TransformerBridge adapter: edits run in geoprobe's attention function."""
    out = tmp_path / "q"
    code, _, err = run_cli(
        [
            "intervene",
            "--model",
            "twin:qwen2",
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
            str(out),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    res = InterventionResult.load(out / "intervene.json")
    assert res.experiments() == [((1,), 1.0)] and len(res.rows) == 2
    full = next(r for r in res.rows if r.axis == "entropy")
    assert math.isnan(full.metrics["axis_entropy_rho"].value)  # the full cut removed the axis coordinate
    assert full.metrics["kl"].value > 0 and math.isfinite(full.metrics["perplexity_ratio"].value)
