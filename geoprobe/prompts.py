"""Reading prompt files: one prompt per line (.txt), JSON lines, or a JSON list."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from geoprobe.errors import PromptError


def builtin_prompts() -> list[str]:
    """The 160 built-in prompts that `geoprobe scan` uses when no --prompts file is given.

    Each ends mid-sentence and is chosen to spread next-token entropy across three rough
    strata: nearly determined continuations (counting, alphabets, well-known phrases, code
    with an obvious next token), medium ones (factual prose, news, science, instructions,
    recipes, law, medicine, sports, history, geography, code) and open-ended ones (fiction,
    dialogue, arbitrary lists). On SmolLM2-135M (Q4_1) about 48 fall below 1 bit and 56 at
    or above 4 bits. The file is a plain JSON list of strings, with no stratum labels."""
    text = resources.files("geoprobe").joinpath("data", "prompts.json").read_text(encoding="utf-8")
    return list(json.loads(text))


def read_prompts(path: str | Path) -> list[str]:
    """Prompts from ``path``: ``.jsonl`` (a string or {"prompt": ...} per line), ``.json``
    (a list of strings) or any other text file (one prompt per non-blank line, ``\\n`` escapes
    allowed). Raises :class:`PromptError` with a one-line message for anything unusable."""
    p = Path(path)
    if not p.exists():
        raise PromptError(f"prompt file {str(p)!r} does not exist; pass an existing file to --prompts")
    if p.is_dir():
        raise PromptError(f"prompt file {str(p)!r} is a directory; pass a file to --prompts")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise PromptError(f"prompt file {str(p)!r} cannot be read ({exc.strerror}); fix its permissions or --prompts") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(
            f"prompt file {str(p)!r} is not UTF-8 (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); "
            "re-encode it as UTF-8 (e.g. iconv -t UTF-8) and pass it to --prompts"
        ) from None
    text = text.removeprefix("\ufeff")
    if p.suffix == ".json":
        prompts = _json_list(text, p)
    elif p.suffix == ".jsonl":
        prompts = [_jsonl_item(line, i + 1, p) for i, line in enumerate(text.splitlines()) if line.strip()]
    else:
        prompts = [line.replace("\\n", "\n") for line in text.splitlines() if line.strip()]
    if not prompts:
        raise PromptError(f"prompt file {str(p)!r} holds no prompts; put one prompt per line in it")
    for i, prompt in enumerate(prompts):
        if not prompt.strip():
            raise PromptError(f"prompt #{i} in {str(p)!r} is empty; remove it")
    return prompts


def _json_list(text: str, p: Path) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PromptError(f"prompt file {str(p)!r} is not valid JSON ({exc.msg} at line {exc.lineno}); fix the file") from None
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise PromptError(f"prompt file {str(p)!r} must hold a JSON list of strings")
    return data


def _jsonl_item(line: str, lineno: int, p: Path) -> str:
    try:
        item = json.loads(line)
    except ValueError:
        raise PromptError(f"line {lineno} of {str(p)!r} is not valid JSON; fix it or use a .txt file") from None
    if isinstance(item, dict):
        item = item.get("prompt")
    if not isinstance(item, str):
        raise PromptError(f"line {lineno} of {str(p)!r} is neither a string nor an object with a 'prompt' string")
    return item
