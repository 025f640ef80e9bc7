"""``compare_results``: several scans' results → a Table-2 analogue and a global PCA basis; and
``run_compare`` (results files in, comparison.json and compare.html out).

See docs/compare.md for the definitions and the bad-input behaviour.
"""

from __future__ import annotations

import os
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from geoprobe.capture.result import Capture
from geoprobe.checks import strings_arg
from geoprobe.compare.global_pca import MIN_SHARED, GlobalPCA, align_prompts, global_pca
from geoprobe.compare.inputs import (
    Source,
    architecture,
    check_capture,
    describe,
    load_result,
    resolve_layer,
    short_hash,
)
from geoprobe.compare.result import ModelComparison
from geoprobe.compare.table import build_row
from geoprobe.errors import GeoprobeError, OutputExistsError
from geoprobe.provenance import package_versions
from geoprobe.version import __version__


# -- building -------------------------------------------------------------------------------------
def _note(notes: list[str], msg: str, warn: bool = False) -> None:
    notes.append(msg)
    if warn:
        warnings.warn(msg, stacklevel=3)


def _check_prompt_sets(by_model: dict[str, dict[str, Any]], notes: list[str]) -> None:
    """Warn when two models' results in the same role (mixed, or the same domain) were computed
    on different prompts; the first model having that role is the reference."""
    roles: dict[str, list[Source]] = {}
    for chosen in by_model.values():
        if chosen["mixed"] is not None:
            roles.setdefault("mixed", []).append(chosen["mixed"][0])
        for s, _ in chosen["restricted"]:
            roles.setdefault(f"restricted ({s.domain})", []).append(s)
    for role, srcs in roles.items():
        ref = srcs[0]
        # the unrestricted role holds any set that is not one domain (mixed, builtin, a file): not named
        # "mixed" when one of them is builtin (issue 39 case 3); the sets' own names follow in brackets
        what = "prompt sets" if role == "mixed" else f"{role} prompt sets"
        for s in srcs[1:]:
            if (s.prompts_hash or s.set_hash) != (ref.prompts_hash or ref.set_hash):
                _note(
                    notes,
                    f"models {ref.model} and {s.model} were scanned on different {what} "
                    f"({ref.set_name} {short_hash(ref.prompts_hash or ref.set_hash)} vs "
                    f"{s.set_name} {short_hash(s.prompts_hash or s.set_hash)}); their numbers are not "
                    "computed on the same prompts",
                    warn=True,
                )


def _group(loaded: list[tuple[Source, Any]], notes: list[str]) -> dict[str, dict[str, Any]]:
    by_model: dict[str, dict[str, Any]] = {}
    for src, res in loaded:
        g = by_model.setdefault(src.model, {"mixed": None, "restricted": [], "all": []})
        g["all"].append((src, res))
        if src.role == "mixed":
            if g["mixed"] is None:
                g["mixed"] = (src, res)
            else:
                _note(
                    notes,
                    f"{src.model}: several mixed results; the table uses {g['mixed'][0].path} "
                    f"({g['mixed'][0].set_name}), not {src.path} ({src.set_name})",
                )
        else:
            same = next((s for s, _ in g["restricted"] if s.domain == src.domain), None)
            if same is None:
                g["restricted"].append((src, res))
            else:
                _note(notes, f"{src.model}: several {src.domain} results; the table uses {same.path}, not {src.path}")
    return by_model


def _global(by_model: dict[str, dict[str, Any]], layer: int, notes: list[str], random_state: int) -> GlobalPCA | None:
    picked = []
    for model, g in by_model.items():
        if g["mixed"] is None:
            continue
        src, res = g["mixed"]
        if not src.capture_dir:
            notes.append(f"global PCA: {model}'s result {src.path} names no capture; it is left out")
            continue
        try:
            cap = Capture.load(src.capture_dir)
            values = cap.values_flat(layer)
            model_layer = cap.layers[cap.index(layer)]
        except (GeoprobeError, OSError, ValueError, KeyError) as exc:
            notes.append(f"global PCA: {model}'s capture {src.capture_dir} is unusable ({exc}); it is left out")
            continue
        picked.append((model, cap, np.asarray(values, dtype=np.float64), model_layer))
    if len(picked) < 2:
        notes.append(
            f"global PCA skipped: it needs at least two models with a mixed-set result and its saved capture, "
            f"found {len(picked)}"
        )
        return None
    shared, rows = align_prompts([c.prompts for _, c, _, _ in picked])
    if len(shared) < MIN_SHARED:
        notes.append(
            f"global PCA skipped: the models share only {len(shared)} prompt(s) (exact text) and it needs at "
            f"least {MIN_SHARED}; scan every model with the same --prompts FILE to share prompts"
        )
        return None
    try:
        return global_pca(
            [v[r] for (_, _, v, _), r in zip(picked, rows)],
            [m for m, _, _, _ in picked],
            shared,
            [np.asarray(c.next_entropy, dtype=np.float64)[r] for (_, c, _, _), r in zip(picked, rows)],
            [ml for _, _, _, ml in picked],
            random_state=random_state,
        )
    except ValueError as exc:
        notes.append(f"global PCA skipped: {exc}")
        return None


def compare_results(
    paths: Sequence[str | os.PathLike], *, layer: int = -1, early_fraction: float = 1 / 3, random_state: int = 0
) -> ModelComparison:
    """Compare the scans in ``paths`` (results.json files or their run directories).

    ``layer``: model layer of the value-manifold columns and the global PCA (negative counts from
    each model's last layer; default the last); ``early_fraction``: the early layers of key
    orthogonality are the model's first ``max(1, ⌈early_fraction · n_layers⌉)``; ``random_state``
    seeds the bootstrap CIs of the global PCA's ρ's."""
    paths = strings_arg(paths, "paths", "results files (results.json or run directories)", paths=True)
    if len(paths) < 2:
        raise GeoprobeError(
            f"compare needs at least two results files, got {len(paths)}; pass the results.json of two or more scans"
        )
    if not 0 < early_fraction <= 1:
        raise GeoprobeError(f"early fraction {early_fraction} must lie in (0, 1]")
    loaded = []
    seen: dict[tuple[str, str, str], str] = {}
    for path in paths:
        p, res = load_result(path)
        src = describe(p, res)
        check_capture(src, res)  # a capture from another model, weights or prompt set is refused
        if src.key in seen:
            raise GeoprobeError(
                f"{seen[src.key]!r} and {str(p)!r} are the same scan (model {src.model}, prompt set "
                f"{src.set_name} {short_hash(src.prompts_hash or src.set_hash)}); pass each result once"
            )
        seen[src.key] = str(p)
        loaded.append((src, res))
    layer_of = {}
    for src, res in loaded:
        if res.manifold is not None:
            layer_of[src.path] = resolve_layer(layer, res.n_layers, res.layers, repr(src.path))
        else:
            layer_of[src.path] = res.layers[-1]
    notes: list[str] = []
    for src, res in loaded:
        if res.manifold is None:
            notes.append(f"{src.path} has no value-manifold analysis; its PC1 columns are n/a")
    by_model = _group(loaded, notes)
    _check_prompt_sets(by_model, notes)
    rows = []
    for model, g in by_model.items():
        first = (g["mixed"] or g["restricted"][0])[1]
        arch = architecture(first, [s.capture_dir for s, _ in g["all"]])
        row, row_notes = build_row(model, arch, g["mixed"], g["restricted"], layer_of, early_fraction)
        rows.append(row)
        notes.extend(row_notes)
        if g["mixed"] is None:
            notes.append(f"{model}: no mixed-set result; its mixed columns are n/a")
    gp = _global(by_model, layer, notes, random_state)
    prov = {
        "geoprobe": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "layer": layer,
        "early_fraction": early_fraction,
        "random_state": random_state,
        "versions": package_versions(),
    }
    return ModelComparison(
        rows=tuple(rows), global_pca=gp, notes=tuple(notes), sources=tuple(s for s, _ in loaded), provenance=prov
    )


def run_compare(
    paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *, force: bool, layer: int = -1
) -> tuple[ModelComparison, Path, Path]:
    """``geoprobe compare``: write ``out_dir/comparison.json`` and ``out_dir/compare.html``.

    Existing outputs are refused (before anything is computed) unless ``force``. Returns
    (ModelComparison, comparison.json path, compare.html path)."""
    out = Path(out_dir)
    targets = (out / ModelComparison.FILE, out / ModelComparison.PAGE)
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        raise OutputExistsError(
            f"{str(existing[0])!r} already exists; pass --force to replace it or choose another --out"
        )
    comp = compare_results(paths, layer=layer)
    json_path = comp.save(targets[0])
    html_path = comp.report(targets[1], force=True)  # existence was checked before any work
    return comp, json_path, html_path
