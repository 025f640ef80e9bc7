"""train_trajectory: the schedule's checkpoints load through geoprobe and capture; the same seed gives
the same weights; a resumed run ends bit for bit where an uninterrupted one does; the loss falls on
planted learnable data; what it refuses."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

import geoprobe
from geoprobe.trajectory import TrajectoryError, TrajectoryResult, step_of, train_trajectory
from geoprobe.trajectory.data import prepare
from geoprobe.trajectory.store import file_sha256
from tests.trajectory.conftest import planted_documents, tiny


def test_checkpoints_are_on_the_schedule_and_load_and_capture_through_geoprobe(trained):
    result, out = trained
    assert result.steps == (0, 1, 2, 4, 8, 9)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == sorted(f"step{s}" for s in result.steps)
    for c in result.checkpoints:
        d = out / c.path
        assert file_sha256(d / "model.safetensors") == c.sha256 and step_of(d) == c.step
        assert c.tokens == c.step * 4 * 16
    for step in (0, 9):
        m = geoprobe.load_model(str(result.directory(step, out)))
        assert m.layout.n_layers == 2 and m.hf_model.config.model_type == "gpt_neox"
        cap = geoprobe.capture(m, ["w01 w10 w13 w02", "w05 w18"])
        assert cap.values.shape[:2] == (2, 2) and np.isfinite(cap.values).all()
    # optimiser state lives in resume/, never in a published directory
    assert not any(p.suffix == ".pt" for p in (out / "checkpoints").rglob("*"))
    assert (out / "resume" / "trainer.pt").is_file()


def test_manifest_is_trajectory_json_and_reads_back(trained):
    result, out = trained
    back = TrajectoryResult.load(out)
    assert back == result
    d = json.loads((out / "trajectory.json").read_text())
    assert d["kind"] == "geoprobe.trajectory" and [c["step"] for c in d["checkpoints"]] == [0, 1, 2, 4, 8, 9]
    assert d["provenance"]["seed"] == 0 and d["provenance"]["versions"]["torch"]
    assert d["data"]["tokens_sha256"] and d["config"]["steps"] == 9
    assert result.checkpoint("step8").step == 8 and result.final.step == 9


def test_same_seed_same_weights_other_seed_other_weights(trained, tmp_path):
    result, _ = trained
    again = train_trajectory(tiny(steps=9), out=tmp_path / "a", documents=planted_documents(), threads=1)
    assert [c.sha256 for c in again.checkpoints] == [c.sha256 for c in result.checkpoints]
    assert again.losses == result.losses
    other = train_trajectory(tiny(steps=2, seed=1), out=tmp_path / "b", documents=planted_documents(), threads=1)
    assert other.checkpoints[0].sha256 != result.checkpoints[0].sha256


def test_interrupted_run_resumes_to_the_uninterrupted_weights_bit_for_bit(trained, tmp_path):
    result, _ = trained
    out = tmp_path / "resumed"

    def stop_at_6(stage, done, total):
        if stage == "training" and done == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_trajectory(tiny(steps=9), out=out, documents=planted_documents(), threads=1, progress=stop_at_6)
    assert not (out / "trajectory.json").exists()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step0", "step1", "step2", "step4"]
    resumed = train_trajectory(tiny(steps=9), out=out, documents=planted_documents(), threads=1)
    assert resumed.resumed_from == 4 and resumed.provenance["sessions"] == [[0, 1], [4, 1]]
    assert [c.sha256 for c in resumed.checkpoints] == [c.sha256 for c in result.checkpoints]
    assert resumed.losses == result.losses  # 0 tolerance: the same float64s
    for c in result.checkpoints:  # every published file is the same, tokenizer and config included
        for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            assert (out / c.path / f).read_bytes() == (trained[1] / c.path / f).read_bytes()
    done = train_trajectory(tiny(steps=9), out=out, documents=planted_documents(), threads=1)
    assert done.resumed_from == 9 and done.losses == result.losses  # a finished run: nothing to train


def test_loss_falls_on_planted_learnable_data(tmp_path):
    """The planted chain makes each word a function of the one before: the held-out loss falls from about
    ln V (an untrained model) to well below the tokens' unigram entropy, which a model can beat only by
    using the context."""
    config = tiny(steps=100, lr=1e-2)
    docs = planted_documents()
    r = train_trajectory(config, out=tmp_path, documents=docs, threads=1)
    ids = prepare(config, docs).train
    p = np.bincount(ids) / ids.size
    unigram = float(-(p[p > 0] * np.log(p[p > 0])).sum())
    first, last = r.checkpoints[0], r.final
    assert abs(first.eval_loss - math.log(r.model.vocab_size)) < 0.6
    assert last.eval_loss < 0.5 * unigram < first.eval_loss
    assert last.train_loss < 0.5 * unigram
    evals = [c.eval_loss for c in r.checkpoints]
    assert evals[-1] < evals[len(evals) // 2] < evals[0]


def test_other_settings_in_the_same_directory_are_refused_naming_them(trained, tmp_path):
    _, out = trained
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with pytest.raises(TrajectoryError) as exc:
        train_trajectory(tiny(steps=9, seed=3, lr=2e-3), out=copy, documents=planted_documents())
    assert "pass --lr 0.001 --seed 0 to resume it" in str(exc.value)
    half = tmp_path / "half"

    def stop_at_3(stage, done, total):
        if stage == "training" and done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_trajectory(tiny(steps=9), out=half, documents=planted_documents(), progress=stop_at_3)
    with pytest.raises(TrajectoryError, match="the training data differ from those .* was trained on"):
        train_trajectory(tiny(steps=9), out=half, documents=planted_documents(seed=5))


def test_damaged_checkpoint_or_missing_resume_state_is_refused(trained, tmp_path):
    _, out = trained
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    weights = copy / "checkpoints" / "step9" / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(TrajectoryError, match="its sha256 is not the one recorded"):
        train_trajectory(tiny(steps=9), out=copy, documents=planted_documents())
    shutil.rmtree(copy / "resume")
    with pytest.raises(TrajectoryError, match="holds checkpoints but .* no resume state"):
        train_trajectory(tiny(steps=9), out=copy, documents=planted_documents())
    (copy / "checkpoints" / "notes.txt").write_text("mine")
    with pytest.raises(geoprobe.GeoprobeError, match="'notes.txt', which geoprobe did not write"):
        train_trajectory(tiny(steps=9), out=copy, documents=planted_documents())
