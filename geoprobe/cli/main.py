"""The ``geoprobe`` entry point: runs the app and turns failures into one line and an exit status.

* a :class:`~geoprobe.errors.GeoprobeError` (bad input, unreadable results, an output geoprobe may
  not write) and a usage error: ``error: …``, exit 2;
* SIGINT (Ctrl-C) or SIGTERM: ``interrupted; …`` (saying whether the same command resumes), exit
  130 or 143; checkpoints are kept. This holds from the first line of :func:`main` on, start-up
  included: this module imports only the standard library (and geoprobe.cli.lazy, which does too), and
  the commands (torch, scipy, typer) are imported inside :func:`main`'s handlers;
* an allocation that failed (MemoryError, torch's out-of-memory errors) where the memory estimates
  did not foresee it: ``error: out of memory (…); …`` with what to lower, exit 2;
* anything else: ``error: unexpected …``, exit 1.

``--debug`` anywhere on the command line shows the traceback instead.
"""

from __future__ import annotations

import signal
import sys
import warnings
from typing import Any

from geoprobe.cli.lazy import import_command, import_commands
from geoprobe.errors import GeoprobeError

#: what an interrupted ``geoprobe sweep`` keeps
SWEEP_KEEPS = "the finished cells and each unfinished cell's resumable state"


def resumes() -> dict[str, str]:
    """What an interrupted command keeps, by command line (``scan``, ``windtunnel run``, …): each
    experiment says what its run keeps (and which of its other command lines keep the same)."""
    from geoprobe.recipes import experiments

    own = {c: e.resumes for e in experiments().values() if e.resumes for c in (e.command_line, *e.resumed_by)}
    return {**own, "sweep": SWEEP_KEEPS}


def __getattr__(name: str) -> Any:
    if name == "RESUMES":
        return resumes()
    raise AttributeError(f"module 'geoprobe.cli.main' has no attribute {name!r}")


def commands(argv: list[str] | None = None) -> Any:
    """The ``geoprobe`` Typer app. With ``argv``: only the module of the command it runs is imported (none for
    ``geoprobe --help``; geoprobe.cli.lazy lists the others from their source without importing them, issue 39
    case 7). Without: every command's module (imports torch and scipy: seconds), as geoprobe.cli.lazy indexes
    them: the modules of its ``COMMANDS``, then each experiment's command module (``geoprobe.cli.<package>``,
    where it has one; every experiment also runs from a recipe with ``geoprobe run``)."""
    from geoprobe.cli.app import app

    if argv is not None:
        import_command(argv)
    else:
        import_commands()  # each module registers its commands on the app
    # importing the submodule geoprobe.cli.app bound that name on the package: ``geoprobe.cli.app`` is the app
    sys.modules["geoprobe.cli"].app = app  # type: ignore[attr-defined]
    return app


class _Starting(KeyboardInterrupt):
    """Ctrl-C or SIGTERM while the commands were still being imported: nothing has run yet."""


def _usage_message(exc: Exception) -> str:
    """typer/click's message on one line, with the rejected value (typer checks types with pydantic,
    whose error holds it) and where to look: "Invalid value 'x' for '--batch-size': … (see 'geoprobe scan --help')"."""
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    try:
        value = exc.__cause__.errors()[0]["input"]  # type: ignore[union-attr]
        message = message.replace("Invalid value for", f"Invalid value {value!r} for", 1)
    except Exception:  # noqa: BLE001 - not a pydantic validation error: keep the message as it is
        pass
    ctx = getattr(exc, "ctx", None)
    return message + (f" (see '{ctx.command_path} --help')" if ctx is not None else "")


def command_of(argv: list[str]) -> str:
    """The command ``argv`` runs; for ``geoprobe run RECIPE`` the command line of the recipe's ``[probe]
    command`` (the recipe read with the standard library, never waiting on a FIFO; called at an interrupt,
    once the commands are imported)."""
    words = [a for a in argv if not a.startswith("-")]
    if words[:1] == ["windtunnel"]:
        return " ".join(words[:2])
    if words[:1] == ["run"] and len(words) > 1:
        import os
        import stat
        import tomllib

        try:
            st = os.stat(words[1])
            if not stat.S_ISREG(st.st_mode) or st.st_size > 2**20:  # never wait on a FIFO; a recipe is small
                return "run"
            with open(words[1], "rb") as f:
                probe = tomllib.load(f).get("probe", {})
        except (OSError, ValueError, AttributeError):  # unreadable or not a table: its work never started
            return "run"
        named = probe.get("command") if isinstance(probe, dict) else None
        return command_line(named) if isinstance(named, str) else "run"
    return words[0] if words else ""


def command_line(recipe_command: str) -> str:
    """The command line that runs a recipe's command (``windtunnel`` -> ``windtunnel run``)."""
    from geoprobe.recipes import experiments

    e = experiments().get(recipe_command)
    return recipe_command if e is None else e.command_line


def _interrupted(signum: int, argv: list[str], starting: bool = False) -> None:
    keep = None if starting else resumes().get(command_of(argv))  # nothing is imported while starting
    tail = (
        "while starting, before any work; nothing was written: rerun the command"
        if starting
        else f"rerun the same command to resume ({keep} are kept)"
        if keep
        else "nothing unfinished was kept (the outputs are written at the end): rerun the command"
    )
    name = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
    sys.stderr.write(f"interrupted ({name}); {tail}\n")  # plain: rich may not be imported yet
    sys.stderr.flush()
    # A KeyboardInterrupt that passed through an exec() of a string (dataclasses build their methods so,
    # at import) leaves CPython's "unhandled KeyboardInterrupt" flag set, and `python -m geoprobe` would
    # then kill itself with SIGINT at exit instead of exiting 130; every exec() of a string clears it.
    exec("pass")
    sys.exit(128 + signum)


#: what torch's CPU and CUDA allocators say when an allocation fails (a RuntimeError, not a MemoryError)
ALLOCATOR_MESSAGES = ("DefaultCPUAllocator", "CUDA out of memory", "can't allocate memory")


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation that failed: Python's and numpy's MemoryError, torch's
    OutOfMemoryError, or the RuntimeError torch's CPU allocator raises."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in ALLOCATOR_MESSAGES)


def _line(message: str) -> None:
    from geoprobe.cli.app import err

    err.print(message, highlight=False, markup=False, soft_wrap=True)  # markup would eat "[section]"


def main() -> None:
    argv = sys.argv[1:]
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    warnings.showwarning = lambda message, category, *a, **k: _line(f"warning: {message}")
    received: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        try:
            app = commands(argv)
        except KeyboardInterrupt:
            raise _Starting from None
        code = app(args=argv, prog_name="geoprobe", standalone_mode=False)
    except _Starting:
        _interrupted(received[0] if received else signal.SIGINT, argv, starting=True)
    except KeyboardInterrupt:  # outside the command itself (typer turns one inside it into a return of 130)
        code = 130
    except GeoprobeError as exc:
        if debug:
            raise
        _line(f"error: {exc}")
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        import click
        import typer

        # typer >= 0.20 vendors click (typer._click): its usage errors derive from typer.TyperException
        if isinstance(exc, (typer.TyperException, click.exceptions.ClickException)):
            if debug:
                raise
            if exc.format_message().strip():  # empty: a group called bare, whose help is already on stdout
                _line(f"error: {_usage_message(exc)}")
            sys.exit(2)  # a usage error the user can fix, like GeoprobeError
        if isinstance(exc, (typer.Abort, click.exceptions.Abort)):
            _interrupted(signal.SIGINT, argv)
        if debug:
            raise
        if out_of_memory(exc):  # geoprobe's estimates (docs/outputs.md) let this through: still one line
            _line(
                f"error: out of memory ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); this run needs "
                "more memory than is free: lower --batch-size, pass fewer prompts or layers, or free memory, then "
                "rerun (--debug shows where)"
            )
            sys.exit(2)
        if isinstance(exc, OSError):  # an operating-system failure outside geoprobe's own writers
            where = f" at {exc.filename!r}" if exc.filename else ""
            _line(
                f"error: {exc.strerror or type(exc).__name__}{where}; check that path and the free space, then rerun "
                "(--debug shows the traceback)"
            )
            sys.exit(2)
        _line(
            f"error: unexpected {type(exc).__name__}: {' '.join(str(exc).split())} (rerun with --debug for the "
            "traceback)"
        )
        sys.exit(1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if code == 130:  # typer's return value for a KeyboardInterrupt raised inside the command
        _interrupted(received[0] if received else signal.SIGINT, argv)
    if isinstance(code, int) and code:
        sys.exit(code)
