"""Static figure export (``--figures png|svg|pdf``): kaleido + the system Chromium.

Skipped with the reason where no Chromium is installed, except on CI (CI=true), where that fails."""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET

import pytest

from geoprobe.errors import GeoprobeError, OutputExistsError
from geoprobe.report.export import export_figures, figure_list
from tests.chromium import need_chromium
from tests.cli.test_cli import run_cli


def _figure():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3.25, 1.5, 4.75], mode="markers", name="geoprobe-trace-xyz"))
    fig.update_layout(width=400, height=300, showlegend=True, title="export test")
    return fig


def _anchors(html: str) -> set[str]:
    return set(re.findall(r'<figure id="([^"]+)"', html))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    need_chromium()
    out = tmp_path_factory.mktemp("export")
    return {
        fmt: export_figures([("small", "a caption", _figure())], out / fmt, fmt)[0] for fmt in ("png", "svg", "pdf")
    }


def test_png_has_the_magic_bytes_and_the_layout_size_at_scale_2(exported):
    data = exported["png"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert (width, height) == (800, 600)  # layout 400 × 300, png scale 2
    assert 2_000 < len(data) < 500_000
    assert exported["png"].name == "small.png"


def test_svg_parses_and_holds_the_trace(exported):
    text = exported["svg"].read_text(encoding="utf-8")
    root = ET.fromstring(text)
    assert root.tag.endswith("svg") and text.lstrip().startswith("<svg")
    assert "geoprobe-trace-xyz" in text  # the legend entry of the trace
    assert text.count('class="point"') == 3  # its three markers


def test_pdf_starts_with_the_pdf_header(exported):
    data = exported["pdf"].read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 1_000


def test_no_temporary_files_are_left_and_existing_files_need_force(exported):
    folder = exported["svg"].parent
    assert sorted(p.name for p in folder.iterdir()) == [".geoprobe-figures.json", "small.svg"]  # + the manifest
    before = exported["svg"].read_bytes()
    with pytest.raises(OutputExistsError, match="small.svg.*--force"):
        export_figures({"small": _figure()}, folder, "svg")
    assert exported["svg"].read_bytes() == before
    fig = _figure().update_traces(name="replaced-trace")
    export_figures({"small": fig}, folder, "svg", force=True)
    assert "replaced-trace" in exported["svg"].read_text(encoding="utf-8")


def test_bad_format_and_bad_anchor_are_one_line_errors(tmp_path):
    with pytest.raises(
        GeoprobeError, match=r"^--figures gif is not one of png, svg, pdf; pass --figures png\|svg\|pdf$"
    ):
        export_figures({"a": _figure()}, tmp_path, "gif")
    with pytest.raises(GeoprobeError, match="not a plain file name"):
        export_figures({"../escape": _figure()}, tmp_path, "svg")
    assert list(tmp_path.iterdir()) == []


# --- the CLI ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scan_dir(tmp_path_factory):
    """`geoprobe scan` on a tiny twin with --figures svg (run once for the CLI tests)."""
    need_chromium()
    tmp = tmp_path_factory.mktemp("scan-export")
    prompts = tmp / "p.txt"
    prompts.write_text("\n".join(f"Prompt number {i} says that the weather" for i in range(12)), encoding="utf-8")
    out_dir = tmp / "scan"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(
            "sys.argv",
            [
                "geoprobe",
                "scan",
                "--model",
                "twin:pythia-410m",
                "--prompts",
                str(prompts),
                "--out",
                str(out_dir),
                "--figures",
                "svg",
            ],
        )
        from geoprobe.cli import main

        try:
            main()
        except SystemExit as e:
            assert not e.code, f"scan --figures svg exited {e.code}"
    return out_dir


def test_scan_writes_one_svg_per_report_figure_named_by_its_anchor(scan_dir):
    from geoprobe.scan import ScanResult

    anchors = _anchors((scan_dir / "report.html").read_text(encoding="utf-8"))
    files = sorted(p for p in (scan_dir / "figures").iterdir() if not p.name.startswith("."))
    assert len(anchors) >= 4 and {p.stem for p in files} == anchors and all(p.suffix == ".svg" for p in files)
    assert [a for a, _, _ in figure_list(ScanResult.load(scan_dir))] == [
        a for a in re.findall(r'<figure id="([^"]+)"', (scan_dir / "report.html").read_text(encoding="utf-8"))
    ]
    for p in files:
        assert ET.parse(p).getroot().tag.endswith("svg")


def test_report_rebuild_writes_png_figures_beside_the_html(scan_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "rebuilt" / "report.html"
    code, stdout, err = run_cli(
        ["report", str(scan_dir / "results.json"), "--out", str(out), "--figures", "png"], capsys, monkeypatch
    )
    assert code == 0, err
    pngs = sorted((out.parent / "figures").glob("*.png"))
    assert {p.stem for p in pngs} == _anchors(out.read_text(encoding="utf-8"))
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert f"wrote {len(pngs)} png figures" in stdout


def test_existing_figure_is_kept_without_force(scan_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "again" / "report.html"
    code, _, err = run_cli(["report", str(scan_dir), "--out", str(out), "--figures", "svg"], capsys, monkeypatch)
    assert code == 0, err
    fig = out.parent / "figures" / "entropy-scatter.svg"
    fig.write_text("<svg>edited</svg>", encoding="utf-8")
    page = out.read_bytes()
    code, stdout, err = run_cli(["report", str(scan_dir), "--out", str(out), "--figures", "svg"], capsys, monkeypatch)
    assert code == 2
    assert err.strip().count("\n") == 0 and "--force" in err
    assert fig.read_text(encoding="utf-8") == "<svg>edited</svg>" and out.read_bytes() == page
    code, stdout, err = run_cli(
        ["report", str(scan_dir), "--out", str(out), "--figures", "svg", "--force"], capsys, monkeypatch
    )
    assert code == 0, err
    assert "edited" not in fig.read_text(encoding="utf-8") and "<svg" in fig.read_text(encoding="utf-8")


def test_a_figure_file_geoprobe_did_not_write_is_never_replaced(scan_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "foreign" / "report.html"
    mine = out.parent / "figures" / "entropy-scatter.svg"
    mine.parent.mkdir(parents=True)
    mine.write_text("<svg>my own drawing</svg>", encoding="utf-8")
    for extra in ([], ["--force"]):
        code, _, err = run_cli(
            ["report", str(scan_dir), "--out", str(out), "--figures", "svg", *extra], capsys, monkeypatch
        )
        assert code == 2 and err.strip().count("\n") == 0
        assert "entropy-scatter.svg" in err and "not written by geoprobe" in err
    assert mine.read_text(encoding="utf-8") == "<svg>my own drawing</svg>" and not out.exists()
    assert sorted(p.name for p in mine.parent.iterdir()) == ["entropy-scatter.svg"]


@pytest.mark.parametrize("how", ["missing BROWSER_PATH", "empty PATH"])
def test_no_chromium_is_a_one_line_error_before_anything_is_written(scan_dir, tmp_path, capsys, monkeypatch, how):
    if how == "missing BROWSER_PATH":
        monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))
    else:
        monkeypatch.delenv("BROWSER_PATH", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "nochrome" / "report.html"
    code, stdout, err = run_cli(["report", str(scan_dir), "--out", str(out), "--figures", "png"], capsys, monkeypatch)
    assert code == 2 and err.strip().count("\n") == 0
    assert err.startswith("error: --figures png needs Chromium")
    assert (
        ("no-such-chromium" in err) if how == "missing BROWSER_PATH" else ("install the Debian package chromium" in err)
    )
    assert not out.parent.exists()


def _refuse(*_a, **_k):
    raise AssertionError("work started before --figures was checked")


@pytest.mark.parametrize(
    "args, patch",
    [
        (["scan", "--model", "twin:pythia-410m", "--figures", "gif"], "geoprobe.models.loading.LoadOptions.load"),
        (["sula", "--model", "twin:pythia-410m", "--figures", "gif"], "geoprobe.models.loading.LoadOptions.load"),
        (["denoise", "--tiny", "--figures", "GIF"], "geoprobe.denoise.run.run_denoise"),
        (["windtunnel", "run", "--scale", "tiny", "--figures", "gif"], "geoprobe.windtunnel.experiment.train_into"),
        (["positional", "--model", "twin:pythia-410m", "--figures", "gif"], "geoprobe.models.loading.LoadOptions.load"),
    ],
)
def test_bad_format_fails_fast_with_exit_2(args, patch, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(patch, _refuse)
    code, stdout, err = run_cli([*args, "--out", str(tmp_path / "run")], capsys, monkeypatch)
    assert code == 2, err
    assert err.strip().count("\n") == 0 and "is not one of png, svg, pdf; pass --figures png|svg|pdf" in err
    assert not (tmp_path / "run").exists()
