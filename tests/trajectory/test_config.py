"""TrajectoryConfig: Pythia's checkpoint schedule, its learning-rate schedule, and the settings it refuses."""

from __future__ import annotations

import math

import pytest

from geoprobe.errors import GeoprobeError
from geoprobe.trajectory import TrajectoryConfig, TrajectoryError, pythia_steps


def test_pythia_schedule_gives_its_154_checkpoints_at_143000_steps():
    """Pythia publishes 154 checkpoints per model: step0, step1, step2, …, step512, then every 1,000."""
    s = pythia_steps(143_000)
    assert len(s) == 154
    assert s[:11] == (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    assert s[11:] == tuple(range(1000, 143_001, 1000))


@pytest.mark.parametrize(
    "steps, expected",
    [
        (1, (0, 1)),
        (9, (0, 1, 2, 4, 8, 9)),  # the last step is always kept
        (512, (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)),
        (3000, (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 3000)),
        (2500, (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 2500)),
    ],
)
def test_schedule_up_to_a_step(steps, expected):
    assert pythia_steps(steps) == expected == TrajectoryConfig(steps=steps).checkpoint_steps()


def test_learning_rate_warms_up_linearly_then_decays_by_cosine_to_a_tenth():
    c = TrajectoryConfig(steps=1000, lr=1e-3)  # warm-up 1 %: 10 steps
    assert c.warmup_steps() == 10
    assert [c.lr_at(s) for s in range(10)] == pytest.approx([1e-4 * (s + 1) for s in range(10)])
    assert c.lr_at(10) == pytest.approx(1e-3)
    mid = 10 + (1000 - 10) / 2  # half way through the decay: the mean of peak and floor
    assert c.lr_at(int(mid)) == pytest.approx(0.55e-3, rel=1e-3)
    assert c.lr_at(1000) == pytest.approx(1e-4)
    after = [c.lr_at(s) for s in range(10, 1001)]
    assert all(a >= b for a, b in zip(after, after[1:]))
    # the cosine itself, at a quarter of the decay
    q = 10 + 990 // 4
    assert c.lr_at(q) == pytest.approx(1e-4 + 0.9e-3 * 0.5 * (1 + math.cos(math.pi * (q - 10) / 990)))


def test_default_is_pythia_14m_shaped():
    c = TrajectoryConfig()
    assert (c.layers, c.hidden_size, c.heads, c.intermediate_size) == (6, 128, 4, 512)
    assert (c.rotary_pct, c.lr, c.beta1, c.beta2, c.weight_decay, c.clip, c.warmup) == (
        0.25,
        1e-3,
        0.9,
        0.95,
        0.1,
        1.0,
        0.01,
    )
    # the default run's disk: 14 checkpoints of about 9 MB each, under the 300 MB budget
    assert c.estimated_bytes() < 300e6


@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(heads=3), "hidden size 128 is not a multiple of 3 heads; pass --hidden-size 126"),
        (dict(hidden_size=16, heads=4), "rotates fewer than 2 dimensions"),
        (dict(domains=("math", "poetry")), "unknown corpus domain 'poetry'; pass --domains"),
        (dict(domains=("math", "math")), "names a domain twice"),
        (dict(domains=()), "no corpus domains"),
        (dict(seq_len=4096), "--seq-len = 4096 is above the limit of 2048"),
        (dict(vocab_size=100), "--vocab-size = 100 is below 258"),
        (dict(steps=0), "--steps = 0 is below 1"),
        (dict(lr=0.0), "learning rate 0 trains nothing"),
        (dict(lr=-1.0), "lr -1.0 is outside [0.0, 1.0]; pass --lr"),
        (dict(layers=True), "true/false is no integer"),
        (dict(seed=-1), "seed -1 is outside"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_fix(changes, words):
    with pytest.raises(GeoprobeError) as exc:
        TrajectoryConfig(**changes)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_errors_of_its_own_are_trajectory_errors():
    with pytest.raises(TrajectoryError):
        TrajectoryConfig(heads=3)


def test_a_single_domain_string_is_one_domain():
    assert TrajectoryConfig(domains="math").domains == ("math",)
