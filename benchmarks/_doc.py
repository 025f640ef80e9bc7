"""Shared by the benchmark scripts: replace one marked section of docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, name: str, title: str, body: str) -> None:
    """Replace the text between ``<!-- {name}:start -->`` and ``<!-- {name}:end -->`` (or append
    the section), keeping everything else in the file, including hand-written notes."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    section = f"{start}\n## {title}\n\n{body}{end}"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
