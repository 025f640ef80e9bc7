"""geoprobe's version: the one place it is written (pyproject reads it from here, results files and
checkpoints record it). Imports nothing, so any module may read it without an import cycle."""

__version__ = "0.1.0"
