"""The scan's analyses, registered: each :class:`Metric` names the ScanResult field it fills (and the name
``ScanConfig.analyses`` and a recipe's ``[analyses] run`` use), the metrics it needs first, what the capture
must hold for it, and its function: capture + config -> its record, from the analysers of
:mod:`geoprobe.analysis`. :func:`geoprobe.scan.run.analyse` runs the configured ones in this order.

Adding a metric: its analyser (geoprobe/analysis/), one ``@metric`` function here, its ScanResult field
(geoprobe/scan/result.py) and its figure (geoprobe/scan/report.py); docs/architecture.md walks it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from geoprobe.errors import PromptError

if TYPE_CHECKING:
    from geoprobe.capture.result import Capture

#: a ScanConfig (geoprobe.scan.config, which reads the registry below: named here without importing it)
ScanConfig = Any


@dataclass
class Context:
    """What the analyses of one scan share: the model's name, the captured layers, the seed, the
    random-init keys (key orthogonality's baseline) and the records of the metrics already run."""

    model: str
    layers: tuple[int, ...]
    seed: int
    init_w_k: np.ndarray | None = None
    init_label: str | None = None
    parts: dict[str, Any] = field(default_factory=dict)

    def scatter(self, cap: Capture, config: ScanConfig) -> tuple[int, ...]:
        """The extra layers of the value-manifold scatter plots."""
        layers = self.layers
        return tuple(layers[cap.index(x)] for x in config.scatter_layers)

    def ci(self, cap: Capture, config: ScanConfig) -> tuple[int, ...] | None:
        """The layers whose PCA and correlations get bootstrap CIs (None: all)."""
        layers = self.layers
        scatter = self.scatter(cap, config)
        ci = None if config.ci_layers == "all" else (layers[-1], *scatter)
        return ci


@dataclass(frozen=True)
class Metric:
    """One registered analysis: ``name``, ``compute(cap, config, ctx) -> record``, the metrics it ``needs``
    first (and ``why``, for the message when one is missing), and whether the capture must keep W_K."""

    name: str
    compute: Callable[[Any, Any, Context], Any]
    needs: tuple[str, ...] = ()
    why: str = ""
    key_weights: bool = False


#: every analysis a scan can run, in the order it runs them (ScanConfig.analyses names them)
METRICS: dict[str, Metric] = {}


def metric(name: str, *, needs: tuple[str, ...] = (), why: str = "", key_weights: bool = False) -> Callable:
    """Register ``fn(cap, config, ctx)`` as the scan's analysis ``name`` (see :class:`Metric`)."""

    def register(fn: Callable[[Any, Any, Context], Any]) -> Callable[[Any, Any, Context], Any]:
        METRICS[name] = Metric(name, fn, needs, why, key_weights)
        return fn

    return register


@metric("manifold")
def manifold(cap: Capture, config: ScanConfig, ctx: Context) -> Any:
    """The value manifold: PCA of the final-token values per layer, with matched nulls."""
    from geoprobe.analysis.manifold import value_manifold

    model, layers, seed = ctx.model, ctx.layers, ctx.seed
    if cap.values is None:
        raise PromptError("the capture has no value vectors; capture with values to run the manifold analysis")
    values = [v.reshape(cap.n_prompts, -1) for v in cap.per_layer("values")]  # widths may differ per layer
    scatter = ctx.scatter(cap, config)
    ci = ctx.ci(cap, config)
    return value_manifold(
        values,
        layers,
        cap.next_entropy,
        model=model,
        scatter_layers=scatter,
        n_resamples=config.pca_resamples,
        null_draws=config.null_draws,
        null_kind=config.null_kind,
        confidence=config.confidence,
        random_state=seed,
        ci_layers=ci,
    )


@metric("alignment", needs=("manifold",), why="it correlates PC1 with entropy")
def alignment(cap: Capture, config: ScanConfig, ctx: Context) -> Any:
    """Entropy alignment: the correlation of each prompt's PC1 coordinate with its next-token entropy."""
    from geoprobe.analysis.alignment import entropy_alignment

    model, layers, seed, parts = ctx.model, ctx.layers, ctx.seed, ctx.parts
    ci = ctx.ci(cap, config)
    return entropy_alignment(
        parts["manifold"].pc1_coords,
        cap.next_entropy,
        layers,
        model=model,
        n_resamples=config.n_resamples,
        n_permutations=config.n_permutations,
        confidence=config.confidence,
        random_state=seed,
        ci_layers=ci,
    )


@metric("orthogonality", key_weights=True)
def orthogonality(cap: Capture, config: ScanConfig, ctx: Context) -> Any:
    """Key orthogonality: mean |cos| between the columns of each head's W_K, against a random-init baseline."""
    from geoprobe.analysis.orthogonality import key_orthogonality

    model, layers, init_w_k, init_label = ctx.model, ctx.layers, ctx.init_w_k, ctx.init_label
    if cap.w_k is None:
        raise PromptError("the capture has no W_K; capture with key weights to run the orthogonality analysis")
    w_k, keys = cap.w_k, cap.keys
    if not cap.layout.uniform:  # each layer's own heads and widths
        w_k, keys = cap.per_layer("w_k"), None if keys is None else cap.per_layer("keys")
        init_w_k = None if init_w_k is None else [w[: x.shape[0], :, : x.shape[2]] for w, x in zip(init_w_k, w_k)]
    return key_orthogonality(
        w_k, layers, cap.layout.d_model, model=model, init_w_k=init_w_k, init_label=init_label, keys=keys
    )


@metric("focusing")
def focusing(cap: Capture, config: ScanConfig, ctx: Context) -> Any:
    """Attention focusing: the entropy of the final token's attention, per head and layer."""
    from geoprobe.analysis.focusing import attention_focusing

    model, layers, seed = ctx.model, ctx.layers, ctx.seed
    return attention_focusing(
        cap.attn_entropy if cap.layout.uniform else cap.per_layer("attn_entropy"),
        layers,
        cap.n_tokens,
        model=model,
        confidence=config.confidence,
        n_resamples=config.n_resamples,
        random_state=seed,
    )


@metric("identifiability")
def identifiability(cap: Capture, config: ScanConfig, ctx: Context) -> Any:
    """Whether each layer's value PC1 is an axis at all: split-half stability against a column-permutation
    null, and North's eigengap (geoprobe.analysis.tracking; docs/metrics/axis_identifiability.md)."""
    from geoprobe.analysis.tracking import axis_identifiability

    if cap.values is None:
        raise PromptError("the capture has no value vectors; capture with values to test PC1's identifiability")
    values = [v.reshape(cap.n_prompts, -1) for v in cap.per_layer("values")]  # widths may differ per layer
    return axis_identifiability(
        values,
        ctx.layers,
        model=ctx.model,
        null_draws=config.null_draws,
        confidence=config.confidence,
        random_state=ctx.seed,
    )
