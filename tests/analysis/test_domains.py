"""geoprobe.analysis.contrast, geoprobe.analysis.token_match and geoprobe.domains on planted structure
(seeded, fast)."""

from __future__ import annotations

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from geoprobe.analysis.contrast import DomainContrast, contrast
from geoprobe.analysis.stats import spectrum
from geoprobe.analysis.token_match import balance, frequency_profile, match_features, matched_control, token_counts
from geoprobe.domains import DomainComparison, compare_domains
from geoprobe.domains.report import difference_figure, sets_figure
from geoprobe.errors import ResultsError

FAST = dict(n_resamples=100, n_permutations=200, null_draws=50)


def factor(n: int, d: int, strength: float, seed: int, exact: bool = True, u_seed: int | None = None) -> np.ndarray:
    """x_ij = strength · t_i · u_j + e_ij with u_j = ±1: every pair of columns has correlation
    ρ = s² / (1 + s²), so the population PC1 of the standardised data is (1 + (d − 1) ρ) / d.
    t is standardised over the n rows, so the sample factor variance is exactly 1 and PC1 is
    sharp (sd ≈ 0.005 over seeds at n = 75, d = 192); ``exact=False`` leaves t iid N(0, 1), as
    a null test needs (sets standardised on their own are not exchangeable with pooled rows);
    ``u_seed`` fixes the loadings u, so two sets share one distribution."""
    rng = np.random.default_rng(seed)
    t = rng.standard_normal(n)
    if exact:
        t = (t - t.mean()) / t.std()
    u = rng.choice([-1.0, 1.0], d) if u_seed is None else np.random.default_rng(u_seed).choice([-1.0, 1.0], d)
    return strength * np.outer(t, u) + rng.standard_normal((n, d))


def planted_pc1(d: int, strength: float) -> float:
    rho = strength**2 / (1 + strength**2)
    return (1 + (d - 1) * rho) / d


# -- contrast ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def planted() -> tuple[DomainContrast, np.ndarray, np.ndarray]:
    x_a = np.random.default_rng(10).standard_normal((75, 192))  # isotropic
    x_b = factor(75, 192, 1.0, seed=11)  # population PC1 = 0.503
    return contrast(x_a, x_b, label_a="mixed", label_b="math", random_state=0), x_a, x_b


def test_planted_rank_one_set_is_detected(planted):
    c, x_a, x_b = planted
    assert (c.n_a, c.n_b, c.d) == (75, 75, 192)
    # point values are manifold.py's definitions
    for side, x in (("a", x_a), ("b", x_b)):
        r = spectrum(x)
        est = getattr(c, side)
        assert est["pc1"].value == pytest.approx(r[0], abs=1e-10)
        assert est["pc12"].value == pytest.approx(r[:2].sum(), abs=1e-10)
        assert est["pr"].value == pytest.approx(1 / np.sum(r**2), rel=1e-9)
    d = c.diff["pc1"]
    assert d.value == pytest.approx(c.b["pc1"].value - c.a["pc1"].value)
    assert d.low > 0.3, d  # CI excludes 0 by a wide margin
    assert c.p_value["pc1"] < 0.01 and c.p_value["pc1"] == pytest.approx(1 / 1001)
    assert c.diff["pr"].high < 0 and c.p_value["pr"] < 0.01  # collapse: fewer effective dimensions
    # Δ ≈ planted PC1 (0.503) − PC1 of isotropic noise at n = 75, D = 192 (Marchenko–Pastur edge,
    # (1/√n + 1/√D)² = 0.035) = 0.467; over 40 seeds the sample Δ was 0.475 ± 0.005 (sd), so a
    # tolerance of 0.03 allows the small finite-n excess plus 4 sd
    expected = planted_pc1(192, 1.0) - (1 / math.sqrt(75) + 1 / math.sqrt(192)) ** 2
    assert d.value == pytest.approx(expected, abs=0.03)
    assert d.low <= expected <= d.high
    # each set sits where its null says: isotropic inside its band, planted far above
    assert c.null_a.pc1.low <= c.a["pc1"].value <= c.null_a.pc1.high
    assert c.b["pc1"].value > 5 * c.null_b.pc1.high
    assert c.null_a.n == c.null_b.n == 75 and c.null_a.kind == "gaussian"


def test_same_distribution_difference_is_not_significant():
    """30 seeded pairs from one planted-factor distribution: the Δ PC1 interval covers 0 in at
    least 27 (nominal 95 %: expect ~28.5), permutation p-values are not concentrated near 0."""
    covered, ps = 0, []
    for seed in range(30):
        x_a = factor(40, 60, 0.7, 100 + seed, exact=False, u_seed=9)
        x_b = factor(40, 60, 0.7, 200 + seed, exact=False, u_seed=9)
        c = contrast(x_a, x_b, label_a="a", label_b="b", random_state=seed, **FAST)
        covered += c.diff["pc1"].low <= 0 <= c.diff["pc1"].high
        ps.append(c.p_value["pc1"])
    ps = np.array(ps)
    assert covered >= 27, covered
    assert np.mean(ps < 0.05) <= 4 / 30 and ps.min() > 0.005, ps
    assert 0.3 < ps.mean() < 0.7, ps.mean()  # roughly uniform


def test_per_coordinate_shift_and_scale_change_nothing():
    """Standardised PCA is invariant to a per-coordinate affine map, and so is the test: each set
    is z-scored on its own before pooling, so a domain's mean shift does not enter the
    permutation distribution as between-set variance."""
    x_a, x_b = factor(40, 50, 0.7, 1, exact=False, u_seed=2), factor(40, 50, 0.7, 3, exact=False, u_seed=2)
    c = contrast(x_a, x_b, label_a="a", label_b="b", **FAST)
    moved = contrast(x_a, x_b * np.linspace(1, 5, 50) + 3.0, label_a="a", label_b="b", **FAST)
    for m in ("pc1", "pc12", "pr"):
        assert moved.diff[m].value == pytest.approx(c.diff[m].value, abs=1e-9)
        assert moved.diff[m].low == pytest.approx(c.diff[m].low, abs=1e-9)
        assert moved.p_value[m] == c.p_value[m]
    assert c.p_value["pc1"] > 0.05


def test_equal_n_is_required_unless_allowed():
    x_a, x_b = factor(40, 30, 1.0, 0), factor(50, 30, 1.0, 1)
    with pytest.raises(ValueError, match=r"'mixed' has n = 40.*'math' has n = 50.*allow_unequal=True"):
        contrast(x_a, x_b, label_a="mixed", label_b="math", **FAST)
    c = contrast(x_a, x_b, label_a="mixed", label_b="math", allow_unequal=True, **FAST)
    assert (c.n_a, c.n_b, c.null_a.n, c.null_b.n) == (40, 50, 40, 50)
    with pytest.raises(ValueError, match="D = 30 .* D = 20"):
        contrast(x_a, x_b[:40, :20], label_a="mixed", label_b="math", **FAST)
    with pytest.raises(ValueError, match="different"):
        contrast(x_a, x_a, label_a="x", label_b="x", **FAST)
    with pytest.raises(ValueError, match="no variance"):
        contrast(x_a, np.ones((40, 30)), label_a="mixed", label_b="flat", **FAST)


def test_determinism_and_random_state():
    x_a, x_b = factor(40, 50, 0.5, 3), factor(40, 50, 1.0, 4)
    c1 = contrast(x_a, x_b, label_a="a", label_b="b", random_state=5, **FAST)
    c2 = contrast(x_a, x_b, label_a="a", label_b="b", random_state=5, **FAST)
    c3 = contrast(x_a, x_b, label_a="a", label_b="b", random_state=6, **FAST)
    assert c1 == c2 and json.dumps(c1.to_dict()) == json.dumps(c2.to_dict())
    for m in ("pc1", "pc12", "pr"):
        assert c1.diff[m].value == c3.diff[m].value and c1.b[m].value == c3.b[m].value
        assert c1.diff[m].low != c3.diff[m].low  # a different bootstrap
    assert c1.null_a.pc1 != c3.null_a.pc1


def test_contrast_round_trip_and_validation(planted):
    c = planted[0]
    d = json.loads(json.dumps(c.to_dict(), allow_nan=False))
    assert DomainContrast.from_dict(d) == c
    assert c.p_adjusted == c.p_value and c.n_tests == 1
    bad = json.loads(json.dumps(d))
    bad["diff"]["pc1"]["value"] = 0.0
    with pytest.raises(ValueError, match="is not b − a"):
        DomainContrast.from_dict(bad)
    bad = json.loads(json.dumps(d))
    bad["p_value"]["pc1"] = 0.0
    with pytest.raises(ValueError, match="p-values|p_value"):
        DomainContrast.from_dict(bad)


# -- matched control ---------------------------------------------------------------------------
def test_matched_control_recovers_planted_subset_and_honours_exclude():
    rng = np.random.default_rng(0)
    pool = np.column_stack([rng.integers(8, 40, 400), rng.normal(-4, 0.5, 400), rng.gamma(2, 0.3, 400)])
    subset = rng.choice(400, 25, replace=False)
    target = pool[subset] + 1e-9
    got = matched_control(pool, target, random_state=1)
    np.testing.assert_array_equal(got, subset)  # entry i matches target row i
    excluded = subset[:5]
    got = matched_control(pool, target, exclude=excluded)
    assert len(set(got)) == 25 and not set(got) & set(excluded)
    np.testing.assert_array_equal(got[5:], subset[5:])
    with pytest.raises(ValueError, match=r"2 eligible rows \(10 in all, 8 excluded\).*needs 3"):
        matched_control(pool[:10], pool[:3], exclude=range(8))
    with pytest.raises(ValueError, match="features"):
        matched_control(pool, pool[:3, :2])


def test_matching_balances_a_shifted_pool():
    """A target shifted by 0.5 sd: a random draw from the pool is off by SMD ≈ −0.5 per feature,
    the optimal match by |SMD| < 0.1 (max |SMD| 0.04–0.095 over seeds 0–9; it grows with the
    shift, since matching minimises distances, not SMDs)."""
    rng = np.random.default_rng(2)
    pool = rng.standard_normal((1000, 3))
    target = rng.standard_normal((75, 3)) + 0.5
    random_draw = pool[rng.choice(1000, 75, replace=False)]
    smd_random = balance(random_draw, target)
    assert list(smd_random) == ["n_tokens", "mean_log10_freq", "sd_log10_freq"]
    assert all(v < -0.3 for v in smd_random.values()), smd_random
    smd = balance(pool[matched_control(pool, target)], target)
    assert all(abs(v) < 0.1 for v in smd.values()), smd
    assert balance(np.ones((3, 1)), np.ones((4, 1)), names=["x"]) == {"x": 0.0}


def test_frequency_profile_by_hand():
    prompts = [[1, 1, 2], [2], [3]]
    counts = token_counts(prompts[:2])
    assert counts == {1: 2, 2: 2}
    # vocabulary {1, 2, 3} (3 appears only in the prompts), Σc = 4: f = (c + 1) / (4 + 3)
    f1, f2, f3 = math.log10(3 / 7), math.log10(3 / 7), math.log10(1 / 7)
    prof = frequency_profile(prompts, counts)
    np.testing.assert_allclose(prof, [[(2 * f1 + f2) / 3, 0.0], [f2, 0.0], [f3, 0.0]], atol=1e-12)
    counts = {1: 3, 2: 1}  # V = 2, Σc = 4: f1 = 4/6, f2 = 2/6
    a, b = math.log10(4 / 6), math.log10(2 / 6)
    mean = (2 * a + b) / 3
    sd = math.sqrt((2 * (a - mean) ** 2 + (b - mean) ** 2) / 3)
    np.testing.assert_allclose(frequency_profile([[1, 1, 2]], counts), [[mean, sd]], atol=1e-12)
    arr = token_counts([[1, 1, 1, 2]], vocab_size=3)  # [0, 3, 1]: V = 3, Σc = 4
    np.testing.assert_array_equal(arr, [0, 3, 1])
    np.testing.assert_allclose(frequency_profile([[0]], arr), [[math.log10(1 / 7), 0.0]], atol=1e-12)
    np.testing.assert_allclose(match_features([[1, 1, 2]], counts), [[3, mean, sd]], atol=1e-12)
    with pytest.raises(ValueError, match="no tokens"):
        frequency_profile([[]], counts)
    with pytest.raises(ValueError, match="outside the counts array"):
        frequency_profile([[5]], arr)


# -- DomainComparison ----------------------------------------------------------------------------
N, D = 40, 48
CMP = dict(n_resamples=60, n_permutations=100, null_draws=40)


def _inputs(extra_domain: bool = True) -> dict:
    values = {"mixed": factor(N, D, 0.4, 1), "math": factor(N, D, 1.5, 2), "math-control": factor(N, D, 0.45, 3)}
    if extra_domain:
        values["code"] = factor(N, D, 0.6, 4)
    kinds = {"mixed": "mixed", "math": "restricted", "math-control": "control", "code": "restricted"}
    domain_of = {"mixed": None, "math": "math", "math-control": "math", "code": "code"}
    rng = np.random.default_rng(0)
    return dict(
        values=values,
        kinds={k: kinds[k] for k in values},
        domain_of={k: domain_of[k] for k in values},
        entropies={k: rng.uniform(1, 5, N) for k in values},
        n_tokens={k: rng.integers(5, 30, N) for k in values},
        prompts_hash={k: f"sha256:{k}" for k in values},
        balance={"math": {"n_tokens": 0.02, "mean_log10_freq": -0.04, "sd_log10_freq": 0.3}},
    )


@pytest.fixture(scope="module")
def comparison() -> DomainComparison:
    return compare_domains(**_inputs(), model="toy-model", layer=11, provenance={"seed": 0}, **CMP)


def test_compare_domains_contrasts_and_bonferroni(comparison):
    cmp = comparison
    assert cmp.domains == ("math", "code")
    pairs = [(c.label_a, c.label_b) for c in cmp.contrasts]
    assert pairs == [("mixed", "math"), ("mixed", "code"), ("mixed", "math-control"), ("math-control", "math")]
    math_c = cmp.versus_mixed("math")
    assert math_c.n_tests == 2 and cmp.get("mixed", "math-control").n_tests == 1
    for m in ("pc1", "pc12", "pr"):
        assert math_c.p_adjusted[m] == pytest.approx(min(1.0, 2 * math_c.p_value[m]))
    assert math_c.diff["pc1"].low > 0 and math_c.p_adjusted["pc1"] < 0.05  # strong planted factor
    assert cmp.get("math-control", "math").diff["pc1"].low > 0  # collapse beyond the matched control
    assert cmp.sets["math"].pc1 == math_c.b["pc1"] and cmp.sets["mixed"].pc1 == math_c.a["pc1"]
    # a contrast does not depend on which other domains are analysed, and contrast() reproduces it
    alone = compare_domains(**_inputs(extra_domain=False), **CMP)
    c_alone = alone.versus_mixed("math")
    assert c_alone.diff == math_c.diff and c_alone.p_value == math_c.p_value
    direct = contrast(_inputs()["values"]["mixed"], _inputs()["values"]["math"], label_a="mixed", label_b="math", **CMP)
    assert direct.diff == math_c.diff and direct.p_value == math_c.p_value
    assert any("no matched control for ['code']" in s for s in cmp.notes)
    assert any("imbalanced" in s and "sd_log10_freq" in s for s in cmp.notes)


def test_compare_domains_bad_input():
    base = _inputs()
    bad = {**base, "values": {**base["values"], "code": factor(N + 5, D, 0.6, 4)}}
    with pytest.raises(ValueError, match="differ in size.*'code': 45.*allow_unequal"):
        compare_domains(**bad, **CMP)
    bad = {**base, "kinds": {**base["kinds"], "mixed": "restricted"}}
    with pytest.raises(ValueError, match="'mixed' of kind 'mixed'"):
        compare_domains(**bad, **CMP)
    bad = {**base, "entropies": {k: v for k, v in base["entropies"].items() if k != "code"}}
    with pytest.raises(ValueError, match="entropies covers"):
        compare_domains(**bad, **CMP)
    values = {("math-ctl" if k == "math-control" else k): v for k, v in base["values"].items()}
    ren = {
        name: {("math-ctl" if k == "math-control" else k): v for k, v in base[name].items()}
        for name in ("kinds", "domain_of", "entropies", "n_tokens", "prompts_hash")
    }
    with pytest.raises(ValueError, match="must be named '<domain>-control'"):
        compare_domains(values, **ren, **CMP)


def test_comparison_round_trip_and_save_load(comparison, tmp_path):
    d = comparison.to_dict()
    assert d["kind"] == "geoprobe.domains" and d["version"] == 1
    text = json.dumps(d, allow_nan=False)
    assert DomainComparison.from_dict(json.loads(text)) == comparison
    path = comparison.save(tmp_path / "domains.json")
    back = DomainComparison.load(path)
    assert back == comparison and back.sets["math"].prompts_hash == "sha256:math"
    assert back.provenance == {"seed": 0} and back.layer == 11 and back.notes == comparison.notes
    with pytest.raises(ResultsError, match="not a geoprobe domain comparison.*'geoprobe.scan'"):
        DomainComparison.from_dict({**d, "kind": "geoprobe.scan"})
    with pytest.raises(ResultsError, match="version 2.*reads version 1"):
        DomainComparison.from_dict({**d, "version": 2})
    with pytest.raises(ResultsError, match="damaged"):
        DomainComparison.from_dict({**d, "sets": {}})
    with pytest.raises(ResultsError, match="does not exist"):
        DomainComparison.load(tmp_path / "missing.json")


def test_table_and_figures(comparison):
    rows = comparison.table()
    assert [r["set"] for r in rows] == ["mixed", "math", "math-control", "code"]
    assert rows[0]["ΔPC1 vs mixed"] == "—" and rows[1]["kind"] == "restricted" and rows[1]["n"] == N
    c = comparison.versus_mixed("math")
    assert rows[1]["ΔPC1 vs mixed"].startswith(f"{100 * c.diff['pc1'].value:+.1f} [")
    assert rows[1]["ΔPC1 vs mixed"].endswith(f"p = {c.p_adjusted['pc1']:.2g}")
    assert rows[1]["PC1 %"].startswith(f"{100 * comparison.sets['math'].pc1.value:.1f} [")
    fig = sets_figure(comparison)  # drawn by geoprobe.report.series: a point per set, its null bar, no joins
    assert isinstance(fig, go.Figure)
    assert "toy-model" in fig.layout.title.text and "layer 11" in fig.layout.title.text
    kinds = ["mixed (95 % CI)", "restricted (95 % CI)", "control (95 % CI)"]
    assert [t.name for t in fig.data if t.mode == "markers" and t.xaxis == "x"] == kinds
    traces = {(t.name, t.xaxis): t for t in fig.data}
    restricted_pc1 = traces[("restricted (95 % CI)", "x")]
    assert list(restricted_pc1.x) == ["math", "code"] and restricted_pc1.legendgroup == "restricted (95 % CI)"
    assert restricted_pc1.y[0] == pytest.approx(100 * comparison.sets["math"].pc1.value)
    null = traces[("restricted (95 % CI): Gaussian null (95 % band)", "x")]  # one bar per set, broken between
    band = comparison.sets["math"].null.pc1
    assert list(null.x[:3]) == ["math", "math", None] and null.y[:2] == pytest.approx((100 * band.low, 100 * band.high))
    mixed = [t for t in fig.data if t.name == "mixed set"]  # the mixed set's value in every panel
    assert [t.y[0] for t in mixed] == pytest.approx(
        [
            100 * comparison.sets["mixed"].pc1.value,
            100 * comparison.sets["mixed"].pc12.value,
            comparison.sets["mixed"].pr.value,
        ]
    )
    lo, hi = fig.layout.yaxis.range
    assert lo < 0 and hi >= 100 * max(comparison.sets[k].null.pc1.high for k in comparison.sets)
    diff = difference_figure(comparison)
    assert isinstance(diff, go.Figure) and "layer 11" in diff.layout.title.text
    assert [t.name for t in diff.data if t.mode == "markers"] == [
        "restricted − mixed (95 % CI)",
        "control − mixed (95 % CI)",
        "restricted − control (95 % CI)",
    ] * 3
    first = diff.data[0]
    assert list(first.x) == ["math", "code"] and first.y[0] == pytest.approx(100 * c.diff["pc1"].value)
    assert first.error_y.array[0] == pytest.approx(100 * (c.diff["pc1"].high - c.diff["pc1"].value))
    assert len(diff.data[1].x) == 1 and diff.layout.scattermode == "group"  # contrasts side by side per domain
    lo, hi = diff.layout.yaxis.range
    assert lo <= 0 <= hi  # 0, no difference, is on every axis


def test_domains_report_escapes_user_strings_and_refuses_overwrite(tmp_path):
    from geoprobe.errors import OutputExistsError

    cmp = compare_domains(
        **_inputs(extra_domain=False),
        model="<script>alert(1)</script>",
        layer=3,
        provenance={"sets": {"mixed": {"name": "mixed", "hash": "ab" * 32, "n": N, "domain_counts": {"<i>x</i>": N}}}},
        notes=["note with <b>markup</b>"],
        **CMP,
    )
    path = cmp.report(tmp_path / "d.html")
    html = path.read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>markup</b>" not in html and "<i>x</i>" not in html
    assert "79.6 / 99.7" in html and html.count('class="plotly-graph-div"') == 2
    with pytest.raises(OutputExistsError, match="--force"):
        cmp.report(path)
