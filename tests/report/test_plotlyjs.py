"""Where a page's plotly.js comes from (issue 39 case 8): one run's page inlines it, so it is one file that opens
offline; a page given ``plotlyjs`` (a sweep's cells) loads the one shared copy at that relative URL and is two
orders of magnitude smaller. One parameter through the one page builder (geoprobe.report.page.render)."""

from __future__ import annotations

from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs

from geoprobe.errors import ArgumentError
from geoprobe.recipes import load_result

STORED = Path(__file__).resolve().parents[1] / "fixtures" / "v0_1_0" / "results.json"


@pytest.fixture(scope="module")
def scan():
    return load_result(STORED)


def test_a_run_page_is_self_contained(scan, tmp_path):
    page = scan.report(tmp_path / "report.html")
    html = page.read_text(encoding="utf-8")
    assert get_plotlyjs() in html and " src=" not in html  # the library inline, nothing loaded from elsewhere
    assert page.stat().st_size > 4_000_000


def test_a_page_given_plotlyjs_loads_the_shared_copy(scan, tmp_path):
    inline = scan.report(tmp_path / "inline.html").stat().st_size
    page = scan.report(tmp_path / "cells" / "c" / "report.html", plotlyjs="../../plotly.min.js")
    html = page.read_text(encoding="utf-8")
    assert get_plotlyjs()[:2000] not in html
    assert '<script type="text/javascript" charset="utf-8" src="../../plotly.min.js"></script>' in html
    assert html.count('class="plotly-graph-div"') == 6  # the same figures
    assert page.stat().st_size < inline / 20


def test_the_url_is_escaped_and_checked(scan, tmp_path):
    from geoprobe.report.page import render

    html = render(scan, plotlyjs='x.js"><script>alert(1)</script>')
    assert 'src="x.js&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in html
    with pytest.raises(ArgumentError, match="plotlyjs"):
        scan.report(tmp_path / "r.html", plotlyjs=Path("plotly.min.js"))
