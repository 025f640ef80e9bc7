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
