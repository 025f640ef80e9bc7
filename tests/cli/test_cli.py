"""The CLI end to end: real runs on tiny twins, and one-line errors for bad input."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from geoprobe.capture import Capture
from geoprobe.cli import main


def run_cli(args, capsys, monkeypatch, cwd=None):
    """``geoprobe ARGS`` in this process (in ``cwd`` if given): (exit code, stdout, stderr)."""
    if cwd is not None:
        monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["geoprobe", *args])
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code or 0
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def run_main(args, cwd=None, **env):
    """``geoprobe ARGS`` in this process without pytest's function-scoped fixtures (for module- and
    session-scoped ones), in ``cwd`` if given, with ``HF_HUB_OFFLINE=1`` and ``env`` set for the call and put
    back after it: (exit code, stdout, stderr)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(err):
        for name, value in {"HF_HUB_OFFLINE": "1", **env}.items():
            mp.setenv(name, value)
        if cwd is not None:
            mp.chdir(cwd)
        mp.setattr(sys, "argv", ["geoprobe", *args])
        try:
            main()
        except SystemExit as e:
            code = e.code or 0
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def prompt_file(tmp_path):
    p = tmp_path / "prompts.txt"
    p.write_text("The cat sat on the\nIn 1905 Einstein published\n\nOnce upon a time\n", encoding="utf-8")
    return p


def test_capture_end_to_end_in_a_subprocess(tmp_path, prompt_file):
    out = tmp_path / "run"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "geoprobe.cli",
            "capture",
            "--model",
            "twin:llama-3.2-1b",
            "--prompts",
            str(prompt_file),
            "--out",
            str(out),
            "--layers",
            "0,-1",
            "--batch-size",
            "2",
            "--attention",
            "distribution",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    cap = Capture.load(out)
    assert cap.n_prompts == 3 and cap.layers == (0, 2) and cap.attn_pattern is not None
    assert cap.provenance.model_id == "twin:llama-3.2-1b:tiny"
    # the same capture from Python gives the same numbers
    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.models import twin

    ref = capture(twin("llama-3.2-1b"), list(cap.prompts), CaptureConfig(layers=(0, -1), batch_size=2))
    np.testing.assert_allclose(ref.values, cap.values, atol=1e-6)


def test_scan_on_a_twin_writes_results_report_and_capture(tmp_path, capsys, monkeypatch):
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"Prompt number {i} says that the weather" for i in range(12)), encoding="utf-8")
    out_dir = tmp_path / "scan"
    code, out, err = run_cli(
        ["scan", "--model", "twin:pythia-410m", "--prompts", str(prompts), "--out", str(out_dir)], capsys, monkeypatch
    )
    assert code == 0, err
    results = json.loads((out_dir / "results.json").read_text())
    assert results["layers"] == [0, 1, 2] and results["n_prompts"] == 12
    assert results["provenance"]["model_id"] == "twin:pythia-410m:tiny"
    assert results["capture_dir"] == "capture" and Capture.load(out_dir / "capture").n_prompts == 12
    assert (out_dir / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert "Value manifold" in out and "key |cos|" in out


def test_models_lists_every_alias_with_availability(capsys, monkeypatch):
    code, out, err = run_cli(["models", "--json"], capsys, monkeypatch)
    assert code == 0, err
    rows = {r["alias"]: r for r in json.loads(out)}
    assert rows["pythia-410m"]["parameters"] == 405_334_016 and rows["pythia-410m"]["attention"] == "MHA"
    assert rows["mixtral-8x7b"]["attention"] == "GQA 32:8, MoE 8x2"
    assert rows["smollm2-135m"]["available"] is True or rows["smollm2-135m"]["available"] is False
    assert rows["pythia-12b"]["available"] is False  # no hub cache on this machine
    # issue 39 case 1: the embedded alias names what it really is; a Hub alias needs no note
    assert "SmolLM2-135M-Instruct" in rows["smollm2-135m"]["note"] and "Q4_1" in rows["smollm2-135m"]["note"]
    assert rows["pythia-410m"]["note"] is None
    code, table, err = run_cli(["models"], capsys, monkeypatch)
    assert code == 0, err
    assert f"smollm2-135m: {rows['smollm2-135m']['note']}" in table.replace("\n", " ")
    assert "gemma-3-270m: gemma-3-270m, the base model" in table


def _write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


BAD = [
    ("unknown alias", ["capture", "--model", "pythia-41m", "--out", "{tmp}/o"], "closest aliases: pythia-410m"),
    (
        "non-UTF-8 prompts",
        ["capture", "--model", "twin:llama-3.2-1b", "--prompts", "{latin1}", "--out", "{tmp}/o"],
        "not UTF-8",
    ),
    (
        "empty prompt file",
        ["capture", "--model", "twin:llama-3.2-1b", "--prompts", "{empty}", "--out", "{tmp}/o"],
        "holds no prompts",
    ),
    (
        "missing prompt file",
        ["capture", "--model", "twin:llama-3.2-1b", "--prompts", "{tmp}/nope.txt", "--out", "{tmp}/o"],
        "does not exist",
    ),
    (
        "directory as prompts",
        ["capture", "--model", "twin:llama-3.2-1b", "--prompts", "{tmp}", "--out", "{tmp}/o"],
        "is a directory",
    ),
    ("bad layers", ["capture", "--model", "twin:llama-3.2-1b", "--layers", "a,b", "--out", "{tmp}/o"], "--layers"),
    (
        "layer out of range",
        ["capture", "--model", "twin:llama-3.2-1b", "--layers", "9", "--out", "{tmp}/o"],
        "out of range",
    ),
    (
        "batch size zero",
        ["capture", "--model", "twin:llama-3.2-1b", "--batch-size", "0", "--out", "{tmp}/o"],
        "--batch-size",
    ),
    (
        "padding side",
        ["capture", "--model", "twin:llama-3.2-1b", "--padding-side", "middle", "--out", "{tmp}/o"],
        "--padding-side",
    ),
    ("dtype", ["capture", "--model", "twin:llama-3.2-1b", "--dtype", "float8", "--out", "{tmp}/o"], "--dtype"),
    (
        "foreign directory as output",
        ["capture", "--model", "twin:llama-3.2-1b", "--out", "{tmp}"],
        "which geoprobe did not write",
    ),
    (
        "foreign directory with --overwrite",
        ["capture", "--model", "twin:llama-3.2-1b", "--out", "{tmp}", "--overwrite"],
        "which geoprobe did not write",
    ),
    ("missing gguf", ["capture", "--model", "{tmp}/x.gguf", "--out", "{tmp}/o"], "does not exist"),
    ("bad revision", ["capture", "--model", "pythia-410m", "--revision", "step7", "--out", "{tmp}/o"], "--revision"),
    ("unknown option", ["capture", "--frobnicate"], "No such option"),
]


@pytest.mark.parametrize("name, args, needle", BAD, ids=[b[0] for b in BAD])
def test_bad_input_gets_one_line_and_nonzero_exit(name, args, needle, tmp_path, capsys, monkeypatch):
    files = {
        "tmp": str(tmp_path),
        "latin1": str(_write(tmp_path, "latin1.txt", "café au lait\n".encode("latin-1"))),
        "empty": str(_write(tmp_path, "empty.txt", b"\n  \n")),
    }
    argv = [a.format(**files) for a in args]
    code, out, err = run_cli(argv, capsys, monkeypatch)
    assert code != 0
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()  # nothing half-written


def test_debug_flag_shows_the_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        sys, "argv", ["geoprobe", "capture", "--model", "pythia-41m", "--out", str(tmp_path / "o"), "--debug"]
    )
    from geoprobe.errors import UnknownModelError

    with pytest.raises(UnknownModelError):
        main()


def test_too_long_prompt_warns_with_the_count(tmp_path, capsys, monkeypatch):
    p = tmp_path / "long.txt"
    p.write_text("word " * 50 + "\nshort prompt\n", encoding="utf-8")
    code, out, err = run_cli(
        [
            "capture",
            "--model",
            "twin:mistral-7b",
            "--prompts",
            str(p),
            "--max-tokens",
            "8",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert "warning: 1 of 2 prompt(s) longer than 8 tokens were cut to their final 8 tokens" in err
    cap = Capture.load(tmp_path / "o")
    assert cap.n_tokens.tolist()[0] == 8 and cap.n_truncated[0] > 0 and cap.n_truncated[1] == 0


def _save_local(path, cfg, tok, poison=None):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg)
    if poison is not None:
        with torch.no_grad():
            poison(model)
    model.save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return path


def test_gpt2_from_a_local_directory_is_captured_and_mamba_refused(tmp_path, capsys, monkeypatch, twin_factory):
    """Issue 18: a GPT-2 directory (once refused for want of an adapter) captures; a model with no
    attention layers is refused in one line naming that."""
    from transformers import GPT2Config, MambaConfig

    tok = twin_factory("llama-3.2-1b").tokenizer
    cfg = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=len(tok), n_positions=64)
    cfg.architectures = ["GPT2LMHeadModel"]
    d = _save_local(tmp_path / "gpt2", cfg, tok)
    code, out, err = run_cli(["capture", "--model", str(d), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 0, err
    assert Capture.load(tmp_path / "o").layout.n_heads == 2
    cfg = MambaConfig(num_hidden_layers=1, hidden_size=32, state_size=4, vocab_size=len(tok))
    cfg.architectures = ["MambaForCausalLM"]
    d = _save_local(tmp_path / "mamba", cfg, tok)
    code, out, err = run_cli(["capture", "--model", str(d), "--out", str(tmp_path / "m")], capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "MambaForCausalLM: geoprobe finds no attention layers" in err


def test_nan_activation_from_the_cli_names_layer_and_site(tmp_path, capsys, monkeypatch, twin_factory):
    from geoprobe.models.twins import twin_config

    tok = twin_factory("llama-3.2-1b").tokenizer
    cfg = twin_config("llama-3.2-1b", "tiny", vocab_size=len(tok))

    def poison(model):
        model.model.layers[2].self_attn.v_proj.weight[3, 5] = float("inf")

    d = _save_local(tmp_path / "bad", cfg, tok, poison)
    code, out, err = run_cli(["capture", "--model", str(d), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "non-finite value (NaN/Inf) at layer 2 site v for prompt #" in err
    assert not (tmp_path / "o").exists()


def test_report_still_renders_a_real_result(tmp_path, capsys, monkeypatch):
    """The damage checks of issue 17 (64-bit integers, n_prompts against the analyses) pass real results."""
    from tests.cli.odd_inputs import scan_results_json

    (tmp_path / "results.json").write_text(scan_results_json(), encoding="utf-8")
    code, out, err = run_cli(["report", str(tmp_path / "results.json")], capsys, monkeypatch)
    assert code == 0, err
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_prompt_over_the_default_cap_is_cut_with_a_one_line_warning(tmp_path, capsys, monkeypatch):
    """Issue 17: no --max-tokens, a prompt of ~2400 tokens: it keeps its final 2048 (the default cap;
    the twin's context window is 131072), and the warning is one line however wide the terminal."""
    p = tmp_path / "long.txt"
    p.write_text(" ".join(f"word{i % 89}" for i in range(1000)) + "\nshort prompt\n", encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "60")
    code, out, err = run_cli(
        ["capture", "--model", "twin:llama-3.2-1b", "--prompts", str(p), "--out", str(tmp_path / "o")],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "warning: 1 of 2 prompt(s) longer than 2048 tokens were cut to their final 2048 tokens ("
    ), err
    assert lines[0].endswith(
        "the cap is --max-tokens 2048 (default 2048); raise it, up to the model's context window "
        "of 131072 tokens, to keep more"
    )
    cap = Capture.load(tmp_path / "o")
    assert cap.n_tokens[0] == 2048 and cap.n_truncated[0] > 300 and cap.n_truncated[1] == 0


@pytest.mark.parametrize("columns", ["80", "60"])
def test_models_table_never_cuts_an_alias(columns, capsys, monkeypatch):
    from geoprobe.models.registry import ALIASES

    monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run_cli(["models"], capsys, monkeypatch)
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= int(columns)
    cells = {line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")}
    assert set(ALIASES) <= cells, f"aliases cut or missing: {sorted(set(ALIASES) - cells)}"
    assert "…" not in out


def test_models_format_json_and_its_alias(capsys, monkeypatch):
    code, out, err = run_cli(["models", "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    rows = {r["alias"]: r for r in json.loads(out)}
    assert rows["gemma-2-2b"]["features"][0] == "GQA 8:4" and rows["gemma-2-2b"]["layers"] == 26
    code, out2, err = run_cli(["models", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out2) == json.loads(out)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--format", "xml"], "--format 'xml' is not one of table, json"),
        (["--json", "--format", "table"], "--json and --format table"),
    ],
)
def test_models_bad_format_is_one_line(args, needle, capsys, monkeypatch):
    code, out, err = run_cli(["models", *args], capsys, monkeypatch)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("model_type", "has_w_k"),
    [
        ("gpt2", True),
        ("qwen2", True),
        ("gemma2", True),
        ("bloom", True),
        ("falcon", True),
        ("deepseek_v2", False),
        ("emu3", True),
    ],
)
def test_capture_a_twin_of_any_model_type(tmp_path, prompt_file, capsys, monkeypatch, model_type, has_w_k):
    """twin:MODEL_TYPE builds the tiny twin of a transformers model type no alias names; capture reads
    its attention through the AttentionInterface (Bloom, Falcon: the hand-written exceptions). Twins
    shrunk by rule too: DeepSeek-V2, whose default config leaves its experts per token unset (the twin
    builder crashed in topk; MLA, so no W_K), and Emu3, whose tokenizer's vocabulary must reach its text
    sub-config (an IndexError before)."""
    out = tmp_path / "run"
    code, _, err = run_cli(
        ["capture", "--model", f"twin:{model_type}", "--prompts", str(prompt_file), "--out", str(out)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    cap = Capture.load(out)
    assert cap.n_prompts == 3 and cap.provenance.model_id == f"twin:{model_type}:tiny"
    assert np.isfinite(cap.attn_entropy).all() and (cap.attn_entropy > 0).any()
    if has_w_k:
        assert cap.w_k is not None and cap.w_k.shape[:2] == (3, cap.layout.n_kv_heads)
    else:
        assert cap.w_k is None and "no W_K saved" in err


@pytest.mark.parametrize("model_type,why", [("mamba", "no attention layers")])
def test_capture_refuses_what_it_cannot_read_in_one_line(tmp_path, prompt_file, capsys, monkeypatch, model_type, why):
    code, _, err = run_cli(
        ["capture", "--model", f"twin:{model_type}", "--prompts", str(prompt_file), "--out", str(tmp_path / "run")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1


def test_capture_of_multi_head_latent_attention_keeps_all_but_w_k(tmp_path, prompt_file, capsys, monkeypatch):
    """DeepSeek-V3 (MLA): keys are a compressed latent, not x·W_K. Entropies, values and the keys as the
    scores use them (d_key 24 ≠ d_head 16) are captured; W_K is left out with a warning naming why."""
    out = tmp_path / "run"
    code, _, err = run_cli(
        ["capture", "--model", "twin:deepseek_v3", "--prompts", str(prompt_file), "--out", str(out)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert "no W_K saved" in err and "multi-head latent attention" in err
    cap = Capture.load(out)
    assert cap.w_k is None and cap.keys.shape[-1] == 24 and cap.values.shape[-1] == 16
    assert np.isfinite(cap.attn_entropy).all()


def test_scan_of_multi_head_latent_attention_runs_all_but_key_orthogonality(tmp_path, capsys, monkeypatch):
    """MLA has no W_K: the scan says so (stderr and results.json notes) and runs every other analysis."""
    prompts = tmp_path / "p.txt"
    prompts.write_text("".join(f"Prompt number {i} is about the cat and the dog\n" for i in range(12)))
    out = tmp_path / "run"
    code, _, err = run_cli(
        ["scan", "--model", "twin:deepseek_v3", "--prompts", str(prompts), "--out", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    assert "key orthogonality not measured" in err and "multi-head latent attention" in err
    res = json.loads((out / "results.json").read_text())
    assert res["orthogonality"] is None and res["manifold"] is not None and res["focusing"] is not None
    assert any("key orthogonality not measured" in n for n in res["notes"])
