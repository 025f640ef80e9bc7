"""The four scales of every wind tunnel: ``tiny`` (seconds, tests), ``small`` (minutes a seed on one core:
models that learn, for statistics over training seeds such as frame vs precision), ``cpu`` (22 min for the
bijection transformer, about an hour for the HMM's on two cores), ``paper`` (the papers' model sizes, for a GPU).

Where we differ from the authors' released settings (bijection: 6 layers, 6 heads, d = 192,
learned positions, batch 128, lr 3e-4, 100k steps; HMM: 9 layers, 8 heads, d = 256, 10k
instances × 50 epochs, batch 64, lr 3e-4, dropout 0.1) the ``notes`` of the scale say so; every
scale draws fresh sequences each step instead of cycling a fixed training set.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from geoprobe.errors import GeoprobeError
from geoprobe.windtunnel.authors import AUTHORS_NOTES, AUTHORS_SCALES, GEOPROBE_TASK_NOTES
from geoprobe.windtunnel.conventions import check_convention, make_task
from geoprobe.windtunnel.nets import MLPConfig, TransformerSize, build_transformer, matched_mlp_config, n_params
from geoprobe.windtunnel.tasks import TaskName
from geoprobe.windtunnel.train import RunSpec, TrainConfig, max_positions

Scale = Literal["tiny", "small", "cpu", "paper"]
SCALES: tuple[Scale, ...] = ("tiny", "small", "cpu", "paper")


@dataclass(frozen=True)
class ScaleSpec:
    task: dict[str, Any]
    size: TransformerSize
    train: TrainConfig
    mlp_train: TrainConfig
    mlp_depth: int
    eval_lengths: tuple[int, ...]  # K values for evaluation (the first is the training length)
    n_eval: int
    n_probes: int
    notes: tuple[str, ...]


_COMMON_NOTES = (
    "rotary positions instead of learned ones (LlamaForCausalLM)",
    "fresh sequences every step instead of a fixed training set",
)

_TABLE: dict[tuple[str, str], ScaleSpec] = {
    ("bijection", "tiny"): ScaleSpec(
        task=dict(V=6, K=6),
        size=TransformerSize(2, 2, 32, 64),
        train=TrainConfig(steps=40, batch_size=32, lr=3e-3, warmup=5, target="posterior", n_checkpoints=4),
        mlp_train=TrainConfig(steps=40, batch_size=32, lr=3e-3, warmup=5, target="posterior", n_checkpoints=2),
        mlp_depth=4,
        eval_lengths=(6,),
        n_eval=128,
        n_probes=64,
        notes=("tiny: for tests only",),
    ),
    ("bijection", "small"): ScaleSpec(
        task=dict(V=10, K=10),
        size=TransformerSize(3, 4, 64, 128),
        train=TrainConfig(steps=3000, batch_size=64, lr=2e-3, warmup=100, target="posterior", n_checkpoints=12),
        mlp_train=TrainConfig(steps=3000, batch_size=64, lr=2e-3, warmup=100, target="posterior", n_checkpoints=4),
        mlp_depth=8,
        eval_lengths=(10,),
        n_eval=1000,
        n_probes=256,
        notes=(
            "small: 3 layers, 4 heads, d = 64, V = K = 10 and 3,000 steps of batch 64 (minutes a seed on one "
            "core; for statistics over training seeds)",
            "posterior targets (soft cross-entropy against the analytic predictive) instead of sampled outputs",
            "keys repeat an earlier key with probability 0.25, otherwise are new",
        ),
    ),
    ("bijection", "cpu"): ScaleSpec(
        task=dict(V=20, K=20),
        size=TransformerSize(4, 4, 128, 256),
        train=TrainConfig(steps=5000, batch_size=128, lr=1e-3, warmup=200, target="posterior", n_checkpoints=12),
        mlp_train=TrainConfig(steps=5000, batch_size=128, lr=1e-3, warmup=200, target="posterior", n_checkpoints=4),
        mlp_depth=18,
        eval_lengths=(20,),
        n_eval=2000,
        n_probes=512,
        notes=(
            "cpu: 4 layers, 4 heads, d = 128 (0.66M parameters) and 5,000 steps of batch 128",
            "posterior targets (soft cross-entropy against the analytic predictive) instead of sampled outputs",
            "keys repeat an earlier key with probability 0.25, otherwise are new",
        ),
    ),
    ("bijection", "paper"): ScaleSpec(
        task=dict(V=20, K=20),
        size=TransformerSize(6, 6, 192, 512),
        train=TrainConfig(steps=100_000, batch_size=128, lr=3e-4, warmup=1000, target="sample", n_checkpoints=16),
        mlp_train=TrainConfig(steps=100_000, batch_size=128, lr=3e-4, warmup=1000, target="sample", n_checkpoints=6),
        mlp_depth=20,
        eval_lengths=(20,),
        n_eval=5000,
        n_probes=1024,
        notes=("keys repeat an earlier key with probability 0.25, otherwise are new",),
    ),
    ("hmm", "tiny"): ScaleSpec(
        task=dict(S=3, V=3, K=6),
        size=TransformerSize(2, 2, 32, 64),
        train=TrainConfig(steps=40, batch_size=32, lr=3e-3, warmup=5, target="posterior", n_checkpoints=4),
        mlp_train=TrainConfig(steps=40, batch_size=32, lr=3e-3, warmup=5, target="posterior", n_checkpoints=2),
        mlp_depth=4,
        eval_lengths=(6, 9),
        n_eval=128,
        n_probes=64,
        notes=("tiny: for tests only",),
    ),
    ("hmm", "small"): ScaleSpec(
        task=dict(S=3, V=3, K=10),
        size=TransformerSize(4, 4, 64, 128),
        train=TrainConfig(steps=3000, batch_size=64, lr=1e-3, warmup=200, target="posterior", n_checkpoints=12),
        mlp_train=TrainConfig(steps=3000, batch_size=64, lr=1e-3, warmup=200, target="posterior", n_checkpoints=4),
        mlp_depth=8,
        eval_lengths=(10, 15),
        n_eval=1000,
        n_probes=256,
        notes=(
            "small: 4 layers, 4 heads, d = 64, S = V = 3, K = 10 and 3,000 steps of batch 64 (minutes a seed on "
            "one core; for statistics over training seeds)",
            "indexed header: each matrix entry is preceded by a token naming it (the authors write values only)",
            "Dirichlet α = 0.5 (not stated by the authors)",
        ),
    ),
    ("hmm", "cpu"): ScaleSpec(
        task=dict(S=5, V=5, K=20),
        size=TransformerSize(6, 4, 128, 256),
        train=TrainConfig(steps=6000, batch_size=64, lr=5e-4, warmup=500, target="posterior", n_checkpoints=12),
        mlp_train=TrainConfig(steps=4000, batch_size=64, lr=1e-3, warmup=200, target="posterior", n_checkpoints=4),
        mlp_depth=18,
        eval_lengths=(20, 30, 50),
        n_eval=2000,
        n_probes=512,
        notes=(
            "cpu: 6 layers, 4 heads, d = 128 and 6,000 steps of batch 64, lr 5e-4, warmup 500 (4 layers, "
            "lr 1e-3 plateaued at 0.031 bits)",
            "indexed header: each matrix entry is preceded by a token naming it (the authors write values only)",
            "Dirichlet α = 0.5 (not stated by the authors)",
        ),
    ),
    ("hmm", "paper"): ScaleSpec(
        task=dict(S=5, V=5, K=20),
        size=TransformerSize(9, 8, 256, 512),
        train=TrainConfig(steps=7813, batch_size=64, lr=3e-4, warmup=400, target="posterior", n_checkpoints=16),
        mlp_train=TrainConfig(steps=7813, batch_size=64, lr=3e-4, warmup=400, target="posterior", n_checkpoints=6),
        mlp_depth=20,
        eval_lengths=(20, 30, 50),
        n_eval=5000,
        n_probes=1024,
        notes=(
            "no dropout (the authors use 0.1)",
            "d_ff = 512 (SwiGLU)",
            "indexed header: each matrix entry is preceded by a token naming it (the authors write values only)",
            "Dirichlet α = 0.5 (not stated by the authors)",
        ),
    ),
}


def scale_spec(task: TaskName | str, scale: Scale | str, convention: str = "geoprobe") -> ScaleSpec:
    """A task at a scale; under the authors' convention the same learners and training, with the authors'
    task, evaluation lengths and notes (geoprobe/windtunnel/authors.py)."""
    if scale not in SCALES:
        raise GeoprobeError(f"scale {scale!r} is not tiny|small|cpu|paper; pass --scale tiny, small, cpu or paper")
    if (task, scale) not in _TABLE:
        raise GeoprobeError(f"task {task!r} is not bijection|hmm; pass --task bijection or --task hmm")
    check_convention(convention)
    sc = _TABLE[(task, scale)]
    if convention == "authors":
        params, lengths = AUTHORS_SCALES[(task, scale)]
        notes = tuple(n for n in sc.notes if not any(g in n for g in GEOPROBE_TASK_NOTES))
        sc = replace(sc, task=params, eval_lengths=lengths, notes=(*notes, *AUTHORS_NOTES[task]))
    return sc


def eval_lengths(sc: ScaleSpec, K: int) -> tuple[int, ...]:
    """The training length first, then the scale's longer evaluation lengths."""
    return (K, *(k for k in sc.eval_lengths[1:] if k > K))


def run_specs(
    task_name: str,
    scale: str,
    *,
    seed: int = 0,
    steps: int | None = None,
    task_params: dict[str, Any] | None = None,
    convention: str = "geoprobe",
) -> tuple[RunSpec, RunSpec]:
    """The transformer and its capacity-matched MLP for a task at a scale (the run.json ``task`` holds
    ``convention`` for the authors' tasks only, so a geoprobe run.json reads as before)."""
    sc = scale_spec(task_name, scale, convention)
    params = {**sc.task, **(task_params or {})}
    task = make_task(task_name, convention, **params)
    task_dict = asdict(task)  # every parameter, defaults included: a run stays readable if defaults change
    t_train = _with(sc.train, seed=seed, steps=steps)
    m_train = _with(sc.mlp_train, seed=seed, steps=steps)
    size = sc.size
    if size.d_model % size.n_heads:
        raise GeoprobeError(f"d_model {size.d_model} not divisible by {size.n_heads} heads")
    target = n_params(build_transformer(size, task.vocab, max_positions(task), seed))
    longest = task.with_length(max(eval_lengths(sc, task.K))).seq_len  # the MLP reads up to the longest evaluation
    mlp = matched_mlp_config(target, len(task.vocab), longest, depth=sc.mlp_depth)
    notes = (*_COMMON_NOTES, *sc.notes)
    tf = RunSpec(task=task_dict, arch="transformer", size=vars(size).copy(), train=t_train, scale=scale, notes=notes)
    ml = RunSpec(task=task_dict, arch="mlp", size=vars(mlp).copy(), train=m_train, scale=scale, notes=notes)
    return tf, ml


def _with(cfg: TrainConfig, **changes: Any) -> TrainConfig:
    return replace(cfg, **{k: v for k, v in changes.items() if v is not None})


__all__ = ["SCALES", "Scale", "ScaleSpec", "scale_spec", "run_specs", "MLPConfig"]
