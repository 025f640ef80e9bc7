"""`geoprobe intervene`: entropy-axis interventions during SULA (arXiv 2512.23752 §4.5–4.6, §6.2).

For each experiment (a set of layers edited together) and each strength, the edit along the
entropy axis and along ``n_controls`` random axes (orthogonal to it, same operation and
strength) is measured on the SULA prompts and on held-out text:

* geometry: ρ(axis coordinate of the edited values at the highest edited layer, the model's
  next-token entropy);
* SULA behaviour: MAE (bits) of the model's label entropy against each analytic target, the
  predictive entropy (``sula_mae``) and the posterior entropy (``sula_mae_posterior``, the paper's
  target; docs/sula.md), and their Spearman ρ (``sula_spearman``, the same for both targets);
* next-token behaviour: Δ entropy (bits), KL(unperturbed ‖ edited) in bits, top-1 agreement;
* perplexity ratio on held-out encyclopedic text (corpus passages).

The entropy axis of a layer is PC1 of the z-scored final-token values over the SULA prompts,
oriented by its correlation with the model's next-token entropy (:func:`fit_entropy_axis`).
Each experiment resumes from the residual stream at its lowest layer
(:class:`~geoprobe.intervene.resume.Resumable`, where the architecture is tested resumable; full
forwards otherwise), so a sweep never recomputes the layers below.

Per experiment and strength, the change of SULA calibration under the axis edit is set against
the change under the random edits, for both targets, and judged by a stated rule
(:mod:`geoprobe.intervene.verdict`); the report leads with the verdict of the multi-layer edit.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, replace
from typing import Any, Callable

import numpy as np

from geoprobe.analysis.stats import Estimate, bootstrap_ci, constant_columns
from geoprobe.checks import config_arg, model_arg
from geoprobe.corpora import CorpusUnavailable, candidates
from geoprobe.intervene.axis import InterventionError, fit_entropy_axis, random_axes
from geoprobe.intervene.config import InterventionConfig, paper_experiments
from geoprobe.intervene.forward import final_logprobs, text_nll
from geoprobe.intervene.metrics import axis_entropy_correlation, entropy_bits_of, kl_bits
from geoprobe.intervene.ops import Edit, intervened, resolve_layer
from geoprobe.intervene.result import InterventionResult, InterventionRow
from geoprobe.intervene.resume import resumer
from geoprobe.intervene.verdict import calibration_verdict, headline
from geoprobe.sula.config import SulaConfig
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE, calibration_metrics, label_distribution
from geoprobe.sula.task import check_context, generate, label_tokens, prompt_arrays


def held_out_texts(model: Any, n: int, seed: int) -> list[str]:
    """``n`` encyclopedic passages (64–128 tokens) for the perplexity ratio; none if the corpus is missing."""
    try:
        return [
            p.text
            for p in candidates(
                ["encyclopedic"], n, tokenizer=model.tokenizer, min_tokens=64, max_tokens=128, seed=seed + 7919
            )
        ]
    except CorpusUnavailable:
        return []


def without_flat_layers(
    model: Any,
    texts: list[str],
    exps: tuple[tuple[int, ...], ...],
    values: dict[int, np.ndarray],
    *,
    explicit: bool,
) -> tuple[tuple[tuple[int, ...], ...], list[str]]:
    """The experiments without the layers whose final-token ``values`` are the same for every
    prompt (no variance: no entropy axis), and a note per layer left out. Layers the user named
    (``explicit``: ``--layers`` or a recipe's ``experiments``) are never left out silently: an
    InterventionError names the layer, why, and the layers to pass. From the default (paper)
    layers they are dropped, with the note; an error only if no layer is left."""
    flat = [x for x in sorted(values) if constant_columns(values[x].reshape(len(texts), -1)).all()]
    if not flat:
        return exps, []
    ends = {ids[-1] for ids in model.tokenizer(texts, add_special_tokens=False)["input_ids"]}
    token = f" {model.tokenizer.decode(list(ends))!r}" if len(ends) == 1 else ""
    why = f"final-token values are identical for all {len(texts)} SULA prompts"
    if 0 in flat:
        why += f" (every prompt ends in the token{token}, and layer 0's values depend on that token alone)"
    why += ", so there is no entropy axis to fit"
    names = ", ".join(map(str, flat))
    kept = tuple(e for e in dict.fromkeys(tuple(x for x in e if x not in flat) for e in exps) if e)
    if explicit or not kept:
        L = model.layout.n_layers
        if max(flat) + 1 >= L:
            raise InterventionError(f"layer {names}: {why}; this model has no deeper layer to edit")
        example = ",".join(map(str, sorted({x for e in kept for x in e}) or [max(flat) + 1]))
        raise InterventionError(
            f"layer {names}: {why}; pass --layers from {max(flat) + 1} to {L - 1} (e.g. --layers {example}; "
            "experiments in a recipe)"
        )
    return kept, [f"layer {names} left out of the default experiments: its {why}"]


def check_logprob_memory(model: Any, sc: SulaConfig) -> None:
    """Refuse, before any forward pass, a run whose next-token log-probabilities do not fit: the unedited
    and one edited (n prompts × vocabulary) float32 array are held at once (one line naming the largest
    --n-per-k that fits)."""
    from geoprobe.capture.memory import check_memory

    vocab, n_k = model.layout.vocab_size, len(sc.k_values)
    check_memory(
        lambda per_k: 2 * 4 * per_k * n_k * vocab,
        sc.n_per_k,
        what=f"the next-token log-probabilities of {sc.n_per_k * n_k} SULA prompts × {vocab} tokens (two copies)",
        flag="--n-per-k",
    )


def run_interventions(
    model: Any,
    config: InterventionConfig = InterventionConfig(),
    *,
    progress: Callable[[str, int, int], None] | None = None,
    units: Any = None,
) -> InterventionResult:
    """Fit the entropy axes on SULA prompts, then edit (true axis and random controls) per
    experiment and strength, resuming from the residual stream; see the module docstring. ``units``
    (:class:`geoprobe.experiment.Units`) keeps each edit's metrics as it finishes, and gives back those
    a stopped run finished."""
    model, config = model_arg(model), config_arg(config, InterventionConfig)
    L = model.layout.n_layers
    exps = tuple(tuple(sorted({resolve_layer(x, L) for x in e})) for e in (config.experiments or paper_experiments(L)))
    strengths = config.strength_list
    timings: dict[str, float] = {}
    t = time.perf_counter()
    sc = SulaConfig(
        n_per_k=config.n_per_k,
        seed=config.seed,
        batch_size=config.batch_size,
        n_resamples=config.n_resamples,
        labels=config.labels,
        first_token=config.first_token,
    )
    check_logprob_memory(model, sc)
    prompts = generate(sc)
    texts = [p.text for p in prompts]
    labels = label_tokens(model.tokenizer, sc.labels_for("main"), lead=sc.label_lead, first_token=sc.first_token)
    check_context(model, prompts)
    cols = prompt_arrays(prompts)
    all_layers = sorted({x for e in exps for x in e})
    lp0, vals0 = final_logprobs(model, texts, config.batch_size, value_layers=all_layers)
    # before the held-out text and the sweep: a layer whose values never vary has no axis
    exps, notes = without_flat_layers(model, texts, exps, vals0, explicit=config.experiments is not None)
    all_layers = sorted({x for e in exps for x in e})
    held = held_out_texts(model, config.n_texts, config.seed)
    h0 = entropy_bits_of(lp0)
    nll0 = text_nll(model, held) if held else np.zeros(0)
    axes = {layer: fit_entropy_axis(vals0[layer], h0, layer=layer) for layer in all_layers}
    timings["baseline_s"] = time.perf_counter() - t
    kw = dict(n_resamples=config.n_resamples, random_state=config.seed)

    targets = {POSTERIOR: cols["posterior_entropy_bits"], PREDICTIVE: cols["entropy_bits"]}  # the paper's first

    def sula_metrics(lp: Any) -> tuple[dict[str, Estimate], np.ndarray]:
        dist = label_distribution(lp[:, list(labels.ids)].double().numpy())
        m = {
            t: calibration_metrics(
                cols["k"], h, dist["entropy"], dist["mass"], n_resamples=config.n_resamples, random_state=config.seed
            )
            for t, h in targets.items()
        }
        # Spearman ρ: equal ranks and the same resamples make it the same for both targets
        out = {"sula_mae": m[PREDICTIVE].mae, "sula_spearman": m[PREDICTIVE].spearman}
        return out | {"sula_mae_posterior": m[POSTERIOR].mae}, dist["entropy"]

    sula0, label_h0 = sula_metrics(lp0)
    baseline: dict[str, Estimate] = dict(sula0)
    axis_info: dict[int, dict[str, float]] = {}
    for layer in all_layers:
        baseline[f"axis_entropy_rho@{layer}"] = axis_entropy_correlation(vals0[layer], h0, axes[layer], **kw)
        axis_info[layer] = {"rho_axis_entropy": baseline[f"axis_entropy_rho@{layer}"].value}
    nan = Estimate(math.nan, math.nan, math.nan)
    for m in ("delta_entropy", "kl", "perplexity_ratio"):
        baseline[m] = Estimate(0.0, 0.0, 0.0)
    baseline["top1_agreement"] = Estimate(1.0, 1.0, 1.0)
    rng = np.random.default_rng(config.seed)
    controls = {layer: random_axes(axes[layer], config.n_controls, rng) for layer in all_layers}
    rows: list[InterventionRow] = []
    label_h: dict[tuple[tuple[int, ...], float, str], np.ndarray] = {}
    total, done = len(exps) * len(strengths) * (1 + config.n_controls), 0
    t = time.perf_counter()
    for layers in exps:
        resume = None
        g = max(layers)
        for s in strengths:
            sets = [("entropy", {x: axes[x] for x in layers})]
            sets += [(f"random-{i}", {x: controls[x][i] for x in layers}) for i in range(config.n_controls)]
            for name, ax in sets:
                key = f"{'_'.join(map(str, layers))}.{float(s)!r}.{name}"
                kept = None if units is None else units.get(key)
                if kept is not None:  # finished by a run that stopped
                    label_h[(layers, float(s), name)] = kept[0]["label_h"]
                    metrics = {k: Estimate.from_dict(e) for k, e in kept[1].items()}
                    rows.append(InterventionRow(layers, float(s), name, metrics))
                    done += 1
                    continue
                if resume is None:
                    resume = resumer(model, texts, min(layers), config.batch_size)
                edits = {x: Edit(a, config.op, s) for x, a in ax.items()}
                lp, vals = resume.run(edits, [g])
                h1 = entropy_bits_of(lp)
                sula, label_h[(layers, float(s), name)] = sula_metrics(lp)
                if held:
                    with intervened(model, edits):
                        nll = text_nll(model, held)
                    ppl = bootstrap_ci(
                        (nll0, nll),
                        statistic=lambda b, p, axis: np.exp(p.mean(axis) - b.mean(axis)),
                        method="percentile",
                        **kw,
                    )
                else:
                    ppl = nan
                agree = (lp0.argmax(-1) == lp.argmax(-1)).double().numpy()
                metrics = {
                    "axis_entropy_rho": axis_entropy_correlation(vals[g], h1, axes[g], **kw),
                    **sula,
                    "delta_entropy": bootstrap_ci(h1 - h0, method="percentile", **kw),
                    "kl": bootstrap_ci(kl_bits(lp0, lp), method="percentile", **kw),
                    "top1_agreement": bootstrap_ci(agree, method="percentile", **kw),
                    "perplexity_ratio": ppl,
                }
                rows.append(InterventionRow(layers, float(s), name, metrics))
                if units is not None:
                    units.put(
                        key,
                        {"label_h": label_h[(layers, float(s), name)]},
                        {k: e.to_dict() for k, e in metrics.items()},
                    )
                done += 1
                if progress is not None:
                    progress("interventions", done, total)
    timings["interventions_s"] = time.perf_counter() - t
    verdicts = []
    for layers in exps:
        for s in strengths:
            ctrl = np.stack([label_h[(layers, float(s), f"random-{i}")] for i in range(config.n_controls)])
            verdicts.append(
                calibration_verdict(
                    layers,
                    s,
                    config.op,
                    targets,
                    label_h0,
                    label_h[(layers, float(s), "entropy")],
                    ctrl,
                    n_resamples=config.n_resamples,
                    random_state=config.seed,
                )
            )
    lead = headline(verdicts)
    verdicts[lead] = replace(verdicts[lead], headline=True)
    prov = model.provenance.with_prompts(texts, config.seed).to_dict()
    cfg = asdict(config)
    cfg["experiments"] = [list(e) for e in exps]
    cfg["strengths"] = list(strengths)
    cfg["labels"] = list(labels.labels)
    cfg["held_out_texts"] = len(held)
    if notes:
        cfg["notes"] = notes
    return InterventionResult(
        model=model.provenance.model_id,
        provenance=prov,
        config=cfg,
        op=config.op,
        baseline=baseline,
        axes=axis_info,
        rows=tuple(rows),
        timings=timings,
        verdicts=tuple(verdicts),
    )
