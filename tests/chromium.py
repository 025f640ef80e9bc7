"""Whether kaleido has a Chromium to draw static figures with; on CI (``CI=true``) one must be there."""

from __future__ import annotations

import os

import pytest


def has_chromium() -> bool:
    """True where geoprobe finds a Chromium; False where not, except on CI, where that fails the test."""
    from geoprobe.errors import GeoprobeError
    from geoprobe.report.export import find_browser

    try:
        find_browser()
    except GeoprobeError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {exc}")
        return False
    return True


def need_chromium() -> None:
    """Skip (with why) where there is no Chromium; fail on CI."""
    if not has_chromium():
        pytest.skip("no Chromium for kaleido here (apt-get install chromium)")
