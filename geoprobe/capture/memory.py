"""How much memory one capture batch needs, checked before the first forward pass (issue 17).

Capture runs the model's own attention (SDPA for most architectures) through transformers'
``AttentionInterface``; geoprobe's probe keeps only the final query row's distribution, O(T·d)
per head, so a batch no longer holds (batch, heads, T, T) scores, except where the model's own
attention is eager (its default implementation, e.g. Gemma-2 with softcapping, or the legacy
GPT-Neo/Bloom modules, and GPT-J's before transformers 5.24). :func:`forward_peak_bytes`
estimates the peak from the model's shape and implementation; :func:`check_capture_memory`
refuses a capture whose largest batch would not fit, in one line naming the estimate, what is
available and the flags that fix it, before any forward pass runs.
``benchmarks/capture_memory.py`` measures the peak to compare.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Sequence

from geoprobe.errors import CaptureError, GeoprobeError
from geoprobe.models.attention import base_implementation
from geoprobe.models.language import text_config

SAFETY_FRACTION = 0.9  # of the memory available: room for the rest of the process and estimate error
MEMORY_ENV = "GEOPROBE_MEMORY_AVAILABLE"  # bytes (or 12GiB, 512MiB, ...) to assume available instead
FIXED_BYTES = 128 * 2**20  # allocator and framework overhead of any forward pass, measured up to 120 MiB
ACTIVATION_FACTOR = 0.5  # × n_layers × one layer's activations (glibc keeps freed layer buffers): measured ≤ 0.43
MIN_ACTIVATION_LAYERS = 8  # ... but never fewer than 8 layers' worth (shallow twins: up to 6.3 measured)
MASK_BYTES = 4  # per (prompt, T, T) entry of the attention mask (bool, or float where padded), measured ≤ 2
#: on a CUDA device torch's caching allocator reuses a freed layer's blocks: the peak is a few layers'
#: activations in the model's dtype, measured 3.1-3.6 × one layer's (mistral-7b twin, bfloat16, H200, batch
#: 1-16 × 64-2,048 tokens; docs/benchmarks.md "GPU"), plus a fixed margin for small shapes
CUDA_ACTIVATION_LAYERS = 4
CUDA_FIXED_BYTES = 64 * 2**20
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


#: a worker's memory beyond its model's weights: Python, torch, transformers, one batch's forward pass
#: (measured for a CPU data-parallel worker: 540 MiB peak for a tiny twin, 1115 MiB for SmolLM2-135M whose
#: float32 weights are 540 MB; docs/benchmarks.md). Data-parallel workers and sweep cells ask Ray for it.
WORKER_OVERHEAD = 1 << 30


def eager_attention(model: Any) -> bool:
    """Whether the model's attention materialises (batch, heads, T, T) scores: its own implementation
    is eager, or its attention is one of the hand-written legacy modules."""
    return model.arch.mechanism == "legacy" or base_implementation(model.hf_model) == "eager"


def forward_peak_bytes(model: Any, batch: int, tokens: int, device_type: str | None = None) -> int:
    """Estimated peak memory (bytes, above the loaded model) of one capture forward pass over
    ``batch`` prompts padded to ``tokens`` tokens, on the model's device (``device_type`` overrides it).

    On a CUDA device: 4·X (X in the model's dtype, the caching allocator's measured 3.1-3.6 layers) + M
    [+ 2·S] + 64 MiB. On the CPU:

    With X = 4·batch·T·(d_model + d_mlp) (one layer's activations, d_mlp × experts per token),
    M = 4·batch·T² (the attention mask) and, only where attention is eager
    (:func:`eager_attention`), S = 4·batch·heads·T² (one layer's scores, float32)::

        peak ≈ max(8, L/2)·X + M [+ 2·S] + 128 MiB     (L layers)

    SDPA never holds the T×T scores (torch's CPU kernel with a boolean or float mask: no
    score-sized allocation, measured) and the probe's final-row distribution is O(T); what
    remains is per-layer activations, freed layer by layer but kept by the allocator (glibc's
    mmap threshold rises after the first frees), hence several layers' worth (up to 0.43·L·X
    measured, SmolLM2), and the mask.
    Measured peak RSS above the loaded model (``benchmarks/capture_memory.py``, VmHWM, float32,
    CPU, 2 cores; SDPA):

    ====================== ===== ====== ========== ==========
    model                  batch tokens measured   estimated
    ====================== ===== ====== ========== ==========
    twin:pythia-410m:full      1    256  119.8 MiB  188 MiB
    twin:pythia-410m:full      4    256   98.3 MiB  369 MiB
    twin:pythia-410m:full      1   1024   86.0 MiB  372 MiB
    twin:pythia-410m:full      4   1024  581.0 MiB  1104 MiB
    twin:pythia-410m:full      2   2048  319.8 MiB  1120 MiB
    smollm2-135m (30 layers)   2   1024  224.3 MiB  384 MiB
    smollm2-135m               2   2048  455.5 MiB  655 MiB
    smollm2-135m               4   1024  359.9 MiB  639 MiB
    twin:llama-3.2-1b (3×64)   1   2048    6.1 MiB  156 MiB
    twin:llama-3.2-1b          4   2048   31.6 MiB  240 MiB
    twin:llama-3.2-1b         16   1024   76.7 MiB  288 MiB
    twin:llama-3.2-1b          1   4096   15.6 MiB  216 MiB
    ====================== ===== ====== ========== ==========

    Never below the measured peak (at least 1.44×, SmolLM2 B 2 T 2048); the fixed 128 MiB
    dominates small shapes. The eager term is the previous path's fit (two score-sized
    tensors alive at once: the scores and their softmax)."""
    lay = model.layout
    cfg = text_config(model.hf_model.config)
    width = getattr(cfg, "intermediate_size", None) or 4 * lay.d_model
    if isinstance(width, (list, tuple)):  # one per layer (Gemma 3n): the widest layer's
        width = max(width)
    d_mlp = width * (getattr(cfg, "num_experts_per_tok", None) or 1)
    mask = MASK_BYTES * batch * tokens * tokens
    scores = 2 * 4 * batch * lay.n_heads * tokens * tokens if eager_attention(model) else 0
    if device_type is None:
        device_type = next(model.hf_model.parameters()).device.type
    if device_type == "cuda":
        elt = next(model.hf_model.parameters()).element_size()
        acts = elt * batch * tokens * (lay.d_model + d_mlp)
        return int(CUDA_ACTIVATION_LAYERS * acts + mask + scores + CUDA_FIXED_BYTES)
    acts = 4 * batch * tokens * (lay.d_model + d_mlp)
    layers = max(float(MIN_ACTIVATION_LAYERS), ACTIVATION_FACTOR * lay.n_layers)
    return int(layers * acts + mask + scores + FIXED_BYTES)


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
        raise GeoprobeError(
            f"{what}={text!r} is not a size; write bytes or a number with KiB, MiB, GiB or TiB (e.g. 12GiB)"
        )
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
    fit = largest(lambda b: forward_peak_bytes(model, b, tokens) <= budget, batch - 1)
    t_fit = 0 if fit else largest(lambda t: forward_peak_bytes(model, 1, t) <= budget, tokens - 1)
    if fit:
        fix = f"pass --batch-size {fit} (or less), or a lower --max-tokens"
    elif t_fit:
        fix = (
            f"even one prompt of {tokens} tokens needs {format_bytes(forward_peak_bytes(model, 1, tokens))}: "
            f"pass --max-tokens {t_fit} (or less) and --batch-size 1"
        )
    else:
        fix = (
            f"not even --batch-size 1 with --max-tokens 1 fits: free some memory (or set {MEMORY_ENV} "
            "if that figure is wrong)"
        )
    raise CaptureError(
        f"a capture batch of {batch} prompt(s) of {tokens} tokens needs about {format_bytes(need)} for its forward "
        f"pass ({_what(model, tokens)}), more than "
        f"{format_bytes(budget)} ({fraction:.0%} of the {format_bytes(available)} {source}); {fix}"
    )


def memory_budget(device: Any = "cpu", fraction: float = SAFETY_FRACTION) -> tuple[int, str] | None:
    """(bytes a computation may take, how that figure was found) on ``device``: ``fraction`` of what
    :func:`available_memory` reports, or None where geoprobe cannot tell."""
    got = available_memory(device)
    if got is None:
        return None
    available, source = got
    return int(available * fraction), f"{fraction:.0%} of the {format_bytes(available)} {source}"


def check_memory(
    need: Callable[[int], int],
    value: int,
    *,
    what: str,
    flag: str | Callable[[int], str],
    otherwise: str = "",
    device: Any = "cpu",
    low: int = 1,
) -> None:
    """Refuse, before the work starts, a computation whose estimated peak ``need(value)`` (bytes, growing
    with ``value``, the setting of ``flag``) is more than :func:`memory_budget` allows. The one-line
    :class:`GeoprobeError` names ``what`` needs it, the estimate, the budget and the largest value that
    fits: "pass FLAG N or less", or ``flag(N)`` where ``flag`` is a function (``otherwise``, when not even
    ``low`` fits). ``$GEOPROBE_MEMORY_AVAILABLE`` plants the figure."""
    got = memory_budget(device)
    if got is None or need(value) <= got[0]:
        return
    budget, source = got
    fit = largest(lambda v: need(v) <= budget, value - 1)
    if fit < low:
        fix = otherwise or f"free some memory (or set {MEMORY_ENV} if that figure is wrong)"
    else:
        fix = flag(fit) if callable(flag) else f"pass {flag} {fit} or less"
    raise GeoprobeError(
        f"{what} needs about {format_bytes(need(value))} of memory, more than {format_bytes(budget)} ({source}); {fix}"
    )


def _what(model: Any, tokens: int) -> str:
    if eager_attention(model):
        return f"eager attention holds {model.layout.n_heads} heads × {tokens}² scores per prompt"
    return f"a {tokens}² attention mask per prompt and the layers' activations"


def largest(fits: Callable[[int], bool], high: int) -> int:
    """The largest n in [1, high] with ``fits(n)`` (``fits`` is monotone: true up to some n), or 0."""
    lo, hi = 0, max(high, 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
