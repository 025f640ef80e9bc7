"""Reading prompt files: one prompt per line (.txt), JSON lines, or a JSON list."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

from geoprobe.corpora import DOMAINS
from geoprobe.errors import PromptError
from geoprobe.paths import atomic_write_text, read_regular, special_kind
from geoprobe.provenance import prompts_hash
from geoprobe.sampling import PromptSet, SamplingConfig, check_corpus_set, is_corpus_set, sample_corpus_set
from geoprobe.text import is_blank, split_lines


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


MAX_PROMPT_FILE_BYTES = 16 * 2**20  # 16 MiB: ~4 million tokens, far more than any capture runs


def read_prompt_text(path: str | Path) -> str:
    """The UTF-8 text of prompt file ``path`` (without a leading BOM), after checks that never block
    or exhaust memory: it must be a regular file (a FIFO or /dev/zero is refused without reading a
    byte: :func:`geoprobe.paths.read_regular`) of at most :data:`MAX_PROMPT_FILE_BYTES`. Raises
    :class:`PromptError` in one line."""
    p = Path(path)
    if not p.exists():
        raise PromptError(f"prompt file {str(p)!r} does not exist; pass an existing file to --prompts")
    if p.is_dir():
        raise PromptError(f"prompt file {str(p)!r} is a directory; pass a file to --prompts")

    def special(why: str) -> PromptError:
        return PromptError(
            f"prompt file {str(p)!r} {why}; geoprobe reads prompts only from regular files: write them to a "
            "file and pass that to --prompts"
        )

    try:
        st = p.stat()
        size = st.st_size
        if special_kind(st) is None and size > MAX_PROMPT_FILE_BYTES:  # before reading a byte
            raise PromptError(
                f"prompt file {str(p)!r} is {size / 2**20:.1f} MiB, above the "
                f"{MAX_PROMPT_FILE_BYTES // 2**20} MiB limit for a prompt file; split it into smaller files"
            )
        raw = read_regular(p, special, limit=MAX_PROMPT_FILE_BYTES)
    except OSError as exc:
        raise PromptError(
            f"prompt file {str(p)!r} cannot be read ({exc.strerror}); fix its permissions or --prompts"
        ) from exc
    if len(raw) > MAX_PROMPT_FILE_BYTES:  # it grew after the size check
        raise PromptError(
            f"prompt file {str(p)!r} is above the {MAX_PROMPT_FILE_BYTES // 2**20} MiB limit for a "
            "prompt file; split it into smaller files"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(
            f"prompt file {str(p)!r} is not UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r}); "
            "re-encode it as UTF-8 (e.g. iconv -t UTF-8) and pass it to --prompts"
        ) from None
    return text.removeprefix("\ufeff")


def read_prompts(path: str | Path) -> list[str]:
    """Prompts from ``path``: ``.jsonl`` (a string or {"prompt": ...} per line), ``.json``
    (a list of strings) or any other text file (one prompt per non-blank line, ``\\n`` escapes
    allowed). Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (:func:`geoprobe.text.split_lines`); blank lines
    (:func:`is_blank`) are skipped. Raises :class:`PromptError` with a one-line message for
    anything unusable, before reading a file that is not regular or is too large."""
    p = Path(path)
    text = read_prompt_text(p)
    if p.suffix == ".json":
        prompts = _json_list(text, p)
    elif p.suffix == ".jsonl":
        prompts = [_jsonl_item(line, i + 1, p) for i, line in enumerate(split_lines(text)) if not is_blank(line)]
    else:
        prompts = [line.replace("\\n", "\n") for line in split_lines(text) if not is_blank(line)]
    if not prompts:
        raise PromptError(f"prompt file {str(p)!r} holds no prompts; put one prompt per line in it")
    for i, prompt in enumerate(prompts):
        if is_blank(prompt):
            raise PromptError(f"prompt #{i} in {str(p)!r} is empty; remove it")
    return prompts


def _json_list(text: str, p: Path) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PromptError(
            f"prompt file {str(p)!r} is not valid JSON ({exc.msg} at line {exc.lineno}); fix the file"
        ) from None
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


# -- one interface for named sets and files: --prompts builtin|mixed|<domain>|FILE -------------
def prompt_source_kind(name: str) -> str:
    """``builtin``, ``corpus`` (``mixed`` or a domain) or ``file``; checked before any model loads.

    A name that is a set wins over a file of the same name (write ``./math`` for the file);
    a bare word that is neither a set nor an existing file is an unknown set (the message
    lists the sets)."""
    if name == "builtin":
        return "builtin"
    if is_corpus_set(name):
        check_corpus_set(name)
        return "corpus"
    p = Path(name)
    if p.exists() or p.suffix or len(p.parts) > 1:
        return "file"
    check_corpus_set(name)  # raises UnknownDomain listing the sets
    raise AssertionError("unreachable")


def resolve_prompt_set(
    name: str,
    model: Any = None,
    *,
    sampling: Any = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    texts: Sequence[str] | None = None,
) -> Any:
    """The :class:`~geoprobe.sampling.PromptSet` for ``--prompts name``; corpus sets need ``model``
    (its next-token entropies stratify the sample). ``texts`` overrides with the caller's own."""
    if texts is not None:
        texts = tuple(texts)
        return PromptSet(name="custom", kind="file", prompts=texts, hash=prompts_hash(texts), seed=seed)
    kind = prompt_source_kind(name)
    if kind == "builtin":
        texts = tuple(builtin_prompts())
    elif kind == "file":
        texts = tuple(read_prompts(name))
    else:
        if model is None:
            raise PromptError(f"prompt set {name!r} is sampled by the model's next-token entropy; load a model first")
        return sample_corpus_set(model, name, sampling or SamplingConfig(), seed=seed, progress=progress)
    info: dict = {}
    if kind == "file":
        info["path"] = str(Path(name).resolve())
        sampled = _sampled_set(Path(name))
        if sampled:  # written by `geoprobe sample`: keep which set it was drawn from
            info["sampled_set"] = sampled

            if sampled in DOMAINS:
                info["domain"] = sampled
    return PromptSet(name=name, kind=kind, prompts=texts, hash=prompts_hash(texts), seed=seed, info=info)


def _sampled_set(p: Path) -> str | None:
    """The ``set`` every line of a ``geoprobe sample`` JSON-lines file names, if they all agree."""
    if p.suffix != ".jsonl":
        return None
    names = set()
    for line in split_lines(read_prompt_text(p)):
        if not is_blank(line):
            item = json.loads(line)
            names.add(item.get("set") if isinstance(item, dict) else None)
    return names.pop() if len(names) == 1 and None not in names else None


def prompts_read_line(path: str, prompts: Sequence[str]) -> str:
    """What a run says before its model loads: which file the prompts were read from and how many, since
    every line of it becomes a prompt that the capture keeps (a recipe's ``[prompts] file`` and
    ``--prompts FILE`` alike)."""
    distinct = len(set(prompts))
    repeated = f" ({distinct} distinct)" if distinct < len(prompts) else ""
    return f"prompts: {len(prompts)}{repeated} read from {str(Path(path).resolve())!r}"


def write_prompt_sets(sets: dict[str, PromptSet], path: str | os.PathLike) -> Path:
    """Every sampled prompt as JSON lines (set, domain, source, sampling entropy, quintile,
    text): ``geoprobe scan --prompts FILE`` reads the ``prompt`` field back."""
    lines = []
    for name, s in sets.items():
        for i, text in enumerate(s.prompts):
            lines.append(
                json.dumps(
                    {
                        "set": name,
                        "domain": s.domains[i] if s.domains else None,
                        "source": s.sources[i] if s.sources else None,
                        "entropy_bits": round(s.entropy[i], 6) if s.entropy else None,
                        "quintile": s.stratum[i] + 1 if s.stratum else None,
                        "prompt": text,
                    },
                    ensure_ascii=False,
                )
            )
    return atomic_write_text(path, "\n".join(lines) + "\n")
