"""One report page for every result: one template, one stylesheet.

What a result's page shows is written in its experiment's report module
(``geoprobe/<experiment>/report.py``, or a ``report/`` package), as functions of the result typed with
its class, and registered there with :func:`register_page`:

* ``title(result)`` — the page's heading (plain text; escaped here);
* ``subtitle(result)`` — the muted line under it (plain text);
* ``sections(result)`` — :class:`Section` objects in page order; a section's ``html`` is built with
  :mod:`geoprobe.report.blocks` (whose helpers escape every cell), and the figures go where
  ``figures_section(result.figures())`` is placed;
* ``figures(result)`` — :class:`Figure` ``(anchor, caption, fig)`` objects: the same list the page
  renders and ``--figures png|svg|pdf`` exports;
* ``summary_html(result)`` (optional) — what Jupyter shows for the result.

The result class mixes in :class:`Page`, whose ``title()``, ``subtitle()``, ``sections()``,
``figures()``, ``report(path)`` and ``_repr_html_`` look the registered page up by the result's class
(its own, else the nearest base that has one): the result module never imports its report module, so
the report module can import the result class it is typed with. A class without a registered page has its
package's report module imported on first need (``geoprobe.scan.result.ScanResult`` -> ``geoprobe.scan.report``),
so a result class is never used without its page, and importing an experiment's package (its config, to read a
sweep file) does not import its figures (plotly, scipy). This module never names an experiment.

**plotly.js**: a page inlines it once (``plotlyjs=None``, the default), so one run's page is one file that
opens offline. Pages written by the hundred (a sweep's cells) pass ``plotlyjs``, the relative URL of one
shared copy written once beside them (:func:`write_plotlyjs`): a cell's page is then tens of kB, not ~4.9 MB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, Mapping, NamedTuple, TypeVar

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
    partial = partial_weights_line(prov.pop("partial_weights", None))
    rows = list(prov.items()) + ([("partial_weights", partial)] if partial else []) + list(extra)
    rows += [(f"config.{k}", v) for k, v in (config or {}).items()]
    rows += [(f"version: {k}", v) for k, v in versions.items()]
    rows += [(f"time: {k}", seconds(v, time_digits)) for k, v in (timings or {}).items()]
    warning = f'<p class="fail">{escape("Partial load: " + partial)}</p>\n' if partial else ""
    return Section("Provenance", warning + kv_table(rows))


def seconds(value: Any, digits: int = 2) -> str:
    """A duration as the page shows it: ``2.07 s``; ``< 0.01 s`` for one that rounds to zero at ``digits`` (a
    stored 9.5e-07 is not ``0.00 s``); ``not timed`` for none (None, NaN)."""
    from geoprobe.text import number

    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        return "not timed"
    if 0 <= value < 0.5 * 10**-digits:
        return f"< {10**-digits:.{digits}f} s"
    return f"{number(value, f'.{digits}f')} s"


def partial_weights_line(value: Any) -> str:
    """A provenance's ``partial_weights`` (weights that did not match the model's config, loaded with
    --allow-partial-weights) as one line; "" when there is none."""
    from geoprobe.provenance import PartialWeights

    if not value:
        return ""
    report = value if isinstance(value, PartialWeights) else PartialWeights.from_dict(value)
    if report.empty():
        return ""
    return (
        f"the weights did not match the model's config.json and were loaded with --allow-partial-weights: "
        f"{report.summary(names=10)}; {report.consequence('did')}"
    )


#: the first line of the shared plotly.js geoprobe writes: how a rerun knows the file is its own
PLOTLYJS_HEADER = "/* plotly.js, written by geoprobe: shared by the pages beside it */\n"


def plotly_script(plotlyjs: str | None = None) -> str:
    """The page's plotly.js: inlined (``plotlyjs`` None) or a ``<script src>`` of the shared copy at the
    relative URL ``plotlyjs`` (escaped)."""
    if plotlyjs is None:
        from plotly.offline import get_plotlyjs

        return f'<script type="text/javascript">{get_plotlyjs()}</script>'
    return f'<script type="text/javascript" charset="utf-8" src="{escape(plotlyjs, quote=True)}"></script>'


def plotlyjs_is_ours(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a shared plotly.js geoprobe wrote (a regular file that starts with its header)."""
    p = Path(path)
    if p.is_symlink() or not p.is_file():
        return False
    with open(p, "rb") as f:
        return f.read(len(PLOTLYJS_HEADER.encode())) == PLOTLYJS_HEADER.encode()


def write_plotlyjs(path: str | os.PathLike) -> Path:
    """Write the one shared copy of plotly.js that pages rendered with ``plotlyjs`` (a relative URL of
    ``path``) load; an existing copy of geoprobe's is rewritten only when it differs (a plotly upgrade), and
    a file geoprobe did not write is never replaced (one-line error). Returns ``path``."""
    from plotly.offline import get_plotlyjs

    from geoprobe.outputs import refuse_foreign
    from geoprobe.paths import atomic_write_text

    p = Path(path)
    text = PLOTLYJS_HEADER + get_plotlyjs()
    if os.path.lexists(p):
        if not plotlyjs_is_ours(p):
            refuse_foreign(p, "a file where the pages' shared plotly.js goes")
        if p.stat().st_size == len(text.encode()) and p.read_text(encoding="utf-8") == text:
            return p
    return atomic_write_text(p, text)


def render(result: Any, *, plotlyjs: str | None = None) -> str:
    """The page of ``result`` as one HTML string: self-contained, or (``plotlyjs``: a relative URL) loading
    the shared plotly.js there."""
    title = escape(result.title())
    body = "\n".join(s.render() for s in result.sections())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{CSS}</style>
{plotly_script(plotlyjs)}</head>
<body>
<h1>{title}</h1>
{paragraph(result.subtitle())}
{body}
</body></html>
"""


R = TypeVar("R")


@dataclass(frozen=True)
class PageContent(Generic[R]):
    """What the page of one result class shows: functions of the result, written in its experiment's
    report module and registered with :func:`register_page`."""

    title: Callable[[R], str]
    sections: Callable[[R], list[Section]]
    figures: Callable[[R], list[Figure]]
    subtitle: Callable[[R], str] | None = None
    summary_html: Callable[[R], str] | None = None  # what Jupyter shows (``_repr_html_``)


_PAGES: dict[type, PageContent[Any]] = {}


def register_page(
    cls: type[R],
    *,
    title: Callable[[R], str],
    sections: Callable[[R], list[Section]],
    figures: Callable[[R], list[Figure]],
    subtitle: Callable[[R], str] | None = None,
    summary_html: Callable[[R], str] | None = None,
) -> PageContent[R]:
    """Make these functions the page of result class ``cls`` (and of its subclasses without their own)."""
    content = PageContent(title, sections, figures, subtitle, summary_html)
    _PAGES[cls] = content
    return content


def page_content(result: Any) -> PageContent[Any] | None:
    """The registered page of ``result`` (a result or a result class): its class's, else its nearest
    base's that has one; None if none has."""
    cls = result if isinstance(result, type) else type(result)
    found = next((_PAGES[k] for k in cls.__mro__ if k in _PAGES), None)
    if found is None and any(map(_import_report, cls.__mro__)):
        found = next((_PAGES[k] for k in cls.__mro__ if k in _PAGES), None)
    return found


_TRIED: set[str] = set()


def _import_report(cls: type) -> bool:
    """Import the report module of the geoprobe package that defines ``cls`` (``<package>.report``, where
    its page is registered), once; whether it was imported now."""
    import importlib
    import importlib.util

    package = cls.__module__.rpartition(".")[0]
    name = f"{package}.report"
    if not package.startswith("geoprobe.") or name in _TRIED:
        return False
    _TRIED.add(name)
    if importlib.util.find_spec(name) is None:
        return False
    importlib.import_module(name)
    return True


class Page:
    """Mixin for results with an HTML page: the registered page's parts as methods, ``report(path)``
    (writes :func:`render`'s page) and ``_repr_html_``. A class may also override the methods itself."""

    def _content(self) -> PageContent[Any]:
        content = page_content(self)
        if content is None:
            raise LookupError(
                f"no page is registered for {type(self).__name__}; import its experiment's report module, "
                "which calls register_page"
            )
        return content

    def title(self) -> str:
        return self._content().title(self)

    def subtitle(self) -> str:
        content = page_content(self)
        return "" if content is None or content.subtitle is None else content.subtitle(self)

    def figures(self) -> list[Figure]:
        content = page_content(self)
        return [] if content is None else content.figures(self)

    def sections(self) -> list[Section]:
        content = page_content(self)
        return [figures_section(self.figures())] if content is None else content.sections(self)

    def _repr_html_(self) -> str | None:
        content = page_content(self)
        return None if content is None or content.summary_html is None else content.summary_html(self)

    def report(self, path: str | os.PathLike, *, force: bool = False, plotlyjs: str | None = None) -> Path:
        """Write the HTML page: self-contained, or with ``plotlyjs`` (a relative URL: a sweep's cells share one
        copy, :func:`write_plotlyjs`) loading plotly.js from there. An existing page is kept unless ``force``,
        and a file geoprobe did not write is never replaced."""
        from geoprobe.checks import bool_arg, optional_str_arg, path_arg
        from geoprobe.report.blocks import write_page

        path = path_arg(path, "path", "a page path such as 'report.html'", optional=False)
        plotlyjs = optional_str_arg(plotlyjs, "plotlyjs", "a relative URL such as '../../plotly.min.js'")
        return write_page(path, lambda: render(self, plotlyjs=plotlyjs), force=bool_arg(force, "force"))
