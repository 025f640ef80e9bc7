"""`geoprobe sula` end to end on a twin and on SmolLM2, and its bad input."""

from __future__ import annotations

import json

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
    """Every prompt scored (--min-label-mass 0): the twin's label mass is tiny, see the test below."""
    out = tmp_path / "s"
    code, stdout, err = run_cli(
        ["sula", "--model", "twin:llama-3.2-1b", *SMALL, "--seed", "2", "--min-label-mass", "0", "--out", str(out)],
        capsys,
        monkeypatch,
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
    assert res.config.min_label_mass == 0.0 and res.flagged == () and res.main.metrics.n == 12
    code, _, err = run_cli(["sula", "--model", "twin:llama-3.2-1b", *SMALL, "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "--force" in _one_error_line(err)


def test_a_twin_whose_label_mass_is_tiny_is_flagged_everywhere(tmp_path, capsys, monkeypatch):
    """Issue 27: a random-init twin puts about 4e-5 of its next-token mass on the two labels (2 of
    49,152 tokens), so its two-label entropy is noise: with the default threshold (0.01) every prompt
    is left out and every condition flagged, in the terminal, in sula.json and on the page."""
    out = tmp_path / "s"
    code, stdout, err = run_cli(
        ["sula", "--model", "twin:llama-3.2-1b", *SMALL, "--out", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    text = " ".join(stdout.split())  # rich wraps long lines
    assert "main: flagged, mean label mass" in text and "< 0.01 (--min-label-mass)" in text
    assert "bits against the posterior entropy" not in text  # no headline number from noise
    assert (
        "left out of the calibration metrics, label mass < 0.01 (--min-label-mass): main 12 of 12, "
        "lexical_remap 12 of 12, shuffled 12 of 12, ablated 12 of 12" in text
    )
    assert "flagged (mean label mass < 0.01;" in text and text.count("flagged") >= 4 * 3
    d = json.loads((out / "sula.json").read_text(encoding="utf-8"))
    assert d["config"]["min_label_mass"] == 0.01
    for c in d["conditions"].values():
        assert c["flagged"] is True and all(c["low_mass"]) and c["metrics"]["n"] == 0
        assert c["metrics"]["n_excluded"] == 12 and c["metrics"]["mae"]["value"] is None
        assert max(c["label_mass"]) < 1e-3
    res = SulaResult.load(out / "sula.json")
    assert res.flagged == ("main", "lexical_remap", "shuffled", "ablated")
    html = (out / "sula.html").read_text(encoding="utf-8")
    assert html.count("flagged (label mass &lt; 0.01)") == 4 * 3 * 2  # 3 cells, 4 conditions, 2 targets
    assert "Prompts left out: main 12 of 12" in html and "Flagged: main" in html


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


def test_some_prompts_left_out_the_headline_says_over_which(tmp_path, capsys, monkeypatch):
    """Planted label probabilities through the CLI: the k = 0 prompts (labels never shown) carry
    1e-7 of mass and are left out, the others 0.5; the ablated prompts 0.001 (flagged). The headline
    says it is over the scored prompts and that the paper's number is over all of them."""
    import math

    import numpy as np

    from geoprobe.sula import run as sula_run

    def planted(model, texts, label_ids, *, batch_size=16, progress=None):
        mass = [0.001 if "item:" in t else 1e-7 if t == "test:" else 0.5 for t in texts]
        return np.array([(math.log(m * 0.7), math.log(m * 0.3)) for m in mass])

    monkeypatch.setattr(sula_run, "label_logprobs", planted)
    out = tmp_path / "s"
    code, stdout, err = run_cli(
        ["sula", "--model", "twin:llama-3.2-1b", *SMALL, "--out", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    res = SulaResult.load(out / "sula.json")
    assert (
        res.flagged == ("ablated",)
        and res.main.metrics.n == 8
        and res.main.low_mass.tolist() == [True] * 4 + [False] * 8
    )
    text = " ".join(stdout.split())
    assert (
        f"main: SULA MAE {res.main.posterior_metrics.mae:.3f} bits against the posterior entropy (the paper's target), "
        f"{res.main.metrics.mae:.3f} against the predictive entropy, over the 8 of 12 prompts with label mass ≥ 0.01 "
        "(Pythia-410M's 0.44 is over every prompt: --min-label-mass 0 scores them all)" in text
    )
    assert "main 4 of 12, lexical_remap 4 of 12, shuffled 4 of 12, ablated 12 of 12" in text
    assert "left out of the comparison; docs/sula.md): ablated 0.00067" in text  # (8 × 0.001 + 4 × 1e-7) / 12
    html = (out / "sula.html").read_text(encoding="utf-8")
    assert "leaves out the 4 of 12 main prompts whose label mass is below 0.01" in html
    assert html.count("flagged (label mass &lt; 0.01)") == 3 * 2  # ablated only: 3 cells, 2 targets
