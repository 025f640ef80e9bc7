"""A scan's numbers as tidy rows, one per layer × metric, for tables across many scans (``geoprobe
sweep``'s sweep.parquet): ``layer``, ``metric``, ``estimate``, ``low``/``high`` (its confidence interval;
None where the metric has none), ``null`` (the value the metric is compared with) and ``n`` (what the
estimate is over)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geoprobe.analysis.orthogonality import head_mean


def _f(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _row(layer: int | None, metric: str, est: Any, null: Any = None, n: Any = None) -> dict[str, Any]:
    value, low, high = (est.value, est.low, est.high) if hasattr(est, "value") else (est, None, None)
    return dict(
        layer=layer,
        metric=metric,
        estimate=_f(value),
        low=_f(low),
        high=_f(high),
        null=_f(null),
        n=None if n is None else int(n),
    )


def scan_rows(result: Any) -> list[dict[str, Any]]:
    """Rows of a ScanResult:

    * ``pc1``, ``pc12``, ``participation_ratio`` (value manifold; null: the matched null's mean; n prompts);
    * ``alignment_spearman`` (|ρ| of PC1 with next-token entropy; null: the upper 95 % of |ρ| under the
      permutation null, not 0: |ρ| of independent variables is about √(2/(π(n−1))) on average; n prompts);
    * ``key_orthogonality`` (mean |cos| over the layer's heads, no CI; null: the random-init twin's, else
      the iid-Gaussian E|cos|; n heads);
    * ``attention_entropy`` (bits, mean over prompts; null: log₂ T, uniform attention; n prompts);
    * ``focusing_reduction`` (layer None: % reduction first → last layer; null 0);
    * ``pc1_split_half`` (median |cos| between the PC1s of two halves of the prompts, interval over halvings;
      null: the column-permutation null's upper quantile; n prompts) and ``pc1_eigengap`` (r1 − r2, no CI;
      null: North's error r1·√(2/n); n prompts): a layer's PC1 is identifiable when both beat their nulls."""
    rows: list[dict[str, Any]] = []
    m, a, o, f = result.manifold, result.alignment, result.orthogonality, result.focusing
    if m is not None:
        for i, layer in enumerate(m.layers):
            rows.append(_row(layer, "pc1", m.pc1[i], m.null[i].pc1.value, m.n))
            rows.append(_row(layer, "pc12", m.pc12[i], m.null[i].pc12.value, m.n))
            rows.append(_row(layer, "participation_ratio", m.pr[i], m.null[i].pr.value, m.n))
    if a is not None:
        for i, layer in enumerate(a.layers):
            null = None if a.null_high is None else a.null_high[i]  # |ρ| under independence, upper quantile
            rows.append(_row(layer, "alignment_spearman", a.spearman[i], null, a.n))
    if o is not None:
        init = None if o.init_per_head is None else head_mean(o.init_per_head)
        heads = (~np.isnan(o.per_head)).sum(axis=1)
        for i, layer in enumerate(o.layers):
            null = o.gaussian if init is None else init[i]
            rows.append(_row(layer, "key_orthogonality", o.layer_mean[i], null, heads[i]))
    if f is not None:
        for i, layer in enumerate(f.layers):
            rows.append(_row(layer, "attention_entropy", f.mean[i], f.uniform[i], f.n))
        rows.append(_row(None, "focusing_reduction", f.reduction, 0.0, f.n))
    ident = getattr(result, "identifiability", None)
    if ident is not None:
        for layer, half, gap in zip(ident.layers, ident.split_half, ident.eigengap):
            rows.append(_row(layer, "pc1_split_half", half.value, half.null_high, ident.n))
            rows.append(_row(layer, "pc1_eigengap", gap.gap, gap.north_error, ident.n))
    return rows
