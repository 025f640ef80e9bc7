"""Plain-text rules every layer shares: what counts as a blank prompt, where a prompt file's lines
end, and how text from files is made inert before it reaches a terminal. Imports nothing of
geoprobe, so capture (which refuses blank prompts), the prompt readers and the CLI's consoles use
one definition."""

from __future__ import annotations

import unicodedata

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"  # zero-width space/non-joiner/joiner, word joiner, BOM


def is_blank(text: str) -> bool:
    """True when ``text`` holds only whitespace and zero-width characters (U+200B, U+200C, U+200D,
    U+2060, U+FEFF): a line that looks empty in an editor is no prompt, whatever bytes it hides."""
    return all(c.isspace() or c in ZERO_WIDTH for c in text)


def split_lines(text: str) -> list[str]:
    """``text`` cut at line ends: ``\\n``, ``\\r\\n`` and a lone ``\\r`` (old Mac files), in any mix: the
    universal newlines of Python's ``open()``. ``str.splitlines`` also cuts at U+2028, U+2029, form
    feed, vertical tab, \\x1c-\\x1e and \\x85 (NEL), which turn up inside copied prose and which editors
    do not show as line breaks: those characters stay part of the prompt."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def inert(text: str) -> str:
    """``text`` with every character that a terminal could act on written as its Python escape
    (``\\x1b``, ``\\x9b``, ``\\r``, ``\\x07``, ``\\u2028``, ``\\u202e``…), the way ``repr`` writes it;
    line feeds stay. Escaped: the C0 and C1 control characters and DEL (escape sequences, OSC titles,
    carriage returns, bells), the format characters (bidirectional overrides, zero-width
    characters), line and paragraph separators, surrogates, private-use and unassigned code points:
    everything ``str.isprintable`` rejects except spaces. Printable text comes back unchanged (the
    same object), so this costs one C-speed scan in the common case."""
    if text.isprintable() or all(part.isprintable() for part in text.split("\n")):
        return text
    return "".join(
        c if c == "\n" or c.isprintable() or unicodedata.category(c) == "Zs" else repr(c)[1:-1] for c in text
    )


def number(x: object, spec: str = "", *, missing: str = "n/a") -> str:
    """``x`` written with the format ``spec`` as a reader reads it: ``missing`` for None, NaN and ±inf, and never
    a negative (or explicitly signed) zero: a value that rounds to zero at ``spec`` is written unsigned
    (``number(-1e-9, ".1f")`` is ``0.0``, not ``-0.0``; ``number(-0.0, "+.2f")`` is ``0.00``). The one number
    formatter of the pages, the scorecard lines and ``Estimate``'s ``format``."""
    import math
    import numbers

    if x is None or isinstance(x, bool) or not isinstance(x, numbers.Real):
        return missing if x is None else str(x)
    if not math.isfinite(x):
        return missing
    text = str(x) if spec == "" else format(x if isinstance(x, numbers.Integral) else float(x), spec)
    digits = text.lstrip("+-").split("e")[0].split("E")[0]
    if text[:1] in "+-" and not any(c in "123456789" for c in digits):
        return text[1:]
    return text
