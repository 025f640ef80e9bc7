"""What a Jupyter user needs: the dev set-up installs Jupyter (nbconvert, ipywidgets for progress bars), and
geoprobe.show puts plotly's JSON and a PNG of the same figure in one output (geoprobe/report/notebook.py).

The PNG tests need a Chromium for kaleido: skipped with the reason where none is installed, except on CI
(CI=true), where that fails."""

from __future__ import annotations

import base64
import os
import re
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.chromium import need_chromium

ROOT = Path(__file__).resolve().parents[2]
PLOTLY = "application/vnd.plotly.v1+json"
PNG = "image/png"


def _figure(title: str = "a figure", width: int = 420, height: int = 260):
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[2.5, 1.0, 3.5], name="trace-q7"))
    fig.update_layout(title=title, width=width, height=height)
    return fig


def _png_size(b64: str) -> tuple[int, int]:
    png = base64.b64decode(b64)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


# ---------------------------------------------------------------- the dev set-up
def test_dev_extra_installs_jupyter():
    """pyproject's dev extra (scripts/setup.sh installs it) names what a Jupyter user needs."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower() for d in extra["dev"]}
    assert {"notebook", "nbconvert", "ipywidgets", "ipykernel"} <= names  # kaleido (the PNGs) is a dependency
    assert '".[dev' in (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")


def test_jupyter_nbconvert_runs_in_the_dev_setup():
    """`jupyter nbconvert` (it was "not found") and `jupyter notebook`/`lab` are there, beside this Python."""
    jupyter = Path(sys.executable).parent / "jupyter"
    assert jupyter.is_file(), f"no {jupyter}: pip install -e '.[dev]' (scripts/setup.sh)"
    for sub in ("nbconvert", "notebook", "lab"):
        done = subprocess.run([str(jupyter), sub, "--version"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and re.match(r"^\d+\.\d+", done.stdout.strip()), (sub, done.stderr[-500:])


def test_progress_bars_find_ipywidgets():
    """tqdm's notebook bar needs ipywidgets' IProgress (without it: "TqdmWarning: IProgress not found")."""
    import ipywidgets
    import tqdm.notebook

    assert tqdm.notebook.IProgress is ipywidgets.FloatProgress


# ---------------------------------------------------------------- geoprobe.show: plotly JSON + PNG
def test_figure_bundle_holds_plotly_json_and_a_png_of_the_figure():
    need_chromium()
    import plotly.io as pio

    from geoprobe.report.notebook import figure_bundle

    fig = _figure()
    bundle = figure_bundle(fig, "the caption")
    assert bundle[PLOTLY] == pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_dict())[PLOTLY]  # as fig.show()
    assert _png_size(bundle[PNG]) == (420, 260)  # the layout's size
    assert bundle["text/plain"] == "the caption"
    sized = figure_bundle(_figure(width=None, height=None))
    assert _png_size(sized[PNG]) == (900, 500)  # no size in the layout: the export's default


def test_show_displays_a_result_figure_by_anchor(monkeypatch, capsys):
    """show(result, anchor) displays that figure of result.figures(); show(result) every figure after its
    caption; a wrong anchor names the result's figures. (The PNG is stubbed: the tests above draw real ones.)"""
    import IPython.display

    import geoprobe
    from geoprobe.report import notebook

    shown: list[tuple[dict, bool]] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    monkeypatch.setattr(notebook, "png_bytes", lambda fig: b"\x89PNG-stub")

    class Result:
        def figures(self):
            return [("first", "caption one", _figure("one")), ("second", "caption two", _figure("two"))]

    assert geoprobe.show is notebook.show and "show" in geoprobe.__all__
    geoprobe.show(Result(), "second")
    ((bundle, raw),) = shown
    assert raw and bundle[PLOTLY]["layout"]["title"]["text"] == "two" and bundle["text/plain"] == "caption two"
    assert base64.b64decode(bundle[PNG]) == b"\x89PNG-stub"
    assert capsys.readouterr().out == ""

    shown.clear()
    geoprobe.show(Result())
    # each caption as a text output, then its figure (no print: geoprobe writes only through its consoles)
    assert [b.get(PLOTLY, {}).get("layout", {}).get("title", {}).get("text", b["text/plain"]) for b, _ in shown] == [
        "caption one",
        "one",
        "caption two",
        "two",
    ]
    assert capsys.readouterr().out == ""

    shown.clear()
    geoprobe.show(_figure("bare"))
    geoprobe.show(("third", "caption three", _figure("three")))
    assert [(b[PLOTLY]["layout"]["title"]["text"], b["text/plain"]) for b, _ in shown] == [
        ("bare", "<plotly figure>"),
        ("three", "caption three"),
    ]
    with pytest.raises(KeyError, match="first, second"):
        geoprobe.show(Result(), "third")
    with pytest.raises(TypeError, match="has no figures"):
        geoprobe.show(_figure(), "first")


def test_without_a_browser_figures_are_shown_without_png_and_warned_once(tmp_path):
    """No Chromium: the figure still has plotly's JSON, no PNG, and one warning for the kernel, not one a figure."""
    code = (
        "import warnings\n"
        "import plotly.graph_objects as go\n"
        "from geoprobe.report.notebook import figure_bundle\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    bundles = [figure_bundle(go.Figure(go.Bar(y=[1, 2]))) for _ in range(2)]\n"
        "print([sorted(b) for b in bundles])\n"
        "print(len(w), w[0].category.__name__, str(w[0].message))\n"
    )
    env = {**os.environ, "BROWSER_PATH": str(tmp_path / "no-such-chromium")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kinds, warning = done.stdout.splitlines()
    assert kinds == str([[PLOTLY, "text/plain"]] * 2)
    assert warning.startswith("1 RuntimeWarning figures are shown without a static image")
    assert "no-such-chromium" in warning
