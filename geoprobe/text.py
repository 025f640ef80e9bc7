"""Plain-text rules every layer shares: what counts as a blank prompt, and where a prompt file's
lines end. Imports nothing of geoprobe, so capture (which refuses blank prompts) and the prompt
readers above it use one definition."""

from __future__ import annotations

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"  # zero-width space/non-joiner/joiner, word joiner, BOM


def is_blank(text: str) -> bool:
    """True when ``text`` holds only whitespace and zero-width characters (U+200B, U+200C, U+200D,
    U+2060, U+FEFF): a line that looks empty in an editor is no prompt, whatever bytes it hides."""
    return all(c.isspace() or c in ZERO_WIDTH for c in text)


def split_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n`` and ``\\r\\n`` only. ``str.splitlines`` also cuts at U+2028, U+2029, form
    feed, vertical tab, \\x1c-\\x1e and \\x85, which turn up inside copied prose: a prompt file's lines
    are the lines an editor shows, and those characters stay part of the prompt."""
    return [line.removesuffix("\r") for line in text.split("\n")]
