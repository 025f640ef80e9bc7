"""``train_trajectory``: train the Pythia-shaped model on CPU, publishing checkpoints on Pythia's schedule.

Deterministic for a seed: the initialisation is drawn from a generator seeded by it, the batches of
step ``s`` from one seeded ``(seed, s)``, there is no dropout, and the learning rate is a function of
the step. Interrupted, the same call resumes from the last checkpoint (its weights, the optimiser's
state, the losses so far) and ends with the weights an uninterrupted run would have, bit for bit on
the same machine and thread count (tests/trajectory/test_train.py).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from geoprobe.checks import config_arg, path_arg, strings_arg
from geoprobe.experiment.reporter import Reporter, as_reporter
from geoprobe.outputs import check_same_kind
from geoprobe.provenance import package_versions
from geoprobe.threads import torch_threads
from geoprobe.trajectory import store
from geoprobe.trajectory.config import FLAGS, TrajectoryConfig, TrajectoryError
from geoprobe.trajectory.data import DataRecord, eval_batch, prepare, step_batch
from geoprobe.trajectory.memory import check_trajectory_memory
from geoprobe.trajectory.model import build_model, n_params
from geoprobe.trajectory.result import CheckpointRecord, ModelRecord, TrajectoryResult

#: updates averaged into a checkpoint's ``train_loss``
LOSS_WINDOW = 20

Progress = Callable[[str, int, int], None]  # (stage, done, total), as geoprobe.cli.progress draws it


def optimizer(model: Any, config: TrajectoryConfig) -> torch.optim.Optimizer:
    """AdamW with Pythia's settings; as in GPT-NeoX, biases and LayerNorm parameters take no weight decay."""
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    plain = [p for n, p in model.named_parameters() if p.ndim < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": plain, "weight_decay": 0.0}],
        lr=config.lr,
        betas=(config.beta1, config.beta2),
        eps=config.eps,
        foreach=False,
    )


def lm_loss(model: Any, batch: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of ``batch`` (B, T + 1): inputs ``[:, :-1]``, targets ``[:, 1:]``."""
    logits = model(input_ids=batch[:, :-1]).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


@torch.no_grad()
def eval_loss(model: Any, windows: np.ndarray | None, batch_size: int) -> float:
    """Mean next-token cross-entropy (nats/token) over the held-out ``windows``; NaN without any."""
    if windows is None:
        return math.nan
    model.eval()
    total, n = 0.0, 0
    for i in range(0, len(windows), batch_size):
        chunk = torch.as_tensor(windows[i : i + batch_size])
        total += float(lm_loss(model, chunk)) * len(chunk)
        n += len(chunk)
    model.train()
    return total / n


def _record(out: Path, config: TrajectoryConfig, step: int, losses: list[float], first: float, ev: float) -> dict:
    d = store.checkpoint_path(out, step)
    recent = losses[max(0, step - LOSS_WINDOW) : step]
    return CheckpointRecord(
        step=step,
        path=f"{store.CHECKPOINTS}/{d.name}",
        tokens=step * config.batch_size * config.seq_len,
        lr=config.lr_at(step - 1) if step else 0.0,
        train_loss=float(np.mean(recent)) if recent else first,
        eval_loss=ev,
        sha256=store.file_sha256(d / "model.safetensors"),
        bytes=store.dir_bytes(d),
    ).to_dict()


def check_resumable(config: TrajectoryConfig, out: str | os.PathLike) -> None:
    """``out`` is new, or holds a trajectory that ``config`` continues (the same settings): otherwise a
    one-line :class:`TrajectoryError` naming the settings to pass (training is never discarded, so
    --force is not the fix). Also refuses checkpoints or resume state that geoprobe did not write."""
    out = Path(out)
    store.check_out(out)
    spec = store.read_spec(out)
    if spec is not None:
        diff = store.differences(spec["config"], config.identity())
        if diff:
            raise TrajectoryError(
                f"{str(out)!r} holds a trajectory trained with other settings ({'; '.join(diff)}); pass "
                f"{resume_flags(spec['config'], config.identity())} to resume it, or another --out (training is never "
                "discarded, --force or not)"
            )
    elif store.leftover_checkpoints(out):
        raise TrajectoryError(
            f"{str(out / store.CHECKPOINTS)!r} holds checkpoints but {str(out / store.RESUME)!r} no resume state; "
            "move them away or pass another --out"
        )


def _start(out: Path, config: TrajectoryConfig, documents: Sequence[str] | None, tell: Reporter) -> tuple:
    """(data, model, optimiser, state) of a fresh run, or of the run ``out`` holds, resumed; a finished
    run gives (None, its final model, None, state): nothing is read or trained again."""
    check_resumable(config, out)
    spec, state = store.read_spec(out), store.load_state(out)
    if state is not None and int(state["step"]) == config.steps:
        return None, store.load_weights(out, config.steps, state["records"][-1]["sha256"]), None, state
    if state is None:
        data = prepare(config, documents, reporter=tell)
        layers = f"{config.layers} layer{'s' if config.layers != 1 else ''}"
        with tell.status(f"building the model ({layers}, d_model {config.hidden_size}) …"):
            model = build_model(config, data.tokenizer)
        opt = optimizer(model, config)
        store.write_spec(out, config, data.record.to_dict(), data.tokenizer_json)
        state = {"step": 0, "losses": torch.zeros(0, dtype=torch.float64), "records": [], "seconds": 0.0}
    else:
        step = int(state["step"])
        with tell.status(f"loading the weights of step {step} to resume …"):
            model = store.load_weights(out, step, state["records"][-1]["sha256"])
        data = prepare(config, documents, tokenizer_json=store.read_tokenizer(out), reporter=tell)
        if spec is not None and spec["data"] != data.record.to_dict():
            diff = store.differences(spec["data"], data.record.to_dict())
            raise TrajectoryError(
                f"the training data differ from those {str(out)!r} was trained on ({'; '.join(diff)}): the corpora "
                "packages changed; reinstall the versions it was trained with, or pass another --out"
            )
        opt = optimizer(model, config)
        opt.load_state_dict(state["optimizer"])
    state["threads"] = [*state.get("threads", []), [int(state["step"]), torch.get_num_threads()]]
    return data, model, opt, state


def resume_flags(theirs: dict[str, Any], ours: dict[str, Any]) -> str:
    """The flags (or settings) that give ``ours`` the values of ``theirs`` where they differ."""
    parts = []
    for k in sorted(set(theirs) | set(ours)):
        if theirs.get(k) != ours.get(k):
            v = theirs.get(k)
            v = ",".join(v) if isinstance(v, list) else v
            parts.append(f"{FLAGS[k]} {v}" if k in FLAGS else f"{k} = {v!r} (TrajectoryConfig)")
    return " ".join(parts)


def _save_state(out: Path, step: int, opt: Any, state: dict, seconds: float) -> None:
    """After checkpoint ``step`` is published: the state that resumes from it."""
    state["step"] = step
    state["optimizer"] = opt.state_dict()
    state["seconds"] = seconds
    store.save_state(out, state)


def train_trajectory(
    config: TrajectoryConfig = TrajectoryConfig(),
    *,
    out: str | os.PathLike,
    documents: Sequence[str] | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
) -> TrajectoryResult:
    """Train ``config`` into the directory ``out`` (resuming the run it holds), publish its checkpoints
    and write ``out/trajectory.json``; returns the manifest. ``documents``: texts to train on instead of
    the corpora's domains; ``threads``: torch's CPU threads (None: torch's default; record it: bitwise
    equality across runs holds for the same count). A run whose estimated peak memory
    (:func:`geoprobe.trajectory.memory.peak_bytes`) is more than the memory available is refused before
    anything is read or written."""
    config = config_arg(config, TrajectoryConfig)
    out = path_arg(out, "out", "the directory to train into, such as 'runs/trajectory'", optional=False)
    documents = None if documents is None else strings_arg(documents, "documents", "document texts")
    reporter = as_reporter(progress)  # a Reporter as it is; a plain callable gets progress only
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise TrajectoryError(f"threads {threads!r} is not a positive integer; pass --threads 1 or more")
    check_trajectory_memory(config)
    with torch_threads(threads):
        return _train(config, out, documents, reporter)


def _train(config: TrajectoryConfig, out: Path, documents: Sequence[str] | None, tell: Reporter) -> TrajectoryResult:
    out.mkdir(parents=True, exist_ok=True)
    data, model, opt, state = _start(out, config, documents, tell)
    start, fresh = int(state["step"]), not state["records"]
    if data is not None:
        _loop(config, out, data, model, opt, state, tell)
    records, spec = state["records"], store.read_spec(out)
    result = TrajectoryResult(
        config=config,
        model=_model_record(model, config),
        data=DataRecord.from_dict(spec["data"]),  # type: ignore[index]
        checkpoints=tuple(CheckpointRecord.from_dict(r) for r in records),
        losses=tuple(float(x) for x in state["losses"]),
        train_s=float(state["seconds"]),
        resumed_from=None if fresh else start,
        provenance={
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": {**package_versions(), "tokenizers": _version("tokenizers")},
            "seed": config.seed,
            "device": "cpu",
            # (first step, torch threads) of each session that trained it: bitwise equality holds per count
            "sessions": [list(map(int, t)) for t in state.get("threads", [])],
            "data_tokens_sha256": spec["data"]["tokens_sha256"],  # type: ignore[index]
            "tokenizer_sha256": spec["data"]["tokenizer_sha256"],  # type: ignore[index]
            "final_weights_sha256": records[-1]["sha256"],
        },
    )
    target = out / TrajectoryResult.FILE
    check_same_kind(target, TrajectoryResult.KIND)
    result.save(target)
    return result


def _loop(config: TrajectoryConfig, out: Path, data: Any, model: Any, opt: Any, state: dict, tell: Reporter) -> None:
    """Train from ``state["step"]`` to the last step, publishing each scheduled checkpoint and the state
    that resumes from it; ``state`` holds the losses and records at the end."""
    start = int(state["step"])
    losses = [float(x) for x in state["losses"]]
    records = list(state["records"])
    held = eval_batch(config, data.heldout)
    ckpts = set(config.checkpoint_steps())
    seconds0, t0 = float(state["seconds"]), time.perf_counter()
    if not records:  # step 0: the initialisation
        with tell.status("scoring and saving the initialisation (checkpoint step 0) …"):
            with torch.no_grad():
                first = float(lm_loss(model, torch.as_tensor(step_batch(config, data.train, 0))))
            store.save_checkpoint(out, 0, model, data.tokenizer)
            records.append(_record(out, config, 0, losses, first, eval_loss(model, held, config.batch_size)))
            state["records"] = records
            _save_state(out, 0, opt, state, seconds0)
    model.train()
    tell("training", start, config.steps)
    for step in range(start, config.steps):
        batch = torch.as_tensor(step_batch(config, data.train, step))
        for group in opt.param_groups:
            group["lr"] = config.lr_at(step)
        loss = lm_loss(model, batch)
        value = float(loss.detach())
        if not math.isfinite(value):
            raise TrajectoryError(
                f"loss became {value} at step {step} (lr {config.lr_at(step):.2e}); training stopped, the last good "
                f"checkpoint is step {records[-1]['step']} in {str(out)!r}: lower --lr and retrain into another --out"
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        opt.step()
        losses.append(value)
        if step + 1 in ckpts:
            ev = eval_loss(model, held, config.batch_size)
            store.save_checkpoint(out, step + 1, model, data.tokenizer)
            records.append(_record(out, config, step + 1, losses, losses[0], ev))
            state.update(records=records, losses=torch.tensor(losses, dtype=torch.float64))
            _save_state(out, step + 1, opt, state, seconds0 + time.perf_counter() - t0)
        tell("training", step + 1, config.steps)


def _model_record(model: Any, config: TrajectoryConfig) -> ModelRecord:
    total, emb = n_params(model)
    return ModelRecord(
        architecture="GPTNeoXForCausalLM",
        n_params=total,
        n_embedding_params=emb,
        vocab_size=int(model.config.vocab_size),
        rotary_dims=int(config.hidden_size // config.heads * config.rotary_pct),
    )


def _version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"
