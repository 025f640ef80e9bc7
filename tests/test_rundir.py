"""geoprobe.rundir: a run directory is claimed before any work; a run stopped between its writes is
finished only for the very same request and results file; foreign outputs are refused under --force."""

import json

import pytest

from geoprobe.errors import ForeignOutputError, OutputExistsError
from geoprobe.outputs import GENERATOR_META
from geoprobe.rundir import RECORD, Run, RunOutputs, check_capture_dir, claim_run

OUT = RunOutputs(result="x.json", page="x.html", data={"capture": check_capture_dir}, partial="capture.partial")
REQ = {"command": "scan", "config": {"seed": 0, "layers": (0, 1)}}


def _finished(d, request=REQ, page=True):
    """A run directory as a finished run leaves it: data, JSON (+ its record), page."""
    (d / "capture").mkdir(parents=True)
    (d / "capture" / "capture.json").write_text(json.dumps({"kind": "geoprobe.capture"}))
    (d / "capture" / "arrays.safetensors").write_text("x")
    (d / "x.json").write_text(json.dumps({"kind": "geoprobe.scan", "n": 1}))
    Run(dir=d, outputs=OUT, request=request).record()
    if page:
        (d / "x.html").write_text(f"<html><head>{GENERATOR_META}</head></html>")


def test_a_fresh_directory_is_claimed_and_nothing_is_written(tmp_path):
    with claim_run(tmp_path / "run", OUT, request=REQ, force=False) as run:
        assert not run.finishing
    assert not (tmp_path / "run").exists()


def test_a_finished_run_is_refused_without_force_and_claimed_with_it(tmp_path):
    _finished(tmp_path)
    with pytest.raises(OutputExistsError, match="x.json' already exists; pass --force"):
        with claim_run(tmp_path, OUT, request=REQ, force=False):
            pass
    with claim_run(tmp_path, OUT, request=REQ, force=True) as run:
        assert not run.finishing


def test_a_run_missing_its_page_is_finished_for_the_same_request_only(tmp_path):
    _finished(tmp_path, page=False)
    with claim_run(tmp_path, OUT, request={**REQ, "config": {"seed": 0, "layers": [0, 1]}}, force=False) as run:
        assert run.finishing and run.missing == ("x.html",)  # tuples and lists compare as JSON does
    with pytest.raises(OutputExistsError, match="made with other settings than these"):
        with claim_run(tmp_path, OUT, request={**REQ, "config": {"seed": 1}}, force=False):
            pass


def test_a_record_of_another_results_file_finishes_nothing(tmp_path):
    _finished(tmp_path, page=False)
    (tmp_path / "x.json").write_text(json.dumps({"kind": "geoprobe.scan", "n": 2}))  # replaced after the record
    with pytest.raises(OutputExistsError, match="already exists; pass --force"):
        with claim_run(tmp_path, OUT, request=REQ, force=False):
            pass
    (tmp_path / RECORD).unlink()
    with pytest.raises(OutputExistsError):
        with claim_run(tmp_path, OUT, request=REQ, force=False):
            pass


def test_missing_figures_make_a_run_finishable(tmp_path):
    _finished(tmp_path)
    with claim_run(tmp_path, OUT, request=REQ, force=False, figures="svg") as run:
        assert run.finishing and run.missing == ("figures/*.svg",)


@pytest.mark.parametrize(
    "plant, match",
    [
        (lambda d: (d / "x.html").write_text("<html>my own page</html>"), "x.html' already exists and was not written"),
        (lambda d: (d / "x.json").write_text('{"kind": "mine"}'), "was not written by geoprobe"),
        (lambda d: (d / "capture" / "notes.txt").write_text("mine"), "'notes.txt', which geoprobe did not write"),
        (
            lambda d: ((d / "figures").mkdir(), (d / "figures" / "a.svg").write_text("<svg/>")),
            "a figure file it did not",
        ),
    ],
)
def test_foreign_outputs_are_refused_even_with_force(tmp_path, plant, match):
    _finished(tmp_path)
    plant(tmp_path)
    with pytest.raises(ForeignOutputError, match=match):
        with claim_run(tmp_path, OUT, request=REQ, force=True, figures="svg"):
            pass


def test_data_without_results_is_kept_unless_the_run_resumes(tmp_path):
    _finished(tmp_path)
    (tmp_path / "x.json").unlink()
    (tmp_path / "x.html").unlink()
    with pytest.raises(OutputExistsError, match="capture' already exists"):
        with claim_run(tmp_path, OUT, request=REQ, force=False):
            pass
    (tmp_path / "capture.partial").mkdir()  # a scan killed between saving capture/ and results.json
    with claim_run(tmp_path, OUT, request=REQ, force=False) as run:
        assert not run.finishing
