"""geoprobe.compare on scans written without a model: Table-2 numbers, grouping, the global PCA
on planted structure, bad input, persistence and the HTML report."""

import json
import math
import shutil
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from geoprobe.compare import GlobalPCA, ModelComparison, compare_results, global_pca, run_compare
from geoprobe.compare.inputs import describe, early_layers
from geoprobe.compare.report import comparison_figure, global_figure
from geoprobe.errors import GeoprobeError, OutputExistsError, ResultsError
from geoprobe.scan import ScanConfig, ScanResult

from ._build import N, entropy, make_capture, planted_values, prompts, write_scan

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A (mixed + math + code, with init baseline), B (mixed, wider, GQA→MHA), C (mixed, pure noise),
    D (mixed on other prompts), E (math only, id with a script tag)."""
    root = tmp_path_factory.mktemp("runs")
    ent = entropy()
    cap, init = make_capture("model-a", planted_values(ent, 16, 1), prompts(), ent)
    paths = {"a": write_scan(root, "a", cap, init)}
    cap, _ = make_capture("model-b", planted_values(ent, 24, 2), prompts(), ent + 0.3, Hkv=4)
    paths["b"] = write_scan(root, "b", cap)
    cap, _ = make_capture("model-c", planted_values(None, 16, 3), prompts(), entropy(seed=9))
    paths["c"] = write_scan(root, "c", cap)
    other = prompts(tag="other")[:25] + prompts()[:5]
    cap, _ = make_capture("model-d", planted_values(ent, 16, 4), other, ent)
    paths["d"] = write_scan(root, "d", cap)
    for dom, seed in (("math", 5), ("code", 6)):
        e = entropy(20, seed)
        cap, init = make_capture("model-a", planted_values(e, 16, seed), prompts(20, dom), e)
        paths[f"a-{dom}"] = write_scan(root, f"a-{dom}", cap, init, prompts_name=dom)
    e = entropy(20, 7)
    cap, _ = make_capture(EVIL, planted_values(e, 16, 7), prompts(20, "math"), e)
    paths["e-math"] = write_scan(root, "e-math", cap, prompts_name="math")
    return root, paths


@pytest.fixture(scope="module")
def comp_ab(runs):
    _, p = runs
    return compare_results([p["a"], p["b"], p["a-math"], p["a-code"]])


def test_rows_carry_the_inputs_numbers(runs, comp_ab):
    _, p = runs
    a, am = ScanResult.load(p["a"]), ScanResult.load(p["a-math"])
    row = comp_ab.row("model-a")
    assert row.mixed.pc1 == a.manifold.pc1[-1] and row.mixed.pc12 == a.manifold.pc12[-1]
    assert row.mixed.layer == 5 and row.mixed.n_prompts == N
    math_entry = next(e for e in row.restricted if e.domain == "math")
    assert math_entry.pc1 == am.manifold.pc1[-1] and math_entry.pc12 == am.manifold.pc12[-1]
    assert row.early_layers == (0, 1)  # first ⌈6/3⌉ layers
    o = a.orthogonality
    assert row.key_cos_early == pytest.approx(np.mean(o.layer_mean[:2]))
    assert row.key_cos_early_init == pytest.approx(np.mean(o.init_layer_mean[:2]))
    assert row.key_cos_gaussian == pytest.approx(o.gaussian)
    assert row.focusing == a.focusing.reduction and row.focusing_set == "mixed"
    arch = row.architecture
    assert (arch.n_layers, arch.n_heads, arch.n_kv_heads, arch.d_head, arch.attention, arch.source) == (
        6,
        4,
        2,
        8,
        "GQA 4:2",
        "capture",
    )
    assert comp_ab.row("model-b").architecture.attention == "MHA"


def test_mixed_and_restricted_grouping(comp_ab):
    a, b = comp_ab.row("model-a"), comp_ab.row("model-b")
    assert a.mixed.set_name == "mixed" and [e.domain for e in a.restricted] == ["math", "code"]
    assert b.mixed is not None and b.restricted == ()
    table = comp_ab.table()
    assert [(r["model"], r["restricted set"]) for r in table] == [
        ("model-a", "math"),
        ("model-a", "code"),
        ("model-b", "n/a"),
    ]
    assert table[2]["restricted PC1 %"] == "n/a"
    assert table[0]["mixed PC1 %"].startswith(f"{100 * a.mixed.pc1.value:.1f} [")


def test_restricted_only_model_gets_na_mixed(runs):
    _, p = runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = compare_results([p["a"], p["e-math"]])
    e = comp.row(EVIL)
    assert e.mixed is None and e.restricted[0].domain == "math"
    assert comp.table()[-1]["mixed PC1 %"] == "n/a"
    assert any("no mixed-set result" in n for n in comp.notes)


def test_global_pca_finds_the_shared_latent(comp_ab):
    g = comp_ab.global_pca
    assert g.models == ("model-a", "model-b") and g.n == N and g.d == (16, 24)
    assert g.explained[0] > 0.95  # both blocks are rank one on the same latent
    assert g.loading_share[:, 0] == pytest.approx([0.5, 0.5], abs=0.03)
    assert all(abs(r.value) > 0.95 for r in g.rho_own)
    assert all(abs(r.value) > 0.95 for r in g.rho_entropy)
    assert g.loading_share.sum(axis=0) == pytest.approx([1, 1])


def test_noise_model_gets_a_small_share_of_pc1(runs):
    _, p = runs
    g = compare_results([p["a"], p["b"], p["c"]]).global_pca
    assert g.models == ("model-a", "model-b", "model-c")
    assert g.loading_share[2, 0] < 0.1
    assert 0.6 < g.explained[0] < 0.75  # two of three equal-variance blocks share PC1
    assert abs(g.rho_own[2].value) < 0.6


def test_global_pca_is_invariant_to_column_scaling():
    ent = entropy()
    rng = np.random.default_rng(0)
    va, vb = planted_values(ent, 16, 1)[-1], planted_values(ent, 24, 2, noise=0.5)[-1]
    kw = dict(models=("a", "b"), prompts=prompts(), entropies=(ent, ent), layers=(5, 5), n_resamples=50)
    g1 = global_pca((va, vb), **kw)
    vb2 = vb * rng.uniform(0.01, 100, size=24) + rng.normal(size=24)
    g2 = global_pca((va, vb2), **kw)
    np.testing.assert_allclose(g1.coords, g2.coords, atol=1e-8)
    np.testing.assert_allclose(g1.loading_share, g2.loading_share, atol=1e-10)
    assert g1.explained == pytest.approx(g2.explained, abs=1e-12)
    # a model with twice the columns does not get twice the weight
    g3 = global_pca((va, np.concatenate([vb, vb], axis=1)), **kw)
    np.testing.assert_allclose(g3.loading_share, g1.loading_share, atol=1e-10)


def test_constant_columns_are_dropped():
    ent = entropy()
    va = planted_values(ent, 16, 1)[-1]
    vb = planted_values(ent, 16, 2)[-1]
    vb[:, :4] = 3.0
    g = global_pca((va, vb), ("a", "b"), prompts(), (ent, ent), (5, 5), n_resamples=20)
    assert g.d_kept == (16, 12) and g.d == (16, 16)


def test_different_prompt_sets_warn_with_both_hashes_and_skip_global_pca(runs):
    _, p = runs
    a, d = ScanResult.load(p["a"]), ScanResult.load(p["d"])
    with pytest.warns(UserWarning) as rec:
        comp = compare_results([p["a"], p["d"]])
    msgs = [str(w.message) for w in rec if "different" in str(w.message)]
    assert len(msgs) == 1
    for h in (a.provenance["prompts_hash"][:12], d.provenance["prompts_hash"][:12]):
        assert h in msgs[0]
    assert "model-a" in msgs[0] and "model-d" in msgs[0]
    assert msgs[0] in comp.notes
    assert comp.global_pca is None
    note = next(n for n in comp.notes if "global PCA skipped" in n)
    assert "only 5 prompt" in note and "--prompts FILE" in note


def test_same_prompts_do_not_warn(runs):
    _, p = runs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare_results([p["a"], p["b"]])


def test_bad_input(runs, tmp_path):
    _, p = runs
    with pytest.raises(GeoprobeError, match="at least two"):
        compare_results([p["a"]])
    junk = tmp_path / "notes.txt"
    junk.write_text("hello")
    for bad, expect in (
        (junk, "not valid JSON"),
        (tmp_path / "missing.json", "results.json"),
        (tmp_path, "results.json"),
    ):
        with pytest.raises(GeoprobeError) as exc:
            compare_results([p["a"], bad])
        msg = str(exc.value)
        assert str(bad) in msg and expect in msg and "\n" not in msg
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(ResultsError, match="not a geoprobe scan results file"):
        compare_results([p["a"], other])
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(p["a"], copy / "results.json")
    with pytest.raises(GeoprobeError, match="same scan") as exc:
        compare_results([p["a"], p["b"], copy])
    assert str(p["a"]) in str(exc.value) and str(copy / "results.json") in str(exc.value)
    with pytest.raises(GeoprobeError, match="layer 7 .*was not analysed"):
        compare_results([p["a"], p["b"]], layer=7)


def test_other_layer(runs):
    _, p = runs
    comp = compare_results([p["a"], p["b"]], layer=2)
    a = ScanResult.load(p["a"])
    assert comp.row("model-a").mixed.layer == 2 and comp.row("model-a").mixed.pc1 == a.manifold.pc1[2]
    assert comp.global_pca.layers == (2, 2)


def test_prompt_set_field_and_fallbacks():
    def fake(prompts_name, prompt_set=None, h="ab" * 32):
        return SimpleNamespace(
            model="m",
            provenance={"prompts_hash": h, "seed": 3},
            n_prompts=20,
            capture_dir=None,
            config=ScanConfig(prompts=prompts_name),
            prompt_set=prompt_set,
        )

    from pathlib import Path

    s = describe(Path("r.json"), fake("builtin"))
    assert (s.role, s.set_kind, s.domain, s.set_hash, s.seed) == ("mixed", "builtin", None, "ab" * 32, 3)
    assert describe(Path("r.json"), fake("/tmp/my prompts.txt")).role == "mixed"
    assert describe(Path("r.json"), fake("math")).domain == "math"
    s = describe(Path("r.json"), fake("x", {"name": "news", "kind": "corpus", "hash": "cd" * 32, "seed": 7}))
    assert (s.role, s.domain, s.set_hash, s.prompts_hash, s.seed) == ("restricted", "news", "cd" * 32, "ab" * 32, 7)
    s = describe(Path("r.json"), fake("x", {"name": "mixed", "kind": "corpus", "hash": "ef" * 32}))
    assert s.role == "mixed" and s.set_kind == "corpus"
    assert describe(Path("r.json"), fake("x", {"name": "f.txt", "kind": "file"})).role == "mixed"
    assert early_layers(24, tuple(range(24)), 1 / 3) == tuple(range(8))
    assert early_layers(30, (0, 12, 29), 1 / 3) == (0,)


def test_json_round_trip(comp_ab, tmp_path):
    path = comp_ab.save(tmp_path / "comparison.json")
    back = ModelComparison.load(path)
    assert back == comp_ab and back.table() == comp_ab.table()
    assert back.global_pca == comp_ab.global_pca and isinstance(back.global_pca, GlobalPCA)
    d = json.loads(path.read_text())
    assert d["kind"] == "geoprobe.compare" and d["version"] == 1
    d["version"] = 99
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d))
    with pytest.raises(ResultsError, match="version 99"):
        ModelComparison.load(bad)


def test_figures(comp_ab):
    fig = comparison_figure(comp_ab)
    traces = {t.name: t for t in fig.data}
    assert "PC1, mixed" in traces and "PC1, restricted: math" in traces
    mixed = traces["PC1, mixed"]  # drawn by geoprobe.report.series: one point per model with its error bars
    assert mixed.mode == "markers" and mixed.legendgroup == "PC1, mixed" and not [t for t in fig.data if t.fill]
    assert list(mixed.y) == pytest.approx([100 * r.mixed.pc1.value for r in comp_ab.rows])
    assert list(mixed.error_y.array) == pytest.approx(
        [100 * (r.mixed.pc1.high - r.mixed.pc1.value) for r in comp_ab.rows]
    )
    init = traces["early-layer key |cos| (trained): random init"]  # the null in its series' legend group
    assert init.mode == "markers" and init.legendgroup == "early-layer key |cos| (trained)"
    assert list(init.y) == pytest.approx([r.key_cos_early_init for r in comp_ab.rows])
    lo, hi = fig.layout.yaxis2.range  # the |cos| axis spans 0, the trained keys and their nulls
    assert lo < 0 and hi >= max(v for t in fig.data if t.yaxis == "y2" for v in t.y if v is not None)
    assert tuple(fig.layout.yaxis.range) == pytest.approx((-5.0, 105.0))  # PC1 % on its whole scale
    g = global_figure(comp_ab.global_pca)
    assert len(g.data[0].x) == N and [t.name for t in g.data[1:]] == ["share of PC1", "share of PC2"]


def test_html_report_escapes_and_refuses_overwrite(runs, tmp_path):
    _, p = runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = compare_results([p["a"], p["e-math"], p["a-math"]])
    out = comp.report(tmp_path / "compare.html")
    html = out.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and EVIL not in html
    assert html.count('<script type="text/javascript">') == 1  # plotly.js inlined once
    for ref in ("Pythia-410M", "79.6", "99.7", "58.0", "Phi-2", "46.4", "63.5", "Llama-3.2-1B", "36.6", "73.6"):
        assert ref in html
    with pytest.raises(OutputExistsError, match="--force"):
        comp.report(out)
    assert comp.report(out, force=True) == out


def test_run_compare_checks_outputs_before_computing(runs, tmp_path, monkeypatch):
    _, p = runs
    comp, j, h = run_compare([p["a"], p["b"]], tmp_path / "cmp", force=False)
    assert j.name == "comparison.json" and h.name == "compare.html" and ModelComparison.load(j) == comp
    import geoprobe.compare.run as result_mod

    def boom(*a, **k):
        raise AssertionError("computed before checking the outputs")

    monkeypatch.setattr(result_mod, "compare_results", boom)
    with pytest.raises(OutputExistsError, match="--force"):
        run_compare([p["a"], p["b"]], tmp_path / "cmp", force=False)
    assert math.isfinite(comp.global_pca.explained[0])


@pytest.mark.parametrize("key", ["model_id", "weights", "dtype", "prompts_hash"])
def test_a_capture_whose_provenance_differs_from_its_results_is_refused(runs, tmp_path, key):
    """compare reads a run's capture (architecture, global PCA) only when its capture.json records the
    model, weights, dtype and prompts hash that the run's results.json does (issue 27 part 4)."""
    _, p = runs
    run = tmp_path / "a"
    shutil.copytree(p["a"].parent, run)
    meta_path = run / "capture" / "capture.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["provenance"][key] = "sha256:" + "0" * 64 if key in ("weights", "prompts_hash") else "other"
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(GeoprobeError) as e:
        compare_results([run, p["b"]])
    msg = str(e.value)
    assert f"run {str(run)!r}" in msg and f"{key} is " in msg and "put back the capture" in msg and "\n" not in msg


def test_a_run_without_its_capture_is_still_compared_with_a_note(runs, tmp_path):
    """Only a capture that is there and not the run's own is refused; a run copied without capture/
    is compared as before (the global PCA leaves it out and says so)."""
    _, p = runs
    run = tmp_path / "a"
    shutil.copytree(p["a"].parent, run)
    shutil.rmtree(run / "capture")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = compare_results([run, p["b"]])
    assert any("unusable" in n and "left out" in n for n in comp.notes)
