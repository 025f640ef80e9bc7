"""The ``geoprobe`` Typer application and its two consoles; every command module registers on ``app``.

Both consoles are :class:`InertConsole`: whatever text reaches the terminal through them (a model
name from a results file, a prompt, a note, a warning, an ``error:`` line, a table cell, a status or
progress label) is shown with its control characters escaped (:func:`geoprobe.text.inert`) and is
never read as rich markup, so a file cannot move the cursor, clear the screen, set the terminal's
title or restyle the output. Commands print through these consoles only."""

from __future__ import annotations

from typing import Any, Iterable, Optional

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from geoprobe.text import inert

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure the Bayesian geometry of attention in pretrained language models.",
)


class InertConsole(Console):
    """A rich :class:`~rich.console.Console` that shows text as text: no markup or emoji codes are
    interpreted (``[bold]`` and ``:smile:`` print as written), every string is escaped with
    :func:`~geoprobe.text.inert` where rich turns it into a ``Text`` (so rich lays out the escaped
    form), and every segment it renders is escaped again on its way out (text that reached rich
    another way, such as a progress label, cannot carry a control character through). Rich's own
    styling and cursor control travel as styles and control segments, which stay as they are."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(inert(text), **{**kwargs, "markup": False, "emoji": False})

    def render(self, renderable: RenderableType, options: Optional[ConsoleOptions] = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(inert(segment.text), segment.style, segment.control)

    def status(self, status: RenderableType, **kwargs: Any) -> Any:
        return super().status(Text(inert(status)) if isinstance(status, str) else status, **kwargs)

    def print_json(self, json: Optional[str] = None, **kwargs: Any) -> None:
        super().print_json(json, **{**kwargs, "ensure_ascii": True})  # every non-ASCII character as \uXXXX


out = InertConsole()
err = InertConsole(stderr=True)
