from pathlib import Path

import pytest

from geoprobe.errors import ProbeError
from geoprobe.recipes import load_probe
from geoprobe.scan import ScanConfig

ROOT = Path(__file__).resolve().parents[2]


def test_scan_recipe_holds_the_cli_defaults():
    probe = load_probe(ROOT / "probes" / "scan.toml")
    assert probe.name == "scan" and probe.command == "scan"
    assert probe.config == ScanConfig()  # `geoprobe scan` and `geoprobe run probes/scan.toml` agree


def test_recipe_settings_and_relative_prompt_file(tmp_path):
    (tmp_path / "p.txt").write_text("a\n")
    f = tmp_path / "r.toml"
    f.write_text(
        '[probe]\ncommand = "scan"\n[prompts]\nfile = "p.txt"\n'
        '[capture]\nlayers = [0, -1]\n[analyses]\nrun = ["focusing"]\n'
        "seed = 7\n[figures]\nscatter_layers = [3]\n"
    )
    cfg = load_probe(f).config
    assert cfg.prompts == str((tmp_path / "p.txt").resolve())
    assert cfg.layers == (0, -1) and cfg.analyses == ("focusing",) and cfg.seed == 7 and cfg.scatter_layers == (3,)
    assert cfg.updated(seed=None, batch_size=4) == ScanConfig.from_dict({**cfg.to_dict(), "batch_size": 4})


@pytest.mark.parametrize(
    "text, needle",
    [
        ('[probe]\ncommand = "scan"\n[capture]\nbogus = 1\n', "unknown key capture.bogus"),
        ('[probe]\ncommand = "scan"\n[nonsense]\nx = 1\n', "unknown section [nonsense]"),
        (
            '[probe]\ncommand = "scan"\n[analyses]\nrun = ["pca"]\n',
            "analyses.run = ['pca'] is not a list of (one of 'manifold'",
        ),
        ('[probe]\ncommand = "scan"\n[analyses]\nrun = ["alignment"]\n', "needs 'manifold'"),
        ('[probe]\ncommand = "scan"\n[analyses]\nnull_draws = 3\n', "null_draws 3 is below 10"),
        ('[probe]\ncommand = "scan"\n[analyses]\nconfidence = 1.5\n', "confidence 1.5"),
        ('[probe]\ncommand = "wind"\n', "runs command 'wind'"),
        ("not = [valid\n", "not valid UTF-8 TOML"),
        ("", "has no [probe] table"),
        ("[capture]\nlayers = [0]\n", "has no [probe] table"),
        ('[probe]\ncommand = "scan"\n[capture]\nlayers = "0,1"\n', "capture.layers"),
        ('[probe]\ncommand = "scan"\n[prompts]\nset = "math"\nfile = "p.txt"\n', "both"),
    ],
)
def test_bad_recipes_get_one_line_errors(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ProbeError, match=None) as exc:
        load_probe(f)
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg


def test_missing_recipe(tmp_path):
    with pytest.raises(ProbeError, match="does not exist"):
        load_probe(tmp_path / "nope.toml")


def test_domains_recipe_holds_the_cli_defaults():
    from geoprobe.domains import DomainsConfig

    probe = load_probe(ROOT / "probes" / "domains.toml")
    assert probe.command == "compare-domains" and probe.config == DomainsConfig()


def test_sampling_settings_of_a_scan_recipe(tmp_path):
    f = tmp_path / "r.toml"
    f.write_text(
        '[probe]\ncommand = "scan"\n[prompts]\nset = "math"\n'
        "[sampling]\nper_quintile = 4\nmax_tokens = 40\nbatch_size = 8\n"
    )
    cfg = load_probe(f).config
    assert cfg.prompts == "math" and cfg.sampling.per_stratum == 4 and cfg.sampling.max_tokens == 40
    assert cfg.sampling.batch_size == 8 and cfg.batch_size == ScanConfig().batch_size  # capture batch untouched
    assert ScanConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.updated(sampling={"candidates": 500, "per_stratum": None}).sampling.candidates == 500


@pytest.mark.parametrize(
    "text, needle",
    [
        ('[probe]\ncommand = "compare-domains"\n[domains]\nbogus = 1\n', "unknown key domains.bogus"),
        ('[probe]\ncommand = "compare-domains"\n[capture]\nlayers = 1\n', "unknown section [capture]"),
        ('[probe]\ncommand = "compare-domains"\n[domains]\ndomain_candidates = 5\n', "--domain-candidates 5 is below"),
        ('[probe]\ncommand = "scan"\n[sampling]\nper_quintile = 0\n', "--per-quintile"),
    ],
)
def test_bad_domain_and_sampling_recipes(tmp_path, text, needle):
    from geoprobe.errors import GeoprobeError

    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(GeoprobeError) as exc:
        load_probe(f)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_sula_and_intervene_recipes_hold_the_cli_defaults():
    from geoprobe.intervene import InterventionConfig
    from geoprobe.sula import SulaConfig

    sula = load_probe(ROOT / "probes" / "sula.toml")
    assert sula.command == "sula" and sula.config == SulaConfig()
    iv = load_probe(ROOT / "probes" / "intervene.toml")
    assert iv.command == "intervene" and iv.config == InterventionConfig(strengths=(0.25, 0.5, 1.0))


def test_bad_sula_recipe_key(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[probe]\ncommand = "sula"\n[sula]\nbogus = 1\n')
    with pytest.raises(ProbeError, match="unknown key sula.bogus"):
        load_probe(f)
