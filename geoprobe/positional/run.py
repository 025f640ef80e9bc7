"""``geoprobe positional``: capture prompts of exact lengths, fit per-head priors, measure stability."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from geoprobe.checks import check_seed
from geoprobe.errors import GeoprobeError

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class PositionalConfig:
    """Everything ``geoprobe positional`` (and ``probes/positional.toml``) can set.

    The priors are fitted at the longest length; ``max_distance`` None means the longest window
    those prompts allow (fit length − 1 − exclude_first)."""

    lengths: tuple[int, ...] = (16, 32, 64, 128, 256)
    max_distance: int | None = None
    n_prompts: int = 24
    layers: tuple[int, ...] | None = None
    exclude_first: int = 1
    n_resamples: int = 200
    confidence: float = 0.95
    seed: int = 0
    batch_size: int = 8
    stability: bool = True

    def __post_init__(self) -> None:
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        object.__setattr__(self, "lengths", tuple(int(x) for x in self.lengths))
        if self.layers is not None:
            object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        Ts = self.lengths
        spec = ",".join(str(x) for x in Ts)
        if not Ts:
            raise GeoprobeError("--lengths is empty; pass comma-separated prompt lengths such as 16,32,64")
        if min(Ts) < 2:
            raise GeoprobeError(f"--lengths {spec} contains {min(Ts)}; every length must be at least 2 tokens")
        if list(Ts) != sorted(set(Ts)):
            raise GeoprobeError(f"--lengths {spec} must be increasing without duplicates; pass e.g. "
                                f"{','.join(str(x) for x in sorted(set(Ts)))}")
        if self.n_prompts < 3:
            raise GeoprobeError(f"--n-prompts {self.n_prompts} is too few for a bootstrap CI (at least 3); "
                                "pass --n-prompts 3 or more (24 by default)")
        if self.n_resamples < 2:
            raise GeoprobeError(f"--n-resamples {self.n_resamples} is too few for a CI; pass 2 or more (200 by default)")
        if self.exclude_first < 0:
            raise GeoprobeError(f"--exclude-first {self.exclude_first} is negative; pass 0 or more")
        if self.batch_size < 1:
            raise GeoprobeError(f"--batch-size {self.batch_size} must be at least 1")
        if not 0.0 < self.confidence < 1.0:
            raise GeoprobeError(f"confidence {self.confidence} must lie in (0, 1)")
        top, need = self.fit_length, self.window + 1 + self.exclude_first
        if self.window < 2:
            raise GeoprobeError(f"the longest --lengths {top} leaves {self.window + 1} distance(s) after "
                                f"--exclude-first {self.exclude_first}; pass a longest length of "
                                f"{3 + self.exclude_first} or more")
        if need > top:
            raise GeoprobeError(f"--max-distance {self.window} needs prompts of at least {need} tokens ("
                                f"{self.window} + 1 + --exclude-first {self.exclude_first}), the longest --lengths is "
                                f"{top}; pass --max-distance {top - 1 - self.exclude_first} or less, or add a length "
                                f"of {need} or more to --lengths")

    @property
    def fit_length(self) -> int:
        return self.lengths[-1]

    @property
    def window(self) -> int:
        """The largest distance fitted, D."""
        return self.max_distance if self.max_distance is not None else self.fit_length - 1 - self.exclude_first

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lengths"], d["layers"] = list(self.lengths), list(self.layers) if self.layers is not None else None
        return d


def check_model(config: PositionalConfig, model: Any) -> None:
    """Limits that depend on the model: the context window."""
    ctx = int(model.context_length)
    if config.fit_length > ctx:
        raise GeoprobeError(f"--lengths {config.fit_length} exceeds the model's context window of {ctx} tokens; "
                            f"pass --lengths up to {ctx} (and --max-distance up to {ctx - 1 - config.exclude_first})")


def rope_of(model: Any) -> tuple[float, int] | None:
    """(rope_theta, rotary_dim) of a RoPE model, None otherwise (or where the base is per layer type)."""
    rot = int(getattr(model.layout, "rotary_dim", 0) or 0)
    cfg = model.hf_model.config
    theta = getattr(cfg, "rope_theta", None)
    if theta is None:
        params = getattr(cfg, "rope_parameters", None) or {}
        theta = params.get("rope_theta") if isinstance(params, dict) else None
    if rot < 2 or not isinstance(theta, (int, float)):
        return None
    return float(theta), rot


def run_positional(model: Any, config: PositionalConfig, *, progress: Progress | None = None) -> Any:
    """Capture ``n_prompts`` windows of every length, fit the priors at the longest, and (with
    ``config.stability``) measure the stability metrics at every length."""
    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.capture.run import resolve_layers
    from geoprobe.positional.heads import fit_heads
    from geoprobe.positional.profile import distance_windows, token_windows
    from geoprobe.positional.result import PositionalResult
    from geoprobe.positional.stability import Stability, length_point

    check_model(config, model)
    layers = resolve_layers(config.layers, model.layout.n_layers)
    lengths = config.lengths if config.stability else (config.fit_length,)
    points, all_prompts, sources = [], [], []
    heads = profiles = None
    rope = rope_of(model)
    for T in lengths:
        prompts, record = token_windows(model.tokenizer, T, config.n_prompts, config.seed)
        all_prompts += prompts
        sources.append(record)
        fit_here = T == config.fit_length
        cc = CaptureConfig(layers=layers, keys=False, key_weights=False, batch_size=config.batch_size,
                           attention="distribution" if fit_here else "entropy", max_tokens=T)  # windows of exactly T
        cb = (lambda d, n, T=T: progress(f"capture T={T}", d, n)) if progress else None
        cap = capture(model, prompts, cc, seed=config.seed, progress=cb)
        if config.stability:
            points.append(length_point(cap, layers, n_resamples=config.n_resamples, seed=config.seed))
        if fit_here:
            win = distance_windows(cap.attn_pattern, cap.n_tokens, config.window, config.exclude_first)
            fcb = (lambda d, n: progress("fit heads", d, n)) if progress else None
            heads, profiles = fit_heads(win.window, win.sink, layers, n_resamples=config.n_resamples,
                                        confidence=config.confidence, seed=config.seed, rope=rope, progress=fcb)
    assert heads is not None and profiles is not None
    prov = model.provenance.with_prompts(all_prompts, config.seed).to_dict()
    prov["prompt_sources"] = sources
    return PositionalResult(model=model.model_id, layers=layers, n_heads=model.layout.n_heads,
                            fit_length=config.fit_length, max_distance=config.window,
                            exclude_first=config.exclude_first, n_prompts=config.n_prompts,
                            n_resamples=config.n_resamples, heads=heads, profiles=profiles, rope=rope,
                            stability=Stability(layers=layers, points=tuple(points)) if config.stability else None,
                            config=config.to_dict(), provenance=prov)


def load_positional(path: Any) -> Any:
    """A PositionalResult or a TunnelLengthCurve, whichever ``path`` (file or run directory) holds."""
    from geoprobe.paths import read_json
    from geoprobe.positional.result import PositionalResult
    from geoprobe.positional.tunnel import TUNNEL_KIND, TunnelLengthCurve

    d, source = read_json(path, default_name="positional.json", what=PositionalResult._what, fix=PositionalResult._fix)
    if isinstance(d, dict) and d.get("kind") == TUNNEL_KIND:
        return TunnelLengthCurve.from_dict(d, source)
    return PositionalResult.from_dict(d, source)
