"""``geoprobe`` command line: models, prompts, sample, capture, scan, run, report, compare-domains,
compare, sula, intervene, positional, denoise, windtunnel (train|eval|report|run).

One module per command; the options several commands share are declared once in
:mod:`geoprobe.cli.options` (``LoadOptions`` for every model-loading command). Errors the user can
fix print one line (``error: ...``) and exit 2; ``--debug`` anywhere shows the traceback instead.
"""

from geoprobe.cli import capture, corpus, denoise, dynamics, listing, positional, report, run, scan, sula, windtunnel  # noqa: F401
from geoprobe.cli.app import app
from geoprobe.cli.main import main

__all__ = ["app", "main"]
