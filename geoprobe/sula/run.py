"""run_sula: the main SULA condition and its three controls on one model."""

from __future__ import annotations

import numbers
import time
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from geoprobe.checks import config_arg, model_arg
from geoprobe.experiment.reporter import Reporter, as_reporter
from geoprobe.provenance import prompts_hash
from geoprobe.sula.config import CONDITIONS, SulaConfig, SulaError
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE, calibration_metrics, label_distribution, label_logprobs
from geoprobe.sula.geometry import final_values, fit_basis, geometry_stats
from geoprobe.sula.result import SulaCondition, SulaResult
from geoprobe.sula.task import check_context, generate, label_tokens, prompt_arrays
from geoprobe.sula.tracking import track_k


def run_sula(
    model: Any,
    config: SulaConfig = SulaConfig(),
    *,
    layer: int | None = None,
    conditions: tuple[str, ...] = CONDITIONS,
    progress: Callable[[str, int, int], None] | Reporter | None = None,
    units: Any = None,
) -> SulaResult:
    """Generate the SULA prompts of every condition, score the two labels at each query, capture
    the final-token values at ``layer`` (default ``config.layer``, the final layer), fit one PCA basis on
    the main prompts and project every condition into it. ``progress(stage, done, total)`` is called as
    batches finish; a :class:`~geoprobe.experiment.Reporter` is also told, as it starts, of the analysis.
    ``units`` (:class:`geoprobe.experiment.Units`) keeps each condition's label probabilities and values
    as they finish, and gives back those a stopped run finished.

    Label tokens are checked for every condition before any forward pass (SulaError when a label
    is not one token, unless ``config.first_token``), and so is the context length."""
    model, config = model_arg(model), config_arg(config, SulaConfig)
    reporter = as_reporter(progress)  # a Reporter as it is; a plain callable gets progress only
    if "main" not in conditions or any(c not in CONDITIONS for c in conditions):
        raise SulaError(f"conditions {conditions} must include 'main' and be among {', '.join(CONDITIONS)}")
    L = model.layout.n_layers
    layer = config.layer if layer is None else layer
    if isinstance(layer, bool) or not isinstance(layer, numbers.Integral):
        raise SulaError(f"--layer {layer!r} is not an integer layer index; pass --layer between 0 and {L - 1}")
    if not -L <= layer < L:
        raise SulaError(
            f"--layer {layer} is out of range for a model with {L} layers; pass --layer between 0 and {L - 1} "
            f"(or -{L}..-1 from the end; default -1, the final layer)"
        )
    layer_idx = int(layer) % L
    t0 = time.perf_counter()
    prompts = {c: generate(replace(config, condition=c)) for c in conditions}
    labels = {
        c: label_tokens(model.tokenizer, config.labels_for(c), lead=config.label_lead, first_token=config.first_token)
        for c in conditions
    }
    check_context(model, [p for ps in prompts.values() for p in ps])
    timings: dict[str, float] = {"generate": time.perf_counter() - t0}

    def stage(name: str) -> Callable[[int, int], None]:
        return lambda done, total: reporter(name, done, total)

    # model side: label probabilities, then the values at the layer
    t0 = time.perf_counter()
    dist = {}
    for c in conditions:
        kept = None if units is None else units.get(f"labels.{c}")
        if kept is not None:
            dist[c] = kept[0]
            continue
        lp = label_logprobs(
            model,
            [p.text for p in prompts[c]],
            labels[c].ids,
            batch_size=config.batch_size,
            progress=stage(f"{c}: labels"),
        )
        dist[c] = label_distribution(lp)
        if units is not None:
            units.put(f"labels.{c}", dist[c])
    timings["labels"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    values = {}
    for c in conditions:
        kept = None if units is None else units.get(f"values.{c}")
        if kept is not None:
            values[c] = kept[0]["values"]
            continue
        values[c], _ = final_values(
            model, [p.text for p in prompts[c]], layer_idx, batch_size=config.batch_size, progress=stage(f"{c}: values")
        )
        if units is not None:
            units.put(f"values.{c}", {"values": values[c]})
    timings["values"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_prompts = sum(len(p) for p in prompts.values())
    with reporter.status(
        f"analysing {len(conditions)} conditions ({n_prompts:,} prompts, {config.n_resamples:,} bootstrap resamples) …"
    ):
        basis, out = _analyse(config, conditions, prompts, labels, dist, values)
    timings["analysis"] = time.perf_counter() - t0
    prov = model.provenance.with_prompts([p.text for p in prompts["main"]], config.seed).to_dict()
    return SulaResult(
        model=model.provenance.model_id,
        provenance=prov,
        config=config,
        layer=int(layer_idx),
        pc1_ratio=basis.pc1_ratio,
        conditions=out,
        timings=timings,
    )


def _analyse(
    config: SulaConfig,
    conditions: tuple[str, ...],
    prompts: dict[str, Any],
    labels: dict[str, Any],
    dist: dict[str, Any],
    values: dict[str, np.ndarray],
) -> tuple[Any, dict[str, SulaCondition]]:
    """One PCA basis, fitted on the main prompts and oriented by the model's label entropy there; every
    condition projected into it, with its calibration metrics, geometry and ρ_S(k, PC1): (basis, conditions)."""
    basis = fit_basis(values["main"], dist["main"]["entropy"])
    parent = np.random.default_rng(config.seed)
    seeds = parent.spawn(2 * len(conditions))  # as before issue 37: the same draws, the same numbers
    cols_of = {c: prompt_arrays(prompts[c]) for c in conditions}
    pc1_of = {c: basis.pc1(values[c]) for c in conditions}
    # ρ_S(k, PC1) across prompts, and main − each control paired on the same prompts (control prompt i is
    # main prompt i with its labels or words changed): one set of stratified resamples for all conditions
    tracked = track_k(
        {c: cols_of[c]["k"] for c in conditions},
        pc1_of,
        reference="main",
        paired=True,
        confidence=config.confidence,
        n_resamples=config.n_resamples,
        random_state=parent.spawn(1)[0],
    )
    out = {}
    for i, c in enumerate(conditions):
        cols, pc1 = cols_of[c], pc1_of[c]
        # both targets resample the same prompts (one seed), so their equal-rank Spearman ρ agree exactly
        targets = {PREDICTIVE: cols["entropy_bits"], POSTERIOR: cols["posterior_entropy_bits"]}
        metrics = {
            t: calibration_metrics(
                cols["k"],
                h,
                dist[c]["entropy"],
                dist[c]["mass"],
                confidence=config.confidence,
                n_resamples=config.n_resamples,
                random_state=np.random.default_rng(seeds[2 * i].bit_generator.seed_seq),
                target=t,
                min_label_mass=config.min_label_mass,
            )
            for t, h in targets.items()
        }
        geometry = geometry_stats(
            cols["k"],
            pc1,
            cols["entropy_bits"],
            confidence=config.confidence,
            n_resamples=config.n_resamples,
            random_state=seeds[2 * i + 1],
            posterior_entropy=cols["posterior_entropy_bits"],
        )
        geometry = replace(geometry, k_tracking=tracked[c][0], k_contrast=tracked[c][1])
        out[c] = SulaCondition(
            condition=c,
            labels=labels[c],
            prompts_hash=prompts_hash([p.text for p in prompts[c]]),
            k=cols["k"],
            n1=cols["n1"],
            n2=cols["n2"],
            bayes_predictive=cols["predictive"],
            bayes_entropy=cols["entropy_bits"],
            model_predictive=dist[c]["predictive"],
            model_entropy=dist[c]["entropy"],
            label_mass=dist[c]["mass"],
            pc1=pc1,
            metrics=metrics[PREDICTIVE],
            geometry=geometry,
            posterior_entropy=cols["posterior_entropy_bits"],
            posterior_metrics=metrics[POSTERIOR],
            **mass_flags(dist[c]["mass"], config.min_label_mass),
        )
    return basis, out


def mass_flags(mass: np.ndarray, min_label_mass: float | None) -> dict[str, Any]:
    """``low_mass`` (per prompt: label mass below the threshold, left out of the metrics) and
    ``flagged`` (the condition's mean label mass below it: left out of the headline); none without
    a threshold."""
    if min_label_mass is None:
        return {}
    return {"low_mass": mass < min_label_mass, "flagged": bool(np.mean(mass) < min_label_mass)}
