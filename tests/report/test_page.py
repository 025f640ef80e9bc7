"""The page registry (geoprobe.report.page.register_page): every results kind with a page has its page
registered by class, a subclass inherits its base's, and a class without one says so in one line."""

from __future__ import annotations

import ast
import inspect
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

import geoprobe
from geoprobe.recipes import KINDS, result_class
from geoprobe.report.page import Figure, Page, Section, page_content, register_page, render
from geoprobe.results import Result

ROOT = Path(geoprobe.__file__).parent


def _paged() -> list[type]:
    return [cls for cls in map(result_class, KINDS) if cls.PAGE is not None]


def test_every_results_kind_with_a_page_has_its_page_registered():
    classes = _paged()
    assert (
        len(classes) >= 10
    )  # scan, domains, compare, sula, intervene, windtunnel (+ seeds), denoise, positional (2), dynamics
    for cls in classes:
        content = page_content(cls)
        assert content is not None, f"{cls.__name__} has PAGE {cls.PAGE!r} but no registered page"
        # registered in its own experiment's report module or package, typed with its own class
        module = inspect.getmodule(content.sections)
        assert module is not None and module.__name__.startswith(cls.__module__.rsplit(".", 1)[0] + ".report")
        for part in (content.title, content.sections, content.figures):
            hints = typing.get_type_hints(part)
            first = next(iter(inspect.signature(part).parameters))
            assert hints[first] is cls, f"{module.__name__}.{part.__name__} takes {hints[first]}, not {cls.__name__}"


def test_no_report_function_takes_any():
    """Every function of an experiment's report takes its result (or a record of it), never Any."""
    reports = [p for p in ROOT.glob("*/report.py")] + [p for p in ROOT.glob("*/report/*.py")]
    assert len(reports) >= 9
    for path in reports:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            for arg in fn.args.args:
                assert not (arg.annotation is not None and ast.unparse(arg.annotation) == "Any"), (
                    f"{path.relative_to(ROOT)}: {fn.name}({arg.arg}: Any)"
                )


def test_analysis_draws_nothing():
    """Analysers return arrays and records; figures are drawn in the experiments' report modules."""
    for path in (ROOT / "analysis").glob("*.py"):
        assert "plotly" not in path.read_text(encoding="utf-8"), f"{path.name} imports plotly"


@dataclass(frozen=True, eq=False)
class _Base(Result, Page):
    KIND = "geoprobe.test-base"
    FILE = "base.json"
    PAGE = "base.html"
    name: str = "x"


@dataclass(frozen=True, eq=False)
class _Child(_Base):
    pass


@dataclass(frozen=True, eq=False)
class _Unregistered(Result, Page):
    KIND = "geoprobe.test-none"
    FILE = "none.json"
    name: str = "y"


def test_a_registered_page_renders_and_a_subclass_inherits_it():
    register_page(
        _Base,
        title=lambda r: f"page of {r.name} <b>",
        subtitle=lambda r: "sub",
        sections=lambda r: [Section("Body", "<p>ok</p>")],
        figures=lambda r: [Figure("f", "c", None)],
        summary_html=lambda r: "<p>summary</p>",
    )
    html = render(_Child(name="child"))
    assert "<h1>page of child &lt;b&gt;</h1>" in html and "<h2>Body</h2>" in html and ">sub</p>" in html
    assert [f.anchor for f in _Child().figures()] == ["f"] and _Child()._repr_html_() == "<p>summary</p>"


def test_a_result_without_a_page_says_so():
    r = _Unregistered()
    assert page_content(r) is None and r.figures() == [] and r.subtitle() == "" and r._repr_html_() is None
    with pytest.raises(LookupError, match="no page is registered for _Unregistered"):
        r.title()


def test_the_provenance_section_shows_a_partial_load_and_nothing_for_a_whole_one():
    from geoprobe.provenance import PartialWeights
    from geoprobe.report.page import provenance_section

    prov = {"model_id": "ck/step8", "source": "local", "weights": "sha256:0"}
    whole = provenance_section(prov).render()
    assert "partial" not in whole.lower()
    pw = PartialWeights.of(["gpt_neox.layers.0.attention.dense.weight"], ["foo.x"], [])
    html = provenance_section({**prov, "partial_weights": pw.to_dict()}).render()
    assert "Partial load: the weights did not match the model&#x27;s config.json and were loaded with " in html
    assert "--allow-partial-weights: 1 tensor missing (gpt_neox.layers.0.attention.dense.weight), 1 unexpected" in html
    assert "<th>partial_weights</th>" in html and "{" not in html  # a sentence, not the stored dict
