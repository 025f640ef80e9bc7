"""Figures in Jupyter: each one output holding plotly's interactive figure *and* a static PNG of it.

JupyterLab, Notebook and VS Code draw the interactive figure; where plotly.js does not run (a notebook
saved with its outputs and opened on GitHub or nbviewer, or a front end without plotly's extension) the
PNG beside it is shown instead, so a saved notebook never shows an empty figure. Every notebook in
``notebooks/`` shows its figures through :func:`show`::

    from geoprobe.report.notebook import show
    show(result, "calibration")   # the result's figure by its anchor: the same figure its HTML page shows
    show(result)                  # every figure of the result, each after its caption, in page order
    show(fig)                     # any plotly figure (or an (anchor, caption, figure) triple)

The PNG is drawn by kaleido through a Chromium found here (``BROWSER_PATH``, else chromium on ``PATH``:
:func:`geoprobe.report.export.find_browser`), one browser kept open for the kernel's life (a few seconds
for the first figure, a fraction of a second for each after). Where no image can be drawn the figure is
shown without one and a warning says why, once per kernel.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import threading
import warnings
from typing import Any

from geoprobe.report.export import DEFAULT_HEIGHT, DEFAULT_WIDTH, find_browser

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PNG_MIME = "image/png"
#: seconds one image may take (the first includes the browser's start) before the figure is shown without it
RENDER_TIMEOUT = 120.0


class _Renderer:
    """One kaleido (one headless Chromium) on an event loop of its own thread, open until the process exits:
    Jupyter's kernel runs its own loop, so kaleido's coroutines cannot run on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="geoprobe-kaleido", daemon=True).start()
        self.kaleido: Any = None
        try:
            self.kaleido = self.call(self.open(find_browser("png")))
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise
        atexit.register(self.close)

    def call(self, coroutine: Any, timeout: float = RENDER_TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    @staticmethod
    async def open(browser: str) -> Any:
        import kaleido

        k = kaleido.Kaleido(n=1, mathjax=False, path=browser)  # mathjax=False: nothing is fetched from a CDN
        await k.open()
        return k

    def png(self, fig: Any, width: int, height: int) -> bytes:
        opts = {"format": "png", "width": width, "height": height, "scale": 1}
        return self.call(self.kaleido.calc_fig(fig, opts=opts))

    def close(self) -> None:
        try:
            self.call(self.kaleido.close(), timeout=10)
        except Exception:  # noqa: BLE001 - at exit: a browser that is already gone needs no closing
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)


_STATE: dict[str, Any] = {"renderer": None, "failed": None}
_LOCK = threading.Lock()


def _renderer() -> _Renderer | None:
    """The process's renderer, started on first use; None (after one warning) where it cannot start."""
    with _LOCK:
        if _STATE["renderer"] is None and _STATE["failed"] is None:
            try:
                _STATE["renderer"] = _Renderer()
            except Exception as exc:  # noqa: BLE001 - no browser, no kaleido, a browser that does not start
                _fail(exc)
        return _STATE["renderer"]


def _fail(exc: BaseException) -> None:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    _STATE["failed"] = f"{type(exc).__name__}: {first}"
    warnings.warn(
        f"figures are shown without a static image (viewers without plotly, e.g. GitHub, will show none): "
        f"{_STATE['failed']}",
        RuntimeWarning,
        stacklevel=4,
    )


def _size(fig: Any) -> tuple[int, int]:
    layout = fig.get("layout", {}) if isinstance(fig, dict) else fig.layout
    get = layout.get if isinstance(layout, dict) else lambda k: getattr(layout, k, None)
    return int(get("width") or DEFAULT_WIDTH), int(get("height") or DEFAULT_HEIGHT)


def png_bytes(fig: Any) -> bytes | None:
    """``fig`` (a plotly figure or its dict) as PNG bytes at its layout's size (else 900 × 500); None where
    no image can be drawn (warned once)."""
    renderer = _renderer()
    if renderer is None:
        return None
    width, height = _size(fig)
    try:
        return renderer.png(fig, width, height)
    except Exception as exc:  # noqa: BLE001 - a figure that fails to draw is still shown interactively
        with _LOCK:
            if _STATE["failed"] is None:
                _fail(exc)
        return None


def figure_bundle(fig: Any, caption: str = "") -> dict[str, Any]:
    """The MIME bundle of one notebook output: plotly's JSON (what plotly's own ``fig.show()`` puts there),
    a PNG of the same figure where one can be drawn, and a line of text for plain-text front ends."""
    import plotly.io as pio

    fig_dict = fig.to_dict() if hasattr(fig, "to_dict") else dict(fig)
    bundle = dict(pio.renderers["plotly_mimetype"].to_mimebundle(fig_dict))
    png = png_bytes(fig)
    if png is not None:
        bundle[PNG_MIME] = base64.b64encode(png).decode("ascii")
    bundle["text/plain"] = caption or "<plotly figure>"
    return bundle


def show(obj: Any, anchor: str | None = None) -> None:
    """Display figures in Jupyter, each with its static image beside it (:func:`figure_bundle`).

    ``obj``: a result (anything with ``figures()``, the figures of its HTML page): its figure ``anchor``,
    or without one every figure after its caption; an ``(anchor, caption, figure)`` triple; a plotly figure."""
    from IPython.display import display

    figures = getattr(obj, "figures", None)
    if callable(figures):
        items = [tuple(f) for f in figures()]
        if anchor is None:
            for _, caption, fig in items:
                display({"text/plain": caption}, raw=True)  # as text, like print, through IPython's display
                display(figure_bundle(fig, caption), raw=True)
            return
        chosen = [f for f in items if f[0] == anchor]
        if not chosen:
            raise KeyError(f"no figure {anchor!r}; this result's figures: {', '.join(f[0] for f in items)}")
        obj = chosen[0]
    elif anchor is not None:
        raise TypeError(f"a {type(obj).__name__} has no figures(); pass a result to choose a figure by anchor")
    caption, fig = (obj[1], obj[2]) if isinstance(obj, tuple) and len(obj) == 3 else ("", obj)
    display(figure_bundle(fig, caption), raw=True)
