"""One exception family for every user-facing failure.

Each message is a single line that names the offending value, the limit it broke, and the
fix (usually the CLI flag to change). The CLI prints ``error: <message>`` and exits 2;
``--debug`` shows the traceback.
"""

from __future__ import annotations

import os


class GeoprobeError(Exception):
    """Base class: a bad input or an environment problem the user can fix."""

    def __init__(self, message: str) -> None:
        if "\n" in message:
            message = " ".join(part.strip() for part in message.splitlines() if part.strip())
        super().__init__(message)


class ArgumentError(GeoprobeError, TypeError):
    """A Python API call given an argument of the wrong type: a bare string or a non-string where a list of
    prompts belongs, a dict where a config object belongs, ``None`` for a model. One type for every public
    entry point (:mod:`geoprobe.checks`); a ``TypeError`` too, so ``except TypeError`` catches it."""


class ProbeError(GeoprobeError):
    """A probe recipe (``probes/*.toml``) or a run's settings that cannot be used."""


class UnknownModelError(GeoprobeError):
    """A model name that is neither an alias, a Hub id we can reach, a directory nor a .gguf."""


class ModelUnavailableError(GeoprobeError):
    """The weights exist in principle but are not reachable here (offline, not cached)."""


class WeightsMismatchError(GeoprobeError):
    """A checkpoint whose weights do not match its config: tensors missing, unexpected or of the wrong
    shape, which transformers would initialise at random or drop (``--allow-partial-weights`` loads it)."""


class SweepError(GeoprobeError):
    """A sweep file, or a sweep's output directory, that cannot be used."""


class UnsupportedArchitectureError(GeoprobeError):
    """A model geoprobe refuses to measure. ``reason`` is a key of ``geoprobe.models.reasons.REASONS``
    (the documented list of why an architecture is refused; docs/models.md), or None for a refusal
    of one model's numbers (head counts that do not divide, a TransformerLens bridge)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class PromptError(GeoprobeError):
    """Unreadable, non-UTF-8 or empty prompts."""


class CaptureError(GeoprobeError):
    """A forward pass produced something unusable (NaN/Inf), or capture options clash."""


class OutputExistsError(GeoprobeError):
    """Refusing to overwrite results already on disk."""


class ResultsError(GeoprobeError):
    """A results.json that this geoprobe cannot read (wrong kind, incompatible version, damaged)."""


class ForeignOutputError(OutputExistsError):
    """An output location holds something geoprobe did not write; no flag makes geoprobe replace it."""


class OutputLocationError(GeoprobeError):
    """``--out`` cannot be written: a file where a directory belongs, not writable, too little space."""


class OutputWriteError(GeoprobeError):
    """An ``OSError`` while writing an output, told in one line with the path and the errno's meaning;
    ``fix`` replaces the advice (which names --out) for a file that is no command's output, such as a cache."""

    def __init__(self, path: "str | os.PathLike[str]", exc: OSError, fix: str | None = None) -> None:
        import errno
        from pathlib import Path

        self.path = Path(path)
        self.errno = exc.errno
        code = errno.errorcode.get(exc.errno or 0, "")
        reason = exc.strerror or str(exc) or type(exc).__name__
        space = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        hint = (
            "free some space or choose another --out"
            if exc.errno in space
            else "choose a writable --out"
            if exc.errno == errno.EROFS
            else "fix the permissions or choose another --out"
            if exc.errno in (errno.EACCES, errno.EPERM)
            else "choose another --out"
        )
        fix = fix or f"{hint}; rerunning the same command then finishes what is missing"
        super().__init__(f"could not write {str(self.path)!r}: {reason}{f' ({code})' if code else ''}; {fix}")
        self.__cause__ = exc
