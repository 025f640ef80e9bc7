"""Emergence, t50/t90, frame before precision and tracking on planted series (tests/sweep/planted.py):

* a change planted from a known step is recovered as the emergence step, inside its interval, with one run
  and with three runs (hierarchical bootstrap: runs, then prompts);
* a series where nothing changes shows no emergence for any metric (to-final metrics included: their
  perfect value at the final checkpoint is no change);
* a planted ramp gives the t50 and t90 it was built with;
* a planted rotation of the value axes is recovered as the angle of PC1 and the largest principal angle of the
  top-3 subspaces to the final checkpoint's (within 2 degrees, inside the interval);
* routing that settles before the value axes do reads "frame first" with an interval below 0, and the
  reverse reads "precision first"."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

from geoprobe.sweep.contrasts import paired_series
from geoprobe.sweep.emergence import step_interval
from tests.sweep import planted


def _rows(cells, resamples=300, label="s"):
    _, emergence, why = paired_series(label, cells, n_resamples=resamples, pca_resamples=100, seed=2)
    assert why is None
    return {(e.metric, e.layer): e for e in emergence}


def test_a_change_from_a_known_step_is_recovered_within_its_interval():
    rows = _rows(planted.series(entropy=lambda s: -0.5 if s >= 8 else 0.0, n=120))
    for layer in (0, 1):
        e = rows[("attention_entropy", layer)]
        assert e.direction == -1 and e.emergence_step == 8 and e.low <= 8 <= e.high
        assert e.t50 == 8 and e.t90 == 8 and e.runs == 1
    f = rows[("focusing_reduction", None)]  # the same shift in every layer: no focusing change
    assert f.direction == 0 and f.emergence_step is None


def _runs(starts):
    cells = []
    for r, start in enumerate(starts):
        cells += planted.series(entropy=lambda s, a=start: -0.5 if s >= a else 0.0, n=100, run=f"seed{r}", seed=r)
    return _rows(cells)


def test_three_runs_pool_through_the_hierarchical_bootstrap():
    e = _runs((8, 8, 8))[("attention_entropy", 0)]
    assert e.runs == 3 and e.direction == -1 and e.emergence_step == 8 and e.low <= 8 <= e.high
    # runs that disagree (one moves at 16): the mean has moved 2/3 of the way at step 8, so t50 = 8, but a
    # resample of the runs may hold the late one alone: the interval over runs reaches 16, and the change is
    # established (significant over runs) only once every run has moved
    e = _runs((8, 8, 16))[("attention_entropy", 0)]
    assert e.runs == 3 and (e.t50, e.t50_low, e.t50_high) == (8, 8, 16) and e.t90 == 16
    assert e.emergence_step == 16


def test_no_change_means_no_emergence():
    rows = _rows(planted.series(n=120, routing=lambda s: 0.5))
    for (metric, layer), e in rows.items():
        if not metric.startswith("frame_minus_"):
            assert e.direction == 0 and e.emergence_step is None and e.t90 is None, (metric, layer)
        else:
            assert "not testable" in e.verdict


def test_a_planted_ramp_has_its_t50_and_t90():
    ramp = {0: 0.0, 1: 0.0, 2: 0.0, 4: 0.3, 8: 0.6, 16: 0.8, 32: 1.0, 64: 1.0}
    rows = _rows(planted.series(entropy=lambda s: -0.8 * ramp[s], n=150))
    e = rows[("attention_entropy", 1)]
    assert (e.t50, e.t90) == (8, 32) and e.t50_low <= 8 <= e.t50_high and e.t90_low <= 32 <= e.t90_high


def test_a_planted_axis_rotation_is_recovered_as_the_principal_angle():
    flips = {0: 16, 1: 8, 2: 4, 4: 2, 8: 1, 16: 0, 32: 0, 64: 0}
    cells = planted.series(flips=flips.get, n=800, steps=(0, 1, 2, 4, 8, 64))
    rows, _, _ = paired_series("rot", cells, n_resamples=100, pca_resamples=100, seed=4)
    u = planted.directions()
    for r in rows:
        if r.contrast != "" or r.head is not None or r.metric not in ("pc1_angle_to_final", "subspace_angle_to_final"):
            continue
        m = flips[r.step]
        if r.metric == "pc1_angle_to_final":
            want = math.degrees(math.acos(abs(1 - 2 * m / planted.D)))
        else:
            want = math.degrees(scipy.linalg.subspace_angles(u.T, (u * planted.flipped(m)).T).max())
        assert r.estimate == pytest.approx(want, abs=2.0), (r.metric, r.step, r.layer)
        if m:
            assert r.low - 0.5 <= want <= r.high + 0.5, (r.metric, r.step, r.low, r.high, want)
    # linear CKA compares the prompts' Gram matrices, which a rotation of the axes leaves as they are: it
    # must not see this one (the same planted factors at every step), while the angles do
    cka = {(r.step, r.layer): r.estimate for r in rows if r.metric == "cka_to_final" and r.contrast == ""}
    assert max(cka[(s, 0)] for s in (0, 1, 2, 4, 8)) - min(cka[(s, 0)] for s in (0, 1, 2, 4, 8)) < 0.01
    assert cka[(64, 0)] == pytest.approx(1.0, abs=1e-12)


def test_routing_that_settles_first_reads_frame_first_and_the_reverse_does_not():
    frame_early = planted.series(n=150, routing=lambda s: 1.0 if s >= 4 else 0.0, flips=lambda s: 0 if s >= 16 else 16)
    rows = _rows(frame_early)
    assert rows[("routing_stability", 0)].emergence_step == 4
    assert rows[("pc1_angle_to_final", 0)].emergence_step == 16
    f = rows[("frame_minus_pc1_angle_to_final", 0)]
    assert f.emergence_step == -12 and f.high < 0 and f.verdict.startswith("emergence: frame first")
    late = _rows(planted.series(n=150, routing=lambda s: 1.0 if s >= 32 else 0.0, flips=lambda s: 0 if s >= 4 else 16))
    g = late[("frame_minus_pc1_angle_to_final", 1)]
    assert g.emergence_step == 28 and g.low > 0 and g.verdict.startswith("emergence: precision first")


def test_step_intervals_are_steps_and_keep_open_ends():
    lo, hi = step_interval(np.array([[4.0] * 10 + [8.0] * 80 + [np.inf] * 10, [np.nan] * 100]))
    assert (lo[0], hi[0]) == (4.0, np.inf) and np.isnan(lo[1])
