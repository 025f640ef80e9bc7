"""Wind-tunnel length generalisation: a trained wind-tunnel transformer scored against the analytic
posterior at sequence lengths beyond the one it was trained on.

For each K in the requested lengths, ``n_eval`` fresh sequences of ``task.with_length(K)`` are
drawn (the windtunnel's own evaluation seeds) and the transformer's predictive distribution is
compared with the exact posterior by :func:`geoprobe.windtunnel.evaluate.metrics` (entropy MAE,
the paper's and the per-sample definition, and KL(Bayes ‖ model), bits, with bootstrap CIs over
sequences). Critical length: the smallest K above the training length whose per-sample MAE CI
lies wholly above the training length's (lo_K > hi_K0); None when none does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import local_weights_hash
from geoprobe.positional.result import TunnelLengthCurve
from geoprobe.provenance import package_versions
from geoprobe.windtunnel.evaluate import eval_batch, metrics, model_predictive
from geoprobe.windtunnel.train import checkpoint_dir, list_checkpoints, load_weights, read_spec


def check_tunnel_lengths(lengths: Sequence[int], max_positions: int, seq_len: Callable[[int], int]) -> None:
    for K in lengths:
        if seq_len(K) > max_positions:
            raise GeoprobeError(
                f"--lengths {K} gives sequences of {seq_len(K)} tokens, beyond the transformer's "
                f"{max_positions} positions; pass smaller --lengths"
            )


def tunnel_length_curve(
    run_dir: str | Path,
    lengths: Sequence[int],
    *,
    n_eval: int = 256,
    n_resamples: int = 1000,
    progress: Callable[[str, int, int], None] | None = None,
) -> TunnelLengthCurve:
    """Score the finished transformer of wind-tunnel run ``run_dir`` at every K in ``lengths``."""
    run = Path(run_dir)
    if not (run / "transformer" / "run.json").exists():
        raise GeoprobeError(
            f"--windtunnel {str(run)!r} is not a wind-tunnel run (no transformer/run.json); pass a "
            "directory written by 'geoprobe windtunnel train'"
        )
    spec = read_spec(run / "transformer")
    steps = list_checkpoints(run / "transformer")
    if not steps:
        raise GeoprobeError(f"--windtunnel {str(run)!r} has no checkpoint; finish 'geoprobe windtunnel train' first")
    ckpt = checkpoint_dir(run / "transformer", steps[-1])
    model = load_weights(spec, ckpt)
    task = spec.task_obj
    check_tunnel_lengths(lengths, int(model.config.max_position_embeddings), lambda K: task.with_length(K).seq_len)
    rows = []
    for i, K in enumerate(lengths):
        t_k = task.with_length(K)
        batch = eval_batch(t_k, n_eval, spec.train.seed)
        probs, mass = model_predictive(model, batch, t_k.answer_ids)
        rows.append(metrics("transformer", probs, batch, mass, n_resamples=n_resamples, random_state=spec.train.seed))
        if progress is not None:
            progress("wind-tunnel lengths", i + 1, len(lengths))
    prov = {
        "run_dir": str(run),
        "checkpoint_step": steps[-1],
        "weights": local_weights_hash(ckpt),
        "seed": spec.train.seed,
        "eval_data": f"{n_eval} fresh sequences per length (windtunnel evaluation seeds)",
        "train_seed": spec.train.seed,
        "n_eval": n_eval,
        "n_resamples": n_resamples,
        "versions": package_versions(),
    }
    return TunnelLengthCurve(
        run_dir=str(run), task=dict(spec.task), train_K=int(task.K), metrics=tuple(rows), provenance=prov
    )
