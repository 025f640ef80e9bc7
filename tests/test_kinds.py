"""geoprobe.kinds: every kind of file and directory geoprobe writes is recognised by its marker, and
nothing else is (issue 27: --force replaces only a file of the same kind)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from geoprobe.kinds import (
    CAPTURE_KIND,
    CHECKPOINT_KIND,
    DIRECTORY_MARKERS,
    FIGURES_KIND,
    GENERATOR_META,
    LEARNER_KIND,
    PAGE_KIND,
    PROMPTS_KIND,
    RECORD,
    RECORD_KIND,
    describe_file,
    directory_kind,
    file_kind,
)

FIXTURE = Path(__file__).parent / "fixtures" / "v0_1_0"
PAGE = f"<!DOCTYPE html>\n<html><head>{GENERATOR_META}<title>x</title></head></html>\n"


@pytest.mark.parametrize(
    "name, text, kind",
    [
        ("report.html", PAGE, PAGE_KIND),
        ("REPORT.HTML", PAGE, PAGE_KIND),
        ("page.htm", PAGE, PAGE_KIND),
        ("old.html", "<html><head><title>geoprobe scan</title></head></html>", PAGE_KIND),  # a 0.1.0 page
        ("mine.html", "<html><body>my notes</body></html>", None),
        ("p.jsonl", '{"set": "mixed", "prompt": "a"}\n{"set": "mixed", "prompt": "b"}\n', PROMPTS_KIND),
        ("p.jsonl", '{"prompt": "a"}\n', None),  # a user's prompt file: no set
        ("results.json", '{"kind": "geoprobe.scan", "version": 1}', "geoprobe.scan"),
        ("sula.json", '{"kind": "geoprobe.sula", "version": 1}', "geoprobe.sula"),
        (RECORD, json.dumps({"kind": RECORD_KIND, "result": "results.json"}), RECORD_KIND),
        ("data.json", '{"kind": "mine"}', None),
        ("list.json", "[1, 2]", None),
        ("broken.json", '{"kind": "geoprobe.scan"', None),
        ("results.txt", '{"kind": "geoprobe.scan"}', None),  # the marker counts only under its suffix
        ("page.json", PAGE, None),  # a page under a results name is no results file
    ],
)
def test_a_file_is_the_kind_its_suffix_and_marker_say(tmp_path, name, text, kind):
    (tmp_path / name).write_text(text, encoding="utf-8")
    assert file_kind(tmp_path / name) == kind


def test_capture_json_of_0_1_0_is_capture_metadata_and_its_directory_a_capture():
    assert file_kind(FIXTURE / "capture" / "capture.json") == CAPTURE_KIND
    found = directory_kind(FIXTURE / "capture")
    assert found is not None and found.kind == CAPTURE_KIND and not found.is_run


def test_links_directories_and_missing_files_are_of_no_kind(tmp_path):
    (tmp_path / "real.html").write_text(PAGE)
    os.symlink(tmp_path / "real.html", tmp_path / "link.html")
    (tmp_path / "dir.json").mkdir()
    assert file_kind(tmp_path / "link.html") is None  # replacing a link would write where it points
    assert file_kind(tmp_path / "dir.json") is None
    assert file_kind(tmp_path / "missing.json") is None


@pytest.mark.parametrize("marker, kind, words", DIRECTORY_MARKERS)
def test_each_directory_kind_is_found_by_its_marker_of_that_kind(tmp_path, marker, kind, words):
    d = tmp_path / "d"
    d.mkdir()
    (d / marker).write_text(json.dumps({"kind": "geoprobe.sula"}))  # the marker's name with another kind
    assert directory_kind(d) is None
    (d / marker).write_text(json.dumps({"kind": kind, "result": "sula.json"}))
    found = directory_kind(d)
    assert found is not None and (found.kind, found.words) == (kind, words) and found.marker == d / marker
    assert found.is_run == (kind == RECORD_KIND)
    assert found.result == ("sula.json" if kind == RECORD_KIND else None)
    assert words in found.describe()


def test_a_scan_run_of_0_1_0_is_a_run_directory_by_its_results(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE / "capture", run / "capture")
    shutil.copy(FIXTURE / "results.json", run / "results.json")
    found = directory_kind(run)
    assert found is not None and found.is_run and found.result == "results.json"
    assert directory_kind(tmp_path) is None  # above it: nothing of geoprobe's


def test_the_marker_names_are_the_files_their_writers_write():
    from geoprobe.capture import checkpoint
    from geoprobe.outputs import CAPTURE_FILES
    from geoprobe.report import export
    from geoprobe.windtunnel.train import RUN_DIR_FILES

    markers = {k: m for m, k, _ in DIRECTORY_MARKERS}
    assert markers[CHECKPOINT_KIND] == checkpoint.MANIFEST
    assert markers[CAPTURE_KIND] == CAPTURE_FILES[0]
    assert markers[LEARNER_KIND] == RUN_DIR_FILES[0]
    assert markers[FIGURES_KIND] == export.FIGURES_MANIFEST


def test_kinds_in_words():
    assert describe_file(PAGE_KIND) == "an HTML page"
    assert describe_file("geoprobe.sula") == "a sula results file"
    assert describe_file(None) == "a file"
