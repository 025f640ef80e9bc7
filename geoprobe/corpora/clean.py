"""Turning raw source text into clean prose or code (wiki markup, Brown POS tags, licence
headers, whitespace), and finding the sentence or line starts that passages are cut from."""

from __future__ import annotations

import html
import re
from typing import Callable

# ---------------------------------------------------------------------------- wiki markup

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF = re.compile(r"<ref\b[^>]*/>|<ref\b[^>]*>.*?</ref\s*>", re.S | re.I)
_MATH = re.compile(r"<math\b[^>]*>.*?</math\s*>", re.S | re.I)
_DROP_ELEMENTS = re.compile(
    r"<(gallery|timeline|imagemap|score|syntaxhighlight|source|pre|code|chem|hiero|table)\b[^>]*>.*?</\1\s*>",
    re.S | re.I,
)
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_TABLE = re.compile(r"\{\|(?:(?!\{\||\|\}).)*\|\}", re.S)
_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_EXT_LINK = re.compile(r"\[(?:https?:|ftp:|//)[^\s\]]*\s*([^\]]*)\]")
_BARE_URL = re.compile(r"\S*://\S+")
_BOLD_ITALIC = re.compile(r"'{2,}")
_TAG = re.compile(r"</?[A-Za-z][^<>]*?/?>")
_HEADING = re.compile(r"^=+\s*(.*?)\s*=+$")
_LINK_DROP = re.compile(
    r"^\s*:?\s*(file|image|category|media|wikipedia|wp|wikt|wiktionary|template|help|portal|"
    r"simple|[a-z]{2,3}(-[a-z]+)?)\s*:",
    re.I,
)
#: sections from which on an article holds only lists and citations
_BACK_MATTER = {
    "see also",
    "references",
    "external links",
    "further reading",
    "notes",
    "bibliography",
    "sources",
    "footnotes",
    "citations",
    "notes and references",
    "works cited",
    "related topics",
}
_LEFTOVER = re.compile(r"\[\[|\]\]|\{\{|\}\}|\{\||\|\}|<|>|\|")
_WS = re.compile(r"\s+")


def _until_stable(pattern: re.Pattern[str], text: str, repl: str | Callable[[re.Match[str]], str] = "") -> str:
    """Apply ``pattern`` (which matches an innermost construct) until nothing changes."""
    while True:
        new = pattern.sub(repl, text)
        if new == text:
            return text
        text = new


def _link_text(m: re.Match[str]) -> str:
    inner = m.group(1)
    if _LINK_DROP.match(inner):
        return ""
    return inner.rsplit("|", 1)[-1]


def collapse(text: str) -> str:
    """Runs of whitespace (newlines included) become one space; ends stripped."""
    return _WS.sub(" ", text.replace("\xa0", " ")).strip()


def clean_wikitext(wikitext: str) -> str:
    """Plain prose from MediaWiki markup. Templates, tables, references, files, categories,
    interlanguage links, headings, list items, HTML tags and entities are removed; links are
    replaced by their text; a paragraph holding a formula (``<math>``) or markup that did not
    parse is dropped; the article ends where its back matter (See also, References, …) starts.
    Paragraphs are joined, whitespace collapsed to single spaces."""
    text = _COMMENT.sub("", wikitext)
    text = _REF.sub("", text)
    text = _MATH.sub("\x00", text)
    text = _DROP_ELEMENTS.sub("", text)
    text = _until_stable(_TEMPLATE, text)
    text = _until_stable(_TABLE, text)
    text = _until_stable(_LINK, text, _link_text)
    text = _EXT_LINK.sub(r"\1", text)
    text = _BARE_URL.sub("", text)
    text = _BOLD_ITALIC.sub("", text)
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.I)
    text = _TAG.sub("", text)
    text = html.unescape(text)
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        heading = _HEADING.match(stripped)
        if heading and heading.group(1).strip().lower() in _BACK_MATTER:
            break
        if not stripped or heading or stripped[0] in "*#:;|!{}" or stripped.startswith("----"):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(stripped)
    if current:
        paragraphs.append(" ".join(current))
    kept = []
    for p in paragraphs:
        p = collapse(p)
        if "\x00" in p or _LEFTOVER.search(p) or len(p.split()) < 8:
            continue
        p = re.sub(r"\(\s*(?:[,;]\s*)+", "(", p)  # "(;, name" left where a template stood
        p = re.sub(r"(?:\s*[,;])+\s*\)", ")", p)
        p = re.sub(r"\(\s*\)", "", p)
        p = re.sub(r"\s+([,.;:])", r"\1", p)
        kept.append(collapse(p))
    return " ".join(kept)


# ---------------------------------------------------------------------------- news

_SHARE_BAR = re.compile(
    r"Send Facebook Twitter Google\+ Whatsapp Tumblr linkedin stumble Digg reddit Newsvine Permalink \S*"
)
#: Deutsche Welle's editors' initials and agencies: "jbh/rt (AFP, AP)", "kbm/eg/als (AFP)"
_SIGNOFF_HINT = re.compile(r"/[a-z]{2,4} ?-? ?\(")  # starts with a literal: a fast pre-check
_SIGNOFF = re.compile(r"(?<!\S)-?[a-z]{2,4}(?:, ?[a-z]{2,4})*(?:/[a-z]{2,4})+ ?-? ?\([^()]{1,60}\)")
_SIGNOFF_END = re.compile(r"(?<!\S)-?[a-z]{2,4}(?:/[a-z]{2,4})+[ -]*$")
_TAIL = 40


def clean_news(text: str) -> str:
    """A news article as one line of prose: HTML tags and entities, URLs, social-media share
    bars and editors' sign-offs (``jbh/rt (AFP, AP)``) removed, whitespace collapsed."""
    if "<" in text:
        text = _TAG.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    if "://" in text:
        text = _BARE_URL.sub("", text)
    if _SIGNOFF_HINT.search(text):
        text = _SIGNOFF.sub(" ", text)
    parts = []
    for part in _SHARE_BAR.split(text):
        part = part.rstrip(" -\n")
        if "/" in part[-_TAIL:]:
            part = part[:-_TAIL] + _SIGNOFF_END.sub("", part[-_TAIL:])
        parts.append(part)
    return collapse(" ".join(parts))


# ---------------------------------------------------------------------------- Project Euler

_LAYOUT_LINE = re.compile(r"^\s*[+|]|^[\d\s,.;:()\[\]-]*\d+\s+\d+\s+\d+[\d\s,.;:()\[\]-]*$")


def clean_euler(body: str) -> str:
    """A Project Euler problem statement as prose: ASCII-art tables and grids (lines that
    start with ``+`` or ``|``) and number matrices (lines of nothing but numbers) dropped, bracketed URLs removed,
    whitespace collapsed."""
    lines = [line for line in body.split("\n") if not _LAYOUT_LINE.match(line)]
    text = re.sub(r"\s*\[(?:https?|ftp)://[^\]]*\]", "", "\n".join(lines))
    return collapse(_BARE_URL.sub("", text))


# ---------------------------------------------------------------------------- Brown corpus

_OPENERS = {"``", "(", "[", "{"}
_CLOSERS = {"''", ")", "]", "}", ",", ".", ";", ":", "?", "!", "'"}
_END_PUNCT = {",", ".", "?", "!"}
_DOUBLED = {";", "?", "!"}


def brown_untag(tagged: str) -> str:
    """Plain prose from one Brown Corpus file (form C): ``word/tag`` tokens lose their tags,
    headline lines (every tag ``-hl``) are dropped, ``\\`\\``/``''`` become straight double
    quotes (a closing quote moved after the ``, . ? !`` that Brown puts behind it), the
    doubled ``;``, ``?``, ``!`` of this distribution halved, punctuation re-attached,
    whitespace collapsed."""
    sentences: list[str] = []
    for line in tagged.split("\n"):
        pairs = [tok.rsplit("/", 1) for tok in line.split()]
        pairs = [p for p in pairs if len(p) == 2 and p[0]]
        if not pairs or all(p[1].endswith("-hl") for p in pairs):
            continue
        words: list[str] = []
        for w, _tag in pairs:
            # this distribution writes every ; ? ! twice (";/. ;/."): keep one of each pair
            if w in _DOUBLED and words and words[-1] == w and (len(words) < 2 or words[-2] != w):
                words.append("\x00")
                continue
            words.append(w)
        words = [w for w in words if w != "\x00"]
        # Brown puts a closing quote before the punctuation it encloses: `` Go home '' , she
        for i in range(len(words) - 1):
            if words[i] == "''" and words[i + 1] in _END_PUNCT:
                j = i
                while j + 1 < len(words) and words[j + 1] in _END_PUNCT:
                    words[j], words[j + 1] = words[j + 1], words[j]
                    j += 1
        out = ""
        attach = True  # the next word attaches without a space
        for word in words:
            if word in _CLOSERS:
                out += '"' if word == "''" else word
                attach = False
            elif word in _OPENERS:
                out += ("" if attach else " ") + ('"' if word == "``" else word)
                attach = True
            else:
                out += ("" if attach else " ") + word
                attach = False
        sentences.append(out.strip())
    return collapse(" ".join(sentences))


# ---------------------------------------------------------------------------- code

_LICENCE_WORDS = re.compile(r"copyright|licen[cs]e|all rights reserved", re.I)
MAX_CODE_LINE = 160


def clean_code(source: str) -> str:
    """Python source with a leading comment block that names a copyright or licence removed,
    lines longer than ``MAX_CODE_LINE`` characters dropped, tabs and indentation kept, trailing
    spaces stripped and runs of blank lines reduced to one."""
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    head = 0
    while head < len(lines) and (lines[head].startswith("#") or not lines[head].strip()):
        head += 1
    if any(_LICENCE_WORDS.search(line) for line in lines[:head]):
        lines = lines[head:]
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if len(line) > MAX_CODE_LINE:
            continue
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    return "\n".join(out).strip("\n")


# ---------------------------------------------------------------------------- boundaries

_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "sr",
    "jr",
    "prof",
    "rev",
    "gen",
    "col",
    "lt",
    "sgt",
    "capt",
    "gov",
    "sen",
    "rep",
    "mt",
    "ft",
    "no",
    "nos",
    "vol",
    "vols",
    "fig",
    "figs",
    "ch",
    "pp",
    "p",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "cf",
    "al",
    "ca",
    "approx",
    "inc",
    "ltd",
    "co",
    "corp",
    "jan",
    "feb",
    "mar",
    "apr",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "u.s",
    "u.k",
    "u.n",
    "a.d",
    "b.c",
    "ph.d",
    "op",
    "ed",
    "eds",
}
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")


def sentence_starts(text: str) -> list[int]:
    """Character offsets where sentences begin in collapsed prose: 0 and every position after
    ``.``, ``!`` or ``?`` (plus closing quotes or brackets) and a space, followed by a capital
    letter or digit; a full stop after a known abbreviation or a single letter ends nothing."""
    starts = [0] if text else []
    for m in _SENTENCE_END.finditer(text):
        if text[m.start()] == ".":
            word = text[: m.start()].rsplit(None, 1)[-1] if text[: m.start()].strip() else ""
            word = word.lstrip("\"'“‘([").lower()
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or re.fullmatch(r"(\w\.)+\w", word):
                continue
        starts.append(m.end())
    return starts


def line_starts(code: str) -> list[int]:
    """Offsets of the first character of every non-blank line."""
    starts = []
    pos = 0
    for line in code.split("\n"):
        if line.strip():
            starts.append(pos)
        pos += len(line) + 1
    return starts
