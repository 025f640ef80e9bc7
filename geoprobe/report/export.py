"""Static figure export (``--figures png|svg|pdf``): the figures of an HTML report as image files.

Every result hands out its figures as ``figures()``: :class:`~geoprobe.report.page.Figure`
``(anchor, caption, figure)`` objects, the same list its HTML page renders; this module writes
them to ``<run dir>/figures/<anchor>.<fmt>`` through kaleido, which drives a Chromium found on this
machine (``BROWSER_PATH``, else ``chromium``, ``chromium-browser`` or ``google-chrome`` on ``PATH``).
All figures of one call are rendered with one browser start, into a temporary folder beside the
targets, then renamed into place (atomic).

From Python or Jupyter::

    from geoprobe.report.export import export_figures
    export_figures(result, "figs", "svg")          # any result object with an HTML report
    export_figures([("my-fig", "caption", fig)], "figs", "png")
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from geoprobe.errors import GeoprobeError, OutputExistsError, OutputWriteError
from geoprobe.outputs import FIGURES_KIND, FIGURES_MANIFEST, figures_dir, owned_figures, refuse_foreign
from geoprobe.paths import write_json
from geoprobe.report.page import Figure

FORMATS = ("png", "svg", "pdf")
#: size of a figure whose layout sets none (pixels; png is rendered at SCALE times this)
DEFAULT_WIDTH, DEFAULT_HEIGHT = 900, 500
SCALE = {"png": 2.0, "svg": 1.0, "pdf": 1.0}
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
_ANCHOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_format(fmt: Optional[str]) -> Optional[str]:
    """``fmt`` lower-cased if it is one of png, svg, pdf; None stays None (no export)."""
    if fmt is None:
        return None
    f = str(fmt).strip().lower().lstrip(".")
    if f not in FORMATS:
        raise GeoprobeError(f"--figures {fmt} is not one of {', '.join(FORMATS)}; pass --figures png|svg|pdf")
    return f


def find_browser(fmt: str = "png") -> str:
    """The Chromium kaleido will drive: ``BROWSER_PATH`` if set (it must exist), else the first of
    chromium, chromium-browser, google-chrome on ``PATH``; a one-line error if there is none."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
        raise GeoprobeError(
            f"--figures {fmt} needs Chromium for kaleido, but BROWSER_PATH={env!r} is not an executable "
            "file; point BROWSER_PATH at chromium or unset it"
        )
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise GeoprobeError(
        f"--figures {fmt} needs Chromium for kaleido, none found (BROWSER_PATH unset; "
        f"{', '.join(BROWSER_NAMES)} not on PATH); install the Debian package chromium or set BROWSER_PATH"
    )


def check_figures(
    fmt: Optional[str], run_dir: Optional[str | os.PathLike] = None, *, force: bool = False
) -> Optional[str]:
    """Everything ``--figures FMT`` needs, checked before any model loads or training starts: the format,
    a Chromium, and (given ``run_dir``) that ``figures/*.FMT`` there are geoprobe's (foreign files are never
    replaced) and, unless ``force``, that there are none yet. Returns the normalised format, or None when
    no export was asked for."""
    f = check_format(fmt)
    if f is None:
        return None
    find_browser(f)
    if run_dir is not None:
        d = figures_dir(run_dir)
        _check_targets(sorted(d.glob(f"*.{f}")) if d.is_dir() else [], force)
    return f


def _check_targets(paths: Sequence[Path], force: bool) -> None:
    """Existing ``paths`` must be figures geoprobe wrote (else a one-line error, ``force`` or not);
    without ``force`` none may exist."""
    existing = [p for p in paths if p.exists() or p.is_symlink()]
    if not existing:
        return
    owned = owned_figures(existing[0].parent)
    for p in existing:
        if p.name not in owned or p.is_symlink() or not p.is_file():
            refuse_foreign(p, "a figure file it did not write")
    if not force:
        raise OutputExistsError(
            f"figure {str(existing[0])!r} already exists; pass --force to replace it or choose another --out"
        )


def _add_to_manifest(out_dir: Path, names: Iterable[str]) -> None:
    files = sorted(owned_figures(out_dir) | set(names))
    write_json(out_dir / FIGURES_MANIFEST, {"kind": FIGURES_KIND, "version": 1, "files": files})


def figure_list(obj: Any) -> list[Figure]:
    """The figures of ``obj`` as :class:`~geoprobe.report.page.Figure` objects, in page order: a
    result's ``figures()`` (the same list its HTML page shows), or already such a list of (anchor,
    caption, figure) triples, or a dict {anchor: figure} (no captions)."""
    if isinstance(obj, dict):
        return [Figure(str(a), "", f) for a, f in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [Figure(*x) if len(x) == 3 else Figure(x[0], "", x[1]) for x in obj]
    figures = getattr(obj, "figures", None)
    if not callable(figures):
        raise TypeError(
            f"a {type(obj).__name__} has no figures(); pass a result or a list of (anchor, caption, figure)"
        )
    return figure_list(figures())


def _size(fig: Any) -> tuple[int, int]:
    layout = getattr(fig, "layout", None)
    w = getattr(layout, "width", None) if layout is not None else None
    h = getattr(layout, "height", None) if layout is not None else None
    return int(w or DEFAULT_WIDTH), int(h or DEFAULT_HEIGHT)


def export_figures(
    figures: Any,
    out_dir: str | os.PathLike,
    fmt: str = "png",
    *,
    force: bool = False,
    scale: Optional[float] = None,
    only: Optional[Iterable[str]] = None,
) -> list[Path]:
    """Write every figure to ``out_dir/<anchor>.<fmt>`` with one browser start; returns the paths.

    ``figures``: a result object, a list of (anchor, caption, figure) or a dict {anchor: figure}.
    Existing files are kept (one-line error naming the first, nothing written) unless ``force``; a file
    there that geoprobe did not write (not in ``figures/.geoprobe-figures.json``) is never replaced.
    Width and height come from each figure's layout, else 900 × 500; png is rendered at ``scale``
    (default 2). ``only``: export just these anchors."""
    f = check_format(fmt)
    assert f is not None
    items = figure_list(figures)
    if only is not None:
        keep = set(only)
        unknown = keep - {a for a, _, _ in items}
        if unknown:
            raise GeoprobeError(
                f"figure {sorted(unknown)[0]!r} is not in this report; choose from {', '.join(a for a, _, _ in items)}"
            )
        items = [x for x in items if x[0] in keep]
    for anchor, _, _ in items:
        if not _ANCHOR.match(anchor):
            raise GeoprobeError(f"figure anchor {anchor!r} is not a plain file name (letters, digits, '-', '_', '.')")
    out = Path(out_dir)
    targets = [out / f"{anchor}.{f}" for anchor, _, _ in items]
    _check_targets(targets, force)
    if not items:
        return []
    browser = find_browser(f)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputWriteError(out, exc) from exc
    s = SCALE[f] if scale is None else float(scale)
    with tempfile.TemporaryDirectory(prefix=".tmp-figures-", dir=out) as tmp:
        specs = []
        for (anchor, _, fig), target in zip(items, targets):
            w, h = _size(fig)
            specs.append(
                {
                    "fig": fig,
                    "path": str(Path(tmp) / target.name),
                    "opts": {"format": f, "width": w, "height": h, "scale": s},
                }
            )
        _render(specs, browser)
        _add_to_manifest(out, [t.name for t in targets])  # listed first: a kill never leaves an unlisted figure
        for spec, target in zip(specs, targets):
            os.replace(spec["path"], target)  # same folder tree: an atomic rename
    return targets


def _render(specs: list[dict], browser: str) -> None:
    """Render every spec with one kaleido (one Chromium); errors become one line."""
    import kaleido

    try:
        kaleido.write_fig_from_object_sync(specs, kopts={"path": browser, "mathjax": False}, cancel_on_error=True)
    except Exception as exc:  # noqa: BLE001 - kaleido/choreographer raise many kinds; the user needs one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GeoprobeError(
            f"--figures: kaleido could not render with {browser!r} ({type(exc).__name__}: "
            f"{first[:200]}); check that this Chromium starts, or set BROWSER_PATH to another"
        ) from exc
    missing = [s["path"] for s in specs if not Path(s["path"]).is_file() or Path(s["path"]).stat().st_size == 0]
    if missing:
        raise GeoprobeError(f"--figures: kaleido wrote no image for {Path(missing[0]).name!r}; rerun with --debug")


def export_report_figures(
    obj: Any, run_dir: str | os.PathLike, fmt: Optional[str], *, force: bool = False
) -> list[Path]:
    """The CLI's step after writing an HTML report: ``obj``'s figures to ``run_dir/figures`` (nothing when
    ``fmt`` is None)."""
    f = check_format(fmt)
    if f is None:
        return []
    return export_figures(obj, figures_dir(run_dir), f, force=force)
