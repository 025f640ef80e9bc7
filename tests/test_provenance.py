"""geoprobe.provenance.package_versions: what a result records about the software that produced it."""

from __future__ import annotations

from importlib import metadata

import geoprobe.provenance as provenance
from geoprobe.version import __version__


def test_geoprobe_is_the_running_codes_version_never_another_distributions(monkeypatch):
    """The distribution is geoprobe-attention; a distribution named geoprobe (on PyPI: an unrelated seismic
    reader of the same import name) must not be recorded as this code's version, nor its absence."""
    real = metadata.version

    def version(name: str) -> str:
        if name == "geoprobe":
            return "0.4.0"  # the unrelated package, installed beside this one
        return real(name)

    monkeypatch.setattr(provenance.metadata, "version", version)
    v = provenance.package_versions()
    assert v["geoprobe"] == __version__ and list(v)[:2] == ["python", "geoprobe"]

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(provenance.metadata, "version", missing)
    v = provenance.package_versions()
    assert v["geoprobe"] == __version__ and v["torch"] == "absent"


def _prov(**kw) -> provenance.Provenance:
    return provenance.Provenance(
        model_id="ck", source="local", weights="sha256:0", tokenizer="ck", dtype="float32", **kw
    )


def test_partial_weights_are_stored_only_when_there_are_some_and_old_files_still_read():
    """``partial_weights`` (a load under --allow-partial-weights) is written only when set, so the
    provenance of every whole load, and every file written before the field existed, is unchanged."""
    whole = _prov()
    stored = whole.to_dict()
    assert "partial_weights" not in stored
    assert provenance.Provenance.from_dict(stored).partial_weights is None
    pw = provenance.PartialWeights.of(["b.weight", "a.weight"], [], [("c.weight", (2, 3), (3, 3))])
    partial = _prov(partial_weights=pw)
    stored = partial.to_dict()
    assert stored["partial_weights"] == {
        "missing": ["a.weight", "b.weight"],
        "unexpected": [],
        "mismatched": [["c.weight", [2, 3], [3, 3]]],
    }
    back = provenance.Provenance.from_dict(stored)
    assert back == partial and back.partial_weights.mismatched == (("c.weight", (2, 3), (3, 3)),)
