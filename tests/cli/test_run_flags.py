"""``geoprobe run RECIPE --flag``: every flag is honoured by every shipped recipe whose command uses it, and
refused in one line naming the flag and the recipe by every other: never accepted and then ignored."""

from pathlib import Path

import pytest

from geoprobe.cli.run import FLAGS, honours
from geoprobe.recipes import experiments
from tests.cli.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
RECIPE_FILES = sorted((ROOT / "probes").glob("*.toml"))
HUB = ["--model", "pythia-410m"]  # a Hub alias: every loading flag applies to it (nothing is loaded here)
#: the loading flags that apply to Hub models and local directories only (refused for GGUF files and twins)
HUB_ONLY = ("device_map", "trust_remote_code", "allow_pickle", "allow_partial_weights")
TWIN = ["--model", "twin:gpt2"]  # a twin: the one kind of model a weight seed applies to

#: flag -> (argv, check(settings, load) that the value arrived); settings: the scan config for compare-models
CASES = {
    "model": (["--model", "twin:llama-3.2-1b"], lambda c, ld: ld.model == "twin:llama-3.2-1b"),
    "revision": ([*HUB, "--revision", "step0"], lambda c, ld: ld.revision == "step0"),
    "dtype": (["--dtype", "bfloat16"], lambda c, ld: ld.dtype == "bfloat16"),
    "device": (["--device", "cpu:0"], lambda c, ld: ld.device == "cpu:0"),
    "device_map": ([*HUB, "--device-map", "auto"], lambda c, ld: ld.device_map == "auto"),
    "trust_remote_code": ([*HUB, "--trust-remote-code"], lambda c, ld: ld.trust_remote_code is True),
    "allow_pickle": ([*HUB, "--allow-pickle"], lambda c, ld: ld.allow_pickle is True),
    "allow_partial_weights": ([*HUB, "--allow-partial-weights"], lambda c, ld: ld.allow_partial_weights is True),
    "weight_seed": ([*TWIN, "--weight-seed", "3"], lambda c, ld: ld.weight_seed == 3),
    "prompts": (["--prompts", "builtin"], lambda c, ld: c.prompts == "builtin"),
    "domain": (["--domain", "math"], lambda c, ld: c.prompts == "math"),
    "candidates": (["--candidates", "77"], lambda c, ld: c.sampling.candidates == 77),
    "per_quintile": (["--per-quintile", "3"], lambda c, ld: c.sampling.per_stratum == 3),
    "min_tokens": (["--min-tokens", "5"], lambda c, ld: c.sampling.min_tokens == 5),
    "max_prompt_tokens": (["--max-prompt-tokens", "40"], lambda c, ld: c.sampling.max_tokens == 40),
    "layer_spec": (
        ["--layers", "0,-1"],
        lambda c, ld: c.experiments == ((0, -1),) if hasattr(c, "experiments") else c.layers == (0, -1),
    ),
    "batch_size": (["--batch-size", "3"], lambda c, ld: c.batch_size == 3),
    "max_tokens": (["--max-tokens", "50"], lambda c, ld: c.max_tokens == 50),
    "scatter_layers": (["--scatter-layers", "0"], lambda c, ld: c.scatter_layers == (0,)),
    "no_init_baseline": (["--no-init-baseline"], lambda c, ld: c.init_baseline is False),
    "init_draws": (["--init-draws", "5"], lambda c, ld: c.init_draws == 5),
    "baseline": (["--baseline", "runs/x/checkpoints/step0"], lambda c, ld: c.baseline == "runs/x/checkpoints/step0"),
    "null_kind": (["--null", "permute"], lambda c, ld: c.null_kind == "permute"),
    "ci_layers": (["--ci-layers", "all"], lambda c, ld: c.ci_layers == "all"),
    "seed": (["--seed", "7"], lambda c, ld: c.seed == 7),
}


def test_every_flag_of_run_is_covered():
    assert set(CASES) == set(FLAGS)
    assert {p.stem for p in RECIPE_FILES} >= {
        "scan",
        "domains",
        "compare",
        "sula",
        "intervene",
        "positional",
        "windtunnel",
        "denoise",
        "dynamics",
    }


@pytest.fixture
def calls(monkeypatch):
    """``geoprobe run`` up to the experiment's own checks of config and model (Experiment.run), no further."""
    seen = []

    def fake(exp, config, model, output):
        model = exp.load_options(model)
        if exp.check is not None:
            exp.check(config, model)
        seen.append((exp.command, {"config": config, "load": model, "output": output}))

    monkeypatch.setattr("geoprobe.cli.run.launch", fake)
    return seen


@pytest.mark.parametrize("flag", list(FLAGS))
@pytest.mark.parametrize("recipe", RECIPE_FILES, ids=[p.stem for p in RECIPE_FILES])
def test_a_run_flag_is_honoured_or_refused_never_ignored(recipe, flag, calls, tmp_path, capsys, monkeypatch):
    from geoprobe.recipes import load_probe

    command = load_probe(recipe).command
    honoured = honours(experiments()[command])
    argv, arrived = CASES[flag]
    if argv[:2] in (HUB, TWIN) and "model" not in honoured:
        argv = argv[2:]  # the loading flags are then refused on their own
    code, out, err = run_cli(["run", str(recipe), *argv, "--out", str(tmp_path / "o"), "--force"], capsys, monkeypatch)
    if command == "compare-models" and flag in HUB_ONLY:
        # compare.toml's models ship as GGUF files: the flag cannot apply to them (the Hub case is tested below)
        assert code == 2 and f"{FLAGS[flag]} does not apply to --model 'smollm2-135m'" in err, err
        return
    if command == "compare-models" and flag == "weight_seed":  # the same: real weights have no seed
        assert code == 2 and "--weight-seed 3 does not apply to --model 'smollm2-135m'" in err, err
        return
    if flag in honoured:
        assert code == 0, err
        assert len(calls) == 1, calls
        got = calls[0][1]
        settings = got["config"].scan if command == "compare-models" else got["config"]
        assert arrived(settings, got["load"]), (flag, settings, got["load"])
        assert got["output"].out == tmp_path / "o" and got["output"].force is True
    else:
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and calls == [], (code, err, calls)
        assert lines[0].startswith("error: ") and FLAGS[flag] in lines[0], lines[0]


@pytest.mark.parametrize("flag", HUB_ONLY)
def test_compare_models_passes_the_loading_flags_to_each_hub_model(flag, calls, tmp_path, capsys, monkeypatch):
    recipe = tmp_path / "c.toml"
    recipe.write_text(
        '[probe]\ncommand = "compare-models"\n[models]\nrun = ["pythia-160m", "pythia-410m"]\nsets = ["mixed"]\n',
        encoding="utf-8",
    )
    argv, arrived = CASES[flag]
    code, out, err = run_cli(["run", str(recipe), *argv[2:]], capsys, monkeypatch)
    assert code == 0, err
    assert arrived(None, calls[0][1]["load"])


def test_a_recipe_load_table_reaches_the_run_and_a_flag_overrides_it(calls, tmp_path, capsys, monkeypatch):
    """A recipe's [load] table holds LoadOptions fields (the loading flags' own names); a flag given
    overrides the recipe, a setting its command does not honour is refused naming it."""
    recipe = tmp_path / "s.toml"
    recipe.write_text('[probe]\ncommand = "scan"\n[load]\nmodel = "twin:llama-3.2-1b"\ndtype = "bfloat16"\n')
    code, _, err = run_cli(["run", str(recipe)], capsys, monkeypatch)
    assert code == 0, err
    load = calls[-1][1]["load"]
    assert load.model == "twin:llama-3.2-1b" and load.dtype == "bfloat16"
    code, _, err = run_cli(["run", str(recipe), "--dtype", "float16"], capsys, monkeypatch)
    assert code == 0 and calls[-1][1]["load"].dtype == "float16", err
    bad = tmp_path / "d.toml"
    bad.write_text('[probe]\ncommand = "denoise"\n[load]\nmodel = "twin:llama-3.2-1b"\n')
    code, _, err = run_cli(["run", str(bad)], capsys, monkeypatch)
    assert code == 2 and "load.model is not used by command denoise" in err, err


def test_docs_outputs_md_lists_what_each_recipe_honours():
    text = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] in experiments():
            rows[cells[0]] = {w for w in cells[1].split() if w.startswith("--")}
    assert set(rows) == set(experiments())
    for command, exp in experiments().items():
        assert rows[command] == {FLAGS[f] for f in honours(exp)}, command
