"""What ``geoprobe trajectory`` trains: :class:`TrajectoryConfig`, and Pythia's checkpoint schedule.

The model is Pythia-shaped (EleutherAI/pythia ``models/14M/pythia-14m.yml`` and ``70M/pythia-70m.yml``;
the same facts in the transformers GPTNeoXConfig of any Pythia on the Hub): GPT-NeoX with rotary
embeddings on a quarter of each head's dimensions (``rotary-pct 0.25``, base 10,000), the parallel
(GPT-J) residual, untied input and output embeddings, GELU, d_ff = 4 · d_model, LayerNorm ε 1e-5, no
dropout, biases; ``small_init`` (σ = √(2 / 5d)) for every weight but the two residual-output projections
of each layer, which take ``wang_init`` (σ = 2 / (L·√d)); Adam(W) at lr 1e-3 with betas (0.9, 0.95),
ε 1e-8, weight decay 0.1, gradient clipping 1.0, linear warm-up over 1 % of the steps, cosine decay to
0.1 × lr; checkpoints at steps 0, 1, 2, 4, …, 512, then every 1,000.

The default size is Pythia-14M's (6 layers, d_model 128, 4 heads) with a 4,096-token byte-level BPE
vocabulary trained on the corpus itself instead of Pythia's 50,304 (docs/sweep.md says why); sequences
of 128 tokens, 8 per step. What differs from Pythia is scale: ~3 M training tokens, not 300 B.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.corpora import DOMAINS
from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record
from geoprobe.tables import FlatTables

#: Pythia's extra early checkpoints ("extra-save-iters"), then one every ``PERIOD`` steps
EARLY_STEPS: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
PERIOD = 1000
#: the byte-level BPE's special tokens, as in Pythia's GPT-NeoX-20B tokenizer: document separator
#: (also BOS/EOS/UNK, id 0) and padding (id 1)
EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|padding|>"
#: a byte-level BPE needs the 256 byte symbols and the two special tokens before its first merge
MIN_VOCAB = 256 + 2


class TrajectoryError(GeoprobeError):
    """A trajectory setting that cannot be trained, or an output directory it cannot continue."""


def pythia_steps(steps: int) -> tuple[int, ...]:
    """The steps Pythia saves, up to ``steps``: 0, 1, 2, 4, …, 512, then every 1,000; the last step
    ``steps`` is added when the schedule does not hold it (so a run always ends in a checkpoint)."""
    kept = {s for s in EARLY_STEPS if s <= steps} | set(range(PERIOD, steps + 1, PERIOD)) | {steps}
    return tuple(sorted(kept))


@dataclass(frozen=True, eq=False)
class TrajectoryConfig(FlatTables, Record):
    """One training run: the model's shape, the data, the optimiser and the seed. Two runs with equal
    configs on the same software and thread count write identical checkpoints."""

    TABLE: ClassVar[str] = "trajectory"

    steps: int = 3000
    seed: int = 0
    # -- model (Pythia-14M's shape; the vocabulary is the corpus BPE's)
    layers: int = 6
    hidden_size: int = 128
    heads: int = 4
    vocab_size: int = 4096
    # -- data
    domains: tuple[str, ...] = DOMAINS
    seq_len: int = 128
    batch_size: int = 8
    heldout_every: int = 50  # every N-th document of each domain is held out (eval loss), never trained on
    eval_windows: int = 16  # held-out windows of seq_len tokens scored at every checkpoint
    # -- optimiser (Pythia's)
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup: float = 0.01  # fraction of the steps
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    clip: float = 1.0
    rotary_pct: float = 0.25
    rotary_base: float = 10000.0
    max_positions: int = 2048
    notes: tuple[str, ...] = field(default_factory=tuple)

    #: upper limits (docs/sweep.md): sizes past these are no longer a CPU model
    LIMITS: ClassVar[dict[str, Limit]] = {
        "steps": Limit.steps("--steps", low=1),
        "layers": Limit(48, "Pythia-12B's depth; a CPU trajectory is far smaller", "--layers", low=1),
        "hidden_size": Limit(5120, "Pythia-12B's width", "--hidden-size", low=8),
        "heads": Limit(64, "more heads than any Pythia", "--heads", low=1),
        "vocab_size": Limit(65536, "above Pythia's 50,304 tokens", "--vocab-size", low=MIN_VOCAB),
        "seq_len": Limit(2048, "Pythia's context length (its rotary table's size)", "--seq-len", low=2),
        "batch_size": Limit(1024, "Pythia's 1,024 sequences per step", "--batch-size", low=1),
        "heldout_every": Limit(1_000_000, "a held-out share far below one document in a million", low=2),
        "eval_windows": Limit(100_000, "more than any corpus holds", low=1),
        "max_positions": Limit(2048, "Pythia's context length", low=2),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "trajectory")
        check_seed(self.seed, "--seed")
        if isinstance(self.domains, str):
            object.__setattr__(self, "domains", (self.domains,))
        object.__setattr__(self, "domains", tuple(self.domains))
        object.__setattr__(self, "notes", tuple(self.notes))
        check_limits(self, self.LIMITS)
        if self.hidden_size % self.heads:
            raise TrajectoryError(
                f"hidden size {self.hidden_size} is not a multiple of {self.heads} heads; pass --hidden-size "
                f"{self.hidden_size - self.hidden_size % self.heads or self.heads} or --heads dividing it"
            )
        if int(self.hidden_size // self.heads * self.rotary_pct) < 2:
            raise TrajectoryError(
                f"rotary_pct {self.rotary_pct} of a {self.hidden_size // self.heads}-dimensional head rotates fewer "
                "than 2 dimensions; pass a larger --hidden-size (or fewer --heads)"
            )
        if self.seq_len > self.max_positions:
            raise TrajectoryError(
                f"--seq-len {self.seq_len} is above the model's {self.max_positions} positions; pass --seq-len "
                f"{self.max_positions} or less"
            )
        if not self.domains:
            raise TrajectoryError(f"no corpus domains; pass --domains with some of {', '.join(DOMAINS)}")
        unknown = [d for d in self.domains if d not in DOMAINS]
        if unknown:
            raise TrajectoryError(
                f"unknown corpus domain {unknown[0]!r}; pass --domains with some of {', '.join(DOMAINS)}"
            )
        if len(set(self.domains)) != len(self.domains):
            raise TrajectoryError(f"--domains names a domain twice ({', '.join(self.domains)}); name each once")
        for name, low, high in (
            ("lr", 0.0, 1.0),
            ("min_lr_ratio", 0.0, 1.0),
            ("warmup", 0.0, 1.0),
            ("weight_decay", 0.0, 1.0),
            ("beta1", 0.0, 1.0),
            ("beta2", 0.0, 1.0),
            ("eps", 0.0, 1.0),
            ("clip", 0.0, 1e6),
            ("rotary_pct", 0.0, 1.0),
            ("rotary_base", 1.0, 1e9),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                flag = FLAGS.get(name, f"{name} (TrajectoryConfig)")
                raise TrajectoryError(f"{name} {value!r} is outside [{low}, {high}]; pass {flag} in that range")
        if self.lr == 0:
            raise TrajectoryError("learning rate 0 trains nothing; pass --lr above 0 (Pythia's small models: 0.001)")

    @property
    def intermediate_size(self) -> int:
        return 4 * self.hidden_size

    def n_params(self) -> int:
        """Parameters of the model at full vocabulary: two embeddings, 12d² + 13d per layer, the final norm."""
        d = self.hidden_size
        return 2 * self.vocab_size * d + self.layers * (12 * d * d + 13 * d) + 2 * d

    def estimated_bytes(self) -> int:
        """Disk the run takes: float32 weights and the tokenizer (about 60 bytes a token) per checkpoint,
        plus the resume state (weights' two Adam moments and the tokenizer)."""
        per = 4 * self.n_params() + 60 * self.vocab_size
        return per * len(self.checkpoint_steps()) + 8 * self.n_params() + 30 * self.vocab_size

    def checkpoint_steps(self) -> tuple[int, ...]:
        return pythia_steps(self.steps)

    def warmup_steps(self) -> int:
        return round(self.warmup * self.steps)

    def lr_at(self, step: int) -> float:
        """The learning rate of the update that takes the model from ``step`` to ``step + 1``: linear
        warm-up over :meth:`warmup_steps`, then cosine decay to ``min_lr_ratio · lr`` at the last step
        (GPT-NeoX's schedule)."""
        import math

        warm = self.warmup_steps()
        if step < warm:
            return self.lr * (step + 1) / warm
        progress = min(1.0, (step - warm) / max(1, self.steps - warm))
        low = self.min_lr_ratio * self.lr
        return low + (self.lr - low) * 0.5 * (1.0 + math.cos(math.pi * progress))

    def identity(self) -> dict:
        """What a resumed run must share with the run it continues (everything but the notes)."""
        d = self.to_dict()
        d.pop("notes", None)
        return d


#: settings with a flag of their own in ``geoprobe trajectory``
FLAGS = {
    "steps": "--steps",
    "seed": "--seed",
    "layers": "--layers",
    "hidden_size": "--hidden-size",
    "heads": "--heads",
    "vocab_size": "--vocab-size",
    "domains": "--domains",
    "seq_len": "--seq-len",
    "batch_size": "--batch-size",
    "lr": "--lr",
}
