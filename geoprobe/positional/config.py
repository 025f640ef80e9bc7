"""``geoprobe positional``'s configuration (``probes/positional.toml``'s ``[positional]`` table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record
from geoprobe.tables import FlatTables

#: the smallest largest-distance Δ a prior is fitted to (distances 0, 1, 2: three points for three parameters)
MIN_DISTANCE = 2
#: prompt lengths: the longest context window of the models geoprobe knows (Llama 3.x)
LENGTH_MAX = 131_072
LENGTH_WHY = "the longest context window of the models geoprobe knows"


@dataclass(frozen=True)
class PositionalConfig(FlatTables, Record):
    """Everything ``geoprobe positional`` (and ``probes/positional.toml``) can set.

    The priors are fitted at the longest length; ``max_distance`` None means the longest window
    those prompts allow (fit length − 1 − exclude_first)."""

    TABLE: ClassVar[str] = "positional"

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

    #: upper limits (docs/positional.md); a length is also checked against the model's context once it loads,
    #: and the memory of the attention rows it keeps (n_prompts × heads × length per layer) is estimated
    LIMITS: ClassVar[dict[str, Limit]] = {
        "lengths": Limit(LENGTH_MAX, LENGTH_WHY, "--lengths"),
        "max_distance": Limit(LENGTH_MAX, LENGTH_WHY, "--max-distance"),
        "n_prompts": Limit(1000, "40× the default 24 prompts per length", "--n-prompts"),
        "n_resamples": Limit.resamples("--n-resamples"),
        "batch_size": Limit.batch("--batch-size"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "positional")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        object.__setattr__(self, "lengths", tuple(int(x) for x in self.lengths))
        check_limits(self, self.LIMITS)
        if self.layers is not None:
            object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        Ts = self.lengths
        spec = ",".join(str(x) for x in Ts)
        if not Ts:
            raise GeoprobeError("--lengths is empty; pass comma-separated prompt lengths such as 16,32,64")
        if min(Ts) < 2:
            raise GeoprobeError(f"--lengths {spec} contains {min(Ts)}; every length must be at least 2 tokens")
        if list(Ts) != sorted(set(Ts)):
            raise GeoprobeError(
                f"--lengths {spec} must be increasing without duplicates; pass e.g. "
                f"{','.join(str(x) for x in sorted(set(Ts)))}"
            )
        if self.n_prompts < 3:
            raise GeoprobeError(
                f"--n-prompts {self.n_prompts} is too few for a bootstrap CI (at least 3); "
                "pass --n-prompts 3 or more (24 by default)"
            )
        if self.n_resamples < 2:
            raise GeoprobeError(
                f"--n-resamples {self.n_resamples} is too few for a CI; pass 2 or more (200 by default)"
            )
        if self.exclude_first < 0:
            raise GeoprobeError(f"--exclude-first {self.exclude_first} is negative; pass 0 or more")
        if self.batch_size < 1:
            raise GeoprobeError(f"--batch-size {self.batch_size} must be at least 1")
        if not 0.0 < self.confidence < 1.0:
            raise GeoprobeError(f"confidence {self.confidence} must lie in (0, 1)")
        if self.max_distance is not None and self.max_distance < MIN_DISTANCE:
            raise GeoprobeError(
                f"--max-distance {self.max_distance} is below {MIN_DISTANCE}: a prior is fitted to the distances "
                f"0..Δ and needs at least {MIN_DISTANCE + 1} of them; pass --max-distance {MIN_DISTANCE} or more, or "
                "leave it out (the longest length − 1 − --exclude-first)"
            )
        top, need = self.fit_length, self.window + 1 + self.exclude_first
        if self.window < MIN_DISTANCE:
            raise GeoprobeError(
                f"the longest --lengths {top} leaves {self.window + 1} distance(s) after "
                f"--exclude-first {self.exclude_first}; pass a longest length of "
                f"{MIN_DISTANCE + 1 + self.exclude_first} or more"
            )
        if need > top:
            raise GeoprobeError(
                f"--max-distance {self.window} needs prompts of at least {need} tokens ("
                f"{self.window} + 1 + --exclude-first {self.exclude_first}), the longest --lengths is "
                f"{top}; pass --max-distance {top - 1 - self.exclude_first} or less, or add a length "
                f"of {need} or more to --lengths"
            )

    @property
    def fit_length(self) -> int:
        return self.lengths[-1]

    @property
    def window(self) -> int:
        """The largest distance fitted, D."""
        return self.max_distance if self.max_distance is not None else self.fit_length - 1 - self.exclude_first
