"""analyse() on synthetic captures with planted geometry: the scorecard must find what was planted
and must not find it in noise."""

import importlib
import json

import pytest

from geoprobe.errors import PromptError, ResultsError
from geoprobe.scan import ScanConfig, ScanResult, analyse
from geoprobe.scan.run import dedupe_prompts

from ._synthetic import synthetic_capture, synthetic_null

FAST = ScanConfig(n_resamples=200, pca_resamples=50, null_draws=50, n_permutations=200)


@pytest.fixture(scope="module")
def planted():
    cap, init = synthetic_capture(structured=True)
    null = synthetic_null(cap, n_resamples=FAST.n_resamples)
    return cap, analyse(cap, FAST, init_w_k=init, init_label="gaussian init", null=null)


@pytest.fixture(scope="module")
def noise():
    cap, init = synthetic_capture(structured=False)
    null = synthetic_null(cap, n_resamples=FAST.n_resamples)
    return cap, analyse(cap, FAST, init_w_k=init, init_label="gaussian init", null=null)


def crit(result, key):
    return next(c for c in result.scorecard.criteria if c.key == key)


def test_planted_structure_passes_every_criterion_and_beats_its_null(planted):
    _, r = planted
    m = crit(r, "value_manifold")
    assert m.passes and m.beats_null and m.value.value > 0.9  # rank-1 plus 5 % noise
    o = crit(r, "key_orthogonality")
    assert o.passes and o.beats_null and o.value.value == 1.0
    assert max(r.orthogonality.layer_mean) < 1e-5  # orthonormal columns
    f = crit(r, "attention_focusing")
    # planted levels 4.0 → 1.6 bits: a 60 % reduction
    assert f.passes and f.beats_null and f.value.value == pytest.approx(60.0, abs=1.0)
    assert r.alignment.spearman[-1].value > 0.99
    # the smallest p a 200-permutation test can give, times 4 layers (Bonferroni)
    assert all(p == pytest.approx(1 / 201) for p in r.alignment.p_value)
    assert all(p == pytest.approx(4 / 201) for p in r.alignment.p_bonferroni)


def test_noise_does_not_beat_the_matched_nulls(noise):
    cap, r = noise
    m = crit(r, "value_manifold")
    assert not m.beats_null
    # n=80 prompts in d=32: PC1 of pure noise is far above 1/d, and the null band says so
    assert r.manifold.null[-1].pc1.value > 1.5 / 32
    assert not crit(r, "attention_focusing").beats_null
    o = crit(r, "key_orthogonality")
    assert not o.beats_null  # Gaussian columns like the init's
    assert o.threshold_met and not o.passes  # Gaussian columns in 64 dims are already < 0.20: not enough
    assert not any(c.passes for c in r.scorecard.criteria)
    assert all(p > 0.01 for p in r.alignment.p_bonferroni)


def test_results_round_trip_through_json(planted, tmp_path):
    _, r = planted
    path = r.save(tmp_path / "results.json")
    back = ScanResult.load(path)
    assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(r.to_dict(), sort_keys=True)
    assert back.provenance["model_id"] == "synthetic" and back.provenance["prompts_hash"]
    assert back.to_dict()["version"] == 1 and "geoprobe" in back.provenance["versions"]


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: d.update(version=99), "scan results file version 99"),
        (lambda d: d.update(kind="something.else"), "not a geoprobe scan results file"),
        (lambda d: d.pop("scorecard"), "is damaged"),
    ],
)
def test_incompatible_results_get_clear_errors(planted, tmp_path, edit, needle):
    _, r = planted
    d = r.to_dict()
    edit(d)
    p = tmp_path / "results.json"
    p.write_text(json.dumps(d))
    with pytest.raises(ResultsError) as exc:
        ScanResult.load(p)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: d.update(n_prompts=10**30), "holds the integer 1000000000000000000000000000000 (beyond 64 bits)"),
        (lambda d: d.update(n_prompts=-(2**64)), "holds the integer -18446744073709551616 (beyond 64 bits)"),
        (lambda d: d.update(n_prompts="NINES"), "holds the integer 99999999999999999999… (5000 digits)"),
        (lambda d: d.update(n_prompts=2**60), f"n_prompts is {2**60} but manifold.n holds 80 prompts"),
        (lambda d: d.update(n_prompts=81), "n_prompts is 81 but manifold.n holds 80 prompts"),
        (lambda d: d["alignment"].update(n=79), "n_prompts is 80 but alignment.n holds 79 prompts"),
        (lambda d: d["timings"].update(capture_s=float("nan")), "holds NaN (results are strict JSON"),
        (lambda d: d["timings"].update(capture_s=float("inf")), "holds Infinity"),
    ],
)
def test_implausible_counts_and_numbers_are_damage(planted, tmp_path, edit, needle):
    """A results.json whose n_prompts is 10^30 (or disagrees with the per-prompt data) used to render."""
    _, r = planted
    d = r.to_dict()
    edit(d)
    p = tmp_path / "results.json"
    p.write_text(json.dumps(d).replace('"NINES"', "9" * 5000))  # Python would not make that int
    with pytest.raises(ResultsError) as exc:
        ScanResult.load(p)
    msg = str(exc.value)
    assert f"{str(p)!r} is damaged" in msg and needle in msg and "\n" not in msg


def test_the_largest_seed_still_loads_and_a_64_bit_integer_is_not_damage(planted, tmp_path):
    from geoprobe.checks import SEED_MAX
    from geoprobe.paths import read_json

    _, r = planted
    d = r.to_dict()
    d["config"]["seed"] = d["provenance"]["seed"] = SEED_MAX
    p = tmp_path / "results.json"
    p.write_text(json.dumps(d))
    assert ScanResult.load(p).config.seed == SEED_MAX
    q = tmp_path / "big.json"
    q.write_text(json.dumps({"x": 2**64 - 1, "y": -(2**64) + 1}))
    data, _ = read_json(q, default_name=None, what="a results file", fix="")
    assert data == {"x": 2**64 - 1, "y": -(2**64) + 1}  # the limit of read_json is 2**64, exclusive


def test_too_few_prompts_names_the_minimum():
    cap, _ = synthetic_capture(structured=True, n=6)
    with pytest.raises(PromptError, match="at least 10"):
        analyse(cap, FAST)


def test_duplicates_are_dropped_and_counted():
    kept, dropped = dedupe_prompts(["a", "b", "a", "c", "b", "a"])
    assert kept == ["a", "b", "c"] and dropped == 3
    from geoprobe.scan.run import resolve_prompts

    with pytest.warns(UserWarning, match="3 duplicate prompt"):
        texts, notes, pset = resolve_prompts(FAST, [f"p{i}" for i in range(10)] + ["p0", "p1", "p1"])
    assert len(texts) == 10 and "3 duplicate" in notes[0]
    from geoprobe.provenance import prompts_hash

    assert pset.prompts == tuple(texts) and pset.hash == prompts_hash(texts)  # the hash is of what runs


def test_analyse_is_deterministic_given_the_seed(planted):
    cap, r = planted
    again = analyse(cap, FAST, init_w_k=None)
    assert again.manifold.to_dict() == r.manifold.to_dict()
    assert again.focusing.to_dict() == r.focusing.to_dict()
    other = analyse(cap, ScanConfig(**{**FAST.to_dict(), "seed": 1, "analyses": ("focusing",)}))
    assert other.focusing.mean[0].value == r.focusing.mean[0].value  # point estimates do not depend on the seed


def _hub_pythia(weights="main@abc"):
    from types import SimpleNamespace

    from geoprobe.models.registry import ALIASES

    return SimpleNamespace(
        spec=ALIASES["pythia-70m"], provenance=SimpleNamespace(source="hub", weights=weights, dtype="float32")
    )


def test_pythia_null_is_the_released_step0_checkpoint(monkeypatch, twin_factory):
    """For Pythia from the Hub the random-init null is revision step0, the model's own initialisation;
    here a tiny twin stands in for the step0 download (no hub on this machine)."""
    import geoprobe.models.loading as loading
    from geoprobe.scan.config import ScanConfig
    from geoprobe.scan.nulls import null_models

    stand_in = twin_factory("pythia-70m")
    asked = {}

    def fake_load(name, revision=None, **kw):
        asked.update(name=name, revision=revision)
        return stand_in

    monkeypatch.setattr(loading, "load_model", fake_load)
    ((m, source, seed, label),) = list(null_models(_hub_pythia(), ScanConfig(prompts="builtin")))
    assert asked == {"name": "pythia-70m", "revision": "step0"} and m is stand_in
    assert source == "step0" and seed is None and "step0" in label


def test_pythia_step0_unreachable_falls_back_to_random_init_draws_with_a_note(monkeypatch, twin_factory):
    import geoprobe.models.loading as loading

    nulls = importlib.import_module("geoprobe.scan.nulls")
    from geoprobe.errors import ModelUnavailableError
    from geoprobe.scan.config import ScanConfig

    def offline(name, revision=None, **kw):
        raise ModelUnavailableError(f"model {name!r}@{revision}: hub unreachable")

    monkeypatch.setattr(loading, "load_model", offline)
    stand_in = twin_factory("pythia-70m")
    pythia = _hub_pythia()
    pythia.hf_model, pythia.device = stand_in.hf_model, stand_in.device
    monkeypatch.setattr(nulls, "random_init_like", lambda m, seed: ("draw", seed))
    with pytest.warns(UserWarning, match="step0 baseline unavailable.*hub unreachable"):
        got = list(nulls.null_models(pythia, ScanConfig(prompts="builtin", init_draws=2, seed=1)))
    assert [(m, s, seed) for m, s, seed, _ in got] == [
        (("draw", 11000), "twin", 11000),
        (("draw", 11001), "twin", 11001),
    ]
