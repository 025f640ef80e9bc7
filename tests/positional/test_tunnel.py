"""Wind-tunnel error vs sequence length on a tiny trained HMM tunnel (function and CLI)."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_hmm(tmp_path_factory):
    from geoprobe.windtunnel.scales import run_specs
    from geoprobe.windtunnel.train import train

    tf, _ = run_specs("hmm", "tiny", steps=10)
    run = tmp_path_factory.mktemp("wt") / "hmm"
    train(tf, run / "transformer")
    return run


def test_length_curve_matches_the_windtunnel_evaluation(tiny_hmm, tmp_path):
    from geoprobe.positional.run import load_positional
    from geoprobe.positional.tunnel import tunnel_length_curve
    from geoprobe.windtunnel.evaluate import eval_batch, model_predictive
    from geoprobe.windtunnel.train import checkpoint_dir, load_weights, read_spec

    curve = tunnel_length_curve(tiny_hmm, (6, 9, 12), n_eval=32, n_resamples=50)
    assert curve.lengths == (6, 9, 12) and curve.train_K == 6
    assert all(np.isfinite(m.mae_sample.value) and m.kl.value >= 0 for m in curve.metrics)
    # independent: the windtunnel's own evaluation at K = 12
    spec = read_spec(tiny_hmm / "transformer")
    model = load_weights(spec, checkpoint_dir(tiny_hmm / "transformer", 10))
    t12 = spec.task_obj.with_length(12)
    batch = eval_batch(t12, 32, spec.train.seed)
    probs, mass = model_predictive(model, batch, t12.answer_ids)
    t, q = batch.targets, probs  # KL(Bayes ‖ model) and entropies in bits, written out here
    kl = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - np.log(q)), 0).sum(-1).mean() / np.log(2)
    ent = lambda p: -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(-1) / np.log(2)  # noqa: E731
    assert curve.metrics[-1].kl.value == pytest.approx(kl, rel=1e-6)
    assert curve.metrics[-1].mae_sample.value == pytest.approx(np.abs(ent(q) - ent(t)).mean(), rel=1e-6)
    back = load_positional(curve.save(tmp_path / "positional.json"))
    assert back == curve


def test_length_curve_through_the_cli(tiny_hmm, tmp_path, capsys, monkeypatch):
    from tests.positional.test_cli import run_cli

    code, out, err = run_cli(
        [
            "positional",
            "--windtunnel",
            str(tiny_hmm),
            "--lengths",
            "6,9",
            "--n-eval",
            "16",
            "--n-resamples",
            "20",
            "--out",
            str(tmp_path),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert (tmp_path / "positional.json").exists() and (tmp_path / "positional.html").exists()
    assert "critical length" in out
    code, _, err = run_cli(
        ["positional", "--windtunnel", str(tiny_hmm), "--lengths", "6,6", "--out", str(tmp_path / "x")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "increasing" in err and len(err.strip().splitlines()) == 1


def test_by_default_the_curve_goes_beside_the_run_never_into_it(tiny_hmm, tmp_path, capsys, monkeypatch):
    """A run directory holds one command's run: positional --windtunnel once wrote positional.json into
    the wind tunnel's run directory and replaced its run record (issue 27)."""
    import json
    import shutil

    from geoprobe.kinds import RECORD, RECORD_KIND
    from tests.positional.test_cli import run_cli

    run = tmp_path / "hmm"
    shutil.copytree(tiny_hmm, run)
    record = json.dumps({"kind": RECORD_KIND, "version": 1, "result": "windtunnel.json", "request": {}})
    (run / RECORD).write_text(record)
    before = sorted(p.name for p in run.iterdir())
    code, _, err = run_cli(
        ["positional", "--windtunnel", str(run), "--lengths", "6,9", "--n-eval", "16", "--n-resamples", "20"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert (tmp_path / "hmm-positional" / "positional.json").exists()
    assert sorted(p.name for p in run.iterdir()) == before and (run / RECORD).read_text() == record
