"""Every HTML report opened in headless Chromium: it renders with no console error, every plotly
figure draws every visible trace, nothing is fetched from the network, a full-page screenshot is
saved to test-artifacts/screenshots/<report>.png, and no user string (prompts, paths) injects
markup or script."""

from __future__ import annotations

import re
from html import escape

import pytest

from tests.report._browser import SCREENSHOTS, Rendered, render
from tests.report.conftest import EVIL_DIR_TEXT, EVIL_IMG, EVIL_PROMPTS, EVIL_SCRIPT, EVIL_TEMPLATE

#: screenshot name -> the session fixture that builds the report
REPORTS = {
    "scan": "scan_report",
    "report-rebuild": "rebuilt_report",
    "compare-domains": "domains_report",
    "compare": "compare_report",
    "sula": "sula_report",
    "intervene": "intervene_report",
    "windtunnel": "windtunnel_report",
    "denoise": "denoise_report",
    "positional": "positional_report",
    "positional-windtunnel": "tunnel_length_report",
}


@pytest.fixture(scope="session")
def _seen():
    return {}


@pytest.fixture
def seen(request, browser, _seen):
    """name -> Rendered, each report built and opened once per session."""

    def get(name: str) -> Rendered:
        if name not in _seen:
            html = request.getfixturevalue(REPORTS[name])
            assert html.is_file(), f"{html} was not written"
            _seen[name] = (render(browser, html, name), html.read_text(encoding="utf-8"))
        return _seen[name]

    return get


def problems(page: Rendered, source: str) -> list[str]:
    """Everything wrong with a rendered report (empty: it rendered fully)."""
    out = list(page.errors)
    out += [
        f"fetched {u} (must open offline)"
        for u in page.requests
        if not u.startswith(("file:", "data:", "blob:", "about:"))
    ]
    n_figs = source.count('class="plotly-graph-div"')
    if n_figs == 0 or len(page.figures) != n_figs:
        out.append(f"{n_figs} figure divs in the source, {len(page.figures)} figures in the page")
    for fig in page.figures:
        where = f"{page.name} {fig['id']} ({fig['title'][:60]!r})"
        if not (fig["main_svg"] >= 1 and fig["width"] > 100 and fig["height"] > 100):
            out.append(f"{where}: no svg.main-svg or no size")
        if fig["json_traces"] < 1:
            out.append(f"{where}: no trace")
        out += [f"{where}: plotly hid trace {h}" for h in fig["hidden"] if not h["empty"]]
        if not fig["visible"] and not (fig["hidden"] and all(h["empty"] for h in fig["hidden"])):
            out.append(f"{where}: nothing visible")
        missing = sorted(set(fig["visible"]) - set(fig["drawn"]))
        if missing:
            out.append(f"{where}: traces {missing} of {fig['json_traces']} were not drawn")
    return out


@pytest.mark.parametrize("name", list(REPORTS))
def test_report_renders_every_figure_without_errors(name, seen):
    page, source = seen(name)
    assert problems(page, source) == []
    shot = SCREENSHOTS / f"{name}.png"
    assert page.screenshot == shot and shot.stat().st_size > 20_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", list(REPORTS))
def test_user_strings_inject_nothing(name, seen):
    """Every run lives under a directory named with script/img/markup/template strings, and the
    scans read prompts that carry them: no script runs, no element is injected."""
    page, source = seen(name)
    assert page.pwned is None, f"injected script ran: window.__pwned = {page.pwned}"
    assert page.imgs == 0, "an <img> element was injected"
    n_figs = source.count('class="plotly-graph-div"')
    # one inline plotly.js bundle, then one inline script per figure; none from a src
    assert len(page.scripts) == 1 + n_figs, page.scripts
    assert all(s.startswith("|") for s in page.scripts), page.scripts
    assert "window.__pwned" not in "".join(page.scripts)
    assert EVIL_SCRIPT not in source and EVIL_IMG not in source  # raw, unescaped


# which reports show which user strings as text (found by reading the reports; see docs/testing.md)
SHOWS_RUN_PATH = ("scan", "report-rebuild", "compare", "windtunnel", "positional-windtunnel")


@pytest.mark.parametrize("name", list(REPORTS))
def test_paths_with_markup_are_shown_as_text(name, seen):
    """Reports that show the run's path show it literally; the others show no user path at all
    (sula, intervene, compare-domains, denoise and positional show only the model id and numbers)."""
    page, _ = seen(name)
    if name in SHOWS_RUN_PATH:
        assert EVIL_DIR_TEXT in page.text, f"the run path is not shown literally in {name}"
    else:
        assert "window.__pwned" not in page.text and EVIL_TEMPLATE not in page.text


def test_scan_shows_no_prompt_text_but_the_prompt_file_name(seen):
    """The scan report shows the prompt file's path (header and provenance), not the prompts."""
    page, _ = seen("scan")
    assert re.search(re.escape(EVIL_DIR_TEXT) + r"/prompts \{\{ 7\*7 \}\}\.txt", page.text)
    assert "prompts 49.txt" not in page.text
    assert not any(p in page.text for p in EVIL_PROMPTS)


def test_compare_hover_shows_the_prompts_as_text(seen, browser, compare_report):
    """The global-PCA scatter hovers each shared prompt: the hover label shows the literal text."""
    page, _ = seen("compare")
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        pg.goto(compare_report.resolve().as_uri(), wait_until="load")
        pg.wait_for_function("() => document.getElementById('fig-global-pca')._fullLayout")
        shown = []
        prompts = pg.evaluate("() => document.getElementById('fig-global-pca').data[0].text")
        for target in (EVIL_SCRIPT, EVIL_IMG, EVIL_TEMPLATE, "</div>", "\"double\" and 'single'"):
            i = next(k for k, t in enumerate(prompts) if escape(target, quote=False) in t)  # as compare escapes it
            pg.evaluate("() => Plotly.Fx.unhover(document.getElementById('fig-global-pca'))")
            pg.wait_for_timeout(120)  # plotly throttles hover events
            pg.evaluate(
                "(i) => Plotly.Fx.hover(document.getElementById('fig-global-pca'), [{curveNumber: 0, pointNumber: i}])",
                i,
            )
            pg.wait_for_selector("#fig-global-pca .hoverlayer .hovertext", state="attached", timeout=5_000)
            label = pg.evaluate("() => document.querySelector('#fig-global-pca .hoverlayer .hovertext').textContent")
            shown.append(label)
            assert label is not None and target in label, (target, label)
        assert pg.evaluate("() => typeof window.__pwned") == "undefined"
        assert pg.evaluate("() => document.querySelectorAll('.hoverlayer img, .hoverlayer script').length") == 0
    finally:
        pg.close()
    assert page.errors == []


def test_the_checks_catch_a_broken_page(browser, tmp_path):
    """A page with a script error, a console error and a figure whose trace was never drawn."""
    from plotly.offline import get_plotlyjs

    source = (
        f"<!DOCTYPE html><html><head><script>{get_plotlyjs()}</script></head><body>"
        '<div id="a" class="plotly-graph-div" style="width:600px;height:400px"></div><script>'
        "Plotly.newPlot('a', [{x: [1, 2], y: [3, 1]}, {type: 'bar', x: [1, 2], y: [2, 2]}]);"
        "document.querySelector('#a .barlayer .trace').remove(); console.error('boom');"
        "undefinedFunction();</script></body></html>"
    )
    html = tmp_path / "broken.html"
    html.write_text(source, encoding="utf-8")
    found = problems(render(browser, html, "_broken"), source)
    (SCREENSHOTS / "_broken.png").unlink()
    assert any("console.error: boom" in p for p in found), found
    assert any("pageerror" in p and "undefinedFunction" in p for p in found), found
    assert any("traces [1] of 2 were not drawn" in p for p in found), found
