"""Building blocks shared by the self-contained HTML reports: an escaped table and a plotly
figure without its own copy of plotly.js (each page inlines plotly.js once)."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Callable, Sequence


def html_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of one dict each (keys = columns, first row's order); every cell escaped."""
    if not rows:
        return ""
    head = "".join(f"<th>{escape(str(k))}</th>" for k in rows[0])
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{escape(str(v))}</td>' for v in r.values()) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_figure(fig: Any, anchor: str, caption: str) -> str:
    import plotly.io as pio

    div = pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        div_id=f"fig-{anchor}",
        config={"displaylogo": False, "responsive": True},
    )
    return f'<figure id="{escape(anchor)}">{div}<figcaption>{escape(caption)}</figcaption></figure>'


def kv_table(rows: Sequence[tuple[Any, Any]]) -> str:
    return (
        "<table><tbody>"
        + "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
        + "</tbody></table>"
    )


def write_page(path: str | os.PathLike, render: Callable[[], str], *, force: bool = False) -> Path:
    """Write the page ``render()`` returns, atomically, with geoprobe's generator tag; an existing
    page is kept (one-line error) unless ``force``, and nothing but a page geoprobe wrote is ever
    replaced. ``render`` runs only after those checks."""
    from geoprobe.errors import OutputExistsError
    from geoprobe.kinds import PAGE_KIND
    from geoprobe.outputs import GENERATOR_META, check_page_name, check_same_kind
    from geoprobe.paths import atomic_write_text

    p = Path(path)
    check_page_name(p)
    if p.exists() or p.is_symlink():
        check_same_kind(p, PAGE_KIND)
        if not force:
            raise OutputExistsError(
                f"report {str(p)!r} already exists; pass --force to replace it or choose another --out"
            )
    page = render()
    if GENERATOR_META not in page:  # the marker that lets a later --force recognise the page as geoprobe's
        page = page.replace("<head>", f"<head>{GENERATOR_META}", 1)
    return atomic_write_text(p, page)
