"""One report page for every result: one template, one stylesheet.

A result hands out what its page shows and nothing about HTML layout:

* ``title()`` — the page's heading (plain text; escaped here);
* ``subtitle()`` — the muted line under it (plain text);
* ``sections()`` — :class:`Section` objects in page order; a section's ``html`` is built with
  :mod:`geoprobe.report.blocks` (whose helpers escape every cell), and the figures go where
  ``figures_section(self.figures())`` is placed;
* ``figures()`` — :class:`Figure` ``(anchor, caption, fig)`` objects: the same list the page
  renders and ``--figures png|svg|pdf`` exports.

:class:`Page` gives a result ``report(path)`` and ``_repr_html_``; this module never names an
experiment. plotly.js is embedded once, so a page opens offline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em} h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.92em} th,td{border:1px solid #ddd;padding:.35em .6em;
text-align:left;vertical-align:top} th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#0a6b2d;font-weight:600} .fail{color:#a31515;font-weight:600} .muted{color:#666;font-size:.9em}
figure{margin:1.5em 0} figcaption{color:#444;font-size:.92em;margin-top:.3em} code{background:#f5f5f5;padding:0 .2em}
.notes li{color:#7a4b00}
"""


class Figure(NamedTuple):
    """One figure of a page: its HTML anchor (also the exported file's name), caption and plotly figure.
    A tuple, so ``for anchor, caption, fig in result.figures()`` reads as before."""

    anchor: str
    caption: str
    fig: Any


@dataclass(frozen=True)
class Section:
    """A titled block of the page. ``html`` is already safe (built from escaped blocks); ``level``
    2 is a top-level heading, 3 a sub-heading; an empty title is a block without heading."""

    title: str
    html: str
    level: int = 2

    def render(self) -> str:
        head = f"<h{self.level}>{escape(self.title)}</h{self.level}>\n" if self.title else ""
        return head + self.html


def paragraph(text: str, muted: bool = True) -> str:
    """A paragraph of plain text (escaped)."""
    return f'<p class="muted">{escape(text)}</p>' if muted else f"<p>{escape(text)}</p>"


def notes_section(notes: Iterable[str]) -> list[Section]:
    """The run's warnings as a list (no section when there are none)."""
    items = "".join(f"<li>{escape(str(n))}</li>" for n in notes)
    return [Section("Notes", f'<ul class="notes">{items}</ul>')] if items else []


def figures_section(figures: Iterable[Figure], title: str = "Figures") -> Section:
    """The figures, each with its caption, in the order given."""
    from geoprobe.report.blocks import html_figure

    return Section(title, "".join(html_figure(f.fig, f.anchor, f.caption) for f in figures))


def provenance_section(
    provenance: Mapping[str, Any],
    *,
    config: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    extra: Iterable[tuple[str, Any]] = (),
    time_digits: int = 2,
) -> Section:
    """Where the numbers came from: provenance, then ``extra`` rows, the config, versions and timings."""
    from geoprobe.report.blocks import kv_table

    prov = dict(provenance)
    versions = prov.pop("versions", {}) or {}
    rows = list(prov.items()) + list(extra)
    rows += [(f"config.{k}", v) for k, v in (config or {}).items()]
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    rows += [(f"time: {k}", f"{v:.{time_digits}f} s") for k, v in (timings or {}).items()]
    return Section("Provenance", kv_table(rows))


def render(result: Any) -> str:
    """The page of ``result`` as one HTML string."""
    from plotly.offline import get_plotlyjs

    title = escape(result.title())
    body = "\n".join(s.render() for s in result.sections())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script></head>
<body>
<h1>{title}</h1>
{paragraph(result.subtitle())}
{body}
</body></html>
"""


class Page:
    """Mixin for results with an HTML page: ``report(path)`` writes :func:`render`'s page."""

    def title(self) -> str:  # pragma: no cover - every page defines it
        raise NotImplementedError

    def subtitle(self) -> str:
        return ""

    def figures(self) -> list[Figure]:
        return []

    def sections(self) -> list[Section]:
        return [figures_section(self.figures())]

    def report(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write the self-contained HTML page; an existing page is kept unless ``force``, and a
        file geoprobe did not write is never replaced."""
        from geoprobe.report.blocks import write_page

        return write_page(path, lambda: render(self), force=force)
