"""``geoprobe run probes/compare.toml`` (command compare-models): which models, on which prompt sets."""

from __future__ import annotations

from dataclasses import dataclass, field

from geoprobe.scan.config import ProbeError, ScanConfig

#: models (and prompt sets) of one compare-models recipe: a Table 2 of 100 models is far more than the paper's
LIST_MAX = 100


@dataclass(frozen=True)
class CompareModelsConfig:
    """``geoprobe run probes/compare.toml``: sample each prompt set once (with ``sample_with``),
    scan every model on exactly those prompts, then ``geoprobe compare`` the runs."""

    models: tuple[str, ...]
    sets: tuple[str, ...] = ("mixed",)
    sample_with: str | None = None  # None: the first model
    scan: ScanConfig = field(default_factory=ScanConfig)

    def __post_init__(self) -> None:
        for key, items in (("models.run", self.models), ("models.sets", self.sets)):
            if len(items) > LIST_MAX:
                raise ProbeError(
                    f"{key} lists {len(items)} entries, above the limit of {LIST_MAX} (each model is a full scan of "
                    f"each set); set {key} to {LIST_MAX} entries or fewer in the recipe"
                )
        if len(self.models) < 2 or len(set(self.models)) != len(self.models):
            raise ProbeError(
                f"models {list(self.models)}: compare-models needs at least two distinct models ([models] run = [...])"
            )
        if not self.sets:
            raise ProbeError('compare-models needs at least one prompt set ([models] sets = ["mixed", ...])')

    @property
    def sampler(self) -> str:
        return self.sample_with or self.models[0]
