"""What ``geoprobe dynamics`` runs: the sticky-chain task and the two training schedules.

Defaults are the authors' (``experiments/paper2_gradient/em_vs_sgd_multiseed.py`` of
vishalmisra/bayesian-wind-tunnel): 8 symbols, self-transition probability 0.3 (the other
transitions weighted 1 / circular distance), inputs x_t = μ_{y_{t−1}} + N(0, I) in 20 dimensions,
T = 2000 positions, one causal attention head with d_k = 10, d_v = 15 and a linear read-out,
full-batch cross-entropy; SGD at lr 0.01 against the EM-like schedule (values at lr 0.1, routing
W_Q, W_K, W_O at lr 0.01), 1,000 steps, 5 seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record
from geoprobe.tables import FlatTables


class DynamicsError(GeoprobeError):
    """A dynamics setting that cannot be run."""


@dataclass(frozen=True, eq=False)
class DynamicsConfig(FlatTables, Record):
    TABLE: ClassVar[str] = "dynamics"

    n_symbols: int = 8
    self_prob: float = 0.3
    d_x: int = 20
    d_k: int = 10
    d_v: int = 15
    length: int = 2000  # T: positions of the one training sequence per seed
    steps: int = 1000
    lr: float = 0.01  # SGD, every weight
    lr_routing: float = 0.01  # EM-like: W_Q, W_K, W_O
    lr_value: float = 0.1  # EM-like: W_V
    seeds: int = 5
    seed: int = 0  # seeds 0..seeds-1 are offsets from this one

    #: upper limits (docs/dynamics.md). The one head holds its T × T scores, their softmax and their
    #: gradients: about 24·T² bytes, 1.6 GB at T = 8192
    LIMITS: ClassVar[dict[str, Limit]] = {
        "length": Limit(
            8192, "4× the paper's T = 2000; the T × T attention and its gradients take 1.6 GB there", "--length"
        ),
        "steps": Limit.steps("--steps"),
        "seeds": Limit(100, "20× the paper's 5 seeds", "--seeds"),
        "n_symbols": Limit(1024, "128× the paper's 8 symbols", "dynamics.n_symbols"),
        **{
            name: Limit(4096, "far above the paper's 10 to 20 dimensions", f"dynamics.{name}")
            for name in ("d_x", "d_k", "d_v")
        },
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "dynamics")
        check_seed(self.seed, "--seed (seed in a dynamics recipe)")
        check_limits(self, self.LIMITS)
        for name in ("n_symbols", "d_x", "d_k", "d_v", "length", "steps", "seeds"):
            least, value = (2 if name in ("n_symbols", "length") else 1), getattr(self, name)
            if value < least:
                raise DynamicsError(f"{name} {value} is below {least}; {_fix(name, least)}")
        if not 0.0 <= self.self_prob < 1.0:
            raise DynamicsError(f"self_prob {self.self_prob} must be in [0, 1); set self_prob in the dynamics recipe")
        for name in ("lr", "lr_routing", "lr_value"):
            if not getattr(self, name) > 0:
                raise DynamicsError(f"{name} {getattr(self, name)} must be positive; {_fix(name, 'a positive value')}")


#: settings with a flag of their own (the others are set in a recipe's [dynamics] table)
FLAGS = {
    "length": "--length",
    "steps": "--steps",
    "seeds": "--seeds",
    "lr": "--lr",
    "lr_routing": "--lr-routing",
    "lr_value": "--lr-value",
}


def _fix(name: str, least: object) -> str:
    where = f"pass {FLAGS[name]} {least}" + (" or more" if isinstance(least, int) else "") if name in FLAGS else ""
    return (where + " (or " if where else "set ") + f"{name} in the dynamics recipe" + (")" if where else "")
