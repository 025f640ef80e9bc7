"""geoprobe.text.inert: what may reach a terminal from a file, and how the rest is written."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from geoprobe.text import inert

# ESC-led sequences (OSC title, CSI clear-screen), their one-byte C1 forms, BEL, CR, backspace, DEL,
# a bidirectional override, a line separator, NEL, a zero-width space, a private-use character
HOSTILE = ["\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "\x9d0;t\x9c", "\r", "\x08", "\x7f", "\u202e", "\u2028", "\x85"]


@pytest.mark.parametrize("s", HOSTILE + ["\u200b", "\ue000", "\U000e0001", "\ud800"], ids=ascii)
def test_every_non_printable_character_is_written_as_repr_writes_it(s):
    text = f"model {s} name"
    shown = inert(text)
    assert shown == repr(text)[1:-1]  # the same escapes as the --out/--prompts names in messages ({p!r})
    assert shown.isprintable()


def test_printable_text_comes_back_unchanged_and_line_feeds_stay():
    for text in (
        "smollm2-135m",
        "café 日本語 Ωmega →",
        "a\nb",
        "[bold]x[/bold] :smile:",
        "nbsp\u00a0and\u3000ideographic",
    ):
        assert inert(text) == text
    assert inert("x\ty") == "x\\ty"  # a tab is escaped like every other control character but the line feed


def test_no_character_that_is_not_printable_survives():
    """Over the whole code space: what inert leaves raw is printable, a space, or the line feed."""
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        out = inert(c)
        assert out == c or out == repr(c)[1:-1], hex(cp)
        if out == c:
            assert c.isprintable() or c == "\n" or unicodedata.category(c) == "Zs", hex(cp)
