"""Training: seeded and resumable, checkpoints safe to load, bad runs stopped with one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from geoprobe.windtunnel import train as train_mod
from geoprobe.windtunnel.scales import run_specs
from geoprobe.windtunnel.train import (
    RunSpec,
    TrainConfig,
    TrainingError,
    checkpoint_dir,
    list_checkpoints,
    load_weights,
    train,
)


def _spec(arch="transformer", steps=12, task="bijection", **kw):
    tf, ml = run_specs(task, "tiny", steps=steps)
    spec = tf if arch == "transformer" else ml
    return RunSpec(**{**spec.__dict__, "train": replace(spec.train, n_checkpoints=4, **kw)})


def _state(run, spec):
    steps = list_checkpoints(run)
    return load_weights(spec, checkpoint_dir(run, steps[-1])).state_dict()


def test_checkpoint_steps_are_log_spaced():
    cfg = TrainConfig(steps=1000, batch_size=1, lr=1e-3, warmup=1, n_checkpoints=8)
    s = cfg.checkpoint_steps()
    assert s[0] == 0 and s[-1] == 1000 and list(s) == sorted(set(s))
    gaps = [b - a for a, b in zip(s[1:], s[2:])]
    assert gaps == sorted(gaps)  # growing gaps


def test_lr_schedule_warms_up_then_decays():
    cfg = TrainConfig(steps=100, batch_size=1, lr=1e-3, warmup=10)
    f = [cfg.lr_factor(s) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert f[50] < f[20] and f[99] < 0.01


@pytest.mark.parametrize("arch", ["transformer", "mlp"])
def test_loss_falls_and_resume_reproduces_an_uninterrupted_run(tmp_path, arch):
    spec = _spec(arch, steps=30)
    train(spec, tmp_path / "full")
    losses = torch.load(checkpoint_dir(tmp_path / "full", 30) / "trainer.pt", weights_only=True)["losses"]
    assert losses[-5:].mean() < losses[:5].mean()

    class Stop(Exception):
        pass

    def interrupt(step, total, loss):
        if step == 17:
            raise Stop

    with pytest.raises(Stop):
        train(spec, tmp_path / "cut", progress=interrupt)
    cut_at = list_checkpoints(tmp_path / "cut")[-1]
    assert 0 < cut_at < 17
    rep = train(spec, tmp_path / "cut")
    assert rep.resumed_from == cut_at
    a, b = _state(tmp_path / "full", spec), _state(tmp_path / "cut", spec)
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)


def test_checkpoint_of_another_config_is_refused(tmp_path):
    spec = _spec(steps=4)
    train(spec, tmp_path / "run")
    other = RunSpec(**{**spec.__dict__, "task": {**spec.task, "V": 7}})
    with pytest.raises(TrainingError, match="another task or config") as e:
        train(other, tmp_path / "run")
    assert "'V': 7" in str(e.value) or "V" in str(e.value)
    with pytest.raises(TrainingError, match="another task or config"):
        load_weights(other, checkpoint_dir(tmp_path / "run", 4))
    hmm = _spec(task="hmm", steps=4)
    with pytest.raises(TrainingError, match="hmm"):
        load_weights(hmm, checkpoint_dir(tmp_path / "run", 4))
    longer = RunSpec(**{**spec.__dict__, "train": replace(spec.train, steps=8)})
    with pytest.raises(TrainingError, match="--steps 4"):
        train(longer, tmp_path / "run")


def test_no_resume_refuses_existing_checkpoints(tmp_path):
    spec = _spec(steps=3)
    train(spec, tmp_path / "run")
    with pytest.raises(TrainingError, match="already has checkpoints"):
        train(spec, tmp_path / "run", resume=False)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    spec = _spec(steps=12)
    real = train_mod.loss_fn
    calls = {"n": 0}

    def flaky(*a, **k):
        calls["n"] += 1
        loss = real(*a, **k)
        return loss * float("nan") if calls["n"] == 7 else loss

    monkeypatch.setattr(train_mod, "loss_fn", flaky)
    with pytest.raises(TrainingError) as e:
        train(spec, tmp_path / "run")
    good = list_checkpoints(tmp_path / "run")
    msg = str(e.value)
    assert "nan" in msg and "step 7" in msg and f"checkpoint is step {good[-1]}" in msg and "--lr" in msg
    assert good[-1] < 7
    load_weights(spec, checkpoint_dir(tmp_path / "run", good[-1]))  # still loadable


def test_run_json_names_the_spec(tmp_path):
    spec = _spec(steps=2)
    train(spec, tmp_path / "run")
    d = json.loads((tmp_path / "run" / "run.json").read_text())
    assert d["kind"] == "geoprobe.windtunnel.run" and d["arch"] == "transformer" and d["task"]["name"] == "bijection"
    ck = checkpoint_dir(tmp_path / "run", 2)
    assert (ck / "model.safetensors").exists() and (ck / "tokenizer.json").exists()
    assert not list(ck.glob("*.bin"))


@pytest.mark.parametrize("arch", ["transformer", "mlp"])
@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_checkpoint_files_follow_the_umask(tmp_path, arch, umask, file_mode, dir_mode):
    """Every file of a checkpoint (model.safetensors was 0600, its directory 0700) gets the mode a
    plain open()/mkdir() gives under the umask."""
    import os
    import stat

    old = os.umask(umask)
    try:
        train(_spec(arch, steps=2), tmp_path / "run")
    finally:
        os.umask(old)
    ckpts = [checkpoint_dir(tmp_path / "run", s) for s in list_checkpoints(tmp_path / "run")]
    assert ckpts and (ckpts[-1] / "model.safetensors").exists()
    for ck in ckpts:
        for p in [ck, *ck.rglob("*")]:
            want = dir_mode if p.is_dir() else file_mode
            assert stat.S_IMODE(p.stat().st_mode) == want, (str(p), oct(p.stat().st_mode))


def _damage(path, how):
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if how == "truncated" else raw[:8] + b"{not json" + raw[17:])


@pytest.mark.parametrize("arch", ["transformer", "mlp"])
@pytest.mark.parametrize("how", ["truncated", "garbled"])
def test_a_damaged_checkpoint_names_its_file(tmp_path, arch, how):
    spec = _spec(arch, steps=2)
    run = tmp_path / "run"
    train(spec, run)
    last = checkpoint_dir(run, list_checkpoints(run)[-1])
    weights = last / "model.safetensors"
    _damage(weights, how)
    for call in (lambda: load_weights(spec, last), lambda: train(replace(spec), run)):
        with pytest.raises(TrainingError) as e:
            call()
        msg = str(e.value)
        assert msg.startswith(f"checkpoint file {str(weights)!r} is damaged (Error while deserializing header")
        assert f"delete {str(last)!r} to resume" in msg and "\n" not in msg
    import shutil

    shutil.rmtree(last)  # the fix the message gives: training resumes from the checkpoint before
    before = list_checkpoints(run)[-1]
    assert train(spec, run).resumed_from == before
    load_weights(spec, last)  # rewritten whole


def test_a_damaged_trainer_state_names_its_file(tmp_path):
    spec = _spec(steps=2)
    run = tmp_path / "run"
    train(spec, run)
    last = checkpoint_dir(run, list_checkpoints(run)[-1])
    _damage(last / "trainer.pt", "truncated")
    with pytest.raises(TrainingError, match=r"checkpoint file '.*trainer\.pt' is damaged \(\w+\); delete"):
        train(spec, run)


def test_a_checkpoint_directory_holding_foreign_files_is_never_replaced(tmp_path):
    """Was: save_checkpoint removed an existing step directory whole, whatever it held."""
    from geoprobe.errors import OutputExistsError

    run = tmp_path / "run"
    step0 = checkpoint_dir(run, 0)
    step0.mkdir(parents=True)
    (step0 / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="notes.txt"):
        train(_spec("mlp", steps=2), run)
    assert (step0 / "notes.txt").read_text() == "mine"
    assert not list(step0.parent.glob(".tmp-*"))  # the checkpoint being written was cleaned up


def test_a_checkpoint_left_half_written_by_geoprobe_is_replaced(tmp_path):
    run = tmp_path / "run"
    step0 = checkpoint_dir(run, 0)
    step0.mkdir(parents=True)
    spec = _spec("mlp", steps=2)
    (step0 / "spec.json").write_text(json.dumps({**spec.to_json(), "notes": ["stale"]}))  # its own file, no DONE
    train(spec, run)
    assert (step0 / "DONE").exists() and json.loads((step0 / "spec.json").read_text())["notes"] != ["stale"]


#: each case's soft RLIMIT_FSIZE set in turn in one fresh process (the import of torch and transformers, the
#: costly part of a process, once); the hard limit stays above them, so each case can lift it again afterwards
_TRAIN_LIMITED = """
import json, os, resource
from dataclasses import replace
from pathlib import Path
from geoprobe.errors import OutputWriteError
from geoprobe.windtunnel.scales import run_specs
from geoprobe.windtunnel.train import RunSpec, list_checkpoints, train

hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
home = os.getcwd()
for arch, limit in {cases!r}:
    where = os.path.join(home, f"{{arch}}-{{limit}}")
    os.mkdir(where)
    os.chdir(where)
    tf, ml = run_specs("bijection", "tiny", steps=12)
    spec = tf if arch == "transformer" else ml
    spec = RunSpec(**{{**spec.__dict__, "train": replace(spec.train, n_checkpoints=4)}})
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        train(spec, "run")
        found = "trained"
    except OutputWriteError as exc:
        found = [str(exc), list_checkpoints(Path("run")), sorted(os.listdir("run/checkpoints"))]
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    print(json.dumps([arch, limit, found]))
"""

_LIMITED_CASES = [
    ("transformer", 64 * 1024, 0, []),  # model.safetensors (86 kB) through save_pretrained
    ("mlp", 64 * 1024, 0, []),  # model.safetensors through safetensors' save_model
    ("transformer", 128 * 1024, 1, [0]),  # trainer.pt (186 kB; 2 kB at step 0) through torch.save
]


@pytest.fixture(scope="module")
def limited_runs(tmp_path_factory):
    """{(arch, limit): what training under that file-size limit ended with}, all cases in one subprocess."""
    from tests.full_disk import run_limited

    cases = [(arch, limit) for arch, limit, _, _ in _LIMITED_CASES]
    r = run_limited(_TRAIN_LIMITED.format(cases=cases), 2**40, tmp_path_factory.mktemp("limited"))
    assert r.returncode == 0, r.stderr[-3000:]
    found = {}
    for line in r.stdout.strip().splitlines():
        if line.startswith("["):
            arch, limit, what = json.loads(line)
            found[arch, limit] = what
    assert sorted(found) == sorted(cases), r.stdout[-3000:]
    return found


@pytest.mark.parametrize("arch, limit, failing, kept", _LIMITED_CASES)
def test_a_checkpoint_past_the_file_size_limit_is_one_line_and_keeps_the_earlier_ones(
    limited_runs, arch, limit, failing, kept
):
    """Was: "unexpected SafetensorError: … File too large (os error 27)" (or torch's "unexpected pos")
    and a half-written .tmp-* directory left among the checkpoints."""
    message, steps, entries = limited_runs[arch, limit]
    step = f"run/checkpoints/step-{failing:07d}"
    assert message == (
        f"could not write '{step}': File too large (EFBIG); free some space or choose another --out; "
        "rerunning the same command then finishes what is missing"
    )
    assert steps == kept and entries == [f"step-{s:07d}" for s in kept]  # no temporary directory left
