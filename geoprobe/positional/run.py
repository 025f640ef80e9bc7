"""``geoprobe positional``: capture prompts of exact lengths, fit per-head priors, measure stability."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from geoprobe.capture import CaptureConfig, capture
from geoprobe.capture.run import resolve_layers
from geoprobe.checks import config_arg, model_arg
from geoprobe.errors import GeoprobeError
from geoprobe.models.language import text_config
from geoprobe.paths import read_json
from geoprobe.positional.config import PositionalConfig
from geoprobe.positional.heads import fit_heads
from geoprobe.positional.profile import distance_windows, token_windows
from geoprobe.positional.result import PositionalResult, TunnelLengthCurve
from geoprobe.positional.stability import Stability, length_point

Progress = Callable[[str, int, int], None]


def check_model(config: PositionalConfig, model: Any) -> None:
    """Limits that depend on the model: the context window."""
    ctx = int(model.context_length)
    if config.fit_length > ctx:
        raise GeoprobeError(
            f"--lengths {config.fit_length} exceeds the model's context window of {ctx} tokens; "
            f"pass --lengths up to {ctx} (and --max-distance up to {ctx - 1 - config.exclude_first})"
        )


def query_heads(layout: Any, layers: tuple[int, ...]) -> int:
    """The one number of query heads of ``layers``; where they differ (per-layer head layouts), a
    GeoprobeError naming each group and --layers."""
    groups: dict[int, list[int]] = {}
    for x in layers:
        groups.setdefault(layout.heads(x).n_heads, []).append(x)
    if len(groups) > 1:
        said = "; ".join(f"layers {ly}: {h} query heads" for h, ly in groups.items())
        raise GeoprobeError(
            f"the chosen layers differ in their number of query heads ({said}); the per-head fits need one "
            "head count: pass --layers from one group"
        )
    return next(iter(groups))


def rope_of(model: Any) -> tuple[float, int] | None:
    """(rope_theta, rotary_dim) of a RoPE model, None otherwise (or where the base is per layer type)."""
    rot = int(getattr(model.layout, "rotary_dim", 0) or 0)
    cfg = text_config(model.hf_model.config)
    theta = getattr(cfg, "rope_theta", None)
    if theta is None:
        params = getattr(cfg, "rope_parameters", None) or {}
        theta = params.get("rope_theta") if isinstance(params, dict) else None
    if rot < 2 or not isinstance(theta, (int, float)):
        return None
    return float(theta), rot


def run_positional(
    model: Any,
    config: PositionalConfig,
    *,
    progress: Progress | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
) -> PositionalResult:
    """Capture ``n_prompts`` windows of every length, fit the priors at the longest, and (with
    ``config.stability``) measure the stability metrics at every length. With ``checkpoint_dir`` the
    finished batches of each length's capture are kept in ``checkpoint_dir/T<length>``, and a rerun
    resumes from them (:mod:`geoprobe.capture.checkpoint`)."""
    model, config = model_arg(model), config_arg(config, PositionalConfig)
    check_model(config, model)
    layers = resolve_layers(config.layers, model.layout.n_layers)
    n_heads = query_heads(model.layout, layers)
    lengths = config.lengths if config.stability else (config.fit_length,)
    points, all_prompts, sources = [], [], []
    heads = profiles = None
    rope = rope_of(model)
    for T in lengths:
        prompts, record = token_windows(model.tokenizer, T, config.n_prompts, config.seed)
        all_prompts += prompts
        sources.append(record)
        fit_here = T == config.fit_length
        cc = CaptureConfig(
            layers=layers,
            keys=False,
            key_weights=False,
            batch_size=config.batch_size,
            attention="distribution" if fit_here else "entropy",
            max_tokens=T,
        )  # windows of exactly T
        cb = (lambda d, n, T=T: progress(f"capture T={T}", d, n)) if progress else None
        kept = None if checkpoint_dir is None else Path(checkpoint_dir) / f"T{T}"
        cap = capture(model, prompts, cc, seed=config.seed, progress=cb, checkpoint_dir=kept)
        if config.stability:
            points.append(length_point(cap, layers, n_resamples=config.n_resamples, seed=config.seed))
        if fit_here:
            win = distance_windows(cap.attn_pattern[:, :, :n_heads], cap.n_tokens, config.window, config.exclude_first)
            fcb = (lambda d, n: progress("fit heads", d, n)) if progress else None
            heads, profiles = fit_heads(
                win.window,
                win.sink,
                layers,
                n_resamples=config.n_resamples,
                confidence=config.confidence,
                seed=config.seed,
                rope=rope,
                progress=fcb,
            )
    assert heads is not None and profiles is not None
    prov = model.provenance.with_prompts(all_prompts, config.seed).to_dict()
    prov["prompt_sources"] = sources
    return PositionalResult(
        model=model.model_id,
        layers=layers,
        n_heads=n_heads,
        fit_length=config.fit_length,
        max_distance=config.window,
        exclude_first=config.exclude_first,
        n_prompts=config.n_prompts,
        n_resamples=config.n_resamples,
        heads=heads,
        profiles=profiles,
        rope=rope,
        stability=Stability(layers=layers, points=tuple(points)) if config.stability else None,
        config=config.to_dict(),
        provenance=prov,
    )


def load_positional(path: Any) -> PositionalResult | TunnelLengthCurve:
    """A PositionalResult or a TunnelLengthCurve, whichever ``path`` (file or run directory) holds."""
    d, source = read_json(
        path, default_name=PositionalResult.FILE, what=PositionalResult.WHAT, fix=PositionalResult.FIX
    )
    if isinstance(d, dict) and d.get("kind") == TunnelLengthCurve.KIND:
        return TunnelLengthCurve.from_dict(d, source)
    return PositionalResult.from_dict(d, source)
