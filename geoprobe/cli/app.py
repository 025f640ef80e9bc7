"""The ``geoprobe`` Typer application and its two consoles; every command module registers on ``app``.

Both consoles are :class:`InertConsole`: whatever text reaches the terminal through them (a model
name from a results file, a prompt, a note, a warning, an ``error:`` line, a table cell, a status or
progress label) is shown with its control characters escaped (:func:`geoprobe.text.inert`) and is
never read as rich markup, so a file cannot move the cursor, clear the screen, set the terminal's
title or restyle the output. Commands print through these consoles only.

Output that goes to a pipe or a file is laid out whole (issue 39 case 4): where the console's stream is not
a terminal, its width is :data:`PIPED_WIDTH` unless ``COLUMNS`` names one, so that no table cell, header or
line is cut or folded at 80 columns for a program reading it. A terminal keeps rich's own width (its size,
or ``COLUMNS``), and rich wraps and fits tables to it as usual.

The app's group is :class:`LazyGroup`: a command's module is imported when that command
runs, not to list it (start-up, issue 39 case 7)."""

from __future__ import annotations

import importlib
import os
from typing import Any, Iterable, Optional

import typer
from rich.console import Console, ConsoleDimensions, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from geoprobe.cli.lazy import Entry, index
from geoprobe.text import inert


class LazyGroup(TyperGroup):
    """The ``geoprobe`` group: every command of :func:`index` is listed from the index (a stand-in that only
    shows its name and help) until it is resolved to run, when its module is imported and the command
    registered there takes the stand-in's place."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.standing_in: set[str] = set()
        for name, entry in index().items():
            if name in self.commands:
                continue
            if not entry.known:  # the listing needs the module itself
                self.commands[name] = self.loaded(entry)
                continue
            self.commands[name] = TyperCommand(name, **dict(entry.settings))
            self.standing_in.add(name)

    def list_commands(self, ctx: Any) -> list[str]:
        order = list(index())
        return [n for n in order if n in self.commands] + [n for n in self.commands if n not in order]

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Optional[str], Any, list[str]]:
        if args and args[0] in self.standing_in:
            self.commands[args[0]] = self.loaded(index()[args[0]])
            self.standing_in.discard(args[0])
        return super().resolve_command(ctx, args)

    def loaded(self, entry: Entry) -> Any:
        """The command ``entry`` names, its module imported (the command as typer builds it from ``app``)."""
        import typer.main

        importlib.import_module(entry.module)
        command = typer.main.get_group(app).commands.get(entry.name)
        if command is None:
            raise RuntimeError(f"{entry.module} registers no command {entry.name!r}; see geoprobe/cli/lazy.py")
        return command


#: the width of a console whose stream is not a terminal: wide enough that rich never cuts or folds a line
PIPED_WIDTH = 100_000

app = typer.Typer(
    cls=LazyGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure the Bayesian geometry of attention in pretrained language models.",
)


@app.callback()
def geoprobe() -> None:
    # a callback makes the app a group however few commands are registered yet (geoprobe.cli.lazy)
    pass


class InertConsole(Console):
    """A rich :class:`~rich.console.Console` that shows text as text: no markup or emoji codes are
    interpreted (``[bold]`` and ``:smile:`` print as written), every string is escaped with
    :func:`~geoprobe.text.inert` where rich turns it into a ``Text`` (so rich lays out the escaped
    form), and every segment it renders is escaped again on its way out (text that reached rich
    another way, such as a progress label, cannot carry a control character through). Rich's own
    styling and cursor control travel as styles and control segments, which stay as they are."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, emoji=False, **kwargs)
        self.chosen_width: Optional[int] = kwargs.get("width")  # a width its maker chose holds everywhere

    def piped(self) -> bool:
        """Whether this console's output goes to a pipe or a file with no width of its own (see the module)."""
        columns = os.environ.get("COLUMNS", "")
        return not (self.is_terminal or self.is_jupyter or self.chosen_width or (columns.isdigit() and int(columns)))

    def size_now(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]
        return ConsoleDimensions(PIPED_WIDTH, size.height) if self.piped() else size

    def resize(self, new_size: tuple[int, int]) -> None:
        self.chosen_width = new_size[0]
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def rewidth(self, width: int) -> None:
        self.chosen_width = width
        Console.width.fset(self, width)  # type: ignore[attr-defined]

    size = property(size_now, resize)
    width = property(lambda self: self.size.width, rewidth)

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
