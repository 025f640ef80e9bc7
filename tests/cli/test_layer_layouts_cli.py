"""Models whose attention layers differ in head layout, end to end through the CLI: ``scan`` measures
every layer over its own heads and widths (checked against the saved capture, recomputed here), and
``intervene`` edits a layer with fewer key/value heads; ``positional`` fits layers of one head count and
refuses a mix in one line. Capture itself is checked against eager in tests/capture/test_layer_layouts.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.orthogonality import head_orthogonality
from geoprobe.capture import Capture
from tests.cli.test_cli import run_cli

PROMPTS = "".join(
    f"Sentence {i}: the {w} walked to the market and bought\n"
    for i, w in enumerate("cat dog fox owl bee ant elk yak emu cow hen pig".split())
)


@pytest.mark.parametrize("model_type", ["mimo_v2_flash", "gemma4_text"])
def test_scan_measures_each_layer_over_its_own_heads(model_type, tmp_path, capsys, monkeypatch):
    (tmp_path / "p.txt").write_text(PROMPTS)
    out = tmp_path / "scan"
    code, _, err = run_cli(
        ["scan", "--model", f"twin:{model_type}", "--prompts", str(tmp_path / "p.txt"), "--out", str(out)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    res = json.loads((out / "results.json").read_text())
    cap = Capture.load(out / "capture")
    assert not cap.layout.uniform
    per_head = np.array(res["orthogonality"]["per_head"], dtype=float)  # null (NaN): heads a layer lacks
    for i, layer in enumerate(cap.layers):
        own = head_orthogonality(cap.layer("w_k", layer)[None].astype(np.float64))[0]
        np.testing.assert_allclose(per_head[i, : len(own)], own, rtol=1e-12)
        assert np.isnan(per_head[i, len(own) :]).all()
        ent = cap.layer("attn_entropy", layer).astype(np.float64)
        np.testing.assert_allclose(res["focusing"]["per_prompt"][i], ent.mean(axis=1), rtol=1e-12)
        assert res["manifold"]["null"][i]["d"] <= cap.layer("values", layer)[0].size  # matched to the layer's own d
        pc1 = res["manifold"]["pc1"][i]["value"]  # None: no variance (layer 0 sees only the shared final token)
        if pc1 is not None:
            want = ValueManifold().fit(cap.values_flat(layer).astype(np.float64)).explained_variance_ratio_[0]
            assert pc1 == pytest.approx(want, abs=1e-9)
    assert sum(e["value"] is not None for e in res["manifold"]["pc1"]) >= 2


def test_intervene_and_positional_where_layers_differ(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(  # Gemma 4: layers 0-4 have values 16 wide, layer 5 (global) 32: edit layer 1
        [
            "intervene",
            "--model",
            "twin:gemma4_text",
            "--layers",
            "1",
            "--strength",
            "1",
            "--n-per-k",
            "4",
            "--controls",
            "1",
        ]
        + ["--n-resamples", "20", "--out", str(tmp_path / "iv")],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    rows = json.loads((tmp_path / "iv" / "intervene.json").read_text())["rows"]
    assert any(r["metrics"]["kl"]["value"] > 0 for r in rows)
    small = ["--lengths", "16", "--n-prompts", "6", "--n-resamples", "20", "--max-distance", "8"]
    code, _, err = run_cli(
        ["positional", "--model", "twin:mimo_v2_flash", "--layers", "0,1", *small, "--out", str(tmp_path / "pos")],
        capsys,
        monkeypatch,
    )
    assert code == 0, err  # MiMo: key/value heads 2 then 4, but 4 query heads everywhere: one head count
    dots = "twin:dots3_note"  # layers 0-1: 4 query heads; layer 2: 8
    code, _, err = run_cli(
        ["positional", "--model", dots, *small, "--out", str(tmp_path / "pos2")], capsys, monkeypatch
    )
    assert code == 2 and err.count("\n") == 1
    assert "layers [0, 1]: 4 query heads; layers [2]: 8 query heads" in err and "--layers" in err
    assert not (tmp_path / "pos2").exists()
