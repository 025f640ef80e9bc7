"""run_interventions where a layer has no entropy axis (issue 27): every SULA prompt ends in the same
token, so layer 0's final-token values are identical over the prompts. Layers the user named are
refused in one line (tests/cli/cases_experiments.py); the paper's default layers drop it and say so."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from geoprobe.intervene import InterventionResult, paper_experiments
from geoprobe.intervene.axis import InterventionError
from geoprobe.intervene.run import without_flat_layers
from geoprobe.models import twins
from tests.cli.test_cli import run_cli

TEXTS = ["happy: bip, test:", "sad: pim, storm: pim, test:", "test:", "joy: bip, test:"]


def _fake(n_layers: int = 3) -> SimpleNamespace:
    return SimpleNamespace(tokenizer=twins.embedded_tokenizer(), layout=SimpleNamespace(n_layers=n_layers))


def _values(flat: tuple[int, ...], layers: tuple[int, ...] = (0, 1, 2)) -> dict[int, np.ndarray]:
    """(n, Hkv, d) values per layer: the ``flat`` layers the same vector for every prompt."""
    rng = np.random.default_rng(0)
    out = {}
    for x in layers:
        v = rng.normal(size=(len(TEXTS), 2, 4)).astype(np.float32)
        out[x] = np.repeat(v[:1], len(TEXTS), axis=0) if x in flat else v
    return out


def test_named_layer_without_variance_is_refused_with_the_layers_to_pass():
    with pytest.raises(InterventionError) as e:
        without_flat_layers(_fake(), TEXTS, ((0,),), _values((0,)), explicit=True)
    msg = str(e.value)
    assert msg.startswith("layer 0: final-token values are identical for all 4 SULA prompts")
    assert "ends in the token ':'" in msg and "pass --layers from 1 to 2 (e.g. --layers 1;" in msg
    # named together with a layer that varies: still refused (never dropped silently), that layer suggested
    with pytest.raises(InterventionError, match=r"e\.g\. --layers 2;"):
        without_flat_layers(_fake(), TEXTS, ((0, 2),), _values((0,)), explicit=True)
    # the last layer flat too: nothing deeper to suggest
    with pytest.raises(InterventionError, match="no deeper layer"):
        without_flat_layers(_fake(), TEXTS, ((0, 2),), _values((0, 2)), explicit=True)


def test_default_layers_drop_the_flat_layer_and_say_so():
    exps = paper_experiments(2)
    assert exps == ((1,), (0, 1))  # a 2-layer model: the multi-layer edit reaches layer 0
    kept, notes = without_flat_layers(_fake(2), TEXTS, exps, _values((0,), (0, 1)), explicit=False)
    assert kept == ((1,),) and len(notes) == 1 and notes[0].startswith("layer 0 left out of the default experiments")
    # nothing flat: unchanged, no note
    assert without_flat_layers(_fake(2), TEXTS, exps, _values((), (0, 1)), explicit=False) == (exps, [])
    # every default layer flat: an error, not an empty sweep
    with pytest.raises(InterventionError, match="layer 0, 1"):
        without_flat_layers(_fake(2), TEXTS, exps, _values((0, 1), (0, 1)), explicit=False)


def _two_layer_model(d):
    """A loadable 2-layer tiny Llama directory (the twin's architecture with one layer fewer)."""
    import torch
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import twin_config

    tok = twins.embedded_tokenizer()
    cfg = twin_config("llama-3.2-1b", "tiny", vocab_size=len(tok))
    cfg.num_hidden_layers = 2
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg)
    tok.save_pretrained(d)
    model.save_pretrained(d, safe_serialization=True)
    return d


def test_a_two_layer_model_on_its_defaults_runs_without_layer_0(tmp_path, capsys, monkeypatch):
    """Before issue 27 this ended in 'unexpected ValueError: no variance to analyse'."""
    model = _two_layer_model(tmp_path / "two")
    out = tmp_path / "iv"
    small = ["--n-per-k", "4", "--controls", "1", "--strength", "1", "--n-resamples", "20"]
    code, stdout, err = run_cli(["intervene", "--model", str(model), *small, "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    res = InterventionResult.load(out / "intervene.json")
    assert res.experiments() == [((1,), 1.0)] and sorted(res.axes) == [1]
    note = "layer 0 left out of the default experiments: its final-token values are identical for all 20 SULA prompts"
    assert res.config["notes"][0].startswith(note) and res.config["experiments"] == [[1]]
    assert json.loads((out / "intervene.json").read_text(encoding="utf-8"))["config"]["notes"] == res.config["notes"]
    assert f"note: {note}" in " ".join(stdout.split())
    assert note in (out / "intervene.html").read_text(encoding="utf-8")
