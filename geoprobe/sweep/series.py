"""Series, training runs and verified checkpoints: what each sweep cell's row says about where its weights
come from (``series``, ``run``, ``tokens``, ``weights_sha256``, ``duplicate_of`` in sweep.parquet), and the
helper every analysis across checkpoints uses to leave repeated weights out (:func:`series_cells`).

**Series and run.** A cell's ``series`` is the model its checkpoints are a trajectory of, and its ``run`` the
training run (a replicate of that series):

==========================================  ===========================  ===================================
cell                                        series                       run
==========================================  ===========================  ===================================
``twin:gpt2@3``, or ``twin:gpt2`` with      ``twin:gpt2`` (the model     ``seed3`` (the weight seed)
``weight_seed = 3``                         without ``@SEED``)
a ``geoprobe trajectory`` checkpoint         the ``model`` coordinate     ``seed<N>``: its trajectory.json's
directory (``revision`` or ``model``)                                     training seed (two trajectories of one
                                                                          seed in a series: ``seedN (<dir>)``)
any other checkpoint directory              the ``model`` coordinate     the directory without ``stepN``
``EleutherAI/pythia-160m-seed3``            ``pythia-160m``              ``seed3`` (PolyPythias; also
                                                                         ``data-seed1``, ``weight-seed2``)
``pythia-160m``, ``EleutherAI/pythia-160m``  ``pythia-160m``              ``seed1234`` (the original run's seed,
                                                                         as the PolyPythias model cards say)
anything else                               the ``model`` coordinate     None
==========================================  ===========================  ===================================

**Tokens.** Tokens seen at the checkpoint: a trajectory checkpoint's manifest entry (``tokens``); Pythia
and PolyPythias: step × 2,097,152 (1,024 sequences × 2,048 tokens a step: "299,892,736,000 tokens …
checkpoints every 2,097,152,000 tokens", EleutherAI/pythia README); None otherwise.

**Duplicates.** Two cells of one series (every column equal but the checkpoint's own: revision, step,
tokens, model, parameters) with the same ``weights_sha256`` hold the same weights (EleutherAI/pythia issue
#205: pythia-2.8b serves its final weights from 86 of its 154 step branches, step 0 included). The later
one by training step is a duplicate: ``duplicate_of`` names the earlier cell. Which of them holds the
weights its name promises cannot be told from the hash; the page names every group.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from geoprobe.sweep.aggregate import run_of

#: tokens a Pythia (and PolyPythias) training step sees: 1,024 sequences × 2,048 tokens
PYTHIA_TOKENS_PER_STEP = 1024 * 2048
#: the run of the original Pythia models (their training seed; PolyPythias' runs are seed1 … seed9)
PYTHIA_RUN = "seed1234"
_PYTHIA = re.compile(
    r"(?:eleutherai/)?(pythia-\d+(?:\.\d+)?[mb](?:-deduped)?)(?:-((?:data-|weight-)?seed\d+))?", re.IGNORECASE
)
#: columns of a sweep.parquet row that belong to the checkpoint, not to its series (with the row's own values)
CHECKPOINT_COLUMNS = ("cell", "model", "n_params", "revision", "training_step", "tokens", "weights_sha256")
#: coordinates a cell's ``run`` stands for (a twin's weight seed): left out of the series key with the model
RUN_SOURCES = ("weight_seed",)
#: the columns a result's own rows give (the others are its cell's); ``head``, ``contrast``, ``low_adj``,
#: ``high_adj``, ``p_adj``: a per-head row's head, and a paired contrast's kind, simultaneous interval and
#: Holm-adjusted p (geoprobe.sweep.contrasts; "" / None on a cell's own rows). geoprobe.sweep.table writes them.
ROW_COLUMNS = (
    "layer",
    "head",
    "metric",
    "estimate",
    "low",
    "high",
    "null",
    "n",
    "contrast",
    "low_adj",
    "high_adj",
    "p_adj",
)


def pythia(model: Any) -> tuple[str, str] | None:
    """(series, run) of a Pythia or PolyPythias model name (``EleutherAI/pythia-160m-seed3`` ->
    ``("pythia-160m", "seed3")``), None for any other name."""
    m = _PYTHIA.fullmatch(model) if isinstance(model, str) else None
    return None if m is None else (m.group(1).lower(), (m.group(2) or PYTHIA_RUN).lower())


def _twin_seed(coords: Mapping[str, Any], prov: Mapping[str, Any]) -> int | None:
    if isinstance(prov.get("weight_seed"), int):
        return prov["weight_seed"]
    m = re.fullmatch(r"random-init seed=(\d+)", str(prov.get("weights") or ""))
    if m:
        return int(m.group(1))
    from geoprobe.models.options import twin_seed

    return twin_seed(str(coords["model"]), coords.get("weight_seed"))


def checkpoint_dir(coords: Mapping[str, Any], prov: Mapping[str, Any]) -> Path | None:
    """The local directory a cell loaded (as its provenance records it, else its coordinates), or None."""
    for where in (prov.get("model_id") if prov.get("source") == "local" else None, coords.get("revision")):
        if isinstance(where, str) and Path(where).expanduser().is_dir():
            return Path(where).expanduser().resolve()
    return None


class Trajectories:
    """The trajectory.json beside each checkpoint directory, each read once: ``entry(dir)`` is (the
    trajectory's directory, its training seed, the checkpoint's manifest entry) or None."""

    def __init__(self) -> None:
        self.read: dict[Path, Any] = {}

    def entry(self, directory: Path) -> tuple[Path, int, Mapping[str, Any]] | None:
        root = directory.parent.parent
        if root not in self.read:
            try:  # read as JSON, not as a TrajectoryResult: 3,000 losses need not be decoded per sweep
                d = json.loads((root / "trajectory.json").read_text())
                self.read[root] = d if d.get("kind") == "geoprobe.trajectory" else None
            except (OSError, ValueError, AttributeError):
                self.read[root] = None
        d = self.read[root]
        if d is None:
            return None
        for c in d.get("checkpoints") or ():
            if isinstance(c, dict) and (root / str(c.get("path"))).resolve() == directory:
                seed = (d.get("config") or {}).get("seed")
                return (root, seed, c) if isinstance(seed, int) else None
        return None


def cell_facts(
    coords: Mapping[str, Any], prov: Mapping[str, Any], step: int | None, trajectories: Trajectories
) -> dict[str, Any]:
    """A cell's ``series``, ``run``, ``tokens`` and ``weights_sha256`` (module docs), from its coordinates,
    its results' provenance and its training step; ``root``: a trajectory's directory (for :func:`runs`)."""
    model = coords.get("model")
    series, run, tokens, root = (None if model is None else str(model)), None, None, None
    here = checkpoint_dir(coords, prov)
    if isinstance(model, str) and model.startswith("twin:"):
        series, run = model.partition("@")[0], f"seed{_twin_seed(coords, prov)}"
    elif here is not None:
        found = trajectories.entry(here)
        if found is not None:
            root, seed, entry = found
            run, tokens = f"seed{seed}", entry.get("tokens") if isinstance(entry.get("tokens"), int) else None
        else:
            run = run_of(str(here))
    elif (pyth := pythia(model)) is not None:
        series, run = pyth
        tokens = None if step is None else step * PYTHIA_TOKENS_PER_STEP
    digest = prov.get("weights_sha256")
    if not isinstance(digest, str):
        weights = str(prov.get("weights") or "")
        digest = weights.removeprefix("sha256:") if weights.startswith("sha256:") else None
    return {"series": series, "run": run, "tokens": tokens, "weights_sha256": digest, "root": root}


def runs(facts: Sequence[dict[str, Any]]) -> None:
    """Two trajectories of one training seed in one series are two runs: their ``run`` becomes
    ``seedN (<trajectory directory>)`` (in place); every fact's ``root`` is then dropped."""
    roots: dict[tuple[Any, Any], set[Any]] = {}
    for f in facts:
        if f.get("root") is not None:
            roots.setdefault((f["series"], f["run"]), set()).add(f["root"])
    for f in facts:
        root = f.pop("root", None)
        if root is not None and len(roots[(f["series"], f["run"])]) > 1:
            f["run"] = f"{f['run']} ({root})"


def series_key(row: Mapping[str, Any], own: Iterable[str] = ()) -> str:
    """What names a row's series: every column but the checkpoint's own, the row's own values and ``own``."""
    skip = {*CHECKPOINT_COLUMNS, *RUN_SOURCES, *ROW_COLUMNS, "duplicate_of", *own}  # a row's own, and the flag
    return json.dumps({k: v for k, v in row.items() if k not in skip}, sort_keys=True, default=str)


def _step_order(row: Mapping[str, Any]) -> tuple[int, int]:
    step = row.get("training_step")
    return (1, 0) if step is None or step != step else (0, int(step))  # no step (or NaN from pandas): last


def duplicates(heads: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """cell -> the earlier cell (by training step, then table order) of its series with the same weights
    (``weights_sha256``), for every cell that repeats an earlier one's weights (module docs)."""
    first: dict[tuple[str, str], str] = {}
    out: dict[str, str] = {}
    for h in sorted(heads, key=_step_order):  # sorted() is stable: table order among equal steps
        digest = h.get("weights_sha256")
        if not digest:
            continue
        key = (series_key(h), str(digest))
        if key in first:
            out[str(h["cell"])] = first[key]
        else:
            first[key] = str(h["cell"])
    return out


def _is_duplicate(v: Any) -> bool:
    return v is not None and v == v and v != ""  # None, NaN (pandas) or "": no duplicate


def series_cells(rows: Any, include_duplicates: bool = False) -> Any:
    """The rows of sweep.parquet (row mappings, or a pandas DataFrame) that trends, contrasts and emergence
    use: every row of a cell whose weights repeat an earlier checkpoint of its series (``duplicate_of``) is
    left out, unless ``include_duplicates``. Returns the same kind it was given."""
    if include_duplicates:
        return rows
    if hasattr(rows, "columns") and hasattr(rows, "loc"):  # a DataFrame
        return rows if "duplicate_of" not in rows.columns else rows[~rows["duplicate_of"].map(_is_duplicate)]
    return [r for r in rows if not _is_duplicate(r.get("duplicate_of"))]


def series_groups(rows: Iterable[Mapping[str, Any]], include_duplicates: bool = False) -> list[list[Mapping[str, Any]]]:
    """The rows grouped by series (:func:`series_key`; one group per series and run), each group in training
    step order (no step last), duplicates left out unless ``include_duplicates``; groups in table order."""
    kept = series_cells(list(rows), include_duplicates)
    seen: dict[Any, dict[str, str]] = {}
    own: set[str] = set()  # columns whose value differs between the rows of one cell: the rows' own
    for r in kept:
        first = seen.setdefault(r.get("cell"), {k: json.dumps(v, default=str) for k, v in r.items()})
        own |= {k for k, v in r.items() if first.get(k) != json.dumps(v, default=str)}
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in kept:
        groups.setdefault(series_key(r, own), []).append(r)
    return [sorted(g, key=_step_order) for g in groups.values()]
