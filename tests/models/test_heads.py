"""Head counts that do not divide are refused in one line naming the architecture (issue 18).

The realistic case is a local directory (config.json + safetensors saved from a tiny model) whose
config.json says 5 heads on d_model 64, or 3 KV heads for 4 query heads. transformers refuses
the first with a multi-line config-validation error and builds the second, failing later in a
forward pass; geoprobe checks config.json first (and every booted model's config), and turns
transformers' validation error into one line where its own check is bypassed.
"""

from __future__ import annotations

import json

import pytest

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.heads import head_problem
from geoprobe.models.tiny import tiny_model
from tests.cli.test_cli import run_cli

BAD = [
    (
        "llama",
        {"num_attention_heads": 5},
        "LlamaForCausalLM",
        "hidden_size 64 does not divide into num_attention_heads 5",
    ),
    (
        "llama",
        {"num_key_value_heads": 3},
        "LlamaForCausalLM",
        "num_attention_heads 4 does not divide into num_key_value_heads 3",
    ),
    ("qwen2", {"num_key_value_heads": 3}, "Qwen2ForCausalLM", "does not divide into num_key_value_heads 3"),
    ("gpt2", {"n_head": 5}, "GPT2LMHeadModel", "n_embd 64 does not divide into n_head 5"),
]


def _saved(tmp_path, model_type: str, edit: dict) -> str:
    from geoprobe.models.twins import embedded_tokenizer

    d = tmp_path / f"{model_type}-{'-'.join(edit)}"
    model = tiny_model(model_type)
    model.save_pretrained(d, safe_serialization=True)
    embedded_tokenizer().save_pretrained(d)
    cfg = json.loads((d / "config.json").read_text())
    if model_type == "gpt2":
        cfg.pop("num_attention_heads", None)
    if "num_attention_heads" in edit:
        cfg.pop("head_dim", None)  # saved explicitly; with it, any head count has a whole width
    cfg.update(edit)
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


def test_head_problem_on_config_dicts():
    assert head_problem({"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}) is None
    assert head_problem({"hidden_size": 640, "num_attention_heads": 8, "head_dim": 256}) is None  # Gemma-style
    assert "not a whole head width" in head_problem({"hidden_size": 64, "num_attention_heads": 5})
    assert "key/value head" in head_problem({"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3})
    assert "positive" in head_problem({"hidden_size": 64, "num_attention_heads": 0})
    assert head_problem({"hidden_size": 64, "num_attention_heads": 5, "head_dim": 16}) is None


@pytest.mark.parametrize("model_type,edit,arch,why", BAD)
def test_local_directory_with_heads_that_do_not_divide_exits_2_in_one_line(
    model_type, edit, arch, why, tmp_path, capsys, monkeypatch
):
    d = _saved(tmp_path, model_type, edit)
    capsys.readouterr()  # save_pretrained's progress bars
    code, _, err = run_cli(["capture", "--model", d, "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert arch in err and why in err


def test_the_python_api_refuses_too_and_boot_checks_built_models(tmp_path):
    from geoprobe.models import load_model
    from geoprobe.models.loaded import boot
    from geoprobe.models.twins import embedded_tokenizer
    from geoprobe.provenance import Provenance

    with pytest.raises(UnsupportedArchitectureError, match="LlamaForCausalLM .*num_key_value_heads 3"):
        load_model(_saved(tmp_path, "llama", {"num_key_value_heads": 3}))
    built = tiny_model("llama", num_key_value_heads=3)  # transformers builds it; its forward pass would fail
    with pytest.raises(UnsupportedArchitectureError, match="does not divide"):
        boot(
            built,
            embedded_tokenizer(),
            Provenance(model_id="built", source="twin", weights="x", tokenizer="t", dtype="float32"),
        )


def test_transformers_config_validation_becomes_one_line(tmp_path, monkeypatch):
    """With geoprobe's own config.json check bypassed, transformers' multi-line validation error
    (hidden size not a multiple of the heads) is turned into one line naming the model."""
    from geoprobe.models import load_model, loading

    d = _saved(tmp_path, "llama", {"num_attention_heads": 5})
    monkeypatch.setattr(loading, "_check_local_config", lambda directory, trust_remote_code: None)
    with pytest.raises(UnsupportedArchitectureError) as e:
        load_model(d)
    assert "\n" not in str(e.value) and "is not a multiple of the number of attention heads (5)" in str(e.value)
