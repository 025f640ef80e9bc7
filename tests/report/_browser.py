"""Headless Chromium (the system package, driven by playwright; no browser download) and what a
report looks like once rendered: console errors, every plotly figure's drawn traces, the page
text, injected elements, and a full-page screenshot."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def _unavailable(reason: str) -> None:
    """Skip with the reason, except on CI (CI=true), which must run the browser tests."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI=true, so the browser tests must run")
    pytest.skip(reason)


def chromium_path() -> str | None:
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def launch_browser() -> Any:
    """A started playwright Chromium (``.close()`` stops playwright too), or skip/fail."""
    exe = chromium_path()
    if exe is None:
        _unavailable("chromium not installed (Debian package chromium; .ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright not installed (pip install playwright; no browser download needed)")
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
    except Exception:
        pw.stop()
        raise
    close = browser.close

    def close_all() -> None:
        close()
        pw.stop()

    browser.close = close_all
    return browser


# Every visible trace of every plotly figure must own a drawn element: plotly binds each trace's
# calcdata (cd[0].trace) to its group (g.trace for scatter/bar/box..., g.hm for heatmaps, ...).
_FIGURES_JS = """() => Array.from(document.querySelectorAll('div.plotly-graph-div')).map(gd => {
  const finite = a => (Array.isArray(a) || ArrayBuffer.isView(a)) ? Array.from(a).some(finite)
                                                                    : (typeof a === 'number' && isFinite(a));
  const keys = t => ['heatmap', 'contour', 'surface'].includes(t.type) ? ['z'] : ['x', 'y', 'z', 'values', 'r'];
  const hasData = t => keys(t).some(k => finite(t[k]));
  const full = gd._fullData || [];
  const visible = full.filter(t => t.visible === true).map(t => t.index);
  // traces the figure's JSON shows but plotly hid: allowed only when they hold no finite number
  const hidden = full.filter(t => t.visible === false && (gd.data[t.index] || {}).visible !== false)
                     .map(t => ({index: t.index, type: t.type, empty: !hasData(t)}));
  const drawn = new Set();
  for (const el of gd.querySelectorAll('g')) {
    if (el.closest('.legend, .infolayer, .hoverlayer')) continue;  // legend entries also carry the trace
    const d = el.__data__;
    const cd = Array.isArray(d) ? d : null;
    const tr = cd && cd[0] && cd[0].trace;
    // a group counts when it holds drawn geometry: a path with a d, an image (heatmaps), a rect
    const ink = el.querySelector('path[d]:not([d=""]):not([d="M0,0Z"]), image, rect');
    if (tr && typeof tr.index === 'number' && ink) drawn.add(tr.index);
  }
  const box = gd.getBoundingClientRect();
  return {id: gd.id, json_traces: (gd.data || []).length, visible: visible, hidden: hidden, drawn: Array.from(drawn),
          main_svg: gd.querySelectorAll('svg.main-svg').length, width: box.width, height: box.height,
          title: (gd.layout && gd.layout.title && gd.layout.title.text) || ''};
})"""

_INJECTED_JS = """() => ({
  pwned: typeof window.__pwned === 'undefined' ? null : String(window.__pwned),
  scripts: Array.from(document.scripts).map(s => (s.src || '') + '|' + s.textContent.slice(0, 60)),
  imgs: document.querySelectorAll('img').length,
  text: document.body.innerText,
})"""


@dataclass
class Rendered:
    """What the browser saw on one report."""

    name: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    pwned: str | None = None
    scripts: list[str] = field(default_factory=list)
    imgs: int = 0
    text: str = ""
    screenshot: Path | None = None
    hover_texts: list[str] = field(default_factory=list)


def render(browser: Any, html: Path, name: str) -> Rendered:
    """Open ``html`` from disk, let plotly draw, collect everything and save the screenshot."""
    out = Rendered(name)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: out.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: out.errors.append(f"pageerror: {e}"))
    page.on("requestfailed", lambda r: out.errors.append(f"request failed: {r.url}"))
    page.on("request", lambda r: out.requests.append(r.url))
    try:
        page.goto(html.resolve().as_uri(), wait_until="load", timeout=60_000)
        # plotly draws synchronously on load; wait until every figure div has its svg
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('div.plotly-graph-div'))"
            ".every(gd => gd._fullLayout && gd.querySelector('svg.main-svg'))",
            timeout=30_000,
        )
        out.figures = page.evaluate(_FIGURES_JS)
        inj = page.evaluate(_INJECTED_JS)
        out.pwned, out.scripts, out.imgs, out.text = inj["pwned"], inj["scripts"], inj["imgs"], inj["text"]
        out.hover_texts = page.evaluate(
            "() => Array.from(document.querySelectorAll('div.plotly-graph-div'))"
            ".flatMap(gd => (gd._fullData || []).flatMap(t => Array.isArray(t.text) ? "
            "t.text.map(String) : []))"
        )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        out.screenshot = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(out.screenshot), full_page=True)
    finally:
        page.close()
    return out
