"""The commands of ``geoprobe``, known without importing them (issue 39 case 7: start-up).

A command's module imports what the command needs (torch, scipy, an experiment) and takes seconds to
import, so ``geoprobe --help`` and ``geoprobe sweep status`` may not import them all. :func:`index`
reads every module of geoprobe.cli that registers a command (``@app.command(...)`` on a function,
``app.add_typer(...)``) with :mod:`ast`, without running it: each command's name, help, and module.
:class:`geoprobe.cli.app.LazyGroup`, the ``geoprobe`` group, lists the commands from that index (the help shows each
command's first paragraph as before) and imports a command's module only when that command runs or
shows its own help. Where a registration says something the index cannot read without running it (a
help that is not a literal string), the group imports that module to list it: slower, never wrong. This
module imports only the standard library.
``tests/cli/test_startup.py`` checks the index against the commands registered by importing every module.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: commands besides the experiments' (geoprobe.recipes.EXPERIMENTS): one module of geoprobe.cli each
COMMANDS = ("capture", "corpus", "listing", "report", "run", "sweep")
#: the keywords of a registration the index reads (the others do not change the listing)
LISTED = ("name", "help", "short_help", "hidden", "deprecated", "rich_help_panel")


@dataclass(frozen=True)
class Entry:
    """One command as its module registers it; ``known`` False where the index could not read it."""

    name: str
    module: str
    settings: tuple[tuple[str, Any], ...] = ()
    known: bool = True


def command_modules(order: tuple[str, ...] = ()) -> list[Path]:
    """The files of geoprobe.cli that register commands: those named in ``order`` first, then the rest by name."""
    files = {p.stem: p for p in sorted(Path(__file__).parent.glob("*.py"))}
    registering = {n: p for n, p in files.items() if _registers(p.read_text(encoding="utf-8"))}
    return [registering[n] for n in order if n in registering] + [p for n, p in registering.items() if n not in order]


def _registers(source: str) -> bool:
    return "@app.command" in source or "app.add_typer" in source


@functools.cache
def index() -> dict[str, Entry]:
    """Every command by name, in the order of the help: the modules of :data:`COMMANDS`, then the experiments'
    command modules; within a module, in the order it registers them."""
    entries: dict[str, Entry] = {}
    for path in command_modules((*COMMANDS, *experiment_names())):
        for entry in module_entries(path):
            entries.setdefault(entry.name, entry)
    return entries


def experiment_names() -> tuple[str, ...]:
    """``geoprobe.recipes.EXPERIMENTS`` read from that module's source (importing it imports torch); empty
    where the source does not assign it a literal (then the experiments' commands are listed by module name)."""
    source = Path(__file__).parents[1] / "recipes.py"
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "EXPERIMENTS" and node.value is not None:  # type: ignore[union-attr]
            try:
                return tuple(ast.literal_eval(node.value))  # type: ignore[union-attr]
            except ValueError:
                break
    return ()


def module_entries(path: Path) -> list[Entry]:
    """The commands the module at ``path`` registers on ``app``, read from its source."""
    module = f"geoprobe.cli.{path.stem}"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typers = {  # NAME = typer.Typer(...) at module level: a sub-app's own keywords (its help)
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and _is_call(node.value, "typer", "Typer")
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found: list[Entry] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                if _is_call(deco, "app", "command"):
                    found.append(_command(deco, node, module))  # type: ignore[arg-type]
        elif isinstance(node, ast.Expr) and _is_call(node.value, "app", "add_typer"):
            call: ast.Call = node.value  # type: ignore[assignment]
            sub = call.args[0] if call.args else None
            own = typers.get(sub.id) if isinstance(sub, ast.Name) else None
            settings, known = _keywords([*(own.keywords if own is not None else ()), *call.keywords])
            name = settings.pop("name", None)
            found.append(Entry(str(name), module, tuple(settings.items()), known and isinstance(name, str)))
    return found


def _is_call(node: Any, owner: str, attr: str) -> bool:
    f = node.func if isinstance(node, ast.Call) else None
    return isinstance(f, ast.Attribute) and f.attr == attr and isinstance(f.value, ast.Name) and f.value.id == owner


def _keywords(keywords: list[ast.keyword]) -> tuple[dict[str, Any], bool]:
    """The listed keywords' literal values (later ones win), and whether every one was a literal."""
    settings: dict[str, Any] = {}
    known = True
    for kw in keywords:
        if kw.arg in LISTED:
            try:
                settings[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                known = False
        elif kw.arg is None:  # **settings: cannot be read without running the module
            known = False
    return settings, known


def _command(deco: ast.Call, fn: ast.FunctionDef, module: str) -> Entry:
    settings, known = _keywords(deco.keywords)
    if deco.args:  # app.command("name")
        try:
            settings["name"] = ast.literal_eval(deco.args[0])
        except ValueError:
            known = False
    name = settings.pop("name", None) or fn.name.lower().replace("_", "-")  # typer's name for a function
    if "help" not in settings:
        settings["help"] = ast.get_docstring(fn, clean=True)
    return Entry(str(name), module, tuple(settings.items()), known)


def import_command(argv: list[str]) -> None:
    """Import the module of the command ``argv`` runs (none for ``--help`` or a name that is no command)."""
    words = [a for a in argv if not a.startswith("-")]
    entry = index().get(words[0]) if words else None
    if entry is not None and entry.module not in sys.modules:
        importlib.import_module(entry.module)


def import_commands() -> None:
    """Import every command's module, so that each has registered the summary it prints for its results
    (geoprobe.cli.common.prints). For a result shown by another command than its own: ``geoprobe run RECIPE``
    imports the run command's module only, and before this the wind tunnel's seeds printed no summary."""
    for entry in index().values():
        if entry.module not in sys.modules:
            importlib.import_module(entry.module)
