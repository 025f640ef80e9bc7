"""One exception family for every user-facing failure.

Each message is a single line that names the offending value, the limit it broke, and the
fix (usually the CLI flag to change). The CLI prints ``error: <message>`` and exits 2;
``--debug`` shows the traceback.
"""
from __future__ import annotations


class GeoprobeError(Exception):
    """Base class: a bad input or an environment problem the user can fix."""

    def __init__(self, message: str) -> None:
        if "\n" in message:
            message = " ".join(part.strip() for part in message.splitlines() if part.strip())
        super().__init__(message)


class UnknownModelError(GeoprobeError):
    """A model name that is neither an alias, a Hub id we can reach, a directory nor a .gguf."""


class ModelUnavailableError(GeoprobeError):
    """The weights exist in principle but are not reachable here (offline, not cached)."""


class UnsupportedArchitectureError(GeoprobeError):
    """An architecture no geoprobe adapter covers."""


class PromptError(GeoprobeError):
    """Unreadable, non-UTF-8 or empty prompts."""


class CaptureError(GeoprobeError):
    """A forward pass produced something unusable (NaN/Inf), or capture options clash."""


class OutputExistsError(GeoprobeError):
    """Refusing to overwrite results already on disk."""


class ResultsError(GeoprobeError):
    """A results.json that this geoprobe cannot read (wrong kind, incompatible version, damaged)."""
