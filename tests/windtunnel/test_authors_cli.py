"""``--convention authors`` through the CLI at the tiny scale: ``windtunnel run`` (bijection), ``train`` +
``eval`` (HMM), the recipe key, and the convention recorded in run.json, windtunnel.json and the report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geoprobe.windtunnel.result import WindTunnelResult
from tests.cli.test_cli import run_cli


def test_run_bijection_authors_tiny_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "bij"
    args = ["windtunnel", "run", "--task", "bijection", "--convention", "authors", "--scale", "tiny", "--out", str(out)]
    code, stdout, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    spec = json.loads((out / "transformer" / "run.json").read_text())
    assert spec["task"] == {"V": 6, "K": 5, "name": "bijection", "convention": "authors"}
    res = WindTunnelResult.load(out)
    assert res.convention == "authors" and res.provenance["convention"] == "authors"
    assert res.lengths == (5,)  # scored at the 5 key positions, not the query
    np.testing.assert_allclose(res.at("transformer").curve_bayes, np.log2(6 - np.arange(5)), atol=1e-12)
    assert res.geometry is not None and res.ablations is not None  # the no-BOS probes run
    html = (out / "windtunnel.html").read_text()
    assert "convention: authors" in html and "authors&#x27; convention" in html
    # the query, scored on its own: recomputed here from the stored weights' predictive
    assert set(res.query) == {"transformer", "mlp"} and "needs key matching" in html
    q = res.query["transformer"]
    assert q.n == res.at("transformer").n and q.chance_kl == pytest.approx(np.log2(6))
    assert 0.0 <= q.accuracy.low <= q.accuracy.value <= q.accuracy.high <= 1.0 and q.kl.value >= 0.0
    assert WindTunnelResult.load(out).query["mlp"].kl.value == res.query["mlp"].kl.value  # stored and read back


def test_train_and_eval_hmm_authors_tiny(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "hmm"
    args = ["windtunnel", "train", "--task", "hmm", "--convention", "authors", "--scale", "tiny", "--out", str(out)]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    code, stdout, err = run_cli(
        ["windtunnel", "eval", str(out), "--no-geometry", "--no-ablations", "--n-eval", "16"], capsys, monkeypatch
    )
    assert code == 0, err
    res = WindTunnelResult.load(out)
    assert res.convention == "authors" and res.task["convention"] == "authors" and res.lengths == (6, 9)
    tok = json.loads((out / "transformer" / "checkpoints" / "step-0000040" / "tokenizer.json").read_text())
    assert "[TRANS]" in tok["model"]["vocab"] and "<bos>" not in json.dumps(tok["post_processor"])


def test_geoprobe_stays_the_default_and_a_bad_convention_is_one_line(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["windtunnel", "train", "--task", "hmm", "--scale", "tiny", "--convention", "theirs", "--out", str(tmp_path)],
        capsys,
        monkeypatch,
    )
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "--convention geoprobe or authors" in lines[0], err
    code, _, err = run_cli(
        ["windtunnel", "run", "--task", "bijection", "--scale", "tiny", "--convention", "authors", "--repeat", "0.5"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "--convention geoprobe" in err


@pytest.mark.parametrize("convention", ["authors", "geoprobe", None])
def test_the_recipe_key_reaches_the_run(convention, tmp_path, capsys, monkeypatch):
    seen = []
    monkeypatch.setattr("geoprobe.cli.run.launch", lambda exp, config, *a, **k: seen.append(config))
    line = f'convention = "{convention}"\n' if convention else ""
    recipe = tmp_path / "wt.toml"
    recipe.write_text(f'[probe]\ncommand = "windtunnel"\n[windtunnel]\ntask = "hmm"\nscale = "tiny"\n{line}')
    code, _, err = run_cli(["run", str(recipe)], capsys, monkeypatch)
    assert code == 0, err
    assert seen[0].convention == (convention or "geoprobe")
