"""The scan's random-initialisation null: which model stands for "this architecture before training", and
its capture on the scan's own prompts (:class:`geoprobe.analysis.initnull.InitNull` holds what comes back).

Where the null comes from, first match wins:

1. ``baseline`` (``--baseline``, ``baseline`` in a probe's ``[analyses]``): a model (directory, alias,
   Hub id) that is this model's own initialisation; one draw, paired with the model by prompt and head.
2. The series' own step 0: a checkpoint directory of a ``geoprobe trajectory`` run (``…/checkpoints/stepN``
   beside ``…/checkpoints/step0`` and the run's ``trajectory.json``), or a Hub model whose alias lists a
   ``step0`` revision (Pythia). Scanning step 0 itself compares it with itself: Δ = 0, it beats nothing.
3. ``init_draws`` fresh random initialisations of the architecture (the loaded model's config through
   ``AutoModelForCausalLM.from_config``; transformers' own initialiser, which is not every family's
   training init), seeds ``INIT_SEED + 1000·seed + j``. Skipped (no null: no criterion passes) when the
   model's float32 parameters exceed ``MAX_NULL_BYTES`` on the CPU, or ``init_draws = 0``.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from geoprobe.analysis.initnull import InitNull, pc_shares, pc_shares_resampled
from geoprobe.errors import GeoprobeError

#: the first weight seed of the random-init draws (far from the seeds people give twins: 0, 1, 2, …)
INIT_SEED = 10_000
#: the largest model (float32 parameter bytes) whose random-init twin is built on the CPU for the null
MAX_NULL_BYTES = 8 * 2**30


def own_step0(model: Any) -> tuple[str, str | None, str] | None:
    """(name, revision, label) of the model's own step-0 checkpoint, or None (see the module docs)."""
    prov = model.provenance
    if prov.source == "local":
        here = Path(prov.model_id).expanduser()
        step0 = here.parent / "step0"
        if here.parent.name == "checkpoints" and (here.parent.parent / "trajectory.json").is_file() and step0.is_dir():
            return str(step0), None, f"{step0} (the run's own step 0)"
        return None
    spec = getattr(model, "spec", None)
    if prov.source == "hub" and spec is not None and "step0" in (spec.revisions or ()):
        return spec.alias, "step0", f"{spec.alias} step0 checkpoint (the released initialisation)"
    return None


def random_init_like(model: Any, seed: int) -> Any:
    """The loaded model's architecture with fresh random weights (``torch.manual_seed(seed)``), on its
    device and in its dtype, with its tokenizer."""
    from transformers import AutoModelForCausalLM

    from geoprobe.models.loaded import boot
    from geoprobe.provenance import Provenance

    cfg = model.hf_model.config
    dtype = next(model.hf_model.parameters()).dtype
    torch.manual_seed(seed)
    hf = AutoModelForCausalLM.from_config(cfg, dtype=dtype).to(model.device)
    prov = Provenance(
        model_id=f"{model.provenance.model_id} (random init)",
        source="twin",
        weights=f"random-init seed={seed}",
        tokenizer=model.provenance.tokenizer,
        dtype=model.provenance.dtype,
        seed=seed,
    )
    return boot(hf, model.tokenizer, prov, model.spec)


def null_models(model: Any, config: Any) -> Iterator[tuple[Any, str, int | None, str]]:
    """(model, source, weight seed or None, label) for each null draw, loaded one at a time."""
    from geoprobe.models.init_weights import parameter_bytes
    from geoprobe.models.loading import load_model

    if config.baseline is not None:
        yield (
            load_model(config.baseline, dtype=model.provenance.dtype),
            "step0",
            None,
            f"{config.baseline} (--baseline)",
        )
        return
    own = own_step0(model)
    if own is not None:
        name, revision, label = own
        try:
            step0 = load_model(name, revision=revision, dtype=model.provenance.dtype)
        except GeoprobeError as exc:  # a Hub step0 offline and not cached: say so, draw instead
            warnings.warn(f"step0 baseline unavailable, using random-init draws instead: {exc}", stacklevel=3)
        else:
            yield step0, "step0", None, label
            return
    size = parameter_bytes(model.hf_model.config)
    if config.init_draws == 0:
        return
    if size > MAX_NULL_BYTES and model.device.type == "cpu":
        warnings.warn(
            f"no random-init null: the architecture's float32 parameters take {size / 2**30:.1f} GiB, above the "
            f"{MAX_NULL_BYTES / 2**30:.0f} GiB built on the CPU for it; pass --baseline with its step-0 checkpoint",
            stacklevel=3,
        )
        return
    own_seed = getattr(model.provenance, "weight_seed", None)  # a twin's own weights are no fresh draw
    first = INIT_SEED + 1000 * config.seed
    for seed in [s for s in range(first, first + config.init_draws + 1) if s != own_seed][: config.init_draws]:
        yield random_init_like(model, seed), "twin", seed, ""


def init_null(
    model: Any,
    texts: Sequence[str],
    config: Any,
    cap: Any,
    idx: np.ndarray,
    *,
    capture_fn: Callable[..., Any] | None = None,
) -> tuple[InitNull | None, np.ndarray | None]:
    """Capture every null draw on ``texts`` (the scan's layers' first and last only, values at the last)
    and reduce it to an :class:`InitNull` on the scan's resample indices ``idx``, with the first draw's W_K
    at the scan's layers (key orthogonality's per-layer baseline); (None, None) when there is none."""
    from geoprobe.capture.run import CaptureConfig, capture, key_weights
    from geoprobe.scan.metrics import METRICS

    layers = (cap.layers[0], cap.layers[-1])
    cc = CaptureConfig(
        layers=layers if layers[0] != layers[1] else layers[:1],
        keys=False,
        key_weights=False,
        batch_size=config.batch_size,
        max_tokens=config.max_tokens,
    )
    want_keys = (
        any(METRICS[a].key_weights for a in config.analyses)
        and not model.arch.key_weights_reason
        and model.layout.uniform
    )
    draws, labels, seeds, first_w_k = [], [], [], None
    source = "twin"
    for null_model, source, seed, label in null_models(model, config):
        if source == "step0" and null_model.provenance.weights == model.provenance.weights:
            c, w_k = cap, (cap.w_k if want_keys else None)  # step 0 scanned: its own capture, so Δ is exactly 0
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the draws' own capture notes (batching, truncation) are the scan's
                c = (capture_fn or capture)(null_model, list(texts), cc, seed=config.seed)
            w_k = key_weights(null_model, cap.layers) if want_keys else None
        first_w_k = w_k if first_w_k is None else first_w_k
        draws.append((c, w_k))
        labels.append(label)
        if seed is not None:
            seeds.append(seed)
        del null_model
        gc.collect()
    if not draws:
        return None, None
    if source == "twin":
        label = (
            f"{cap.provenance.model_id} architecture at random init ({len(draws)} draws, seeds {seeds[0]}…{seeds[-1]})"
        )
    else:
        label = labels[0]
    return null_of(draws, source, label, tuple(seeds), idx[: config.pca_resamples]), first_w_k


def null_of(
    draws: Sequence[tuple[Any, np.ndarray | None]], source: str, label: str, seeds: tuple[int, ...], idx: np.ndarray
) -> InitNull:
    """An :class:`InitNull` from the draws' captures (and W_K, or None), ``idx`` the shared PCA resamples:
    the final captured layer's value shares, the first and last layers' head-mean entropies per prompt."""
    from geoprobe.analysis.orthogonality import head_orthogonality

    cols: dict[str, list[Any]] = {k: [] for k in ("pc1", "pc12", "pc1_boot", "pc12_boot", "first", "last", "keys")}
    for c, w_k in draws:
        values = c.per_layer("values")[-1].reshape(c.n_prompts, -1)
        s1, s12 = pc_shares(values)
        boot = pc_shares_resampled(values, idx)
        ent = [np.asarray(e, dtype=np.float64) for e in c.per_layer("attn_entropy")]  # as focusing averages them
        for k, v in zip(cols, (s1, s12, boot[:, 0], boot[:, 1], ent[0].mean(axis=1), ent[-1].mean(axis=1))):
            cols[k].append(v)
        if w_k is not None:
            cols["keys"].append(head_orthogonality(w_k))
    return InitNull(
        source=source,  # type: ignore[arg-type]
        label=label,
        seeds=seeds,
        pc1=np.array(cols["pc1"]),
        pc12=np.array(cols["pc12"]),
        pc1_boot=np.array(cols["pc1_boot"]),
        pc12_boot=np.array(cols["pc12_boot"]),
        entropy_first=np.array(cols["first"]),
        entropy_last=np.array(cols["last"]),
        key_cos=np.array(cols["keys"]) if len(cols["keys"]) == len(draws) else None,
    )
