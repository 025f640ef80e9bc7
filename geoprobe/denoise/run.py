"""``geoprobe denoise``: train one-layer softmax and linear attention on a denoising task, score them against the
oracle (Bayes) and the finite-context estimators, sweep L and d, warp the geometry, and add the energy view."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np
import torch

from geoprobe.analysis.stats import bootstrap_ci
from geoprobe.checks import config_arg
from geoprobe.denoise.attention import MODELS, SoftmaxAttention, make_model, predict, weight_fit
from geoprobe.denoise.bayes import bayes_linear_predicted_gain, finite_context, oracle, per_prompt_mse
from geoprobe.denoise.config import DenoiseConfig, check_memory
from geoprobe.denoise.energy import attention_step
from geoprobe.denoise.landscape import descent_comparison, landscape
from geoprobe.denoise.result import Block, DenoiseResult, Fit, Score
from geoprobe.denoise.tasks import DenoiseTask, make_warp, sample
from geoprobe.denoise.train import train_model
from geoprobe.provenance import package_versions

Progress = Callable[[str, int, int], None]


def _scores(per: dict[str, np.ndarray], seed: int, n_resamples: int) -> tuple[Score, ...]:
    """Mean MSE with a BCa bootstrap CI for each method; the ratio to the oracle from a paired bootstrap."""
    out = []
    base = per["oracle"]
    for i, (method, v) in enumerate(per.items()):
        mse = bootstrap_ci(v, n_resamples=n_resamples, random_state=[seed, 11, i])
        ratio = None
        if method != "oracle":
            ratio = bootstrap_ci(
                (v, base),
                statistic=lambda a, b, axis: np.mean(a, axis=axis) / np.mean(b, axis=axis),
                n_resamples=n_resamples,
                random_state=[seed, 13, i],
            )
        out.append(Score(method, mse, ratio))
    return tuple(out)


def _evaluate(task: DenoiseTask, models: dict[str, Any], prompts: Any, baselines: bool = True) -> dict[str, np.ndarray]:
    per = {
        "oracle": per_prompt_mse(oracle(task, prompts), prompts.clean),
        "finite-context": per_prompt_mse(finite_context(task, prompts), prompts.clean),
    }
    for kind, model in models.items():
        per[kind] = per_prompt_mse(predict(model, prompts.context, prompts.noisy), prompts.clean)
    if baselines:
        per["predict 0"] = per_prompt_mse(np.zeros_like(prompts.clean), prompts.clean)
        per["predict x̃ (identity)"] = per_prompt_mse(prompts.noisy, prompts.clean)
    return per


def _fits(task: DenoiseTask, models: dict[str, Any], warp: np.ndarray | None = None) -> tuple[Fit, ...]:
    """Learned matrices against the predicted structure: S = I, or S = (AAᵀ)⁻¹ for W_KQ and W_PV·W_KQ under a warp."""
    S = None if warp is None else np.linalg.inv(warp @ warp.T)
    sname = "I" if warp is None else "(AAᵀ)⁻¹"
    gain = bayes_linear_predicted_gain(task)
    out = []
    for kind, model in models.items():
        mats = model.matrices()
        for name, W in mats.items():
            structure = S if name in ("W_KQ", "W_PV·W_KQ") else None
            c, res = weight_fit(W, structure)
            pred = None
            if kind == "softmax" and task.name != "linear" and name == "W_KQ":
                pred = 1.0 / task.noise_var
            elif kind == "softmax" and task.name != "linear" and name == "W_PV":
                pred = 1.0
            elif name == "W_PV·W_KQ" and (kind == "linear" or task.name == "linear"):
                pred = gain
            out.append(Fit(kind, name, sname if structure is not None else "I", c, res, pred))
            if warp is not None and structure is not None:  # the same matrix against plain I, for contrast
                c0, r0 = weight_fit(W)
                out.append(Fit(kind, name, "I", c0, r0, None))
    return tuple(out)


def _energy(task: DenoiseTask, prompts: Any, models: dict[str, Any], seed: int, n: int = 256) -> dict[str, Any]:
    """The energy view (denoise.energy, denoise.landscape): one step == attention, one step vs iterated descent,
    the (α, β) landscape with the Bayes point (α=1, β=1/σZ²), the trained model's point and the numerical minimum."""
    X = torch.from_numpy(prompts.context[:n])
    q = torch.from_numpy(prompts.noisy[:n])
    c = torch.from_numpy(prompts.clean[:n])
    a0, b0 = 1.0, 1.0 / task.noise_var
    ref = SoftmaxAttention(task.n).double()
    with torch.no_grad():
        ref.W_KQ.copy_(b0 * torch.eye(task.n, dtype=torch.float64))
        ref.W_PV.copy_(a0 * torch.eye(task.n, dtype=torch.float64))
        diff = float((attention_step(q, X, a0, b0) - ref(X, q)).abs().max())
    marks = {"Bayes point (α=1, β=1/σZ²)": [a0, b0]}
    trained = None
    if "softmax" in models:
        mats = models["softmax"].matrices()
        a, b = float(np.trace(mats["W_PV"]) / task.n), float(np.trace(mats["W_KQ"]) / task.n)
        if a < 0 and b < 0:  # (W_KQ, W_PV) → (−W_KQ, −W_PV) leaves the loss unchanged for a symmetric context
            a, b = -a, -b
        trained = [a, b]
        if a > 0 and b > 0:
            marks["trained softmax (tr W_PV/n, tr W_KQ/n)"] = [a, b]
    alphas = np.geomspace(0.1, 10.0, 21)
    betas = np.geomspace(0.01, 10.0, 25) / task.noise_var
    land = landscape(X, q, c, alphas, betas, provenance={"seed": seed})
    descent = descent_comparison(X, q, c, a0, b0, n_steps=5, provenance={"seed": seed})
    return {
        "one_step_max_abs_diff": diff,
        "bayes_point": [a0, b0],
        "trained_point": trained,
        "marks": marks,
        "n_prompts": int(X.shape[0]),
        "landscape": land.to_dict(),
        "descent": descent.to_dict(),
    }


def _trained(units: Any, key: str, task: DenoiseTask, kind: str, settings: Any, **kw: Any) -> tuple[Any, dict]:
    """A model trained by ``train_model`` (or, kept by a run that stopped, its weights and log read back)."""
    kept = None if units is None else units.get(key)
    if kept is not None:
        model = make_model(kind, task.n)
        model.load_state_dict({k: torch.from_numpy(v) for k, v in kept[0].items()})
        return model, kept[1]
    model, log = train_model(task, kind, settings, **kw)
    if units is not None:
        units.put(key, {k: v.detach().numpy() for k, v in model.state_dict().items()}, log)
    return model, log


def run_denoise(config: DenoiseConfig, progress: Progress | None = None, units: Any = None) -> DenoiseResult:
    """Train, evaluate, sweep and probe one task; deterministic given ``config.seed`` (CPU). ``units``
    (:class:`geoprobe.experiment.Units`) keeps each trained model as it finishes, and gives back those a
    stopped run trained."""
    config = config_arg(config, DenoiseConfig)
    check_memory(config)  # before any training: the evaluation's prompts must fit
    task = config.make_task()
    settings = config.settings()
    seed = config.seed
    models: dict[str, Any] = {}
    training: dict[str, Any] = {}
    for kind in MODELS:
        models[kind], training[kind] = _trained(
            units, f"train.{kind}", task, kind, settings, seed=seed, progress=progress, stage=f"train {kind}"
        )
    tick = _ticker(
        progress,
        2
        + len(config.lengths)
        + (len(config.transfer_dims) if task.name != "mixture" else 0)
        + (1 if config.warp else 0),
    )
    prompts = sample(task, config.n_eval, np.random.default_rng([seed, 7]))
    scores = _scores(_evaluate(task, models, prompts), seed, config.n_resamples)
    fits = _fits(task, models)
    tick()
    lengths = []
    for i, L in enumerate(config.lengths):
        p = sample(task.with_length(L), config.n_eval, np.random.default_rng([seed, 8, i]))
        lengths.append(
            Block(L, _scores(_evaluate(task.with_length(L), models, p, baselines=False), seed, config.n_resamples))
        )
        tick()
    transfer = []
    if task.name != "mixture":
        for i, d in enumerate(config.subspace_dim(v) for v in config.transfer_dims):  # keys: geoprobe's d
            t2 = task.with_dim(d)
            p = sample(t2, config.n_eval, np.random.default_rng([seed, 9, i]))
            transfer.append(Block(d, _scores(_evaluate(t2, models, p, baselines=False), seed, config.n_resamples)))
            tick()
    warp = None
    if config.warp:
        A = make_warp(task.n, seed, config.warp_condition)
        wmodels: dict[str, Any] = {}
        for kind in MODELS:
            wmodels[kind], training[f"{kind} (warped)"] = _trained(
                units,
                f"warped.{kind}",
                task,
                kind,
                settings,
                seed=seed,
                warp=A,
                salt=1,
                progress=progress,
                stage=f"train {kind} warped",
            )
        p = sample(task, config.n_eval, np.random.default_rng([seed, 10]), warp=A)
        warp = {
            "condition": config.warp_condition,
            "matrix": A.tolist(),
            "scores": _scores(_evaluate(task, wmodels, p), seed, config.n_resamples),
            "fits": _fits(task, wmodels, A),
            "matrices": {k: {n: W.tolist() for n, W in m.matrices().items()} for k, m in wmodels.items()},
        }
        tick()
    energy = _energy(task, prompts, models, seed) if config.energy else None
    tick()
    prov = {
        "model_id": f"denoise-{task.name} (softmax and linear attention, trained here)",
        "seed": seed,
        "config_sha256": config.config_hash(),
        "data": "fresh prompts every training step; evaluation prompts from numpy default_rng([seed, 7..10])",
        "versions": package_versions(),
        "convention": config.convention or "geoprobe",
    }
    if task.name == "sphere":
        prov["sphere"] = (
            f"S^{task.d - 1} of radius {task.radius} in a random {task.d}-dim subspace of R^{task.n}: geoprobe's "
            f"d = {task.d}, the paper's and the authors' d = {task.d - 1}"
        )
    prov["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return DenoiseResult(
        task=task.to_dict(),
        config=config.to_dict(),
        scores=scores,
        fits=fits,
        lengths=tuple(lengths),
        transfer=tuple(transfer),
        warp=warp,
        energy=energy,
        matrices={k: {n: W.tolist() for n, W in m.matrices().items()} for k, m in models.items()},
        training=training,
        provenance=prov,
    )


def _ticker(progress: Progress | None, total: int) -> Callable[[], None]:
    state = {"done": 0}

    def tick() -> None:
        state["done"] = min(total, state["done"] + 1)
        if progress is not None:
            progress("evaluate", state["done"], total)

    return tick


__all__ = ["run_denoise"]
