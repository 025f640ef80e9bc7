"""Building blocks shared by the HTML reports: an escaped table whose cells read as a reader writes them
(:func:`display`), and a plotly figure without its own copy of plotly.js (the page loads it once)."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Callable, Sequence

#: what a table shows for a value that is not there (None, an empty string)
NOTHING = "—"


def display(value: Any) -> str:
    """``value`` as a reader writes it, not as Python prints it: None and "" as ``—``, True/False as
    ``yes``/``no``, an empty list, tuple, set or dict as ``none``, a list as its items joined (``a, b``), a dict
    as ``key: value`` pairs, a number without a negative zero (geoprobe.text.number). Plain text: escape it."""
    from geoprobe.text import number

    if value is None or (isinstance(value, str) and not value):
        return NOTHING
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {display(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(display(v) for v in items) or "none"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "∞" if value > 0 else "−∞"
    return number(value)


def html_table(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of one dict each (keys = columns, first row's order); every cell shown by :func:`display`, escaped."""
    if not rows:
        return ""
    head = "".join(f"<th>{escape(str(k))}</th>" for k in rows[0])
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{escape(display(v))}</td>' for v in r.values()) + "</tr>" for r in rows
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
    """(name, value) rows; every value shown by :func:`display`, escaped."""
    return (
        "<table><tbody>"
        + "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(display(v))}</td></tr>" for k, v in rows)
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
