"""Seeded, resumable training of a wind-tunnel learner.

Data are fresh draws from the task every step (the generator for step ``s`` is seeded by
``(seed, s)``, so a resumed run sees exactly the batches an uninterrupted one would). The
loss is the cross-entropy of the model's next-token distribution, read at the prediction
positions over the whole vocabulary, against either the realised answer (``target="sample"``:
ordinary language-model training) or the analytic posterior (``target="posterior"``, the
authors' HMM loss). AdamW, linear warm-up then cosine decay, gradient clipping.

A run directory holds ``run.json`` (task, architecture, size, training settings) and
``checkpoints/step-000123/`` at log-spaced steps (the transformer's is a Hugging Face model
directory with its tokenizer; every checkpoint has ``trainer.pt``, the optimiser and
schedule state, read back with ``torch.load(weights_only=True)``). A NaN or infinite loss
stops the run; the last good checkpoint stays, and the error says which it is.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np
import torch

from geoprobe.errors import GeoprobeError, OutputWriteError
from geoprobe.kinds import LEARNER_KIND
from geoprobe.outputs import check_replaceable_dir
from geoprobe.paths import atomic_write_text, public_mode, read_regular, safetensors_damage, writing
from geoprobe.serial import Record
from geoprobe.threads import torch_threads
from geoprobe.windtunnel.conventions import task_from_dict
from geoprobe.windtunnel.nets import (
    Arch,
    MLPConfig,
    ResidualMLP,
    TransformerSize,
    build_mlp,
    build_transformer,
    n_params,
    word_tokenizer,
)
from geoprobe.windtunnel.tasks import Batch, Task

RUN_KIND = LEARNER_KIND  #: run.json of a learner (geoprobe.kinds: the marker of a training run)
RUN_VERSION = 1


class TrainingError(GeoprobeError):
    """A run that cannot start, resume, or continue (divergence, mismatched checkpoint)."""


@dataclass(frozen=True, eq=False)
class TrainConfig(Record):
    steps: int
    batch_size: int
    lr: float
    warmup: int
    weight_decay: float = 0.01
    clip: float = 1.0
    target: Literal["sample", "posterior"] = "sample"
    n_checkpoints: int = 12
    seed: int = 0
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise TrainingError(f"steps = {self.steps} must be at least 1; pass --steps 1 or more")
        if self.batch_size < 1:
            raise TrainingError(f"batch size {self.batch_size} must be at least 1; pass --batch-size 1 or more")
        if not self.lr > 0 or not math.isfinite(self.lr):
            raise TrainingError(f"learning rate {self.lr} must be a positive number; pass --lr")
        if self.target not in ("sample", "posterior"):
            raise TrainingError(f"target {self.target!r} is not sample|posterior")
        if self.n_checkpoints < 1:
            raise TrainingError(f"{self.n_checkpoints} checkpoints: keep at least 1")

    def lr_factor(self, step: int) -> float:
        warm = min(1.0, (step + 1) / max(1, self.warmup))
        progress = min(1.0, max(0, step - self.warmup) / max(1, self.steps - self.warmup))
        return warm * 0.5 * (1.0 + math.cos(math.pi * progress))

    def checkpoint_steps(self) -> tuple[int, ...]:
        """Log-spaced steps from 0 to ``steps`` (both included, no duplicates)."""
        raw = np.unique(np.round(np.geomspace(1, self.steps + 1, self.n_checkpoints) - 1).astype(int))
        return tuple(sorted({0, self.steps, *(int(s) for s in raw)}))


@dataclass(frozen=True, eq=False)
class RunSpec(Record):
    """Everything that defines a run: a checkpoint from another spec cannot continue it. Stored as
    ``run.json`` (and each checkpoint's ``spec.json``): its fields under a small envelope of their own
    (kind and version, no geoprobe version: a run directory is not a results file)."""

    task: dict[str, Any]
    arch: Arch
    size: dict[str, int]
    train: TrainConfig
    scale: str = "custom"
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def task_obj(self) -> Task:
        return task_from_dict(self.task)

    def to_json(self) -> dict[str, Any]:
        return {"kind": RUN_KIND, "version": RUN_VERSION, **self.to_dict()}

    def json_text(self) -> str:
        """What ``run.json`` and ``spec.json`` hold."""
        return json.dumps(self.to_json(), indent=1)

    @classmethod
    def from_json(cls, d: dict[str, Any], where: str) -> "RunSpec":
        if d.get("kind") != RUN_KIND:
            raise TrainingError(
                f"{where} is not a wind-tunnel run (kind {d.get('kind')!r}); pass a directory made by "
                "'geoprobe windtunnel train'"
            )
        if d.get("version") != RUN_VERSION:
            raise TrainingError(
                f"{where} has run format {d.get('version')}, this geoprobe reads {RUN_VERSION}; "
                "retrain with --out NEW_DIR"
            )
        return cls.from_dict(d)

    def differences(self, other: "RunSpec") -> list[str]:
        a, b = self.to_json(), other.to_json()
        out = []
        for key in ("task", "arch", "size"):
            if a[key] != b[key]:
                out.append(f"{key} {b[key]} vs {a[key]}")
        for key in ("batch_size", "lr", "warmup", "weight_decay", "clip", "target", "seed"):
            if a["train"][key] != b["train"][key]:
                out.append(f"{key} {b['train'][key]} vs {a['train'][key]}")
        return out


def build(spec: RunSpec) -> torch.nn.Module:
    task = spec.task_obj
    if spec.arch == "transformer":
        return build_transformer(TransformerSize(**spec.size), task.vocab, max_positions(task), spec.train.seed)
    return build_mlp(MLPConfig(**spec.size), spec.train.seed)


def max_positions(task: Task) -> int:
    """Rotary positions need no table; the config's limit covers 4× the training length."""
    return 4 * task.seq_len + 64


def predict_logits(model: torch.nn.Module, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """(B, K, vocab) logits at ``positions`` for either architecture."""
    if isinstance(model, ResidualMLP):
        return model(ids, positions)
    return model(input_ids=ids).logits[:, positions]


def loss_fn(logits: torch.Tensor, batch: Batch, answer_ids: torch.Tensor, target: str) -> torch.Tensor:
    logp = torch.log_softmax(logits.float(), dim=-1)[..., answer_ids.to(logits.device)]
    if target == "posterior":
        return -(torch.as_tensor(batch.targets, dtype=torch.float32, device=logp.device) * logp).sum(-1).mean()
    return -logp.gather(-1, torch.as_tensor(batch.labels, device=logp.device)[..., None]).mean()


def step_rng(seed: int, step: int) -> np.random.Generator:
    return np.random.default_rng([seed, step])


# -- checkpoints -----------------------------------------------------------------------------
def checkpoint_dir(run: Path, step: int) -> Path:
    return run / "checkpoints" / f"step-{step:07d}"


#: what a learner's run directory (``OUT/transformer``, ``OUT/mlp``) holds
RUN_DIR_FILES = ("run.json", "train_log.json", "checkpoints")


def check_run_dir(path: Path) -> None:
    """``path`` is a learner's run directory geoprobe wrote (run.json naming a wind-tunnel run, and
    nothing but its files), or a one-line error: geoprobe never trains into a directory of its own."""
    check_replaceable_dir(path, RUN_DIR_FILES, "run.json", marker_kind=LEARNER_KIND)


def list_checkpoints(run: Path) -> list[int]:
    root = run / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(int(p.name.removeprefix("step-")) for p in root.glob("step-*") if (p / "DONE").exists())


def save_checkpoint(
    run: Path, step: int, spec: RunSpec, model: torch.nn.Module, opt: Any, sched: Any, losses: list[float]
) -> Path:
    """Write checkpoint ``step`` of ``run`` under a temporary name and rename it into place. A write that
    fails (a full disk) removes the temporary directory and is one line naming the checkpoint
    (:class:`OutputWriteError`); the checkpoints before it stay, and the same command resumes from them."""
    target = checkpoint_dir(run, step)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        with writing(target):
            _write_checkpoint(tmp, spec, model, opt, sched, step, losses)
        _publish(tmp)
        if target.exists() or target.is_symlink():  # only a checkpoint geoprobe wrote, holding nothing else
            check_replaceable_dir(target, os.listdir(tmp), "spec.json", flag="--out")
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputWriteError(target, exc) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _write_checkpoint(
    tmp: Path, spec: RunSpec, model: torch.nn.Module, opt: Any, sched: Any, step: int, losses: list[float]
) -> None:
    import io

    from safetensors.torch import save_model

    if spec.arch == "transformer":
        model.save_pretrained(tmp, safe_serialization=True)
        task = spec.task_obj
        word_tokenizer(task.vocab, bos=task.bos).save_pretrained(tmp)
    else:
        save_model(model, str(tmp / "model.safetensors"))
    trainer = io.BytesIO()  # torch.save's own file writer reports a full disk without its errno
    torch.save(
        {
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "step": step,
            "losses": torch.tensor(losses, dtype=torch.float64),
        },
        trainer,
    )
    (tmp / "trainer.pt").write_bytes(trainer.getvalue())
    (tmp / "spec.json").write_text(spec.json_text())
    (tmp / "DONE").write_text("")


def _publish(directory: Path) -> None:
    """Give ``directory`` and everything in it the modes a plain ``open()``/``mkdir()`` would under the
    umask: mkdtemp makes the directory 0700 and the safetensors writer its files 0600, which would
    hide a run's checkpoints from collaborators who can read the rest of it."""
    for f in directory.rglob("*"):
        os.chmod(f, public_mode(directory=f.is_dir()))
    os.chmod(directory, public_mode(directory=True))


def load_weights(spec: RunSpec, ckpt: Path) -> torch.nn.Module:
    """The model of ``spec`` with the weights of checkpoint ``ckpt`` (safetensors only)."""
    from safetensors.torch import load_model

    from geoprobe.models.loaded import quiet_libraries

    quiet_libraries()
    check_checkpoint(spec, ckpt)
    weights = ckpt / "model.safetensors"
    damage = safetensors_damage(weights) if weights.exists() else "the file is missing"
    if damage is not None:
        raise TrainingError(
            f"checkpoint file {str(weights)!r} is damaged ({damage}); delete {str(ckpt)!r} to resume "
            "from the checkpoint before it, or retrain into a fresh --out"
        )
    if spec.arch == "transformer":
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM.from_pretrained(ckpt, use_safetensors=True, attn_implementation="sdpa")
    else:
        model = build(spec)
        load_model(model, str(ckpt / "model.safetensors"))
    return model.eval()


def _load_trainer_state(ckpt: Path) -> dict[str, Any]:
    """A checkpoint's ``trainer.pt`` (weights_only); a truncated or garbled one is a one-line error."""
    path = ckpt / "trainer.pt"
    try:
        return torch.load(path, weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        raise TrainingError(
            f"checkpoint file {str(path)!r} is damaged ({type(exc).__name__}); delete {str(ckpt)!r} "
            "to resume from the checkpoint before it, or retrain into a fresh --out"
        ) from None


def check_checkpoint(spec: RunSpec, ckpt: Path) -> None:
    path = ckpt / "spec.json"
    if not path.exists():
        raise TrainingError(
            f"{str(ckpt)!r} is not a wind-tunnel checkpoint (no spec.json); pass a run directory "
            "made by 'geoprobe windtunnel train'"
        )
    theirs = _read_spec_file(path)
    diff = spec.differences(theirs)
    if diff:
        raise TrainingError(
            f"checkpoint {str(ckpt)!r} belongs to another task or config ({'; '.join(diff)}); "
            "pass a fresh --out or the matching --task/--scale"
        )


# -- the loop ----------------------------------------------------------------------------------
def check_resumable(run: Path, spec: RunSpec) -> None:
    """``run`` (one learner's directory) is new, or holds training that ``spec`` continues: the same task
    and config, and the same number of steps once it has checkpoints. Otherwise a one-line
    :class:`TrainingError` naming the difference and its fix (training is never discarded, --force
    or not, so --force is not that fix)."""
    path = Path(run) / "run.json"
    if not path.exists():
        return
    theirs = _read_spec_file(path)
    diff = spec.differences(theirs)
    if diff:
        raise TrainingError(
            f"run directory {str(run)!r} holds another task or config ({'; '.join(diff)}); "
            f"pass what it was trained with ({_settings_of(theirs, spec)}) or another --out"
        )
    if theirs.train.steps != spec.train.steps and list_checkpoints(Path(run)):
        raise TrainingError(
            f"run directory {str(run)!r} was trained for {theirs.train.steps} steps, not "
            f"{spec.train.steps}; the schedule would change: pass --steps {theirs.train.steps} "
            "or another --out"
        )


def _settings_of(theirs: RunSpec, spec: RunSpec) -> str:
    """The flags that would give ``spec`` the settings of the run ``theirs`` where they differ."""
    a, b = spec.to_json(), theirs.to_json()
    flags = []
    if a["task"] != b["task"]:
        flags.append("the --task, --convention and task flags (--vocab, --length, --states, --repeat)")
    if a["arch"] != b["arch"] or a["size"] != b["size"] or any(a["train"][k] != b["train"][k] for k in _SCALE_KEYS):
        flags.append(f"--scale {theirs.scale}")
    if a["train"]["seed"] != b["train"]["seed"]:
        flags.append(f"--seed {theirs.train.seed}")
    return " and ".join(flags)


_SCALE_KEYS = ("batch_size", "lr", "warmup", "weight_decay", "clip", "target")


def _write_spec(run: Path, spec: RunSpec) -> None:
    check_resumable(run, spec)
    path = run / "run.json"
    run.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, spec.json_text())


@dataclass(frozen=True)
class TrainReport:
    run: Path
    steps_done: int
    resumed_from: int | None
    seconds: float
    final_loss: float
    n_params: int
    tokens_per_second: float


def train(
    spec: RunSpec,
    run: Path,
    *,
    resume: bool = True,
    device: str = "cpu",
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainReport:
    """Train ``spec`` into ``run`` (resuming from its last checkpoint when ``resume``) on ``device``
    (``cpu``, ``cuda``, …; the device is not part of the spec: a run may move between machines)."""
    from geoprobe.models.loaded import quiet_libraries
    from geoprobe.models.loading import check_device

    quiet_libraries()
    check_device(device)
    run = Path(run)
    _write_spec(run, spec)
    with torch_threads(spec.train.threads):
        return _train(spec, run, resume, device, progress)


def _train(
    spec: RunSpec, run: Path, resume: bool, device: str, progress: Callable[[int, int, float], None] | None
) -> TrainReport:
    cfg = spec.train
    task = spec.task_obj
    model = build(spec).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, cfg.lr_factor)
    done = list_checkpoints(run)
    start, resumed, losses = 0, None, []
    if done and resume:
        last = checkpoint_dir(run, done[-1])
        state = load_weights(spec, last).state_dict()
        model.load_state_dict(state)
        trainer = _load_trainer_state(last)
        opt.load_state_dict(trainer["optimizer"])
        sched.load_state_dict(trainer["scheduler"])
        start = resumed = int(trainer["step"])
        losses = [float(x) for x in trainer["losses"]]
    elif done:
        raise TrainingError(f"run directory {str(run)!r} already has checkpoints; resume it or pass another --out")
    ckpts = set(cfg.checkpoint_steps())
    answers = torch.as_tensor(task.answer_ids)
    if start == 0 and 0 in ckpts and not done:
        save_checkpoint(run, 0, spec, model, opt, sched, losses)
    model.train()
    t0 = time.perf_counter()
    tokens = 0
    for step in range(start, cfg.steps):
        batch = task.sample(cfg.batch_size, step_rng(cfg.seed, step))
        ids = torch.as_tensor(batch.ids, device=device)
        loss = loss_fn(
            predict_logits(model, ids, torch.as_tensor(batch.positions, device=device)), batch, answers, cfg.target
        )
        value = float(loss.detach())
        if not math.isfinite(value):
            good = list_checkpoints(run)
            raise TrainingError(
                f"loss became {value} at step {step + 1} (lr {cfg.lr}); training stopped, the last good "
                f"checkpoint is step {good[-1] if good else 'none'} in {str(run)!r}: lower --lr and "
                "retrain into a fresh --out"
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        sched.step()
        losses.append(value)
        tokens += ids.numel()
        if step + 1 in ckpts:
            save_checkpoint(run, step + 1, spec, model, opt, sched, losses)
        if progress is not None:
            progress(step + 1, cfg.steps, value)
    seconds = time.perf_counter() - t0
    return TrainReport(
        run,
        cfg.steps,
        resumed,
        seconds,
        losses[-1] if losses else float("nan"),
        n_params(model),
        tokens / seconds if seconds > 0 else float("nan"),
    )


def read_spec(run: Path) -> RunSpec:
    path = Path(run) / "run.json"
    if not path.exists():
        raise TrainingError(
            f"{str(run)!r} is not a wind-tunnel run directory (no run.json); train one with "
            "'geoprobe windtunnel train --out DIR'"
        )
    return _read_spec_file(path)


def read_log(path: Path) -> dict[str, Any]:
    """A run's ``train_log.json`` ({} when there is none); one that is not a regular file is refused."""
    if not path.exists() and not path.is_symlink():
        return {}
    return json.loads(read_regular(path, lambda why: TrainingError(f"{str(path)!r} {why}; retrain with another --out")))


def _read_spec_file(path: Path) -> RunSpec:
    """A run's ``run.json`` or a checkpoint's ``spec.json``; a damaged file is a one-line error."""
    try:  # a FIFO in its place is refused, never waited on
        raw = read_regular(path, lambda why: TrainingError(f"{str(path)!r} {why}; retrain with another --out"))
        return RunSpec.from_json(json.loads(raw), str(path))
    except (ValueError, KeyError, TypeError) as exc:
        raise TrainingError(f"{str(path)!r} is damaged ({type(exc).__name__}); retrain with another --out") from exc


__all__ = [
    "TrainConfig",
    "RunSpec",
    "TrainReport",
    "TrainingError",
    "train",
    "build",
    "load_weights",
    "list_checkpoints",
    "checkpoint_dir",
    "read_spec",
    "n_params",
]
