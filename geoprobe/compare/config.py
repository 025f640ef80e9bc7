"""``geoprobe run probes/compare.toml`` (command compare-models): which models, on which prompt sets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoprobe.errors import ProbeError
from geoprobe.scan.config import ScanConfig
from geoprobe.tables import typed

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

    @classmethod
    def from_tables(cls, doc: dict[str, Any], p: Path) -> "CompareModelsConfig":
        """A compare-models recipe: its [models] table (run, sets, sample_with) and a scan's tables."""
        doc = dict(doc)
        table = doc.pop("models", None)
        if "prompts" in doc:  # the prompts are sampled per set: a [prompts] table would be ignored
            raise ProbeError(
                f"probe {str(p)!r} runs compare-models, which samples its prompts from [models] sets; drop its "
                "[prompts] table (or run each model's scan with that prompt file and geoprobe compare the runs)"
            )
        scan = ScanConfig.from_tables(doc, p)
        if not isinstance(table, dict) or "run" not in table:
            raise ProbeError(f"probe {str(p)!r} runs compare-models but has no [models] run = [...] list")
        unknown = sorted(set(table) - {"run", "sets", "sample_with"})
        if unknown:
            raise ProbeError(f"probe {str(p)!r}: unknown key models.{unknown[0]}; known: run, sets, sample_with")
        typed(
            cls,
            {"models": table["run"], **{k: table[k] for k in ("sets", "sample_with") if k in table}},
            p,
            {"models": "models.run", "sets": "models.sets", "sample_with": "models.sample_with"},
        )
        return cls(
            models=tuple(table["run"]),
            sets=tuple(table.get("sets", ("mixed",))),
            sample_with=table.get("sample_with"),
            scan=scan,
        )

    def to_tables(self) -> dict[str, dict[str, Any]]:
        """The recipe tables :meth:`from_tables` reads back as this config."""
        models = {"run": list(self.models), "sets": list(self.sets)}
        if self.sample_with is not None:
            models["sample_with"] = self.sample_with
        return {"models": models, **self.scan.to_tables(prompts=False)}
