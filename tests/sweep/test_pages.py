"""A sweep's pages share one plotly.js (issue 39 case 8): each cell's page loads OUT/plotly.min.js by a relative
URL instead of inlining its own 4.8 MB copy (a 1,000-cell sweep wrote ~5 GB of HTML), the copy is written once,
a file there that geoprobe did not write is never replaced, and a cell's page still draws every figure in a
browser (skipped without Chromium, like tests/report/test_browser.py)."""

from __future__ import annotations

import os

import pytest
from plotly.offline import get_plotlyjs

from geoprobe.errors import ForeignOutputError
from geoprobe.report.page import PLOTLYJS_HEADER, write_plotlyjs
from geoprobe.sweep.directory import CELL_PLOTLYJS, PLOTLYJS
from tests.sweep.kit import copy_of

#: the banner plotly.js starts with: a page holding it inlines the library
BANNER = get_plotlyjs()[:200].strip().splitlines()[1]


def _pages(out):
    cells = sorted((out / "cells").glob("*/report.html"))
    assert len(cells) == 6  # the reference's six twin cells (its seventh cannot load: no page)
    return cells


def test_cells_load_the_one_shared_plotlyjs(reference):
    out, _ = reference
    shared = out / PLOTLYJS
    assert sorted(p.relative_to(out) for p in out.rglob("*.js")) == [shared.relative_to(out)]  # one copy
    assert shared.read_text(encoding="utf-8") == PLOTLYJS_HEADER + get_plotlyjs()
    assert "plotly.js v" in BANNER
    for page in _pages(out):
        html = page.read_text(encoding="utf-8")
        assert BANNER not in html and len(html) < 400_000, f"{page} inlines plotly.js ({len(html)} bytes)"
        assert f'src="{CELL_PLOTLYJS}"' in html and html.count("<script") == 1 + html.count("plotly-graph-div")
        assert (page.parent / CELL_PLOTLYJS).resolve() == shared.resolve()
    sweep = (out / "sweep.html").read_text(encoding="utf-8")
    assert BANNER not in sweep and f'src="{PLOTLYJS}"' in sweep


def test_a_foreign_plotlyjs_is_never_replaced(reference, tmp_path):
    from geoprobe.sweep import run_sweep

    sweep, out = copy_of(reference, tmp_path)
    mine = "// the user's own plotly build\n"
    (out / PLOTLYJS).write_text(mine)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    with pytest.raises(ForeignOutputError, match="plotly.min.js"):
        run_sweep(sweep, out=out)
    assert (out / PLOTLYJS).read_text() == mine
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before  # refused before any write


def test_the_shared_copy_is_written_once_and_refreshed_when_plotly_changes(tmp_path):
    target = tmp_path / PLOTLYJS
    write_plotlyjs(target)
    first = target.stat().st_mtime_ns
    write_plotlyjs(target)
    assert target.stat().st_mtime_ns == first  # the same bytes: not written again
    target.write_text(PLOTLYJS_HEADER + "/* an older plotly.js */")  # geoprobe's, of another plotly version
    write_plotlyjs(target)
    assert target.read_text(encoding="utf-8") == PLOTLYJS_HEADER + get_plotlyjs()
    os.remove(target)
    target.symlink_to(tmp_path / "elsewhere.js")
    with pytest.raises(ForeignOutputError):
        write_plotlyjs(target)
    assert target.is_symlink() and not (tmp_path / "elsewhere.js").exists()


def test_a_cell_page_draws_its_figures_from_the_shared_copy(reference, browser):
    from tests.report._browser import render

    out, _ = reference
    page = _pages(out)[0]
    seen = render(browser, page, "sweep-cell")
    assert seen.errors == []
    assert (out / PLOTLYJS).resolve().as_uri() in seen.requests
    n = page.read_text(encoding="utf-8").count('class="plotly-graph-div"')
    assert n >= 4 and len(seen.figures) == n
    assert all(f["main_svg"] >= 1 and f["visible"] and set(f["visible"]) <= set(f["drawn"]) for f in seen.figures)
