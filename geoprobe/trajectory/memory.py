"""How much memory a trajectory's training needs, checked before any work (before the data are read,
before anything is written): a 48-layer, d 2048 spec would otherwise grow until the kernel kills it.

:func:`peak_bytes` estimates the training process's peak from the config's sizes;
:func:`check_trajectory_memory` refuses a run whose estimate is more than the memory available
(:func:`geoprobe.capture.memory.memory_budget`, which ``$GEOPROBE_MEMORY_AVAILABLE`` overrides), in
one line naming the estimate, the budget and the flags that lower it.
``benchmarks/trajectory_memory.py`` measures the peak to compare (docs/benchmarks.md).
"""

from __future__ import annotations

from geoprobe.capture.memory import MEMORY_ENV, format_bytes, largest, memory_budget
from geoprobe.trajectory.config import TrajectoryConfig, TrajectoryError

#: float32 weights, their gradients and AdamW's two moments ...
BYTES_PER_PARAM = 16
#: ... at each checkpoint, the resume state's serialised moments (store.save_state's buffer) ...
RESUME_BYTES_PER_PARAM = 8
#: ... and the allocator's slack: transformers' own initialisation before Pythia's is drawn (~1 byte a
#: parameter measured), the blocks freed between steps that are not given back (~2)
SLACK_BYTES_PER_PARAM = 4
#: a layer's activations per token: ~20 float32 of d_model live in a step (the parallel residual's
#: LayerNorms, q/k/v and their rotated copies, the 4·d MLP before and after GELU), and about as much again
#: that the allocator keeps from the step before (RSS climbs for the first 3 steps, then holds)
ACTIVATION_BYTES = 40 * 4
#: eager attention only: a layer's (heads, T) scores per token, and their softmax, float32
SCORE_BYTES = 2 * 4
#: per token: the logits (float32), their log-softmax and the gradients of both (~14 bytes measured)
LOGIT_BYTES = 4 * 4
#: Python, torch, transformers and tokenizers (~240 MiB imported), the corpora, the BPE trained on them and
#: the token streams (~450 MiB more for all six domains; the code domain is the Python standard library,
#: which differs between Python versions), and a margin
FIXED_BYTES = 896 * 2**20

#: the size flags, in the order the message names them, and the least value each takes
SIZE_FLAGS = {
    "layers": ("--layers", 1),
    "hidden_size": ("--hidden-size", 8),
    "batch_size": ("--batch-size", 1),
    "seq_len": ("--seq-len", 2),
    "vocab_size": ("--vocab-size", 258),
}


def eager_attention() -> bool:
    """Whether transformers runs GPT-NeoX's attention eagerly (materialising (heads, T, T) scores): the
    model is built with transformers' default implementation, SDPA where the class supports it."""
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXPreTrainedModel

    return not getattr(GPTNeoXPreTrainedModel, "_supports_sdpa", False)


def training_bytes(
    *, layers: int, hidden_size: int, heads: int, vocab_size: int, seq_len: int, batch_size: int, eager: bool
) -> int:
    """:func:`peak_bytes` from the sizes alone (what the message's suggested values are searched with)."""
    d, tokens = hidden_size, batch_size * seq_len
    params = 2 * vocab_size * d + layers * (12 * d * d + 13 * d) + 2 * d
    per_layer = ACTIVATION_BYTES * d + (SCORE_BYTES * heads * seq_len if eager else 0)
    weights = (BYTES_PER_PARAM + RESUME_BYTES_PER_PARAM + SLACK_BYTES_PER_PARAM) * params
    return weights + tokens * layers * per_layer + LOGIT_BYTES * tokens * vocab_size + FIXED_BYTES


def peak_bytes(config: TrajectoryConfig, eager: bool | None = None) -> int:
    """Estimated peak memory (bytes, the whole process) of training ``config`` on CPU. With P parameters
    (:meth:`TrajectoryConfig.n_params`, at the full ``vocab_size``), N = batch_size × seq_len tokens a
    step, L layers of width d, H heads and V vocabulary entries::

        peak ≈ (16 + 8 + 4)·P  +  N·L·(160·d [+ 8·H·seq_len])  +  16·N·V  +  896 MiB

    16 bytes a parameter: float32 weights, gradients and AdamW's two moments; 8 more: the resume state
    serialised at each checkpoint (the moments once more); 4: the allocator's slack (transformers' own
    initialisation before Pythia's is drawn, blocks freed between steps). 160·d a token and layer: the
    activations a step keeps for its backward pass (~75·d measured) and what the allocator keeps of the
    step before's (the resident memory climbs for three steps, then holds).
    The scores term only where the attention is eager (:func:`eager_attention`; transformers' SDPA kernel
    on CPU keeps no T×T scores, measured). 16·V a token: the float32 logits, their log-softmax and both
    gradients. 896 MiB: Python, torch, transformers and the tokenizers (~240 MiB), the corpora, the BPE
    trained on them and the token streams (~450 MiB for all six domains), and a margin.

    Measured peak RSS of the whole process (``benchmarks/trajectory_memory.py``: ``train_trajectory`` in
    a fresh process, ``ru_maxrss``; all six domains unless said; CPU, 2 threads) against this estimate:

    ======= ==================================================== ======= ========= ========= =====
    config  settings                                             params  measured  estimated ratio
    ======= ==================================================== ======= ========= ========= =====
    tiny    L 2, d 32, H 2, V 300, T 16, B 2, math only; 8 steps 45 k    434 MiB   898 MiB   2.07
    default defaults; 20 steps                                   2.2 M   819 MiB   1,140 MiB 1.39
    deep    L 12, d 512, H 8, T 256, B 8; 4 steps                42.0 M  3,372 MiB 4,066 MiB 1.21
    wide    L 2, d 2048, H 16, T 64, B 4; 4 steps                117.5 M 3,539 MiB 4,210 MiB 1.19
    long    L 4, d 256, H 8, T 2048, B 4; 4 steps                5.3 M   2,082 MiB 2,828 MiB 1.36
    vocab   V 32768, T 256, B 16; 4 steps                        9.6 M   2,716 MiB 3,680 MiB 1.35
    ======= ==================================================== ======= ========= ========= =====

    Never below the measured peak (at least 1.19×; the same config measured up to 6 % apart between
    runs), at most 2.1× it, where the fixed 896 MiB dominates (the tiny config). The resume state's
    buffer sets the peak of the wide config (its RSS rises by 8·P while the state is written)."""
    return training_bytes(
        layers=config.layers,
        hidden_size=config.hidden_size,
        heads=config.heads,
        vocab_size=config.vocab_size,
        seq_len=config.seq_len,
        batch_size=config.batch_size,
        eager=eager_attention() if eager is None else eager,
    )


def check_trajectory_memory(config: TrajectoryConfig) -> None:
    """Refuse, before any work, a run whose :func:`peak_bytes` is more than the memory budget: one-line
    :class:`TrajectoryError` naming the estimate, the budget, and the value of each size flag that alone
    would fit (the others as given), or that the flags must be lowered together."""
    got = memory_budget("cpu")
    if got is None:
        return
    budget, source = got
    eager = eager_attention()
    sizes = {k: getattr(config, k) for k in (*SIZE_FLAGS, "heads")}
    need = training_bytes(**sizes, eager=eager)
    if need <= budget:
        return
    fits = []
    for name, (flag, low) in SIZE_FLAGS.items():
        step = config.heads if name == "hidden_size" else 1  # a width must stay a multiple of the heads ...
        if name == "hidden_size":  # ... with heads that rotate 2 dimensions or more
            low = max(low, config.heads * next(h for h in range(1, 4096) if int(h * config.rotary_pct) >= 2))
        n = largest(lambda v: training_bytes(**{**sizes, name: v * step}, eager=eager) <= budget, sizes[name] // step)
        if n * step >= low:
            fits.append(f"{flag} {n * step}")
    flags = ", ".join(flag for flag, _ in SIZE_FLAGS.values())
    least = {**sizes, **{k: low for k, (_, low) in SIZE_FLAGS.items()}, "heads": 1}
    if training_bytes(**least, eager=eager) > budget:
        fix = (
            f"even the smallest model needs {format_bytes(training_bytes(**least, eager=eager))}: free some memory "
            f"(or set {MEMORY_ENV} if that figure is wrong)"
        )
    elif fits:
        alone = f"{', '.join(fits[:-1])} or {fits[-1]}" if len(fits) > 1 else fits[0]
        fix = f"pass {alone} (or less), or lower several of {flags}"
    else:
        fix = f"no one of {flags} alone brings it under: lower several of them"
    raise TrajectoryError(
        f"training {config.layers} layers of width {config.hidden_size} on batches of {config.batch_size} × "
        f"{config.seq_len} tokens with a {config.vocab_size}-token vocabulary needs about {format_bytes(need)} of "
        f"memory, more than {format_bytes(budget)} ({source}); {fix}"
    )
