"""Train, evaluate and probe one wind tunnel: ``OUT/transformer``, ``OUT/mlp``, ``OUT/windtunnel.json``."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from geoprobe.checks import bool_arg, name_arg
from geoprobe.paths import atomic_write_text
from geoprobe.provenance import package_versions, prompts_hash
from geoprobe.windtunnel.config import ArchChoice, check_arch
from geoprobe.windtunnel.evaluate import EVAL_SEED_OFFSET, ablations, eval_batch, metrics, model_predictive
from geoprobe.windtunnel.geometry import probe_prompts, training_geometry
from geoprobe.windtunnel.invariance import tunnel_invariance
from geoprobe.windtunnel.query import query_score
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.scales import SCALES, eval_lengths, run_specs, scale_spec
from geoprobe.windtunnel.train import (
    RunSpec,
    TrainingError,
    check_resumable,
    checkpoint_dir,
    list_checkpoints,
    load_weights,
    n_params,
    read_log,
    read_spec,
    train,
)

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def train_tunnel(
    task: str,
    scale: str,
    out: Path,
    *,
    arch: ArchChoice = "both",
    seed: int = 0,
    steps: int | None = None,
    resume: bool = True,
    threads: int | None = None,
    task_params: dict[str, Any] | None = None,
    device: str = "cpu",
    progress: Progress | None = None,
    convention: str = "geoprobe",
) -> dict[str, Any]:
    """Train the transformer and/or its capacity-matched MLP into ``out/<arch>`` (``convention``:
    geoprobe's task or the authors' exact one, geoprobe/windtunnel/authors.py)."""
    task = name_arg(task, "task", "a task name such as 'bijection' or 'hmm'")
    scale = name_arg(scale, "scale", "a scale such as 'tiny', 'small', 'cpu' or 'paper'")
    out = Path(name_arg(out, "out", "the run directory to train into"))
    resume = bool_arg(resume, "resume")
    check_arch(arch)
    tf, ml = run_specs(task, scale, seed=seed, steps=steps, task_params=task_params, convention=convention)
    if threads:
        tf = replace(tf, train=replace(tf.train, threads=threads))
        ml = replace(ml, train=replace(ml.train, threads=threads))
    out = Path(out)
    reports = {}
    for spec in (tf, ml):
        if arch not in ("both", spec.arch):
            continue
        stage = f"train {spec.arch}"
        cb = (lambda s, n, loss, _st=stage: progress(_st, s, n)) if progress else None
        rep = train(spec, out / spec.arch, resume=resume, device=device, progress=cb)
        reports[spec.arch] = _log_session(out / spec.arch / "train_log.json", rep, spec)
    return reports


def check_tunnel(
    task: str,
    scale: str,
    out: Path,
    *,
    arch: ArchChoice = "both",
    seed: int = 0,
    steps: int | None = None,
    task_params: dict[str, Any] | None = None,
    convention: str = "geoprobe",
) -> None:
    """Before any work: every learner already trained in ``out`` resumes with these settings
    (:func:`geoprobe.windtunnel.train.check_resumable`), else the one-line error that names the fix."""
    check_arch(arch)
    for spec in run_specs(task, scale, seed=seed, steps=steps, task_params=task_params, convention=convention):
        if arch in ("both", spec.arch):
            check_resumable(Path(out) / spec.arch, spec)


def _log_session(path: Path, rep: Any, spec: RunSpec) -> dict[str, Any]:
    """Append this training session to ``train_log.json``; totals cover every session of the run."""
    first = rep.resumed_from or 0
    old = read_log(path) if rep.resumed_from is not None else {}
    sessions = list(old.get("sessions", []))
    if rep.steps_done > first:
        sessions.append(
            {
                "from_step": first,
                "to_step": rep.steps_done,
                "seconds": rep.seconds,
                "tokens_per_second": rep.tokens_per_second,
            }
        )
    seconds = sum(x["seconds"] for x in sessions)
    tokens = sum(x["seconds"] * x["tokens_per_second"] for x in sessions)
    log = {
        "seconds": seconds,
        "steps": rep.steps_done,
        "resumed_from": rep.resumed_from,
        "final_loss": rep.final_loss,
        "tokens_per_second": tokens / seconds if seconds else None,
        "n_params": rep.n_params,
        "sessions": sessions,
    }
    atomic_write_text(path, json.dumps(log, indent=1))
    return log


def _final(run: Path, spec: RunSpec) -> Path:
    steps = list_checkpoints(run)
    if not steps or steps[-1] != spec.train.steps:
        have = steps[-1] if steps else "none"
        raise TrainingError(
            f"run {str(run)!r} is not finished (last checkpoint {have} of {spec.train.steps} steps); "
            f"resume it with 'geoprobe windtunnel train --out {run.parent}'"
        )
    return checkpoint_dir(run, steps[-1])


def evaluate_tunnel(
    out: Path,
    *,
    n_eval: int | None = None,
    n_probes: int | None = None,
    geometry: bool = True,
    ablate: bool = True,
    progress: Progress | None = None,
) -> WindTunnelResult:
    """Score both learners against the analytic posterior, ablate and probe the transformer."""
    from geoprobe.models.loading import load_model, local_weights_hash

    out = Path(name_arg(out, "out", "a run directory made by train_tunnel"))
    geometry, ablate = bool_arg(geometry, "geometry"), bool_arg(ablate, "ablate")
    t_run = out / "transformer"
    tf = read_spec(t_run)
    convention = tf.task.get("convention", "geoprobe")  # absent from geoprobe's (and every 0.1.0) run.json
    sc = scale_spec(tf.task["name"], tf.scale, convention) if tf.scale in SCALES else None
    n_eval = n_eval or (sc.n_eval if sc else 1000)
    n_probes = n_probes or (sc.n_probes if sc else 256)
    lengths = eval_lengths(sc, tf.task_obj.K) if sc else (tf.task_obj.K,)
    specs = {"transformer": tf}
    if (out / "mlp" / "run.json").exists():
        specs["mlp"] = read_spec(out / "mlp")
    task = tf.task_obj
    finals = {arch: _final(out / arch, spec) for arch, spec in specs.items()}  # every learner finished, or an error
    result_metrics, sizes, training, invariance, query = {}, {}, {}, {}, {}
    t0 = time.perf_counter()
    for arch, spec in specs.items():
        model = load_weights(spec, finals[arch])
        sizes[arch] = n_params(model)
        rows = []
        for i, K in enumerate(lengths):
            t_k = task.with_length(K)
            full = eval_batch(t_k, n_eval, spec.train.seed, scored_only=False)
            probs_full, mass_full = model_predictive(model, full, t_k.answer_ids)
            batch, probs, mass = full.head(K), probs_full[:, :K], mass_full[:, :K]
            rows.append(metrics(arch, probs, batch, mass))
            if i == 0 and len(full.positions) > K:  # the authors' query: trained on, scored here on its own
                query[arch] = query_score(arch, probs_full[:, K], full.labels[:, K])
            if i == 0 and task.name == "hmm":  # Figure 8: the same HMMs with their states renamed
                invariance[arch] = tunnel_invariance(arch, model, t_k, batch, probs, spec.train.seed)
            if progress:
                progress(f"evaluate {arch}", i + 1, len(lengths))
        result_metrics[arch] = tuple(rows)
        log = out / arch / "train_log.json"
        training[arch] = read_log(log)
    abl = None
    if ablate:
        loaded = load_model(str(finals["transformer"]))
        abl = ablations(loaded, task, eval_batch(task, min(n_eval, 512), tf.train.seed))
        if progress:
            progress("ablations", 1, 1)
    geo = None
    if geometry:
        cb = (lambda d, n: progress("probe checkpoints", d, n)) if progress else None
        geo = training_geometry(t_run, tf, n_probes=n_probes, eval_n=min(n_eval, 512), progress=cb)
    prov = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "convention": convention,
        "seed": tf.train.seed,
        "eval_data": f"{n_eval} fresh sequences per length from seed {tf.train.seed} + {EVAL_SEED_OFFSET}",
        "probe_prompts_sha256": prompts_hash(probe_prompts(task, n_probes, tf.train.seed)[0]),
        "weights": {a: local_weights_hash(path) for a, path in finals.items()},
        "run_dir": str(out),
        "eval_seconds": time.perf_counter() - t0,
        "n_eval": n_eval,
        "n_probes": n_probes,
        "versions": package_versions(),
    }
    return WindTunnelResult(
        task=dict(tf.task),
        scale=tf.scale,
        specs={a: s.to_json() for a, s in specs.items()},
        n_params=sizes,
        metrics=result_metrics,
        ablations=abl,
        geometry=geo,
        training=training,
        provenance=prov,
        invariance=invariance or None,
        query=query or None,
    )
