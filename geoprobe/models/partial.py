"""Weights that do not match their config: read from transformers' loading report, refused by default.

``from_pretrained`` builds the model the config describes and fills it from the weights. A tensor the
config asks for and the weights lack is initialised at random, one the config has no place for is
dropped, and (with ``ignore_mismatched_sizes``) one of the wrong shape is initialised at random; all of
it is a logged warning, after which geoprobe would measure a model it did not load. geoprobe asks for
the report (``output_loading_info=True``) and refuses any of the three in one line, unless
``--allow-partial-weights`` says a partial load is intended: then the report goes into the result's
provenance (``Provenance.partial_weights``). What transformers itself leaves out of the report is not
refused: tied weights (an LM head tied to the input embedding), non-persistent buffers (rotary
``inv_freq``), and the keys a model class ignores (``_keys_to_ignore_on_load_missing/unexpected``)."""

from __future__ import annotations

from typing import Any

from geoprobe.errors import WeightsMismatchError
from geoprobe.provenance import PartialWeights

FLAG = "--allow-partial-weights"

#: what transformers' from_pretrained is asked for: the report, and mis-shaped tensors in it (it raises
#: on them otherwise, after logging a multi-line table)
LOAD_KWARGS: dict[str, Any] = {"output_loading_info": True, "ignore_mismatched_sizes": True}

FIX = f"fix the checkpoint, or pass {FLAG} if a partial load is intended"


def split_report(loaded: Any) -> tuple[Any, dict[str, Any] | None]:
    """``(model, info)`` from what ``from_pretrained(..., output_loading_info=True)`` returned (a model
    whose own code returns the model alone gives ``info`` None)."""
    if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[1], dict):
        return loaded[0], loaded[1]
    return loaded, None


def check_report(model_id: str, info: dict[str, Any] | None, allow: bool) -> PartialWeights | None:
    """None when the weights match the config; else a one-line :class:`WeightsMismatchError`, or
    with ``allow`` the :class:`PartialWeights` to record."""
    if info is None:
        return None
    errors = [" ".join(str(e).split()) for e in info.get("error_msgs") or ()]
    report = PartialWeights.of(
        info.get("missing_keys") or (), info.get("unexpected_keys") or (), info.get("mismatched_keys") or ()
    )
    if errors:  # transformers raises on these itself; in case a version does not (no flag loads them)
        raise WeightsMismatchError(
            f"model {model_id!r}: its weights could not be loaded into the model its config.json describes "
            f"({errors[0]}); fix the checkpoint or pass another --model"
        )
    if report.empty():
        return None
    if not allow:
        raise WeightsMismatchError(
            f"model {model_id!r}: its weights do not match its config.json: {report.summary()}; "
            f"{report.consequence()}; {FIX}"
        )
    return report


def shape_error(model_id: str, exc: Exception) -> WeightsMismatchError | None:
    """transformers' own refusal of tensors of the wrong shape (a RuntimeError or ValueError naming a
    size mismatch, several lines with a table), as one line; None for any other error."""
    text = str(exc)
    if "size mismatch" not in text and "ignore_mismatched_sizes" not in text:
        return None
    first = next((ln.strip() for ln in text.splitlines() if "size mismatch" in ln), "")
    why = f" ({first})" if first else ""
    return WeightsMismatchError(
        f"model {model_id!r}: its weights do not match its config.json: tensors of the wrong shape{why}; {FIX}"
    )
