"""How much memory one capture batch needs, checked before the first forward pass (issue 17).

TransformerBridge runs eager attention: each layer materialises its (batch, heads, T, T) attention
scores and their softmax, so a batch's peak grows with T². One 100,000-character prompt took a
capture to 22.5 GB and the out-of-memory killer. :func:`forward_peak_bytes` estimates the peak
from the model's shape; :func:`check_capture_memory` refuses a capture whose largest batch would
not fit, in one line naming the estimate, what is available and the flags that fix it, before any
forward pass runs. When the capture path changes (planned: SDPA, which never holds T×T scores),
:func:`forward_peak_bytes` is the one place to update; ``benchmarks/capture_memory.py`` measures
the peak to compare (docs/capture.md has the table).
"""
from __future__ import annotations

import os
import re
from typing import Any, Sequence

from geoprobe.errors import CaptureError, GeoprobeError

SAFETY_FRACTION = 0.9  # of the memory available: room for the rest of the process and estimate error
MEMORY_ENV = "GEOPROBE_MEMORY_AVAILABLE"  # bytes (or 12GiB, 512MiB, ...) to assume available instead
FIXED_BYTES = 64 * 2**20  # allocator and framework overhead of any forward pass, measured up to ~50 MiB
ACTIVATION_FACTOR = 0.6  # × n_layers × one layer's activations: the largest share measured was 0.47
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def forward_peak_bytes(model: Any, batch: int, tokens: int) -> int:
    """Estimated peak memory (bytes, above the loaded model) of one capture forward pass over
    ``batch`` prompts padded to ``tokens`` tokens, on the eager TransformerBridge path.

    With S = 4·batch·heads·T² (one layer's attention scores, counted as float32 because softmax
    runs in float32), M = 4·batch·T² (one 4-D attention mask) and X = 4·batch·T·(d_model + d_mlp)
    (one layer's activations)::

        peak ≈ 2·S  [(1 + n_layers)·S where the bridge keeps every layer's pattern: GPT-NeoX]
               + 2·M + 0.6·n_layers·X + 64 MiB

    Two score-sized tensors are alive at once (the scores and their softmax); GPT-NeoX's fused-QKV
    bridge keeps each layer's pattern until the forward ends, so there the last layer's scores
    come on top of every layer's pattern. The 0.6·n_layers·X term covers the activations and the
    allocator's slack, which grows layer by layer on CPU (up to 0.47·n_layers·X measured). Fitted
    to the peak RSS measured on Llama, Mistral, Phi, Gemma-3 and Pythia twins and SmolLM2-135M
    (float32, CPU; docs/capture.md has the table): never below the measured peak (at least 1.10×
    the larger of two runs), 1.1-1.6× it where T ≥ 1024, up to 4-9× for short prompts, where the
    estimate stays under 1 GiB."""
    lay = model.layout
    cfg = model.hf_model.config
    d_mlp = (getattr(cfg, "intermediate_size", None) or 4 * lay.d_model) * (getattr(cfg, "num_experts_per_tok", None)
                                                                           or 1)
    scores = 4 * batch * lay.n_heads * tokens * tokens
    mask = 4 * batch * tokens * tokens
    acts = 4 * batch * tokens * (lay.d_model + d_mlp)
    n_scores = 1 + lay.n_layers if getattr(model.adapter, "keeps_patterns", False) else 2
    return int(n_scores * scores + 2 * mask + ACTIVATION_FACTOR * lay.n_layers * acts + FIXED_BYTES)


def available_memory(device: Any) -> tuple[int, str] | None:
    """(bytes a forward pass on ``device`` may take, where that figure comes from), or None where
    geoprobe cannot tell (a device map over several devices, MPS). ``$GEOPROBE_MEMORY_AVAILABLE``
    overrides the measurement (e.g. ``12GiB``: to keep to a share of a shared machine, or to
    allow more than the check would)."""
    env = os.environ.get(MEMORY_ENV)
    if env:
        return parse_bytes(env, MEMORY_ENV), f"set by {MEMORY_ENV}"
    import torch

    dev = torch.device(device)
    if dev.type == "cpu":
        import psutil

        return int(psutil.virtual_memory().available), "available"
    if dev.type == "cuda":
        free, _ = torch.cuda.mem_get_info(dev)
        return int(free), f"free on {dev}"
    return None


def parse_bytes(text: str, what: str) -> int:
    """``12GiB``, ``512M``, ``1048576`` → bytes (binary units); a one-line error naming ``what`` otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if m is None:
        raise GeoprobeError(f"{what}={text!r} is not a size; write bytes or a number with KiB, MiB, GiB or TiB "
                            "(e.g. 12GiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_bytes(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def check_capture_memory(model: Any, shapes: Sequence[tuple[int, int]], *, fraction: float = SAFETY_FRACTION) -> None:
    """Refuse a capture whose largest batch would not fit: ``shapes`` are the (prompts, tokens) of
    the batches to run. Raises :class:`CaptureError` in one line with the estimate, the memory
    available and the ``--batch-size`` (or ``--max-tokens``) that would fit; checked once, before
    the first forward pass (later checks would see the allocator's retained memory as used)."""
    if not shapes or getattr(model.hf_model, "hf_device_map", None):
        return
    got = available_memory(model.device)
    if got is None:
        return
    available, source = got
    budget = int(available * fraction)
    batch, tokens = max(shapes, key=lambda s: forward_peak_bytes(model, *s))
    need = forward_peak_bytes(model, batch, tokens)
    if need <= budget:
        return
    fit = _largest(lambda b: forward_peak_bytes(model, b, tokens) <= budget, batch - 1)
    t_fit = 0 if fit else _largest(lambda t: forward_peak_bytes(model, 1, t) <= budget, tokens - 1)
    if fit:
        fix = f"pass --batch-size {fit} (or less), or a lower --max-tokens"
    elif t_fit:
        fix = (f"even one prompt of {tokens} tokens needs {format_bytes(forward_peak_bytes(model, 1, tokens))}: "
               f"pass --max-tokens {t_fit} (or less) and --batch-size 1")
    else:
        fix = (f"not even --batch-size 1 with --max-tokens 1 fits: free some memory (or set {MEMORY_ENV} "
               "if that figure is wrong)")
    raise CaptureError(
        f"a capture batch of {batch} prompt(s) of {tokens} tokens needs about {format_bytes(need)} for its forward "
        f"pass (eager attention holds {model.layout.n_heads} heads × {tokens}² scores per prompt), more than "
        f"{format_bytes(budget)} ({fraction:.0%} of the {format_bytes(available)} {source}); {fix}")


def _largest(fits: Any, high: int) -> int:
    """The largest n in [1, high] with ``fits(n)`` (``fits`` is monotone: true up to some n), or 0."""
    lo, hi = 0, max(high, 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
