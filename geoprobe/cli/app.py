"""The ``geoprobe`` Typer application and its two consoles; every command module registers on ``app``."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure the Bayesian geometry of attention in pretrained language models.",
)
out = Console()
err = Console(stderr=True)
