"""Every scan reports whether each layer's value PC1 is an axis (issue 37 item 5): the registered
``identifiability`` metric, its ScanResult field, its tidy rows, its page figure and table columns,
and the CLI summary, on synthetic captures with planted geometry (rank-1 values) and noise."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geoprobe.analysis.tracking import axis_identifiability
from geoprobe.scan import ANALYSES, ScanConfig, ScanResult, analyse
from geoprobe.scan.report import layer_table, scan_figures
from geoprobe.scan.report.figures import identifiability_figure

from ._synthetic import synthetic_capture

FAST = ScanConfig(n_resamples=100, pca_resamples=20, null_draws=40, n_permutations=100)


@pytest.fixture(scope="module")
def planted():
    cap, init = synthetic_capture(structured=True)
    return cap, analyse(cap, FAST, init_w_k=init)


@pytest.fixture(scope="module")
def noise():
    cap, init = synthetic_capture(structured=False)
    return cap, analyse(cap, FAST, init_w_k=init)


def test_every_scan_runs_it_by_default():
    assert "identifiability" in ANALYSES and "identifiability" in ScanConfig().analyses
    assert ANALYSES[-1] == "identifiability"  # registered last: the other metrics' order is unchanged


def test_the_scan_record_is_the_analyser_on_the_captured_values(planted):
    cap, r = planted
    ident = r.identifiability
    assert ident is not None and ident.layers == r.layers and ident.n == r.n_prompts
    values = [v.reshape(cap.n_prompts, -1) for v in cap.per_layer("values")]
    direct = axis_identifiability(values, r.layers, model=r.model, null_draws=FAST.null_draws, random_state=FAST.seed)
    assert direct == ident
    assert all(ident.identifiable)  # rank-1 values plus 5 % noise
    assert min(s.value.value for s in ident.split_half) > 0.99


def test_noise_has_no_identifiable_axis(noise):
    _, r = noise
    assert not any(r.identifiability.identifiable)
    assert all(r.identifiability.note(x).startswith("PC1 not identifiable (") for x in r.layers)


def test_tidy_rows_carry_split_half_and_eigengap_with_their_nulls(noise):
    _, r = noise
    ident = r.identifiability
    rows = {(row["layer"], row["metric"]): row for row in r.rows()}
    for i, layer in enumerate(r.layers):
        half, gap = rows[(layer, "pc1_split_half")], rows[(layer, "pc1_eigengap")]
        s, e = ident.split_half[i], ident.eigengap[i]
        assert (half["estimate"], half["low"], half["high"]) == (s.value.value, s.value.low, s.value.high)
        assert half["null"] == s.null_high and half["n"] == r.n_prompts
        assert gap["estimate"] == e.gap and gap["null"] == e.north_error and gap["low"] is None
        assert gap["estimate"] == pytest.approx(e.pc1 - e.pc2)


def test_results_round_trip_and_an_old_file_without_it_keeps_its_bytes(planted, tmp_path):
    _, r = planted
    back = ScanResult.load(r.save(tmp_path / "results.json"))
    assert back.identifiability == r.identifiability
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert list(doc)[-1] == "identifiability"  # the last field: older keys keep their order
    old = {k: v for k, v in r.to_dict().items() if k != "identifiability"}
    assert ScanResult.from_dict(old).identifiability is None
    assert ScanResult.from_dict(old).to_dict() == old  # None is not written: an old file re-encodes as read


def test_the_page_shows_it_and_withholds_the_entropy_axis_claim(planted, noise):
    _, good = planted
    _, bad = noise
    names = [f.anchor for f in scan_figures(bad)]
    assert "pc1-identifiability" in names
    captions = {f.anchor: f.caption for f in scan_figures(bad)}
    assert "PC1 not identifiable (split-half |cos|" in captions[f"manifold-scatter-{bad.layers[-1]}"]
    assert "PC1 not identifiable at layer(s) 0, 1, 2, 3" in captions["alignment-profile"]
    table = layer_table(bad)
    assert table.count("PC1 not identifiable (ρ") == len(bad.layers) and "PC1 identifiable" in table
    assert "not identifiable" not in " ".join(
        f.caption for f in scan_figures(good) if f.anchor != "pc1-identifiability"
    )
    assert "not identifiable" not in layer_table(good)


def test_the_figure_carries_the_record_numbers(noise):
    ident = noise[1].identifiability
    fig = identifiability_figure(ident)
    by_name = {(t.name, t.xaxis): t for t in fig.data}
    name = next(n for n, _ in by_name if n.startswith("median") and ": " not in n)
    half = by_name[(name, "x")]
    np.testing.assert_allclose(half.y, [s.value.value for s in ident.split_half])
    band = by_name[(f"{name}: interval", "x")]  # drawn by geoprobe.report.series: its band, null, marks
    np.testing.assert_allclose(
        band.y, [s.value.high for s in ident.split_half] + [s.value.low for s in ident.split_half][::-1]
    )
    np.testing.assert_allclose(by_name[(f"{name}: null (upper)", "x")].y, [s.null_high for s in ident.split_half])
    np.testing.assert_allclose(by_name[("r1 − r2", "x2")].y, [e.gap for e in ident.eigengap])
    north = by_name[("r1 − r2: North's error r1·√(2/n)", "x2")]
    np.testing.assert_allclose(north.y, [e.north_error for e in ident.eigengap])
    assert north.legendgroup == "r1 − r2" and max(north.y) <= fig.layout.yaxis2.range[1]
    assert len(by_name[(f"{name}: PC1 identifiable", "x")].x) == 0  # noise: no filled marker


def test_the_cli_summary_says_so_per_layer(noise, planted, capsys):
    from geoprobe.cli.scan import print_scan

    print_scan(noise[1])
    text = capsys.readouterr().out
    for layer in noise[1].layers:
        assert f"layer {layer}: PC1 not identifiable (" in text
    print_scan(planted[1])
    assert "not identifiable" not in capsys.readouterr().out
