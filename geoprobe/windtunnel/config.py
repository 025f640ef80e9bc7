"""What ``geoprobe windtunnel run`` / ``probes/windtunnel.toml`` do: :class:`WindTunnelConfig`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.tables import FlatTables
from geoprobe.windtunnel.conventions import make_task
from geoprobe.windtunnel.scales import scale_spec
from geoprobe.windtunnel.seeds import parse_seeds, seed_list

ArchChoice = Literal["both", "transformer", "mlp"]
#: held-out sequences and probe prompts: 10× the paper scale's 5,000 (the bootstrap of the paper's MAE keeps
#: 1,000 weights per sequence: 400 MB at the limit)
EVAL_MAX = 50_000
EVAL_WHY = "10× the paper scale's 5,000 sequences"


def check_arch(arch: str) -> None:
    if arch not in ("both", "transformer", "mlp"):
        raise GeoprobeError(f"arch {arch!r} is not both|transformer|mlp; pass --arch both, transformer or mlp")


@dataclass(frozen=True)
class WindTunnelConfig(FlatTables):
    """What ``geoprobe windtunnel run`` / ``probes/windtunnel.toml`` do: train, evaluate, report.
    ``threads``: torch's CPU threads while training (None: torch's default)."""

    TABLE: ClassVar[str] = "windtunnel"

    task: Literal["bijection", "hmm"] = "bijection"
    scale: Literal["tiny", "small", "cpu", "paper"] = "cpu"
    arch: ArchChoice = "both"
    seed: int = 0
    steps: int | None = None  # None: the scale's
    n_eval: int | None = None  # None: the scale's
    n_probes: int | None = None
    geometry: bool = True
    ablations: bool = True
    vocab: int | None = None  # task parameters; None: the scale's (V symbols / emissions)
    length: int | None = None  # K
    states: int | None = None  # S (HMM)
    repeat: float | None = None  # bijection: probability that a key repeats
    # several runs: a count (seeds from ``seed``) or a list of seeds (geoprobe.windtunnel.seeds)
    seeds: int | tuple[int, ...] | None = None
    convention: Literal["geoprobe", "authors"] = "geoprobe"  # whose task: geoprobe's, or the authors' exactly
    threads: int | None = None

    #: upper limits (docs/windtunnel.md); vocab, length and states are bounded by the task itself
    LIMITS: ClassVar[dict[str, Limit]] = {
        "steps": Limit.steps("--steps", low=1),
        "n_eval": Limit(EVAL_MAX, EVAL_WHY, "--n-eval"),
        "n_probes": Limit(EVAL_MAX, EVAL_WHY, "--n-probes"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "windtunnel")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        check_limits(self, self.LIMITS)
        if self.seeds is not None:
            object.__setattr__(self, "seeds", parse_seeds(self.seeds))
            seed_list(self.seeds, self.seed)  # a list with a --seed is refused here
        scale_spec(self.task, self.scale, self.convention)  # one-line errors: unknown task, scale, convention
        self.task_params()  # and for out-of-range task parameters
        check_arch(self.arch)
        if self.threads is not None and self.threads < 1:
            raise GeoprobeError(f"threads = {self.threads} is below 1; pass --threads 1 or more")
        for name in ("n_eval", "n_probes"):
            v = getattr(self, name)
            if v is not None and v < 8:
                raise GeoprobeError(f"{name} = {v} is below 8 sequences; pass --{name.replace('_', '-')} 8 or more")

    def task_params(self) -> dict[str, Any]:
        """The task parameters given (checked by building the task)."""
        given = {"V": self.vocab, "K": self.length, "S": self.states, "repeat": self.repeat}
        if self.task == "bijection" and self.states is not None:
            raise GeoprobeError("--states is an HMM parameter; drop it or pass --task hmm")
        if self.task == "hmm" and self.repeat is not None:
            raise GeoprobeError("--repeat is a bijection parameter; drop it or pass --task bijection")
        params = {k: v for k, v in given.items() if v is not None}
        sc = scale_spec(self.task, self.scale, self.convention)
        make_task(self.task, self.convention, **{**sc.task, **params})
        return params


__all__ = ["ArchChoice", "WindTunnelConfig", "check_arch"]
