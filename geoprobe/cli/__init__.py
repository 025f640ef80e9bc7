"""``geoprobe`` command line: models, prompts, sample, capture, scan, run, report, compare-domains,
compare, sula, intervene, positional, denoise, windtunnel (train|eval|report|run).

One module per command; the options several commands share are declared once in
:mod:`geoprobe.cli.options` (``LoadOptions`` for every model-loading command). Errors the user can
fix print one line (``error: ...``) and exit 2; ``--debug`` anywhere shows the traceback instead.

Importing this package is cheap (the standard library): :func:`main` imports the commands itself, so
that Ctrl-C while torch loads is already its to handle; ``app`` (every command registered) is
imported on first use.
"""

from typing import Any

from geoprobe.cli.main import main

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from geoprobe.cli.main import commands

        return commands()
    raise AttributeError(f"module 'geoprobe.cli' has no attribute {name!r}")
