"""`geoprobe sula` end to end on a twin and on SmolLM2, and its bad input."""

from __future__ import annotations

import pytest

from geoprobe.sula import SulaResult
from tests.cli.test_cli import run_cli
from tests.conftest import requires_smollm2

SMALL = ["--k", "0,1,2", "--n-per-k", "4", "--n-resamples", "50"]


def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_sula_on_a_twin_writes_results_and_report(tmp_path, capsys, monkeypatch):
    out = tmp_path / "s"
    code, stdout, err = run_cli(
        ["sula", "--model", "twin:llama-3.2-1b", *SMALL, "--seed", "2", "--out", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    res = SulaResult.load(out / "sula.json")
    assert set(res.conditions) == {"main", "lexical_remap", "shuffled", "ablated"}
    assert res.config.seed == 2 and res.config.k_values == (0, 1, 2) and res.main.n == 12
    html = (out / "sula.html").read_text(encoding="utf-8")
    assert "0.44" in html and html.count('class="plotly-graph-div"') == 3 and "main" in stdout
    # both targets, and the paper's number beside the posterior entropy's
    assert "Against the posterior entropy" in html and "Against the predictive entropy" in html
    assert "The paper&#x27;s numbers (posterior entropy)" in html or "The paper's numbers (posterior entropy)" in html
    m = res.main
    assert (
        f"main: SULA MAE {m.posterior_metrics.mae:.3f} bits against the posterior entropy (the paper's target; "
        f"Pythia-410M 0.44), {m.metrics.mae:.3f} against the predictive entropy" in stdout
    )
    assert res.main.posterior_metrics.target == "posterior entropy"
    code, _, err = run_cli(["sula", "--model", "twin:llama-3.2-1b", *SMALL, "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "--force" in _one_error_line(err)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--labels", "zorb,bip"], "tokenises as"),
        (["--labels", "bip"], "two different labels"),
        (["--agreement", "1.5"], "--agreement"),
        (["--k", "0,x"], "--k '0,x'"),
        (["--k", "40000", "--n-per-k", "1"], "pass --k values of 1024 or less"),  # was refused by the context check
        (["--n-per-k", "0"], "--n-per-k"),
    ],
)
def test_bad_sula_input_gets_one_line(args, needle, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["sula", "--model", "twin:llama-3.2-1b", "--out", str(tmp_path / "o"), *args], capsys, monkeypatch
    )
    line = _one_error_line(err)
    assert code == 2 and needle in line, line
    assert not (tmp_path / "o").exists()


@requires_smollm2
@pytest.mark.slow
def test_sula_on_smollm2_is_better_than_chance_at_tracking_the_posterior(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        [
            "sula",
            "--model",
            "smollm2-135m",
            "--k",
            "0,2,4",
            "--n-per-k",
            "4",
            "--n-resamples",
            "100",
            "--out",
            str(tmp_path / "s"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    main = SulaResult.load(tmp_path / "s" / "sula.json").main
    assert 0 <= main.metrics.mae.value < 1 and main.metrics.label_mass.value > 0.01


def test_sula_on_a_qwen2_type_twin(tmp_path, capsys, monkeypatch):
    out = tmp_path / "q"
    code, _, err = run_cli(["sula", "--model", "twin:qwen2", *SMALL, "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    res = SulaResult.load(out / "sula.json")
    assert res.main.n == 12 and res.provenance["model_id"] == "twin:qwen2:tiny"
