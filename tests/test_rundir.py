"""geoprobe.rundir: a run directory is claimed before any work; a run stopped between its writes is
finished only for the very same request and results file; foreign outputs are refused under --force."""

import json

import pytest

from geoprobe.errors import ForeignOutputError, OutputExistsError, OutputLocationError
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


def test_a_command_that_writes_into_the_run_it_reads_offers_force_alone(tmp_path):
    """windtunnel eval has no --out: its refusal must not tell the user to choose one (it did)."""
    _finished(tmp_path)
    for in_place, tail in ((True, "pass --force to replace this run"), (False, "or choose another --out")):
        with pytest.raises(OutputExistsError) as e:
            with claim_run(tmp_path, OUT, request=REQ, force=False, in_place=in_place):
                pass
        assert str(e.value).endswith(tail) and ("--out" in str(e.value)) is not in_place


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


# ---------------------------------------------------------------- issue 27: one command's run, of its own kind

SCAN_OUT = RunOutputs(result="x.json", page="x.html", data={"capture": check_capture_dir}, kind="geoprobe.scan")


@pytest.mark.parametrize(
    "plant, match",
    [
        (
            lambda d: (d / "x.json").write_text('{"kind": "geoprobe.sula"}'),
            "is a sula results file that geoprobe wrote",
        ),
        (
            lambda d: (d / "x.html").write_text('{"kind": "geoprobe.scan"}'),
            "x.html' already exists and was not written",
        ),
    ],
)
def test_force_replaces_results_only_of_the_command_own_kind(tmp_path, plant, match):
    _finished(tmp_path)
    plant(tmp_path)
    with pytest.raises(ForeignOutputError, match=match):
        with claim_run(tmp_path, SCAN_OUT, request=REQ, force=True):
            pass
    if (tmp_path / "x.html").read_text().startswith("<html>"):  # x.json planted as sula results:
        with claim_run(
            tmp_path, RunOutputs(result="x.json", page="x.html", kind="geoprobe.sula"), request=REQ, force=True
        ):
            pass  # ... which a command writing sula results may replace


def test_a_run_of_another_command_or_inside_another_run_is_refused_with_force(tmp_path):
    _finished(tmp_path / "run")
    other = RunOutputs(result="sula.json", page="sula.html")
    with pytest.raises(OutputLocationError, match=r"another command \(its results: x.json; this command writes sula"):
        with claim_run(tmp_path / "run", other, request=REQ, force=True):
            pass
    for inner in ("capture", "sub"):
        with pytest.raises(OutputLocationError, match="lies inside '.*run', a run directory of geoprobe's"):
            with claim_run(tmp_path / "run" / inner, other, request=REQ, force=True):
                pass
    with claim_run(tmp_path / "run" / "seed-0", other, request=REQ, force=False, parent=tmp_path / "run") as run:
        assert not run.finishing  # a run declared part of the other: the seeds of windtunnel run --seeds
    assert not (tmp_path / "run" / "seed-0").exists()


def test_a_results_file_is_saved_only_over_its_own_kind(tmp_path):
    """Result.save, the Python API: results only over results of the same kind (issue 27)."""
    from geoprobe.dynamics.result import DynamicsResult

    p = tmp_path / "dynamics.json"
    p.write_text(json.dumps({"kind": "geoprobe.scan", "version": 1}))
    result = DynamicsResult.__new__(DynamicsResult)  # save checks the file before it serialises anything
    with pytest.raises(ForeignOutputError, match="is a scan results file that geoprobe wrote, not a dynamics results"):
        result.save(p)
    assert json.loads(p.read_text())["kind"] == "geoprobe.scan"
