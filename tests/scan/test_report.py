"""The HTML report: self-contained, every user string escaped, never overwritten silently."""

import dataclasses

import pytest

from geoprobe.errors import OutputExistsError
from geoprobe.scan import ScanConfig, analyse

from ._synthetic import synthetic_capture

EVIL = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def result():
    cap, init = synthetic_capture(structured=True, model_id=f"evil/{EVIL}")
    r = analyse(
        cap,
        ScanConfig(n_resamples=100, pca_resamples=20, null_draws=20, n_permutations=100, scatter_layers=(1,)),
        init_w_k=init,
        notes=(f"prompt {EVIL} was truncated",),
    )
    return r


def test_report_is_self_contained_and_escapes_user_strings(result, tmp_path):
    path = result.report(tmp_path / "report.html")
    html = path.read_text(encoding="utf-8")
    assert html.count("<script") == 1 + len(result.figures())  # plotly.js once + one per figure (scorecard is a table)
    assert EVIL not in html and 'alert("x")</script>' not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html  # the model id and the note, escaped
    # opens offline: plotly.js is inline (no <script src=...>), and nothing outside it loads a URL
    # (plotly.js's own source mentions CDNs for map tiles, which these figures do not use)
    assert "<script src" not in html and "<link" not in html
    start = html.index("<script")
    outside = html[:start] + html[html.index("</script>", start) :]
    assert "http://" not in outside and "https://" not in outside
    for anchor in (
        "manifold-scatter-3",
        "manifold-scatter-1",
        "manifold-profile",
        "entropy-scatter",
        "alignment-profile",
        "key-orthogonality",
        "attention-focusing",
    ):
        assert f'id="{anchor}"' in html
    assert "Scorecard" in html and result.provenance["prompts_hash"] in html


def test_report_is_not_overwritten_without_force(result, tmp_path):
    path = tmp_path / "report.html"
    result.report(path)
    path.write_text(path.read_text().replace("Scorecard", "Scorecard (edited)"))
    edited = path.read_text()
    with pytest.raises(OutputExistsError, match="--force"):
        result.report(path)
    assert path.read_text() == edited
    result.report(path, force=True)
    assert path.read_text().startswith("<!DOCTYPE html>") and path.read_text() != edited


def test_a_page_geoprobe_did_not_write_is_never_replaced(result, tmp_path):
    path = tmp_path / "report.html"
    path.write_text("keep me")
    for force in (False, True):
        with pytest.raises(OutputExistsError, match="not written by geoprobe"):
            result.report(path, force=force)
    assert path.read_text() == "keep me"


def test_scorecard_rows_match_the_results(result):
    rows = {r["criterion"]: r for r in result.scorecard.rows()}
    f = next(c for c in result.scorecard.criteria if c.key == "attention_focusing")
    assert rows[f.label]["value"] == f"{f.value.value:.1f} %"


def test_partial_scans_report_what_they_have(tmp_path):
    cap, _ = synthetic_capture(structured=True)
    r = analyse(cap, ScanConfig(analyses=("focusing",), n_resamples=100))
    assert r.manifold is None and [c.key for c in r.scorecard.criteria] == ["attention_focusing"]
    html = r.report(tmp_path / "r.html").read_text()
    assert 'id="attention-focusing"' in html and 'id="manifold-profile"' not in html
    assert dataclasses.replace(r, notes=("x",)).notes == ("x",)


def test_written_files_get_ordinary_permissions(result, tmp_path):
    """Atomic writes go through mkstemp (0600); the final files must follow the umask like open()."""
    import os

    from geoprobe.paths import public_mode

    old = os.umask(0o022)
    try:
        assert oct(result.report(tmp_path / "r.html").stat().st_mode & 0o777) == oct(public_mode()) == "0o644"
        assert oct(result.save(tmp_path / "results.json").stat().st_mode & 0o777) == "0o644"
    finally:
        os.umask(old)


def test_report_names_the_prompt_set_escaped(tmp_path):
    import dataclasses

    from geoprobe.scan import ScanConfig, analyse
    from tests.scan._synthetic import synthetic_capture

    cap, _ = synthetic_capture(structured=True, n=12)
    res = analyse(
        cap,
        ScanConfig(
            n_resamples=50, pca_resamples=20, null_draws=20, n_permutations=50, analyses=("manifold", "focusing")
        ),
        prompt_set={"name": "<b>mine</b>", "kind": "file", "hash": "ab" * 32, "seed": 0, "n": 12},
    )
    html = res.report(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "set &lt;b&gt;mine&lt;/b&gt;, sha256 abababababab" in html and "<b>mine</b>" not in html
    assert dataclasses.replace(res, prompt_set=None).report(tmp_path / "r2.html").exists()
