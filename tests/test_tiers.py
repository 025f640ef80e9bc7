"""The test tiers (issue 39 case 10): ``scripts/test.sh --fast`` selects a strict subset of the suite, the
tests marked neither ``slow`` (real weights) nor ``e2e`` (tests/conftest.py E2E), while ``scripts/test.sh``
(what CI runs) collects every test. Checked on what pytest collects through the script, not on timings."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _collected(*args: str) -> set[str]:
    """The test ids ``bash scripts/test.sh ARGS --collect-only`` collects (one a line: the script passes -q)."""
    env = dict(os.environ, GEOPROBE_SKIP_SETUP="1")
    r = subprocess.run(
        ["bash", "scripts/test.sh", *args, "--collect-only", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ids = {ln for ln in r.stdout.splitlines() if "::" in ln and not ln.startswith(" ")}
    count = re.search(r"(\d+)(?:/\d+)? tests? collected", r.stdout)
    assert count and int(count.group(1)) == len(ids), r.stdout[-500:]
    return ids


def test_fast_is_a_strict_subset_without_a_slow_or_end_to_end_test():
    full = _collected()
    fast = _collected("--fast")
    marked = _collected("-m", "slow or e2e")
    assert fast and fast < full and len(fast) < len(full)
    assert not fast & marked  # no test marked slow or e2e in the fast tier
    assert fast | marked == full  # and every other test is in it: new modules default into the fast tier
    # what each tier holds, by example: real weights, a browser, a Ray cluster, a whole command; a unit test
    for slow in (
        "tests/sula/test_sula.py::test_run_sula_smollm2",
        "tests/report/test_browser.py::",
        "tests/sweep/test_ray.py::",
        "tests/cli/test_error_audit.py::",
        "tests/test_tiers.py::",
    ):
        assert any(t.startswith(slow) for t in full) and not any(t.startswith(slow) for t in fast), slow
    assert any(t.startswith("tests/analysis/test_stats.py::") for t in fast)


def test_arguments_besides_fast_reach_pytest():
    fast = _collected("--fast", "tests/trajectory")
    assert fast and all(t.startswith("tests/trajectory/") for t in fast)
    assert "tests/trajectory/test_data.py::test_record_identifies_the_data" in fast
