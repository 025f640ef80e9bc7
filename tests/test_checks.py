"""geoprobe.checks: seeds and recipe values against dataclass annotations."""

from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np
import pytest
import torch

from geoprobe.checks import SEED_MAX, check_fields, check_seed, conforms, describe
from geoprobe.errors import GeoprobeError


def test_the_seed_limit_is_what_numpy_and_torch_accept():
    np.random.RandomState(SEED_MAX)
    torch.manual_seed(SEED_MAX)
    with pytest.raises(ValueError):
        np.random.RandomState(SEED_MAX + 1)  # the binding limit: one past it fails in numpy


@pytest.mark.parametrize("seed", [0, 7, SEED_MAX])
def test_good_seeds_pass(seed):
    assert check_seed(seed) == seed


@pytest.mark.parametrize(
    "seed, needle",
    [
        (-1, "outside [0, 4294967295]"),
        (SEED_MAX + 1, "outside"),
        (1.5, "not an integer"),
        (True, "not an integer"),
        ("3", "not an integer"),
    ],
)
def test_bad_seeds_name_the_flag(seed, needle):
    with pytest.raises(GeoprobeError) as exc:
        check_seed(seed, where="seed in the recipe")
    assert needle in str(exc.value) and "seed in the recipe" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "value, hint, ok",
    [
        (3, int, True),
        (True, int, False),
        (3.0, int, False),
        (3, float, True),
        ("3", float, False),
        ([0, -1], tuple[int, ...], True),
        ("0,1", tuple[int, ...], False),
        ([[0]], tuple[int, ...], False),
        ([1, 2], tuple[int, int], True),
        ([1], tuple[int, int], False),
        (None, Optional[int], True),
        ("a", Literal["a", "b"], True),
        ("c", Literal["a", "b"], False),
        ({"x": 1}, dict, True),
        (False, bool, True),
        (0, bool, False),
    ],
)
def test_conforms(value, hint, ok):
    assert conforms(value, hint) is ok


def test_describe_reads_as_words():
    assert describe(tuple[int, ...]) == "a list of integers"
    assert describe(Optional[int]) == "an integer (or left out)"
    assert describe(Literal["left", "right"]) == "one of 'left', 'right'"


@dataclass
class _Cfg:
    layers: tuple[int, ...] = ()
    batch_size: int = 16


def test_check_fields_names_the_setting_and_what_it_should_be():
    check_fields(_Cfg, {"layers": [0, 1], "batch_size": 2, "other": object()})  # unknown keys are not its job
    with pytest.raises(GeoprobeError) as exc:
        check_fields(_Cfg, {"layers": "0,1"}, name=lambda f: f"capture.{f}")
    assert str(exc.value) == "capture.layers = '0,1' is not a list of integers"


# -- sizes (issue 27): check_range, check_limits and every config's LIMITS table --------------------
from geoprobe.checks import Limit, check_limits, check_range  # noqa: E402


@pytest.mark.parametrize(
    "value, where, needle",
    [
        (25_000_000, "analyses.n_resamples", "set analyses.n_resamples to 100000 or less"),
        (25_000_000, "--n-resamples", "pass --n-resamples 100000 or less"),
        ((1, 2, 100_001), "--k", "--k holds 100001, above the limit of 100000"),
        ((1, 2, 100_001), "--k", "pass --k values of 100000 or less"),
    ],
)
def test_a_value_above_its_limit_names_where_the_limit_and_the_largest_that_fits(value, where, needle):
    with pytest.raises(GeoprobeError) as exc:
        check_range(value, high=100_000, where=where, why="the reason")
    msg = str(exc.value)
    assert needle in msg and "(the reason)" in msg and "\n" not in msg


def test_a_value_in_range_or_of_another_type_passes_and_a_low_bound_is_checked():
    assert check_range(100_000, high=100_000, where="--x") == 100_000
    assert check_range("many", high=1, where="--x") == "many"  # types are check_fields' job
    assert check_range(None, high=1, where="--x") is None
    with pytest.raises(GeoprobeError, match=r"--threads = 0 is below 1; pass --threads 1 or more"):
        check_range(0, low=1, high=8, where="--threads")


def test_check_limits_reads_mappings_and_objects_and_names_the_setting():
    limits = {"n": Limit(10, "why", "--n"), "m": Limit(5, "why")}
    check_limits({"n": 10, "m": None}, limits)
    with pytest.raises(GeoprobeError, match=r"^--n = 11 is above"):
        check_limits({"n": 11}, limits)
    with pytest.raises(GeoprobeError, match=r"^m = 6 is above"):  # no flag: the field
        check_limits(type("C", (), {"n": 1, "m": 6})(), limits)
    with pytest.raises(GeoprobeError, match=r"^sect\.m = 6 is above"):
        check_limits({"m": 6}, limits, lambda f: f"sect.{f}")


def _limited_configs():
    from geoprobe.capture.run import CaptureConfig
    from geoprobe.denoise.config import DenoiseConfig
    from geoprobe.domains.config import DomainsConfig
    from geoprobe.dynamics.config import DynamicsConfig
    from geoprobe.intervene.config import InterventionConfig
    from geoprobe.positional.config import PositionalConfig
    from geoprobe.sampling import SamplingConfig
    from geoprobe.scan.config import ScanConfig
    from geoprobe.sula.config import SulaConfig
    from geoprobe.windtunnel.config import WindTunnelConfig

    return (
        CaptureConfig,
        DenoiseConfig,
        DomainsConfig,
        DynamicsConfig,
        InterventionConfig,
        PositionalConfig,
        SamplingConfig,
        ScanConfig,
        SulaConfig,
        WindTunnelConfig,
    )


@pytest.mark.parametrize("cls", _limited_configs(), ids=lambda c: c.__name__)
def test_every_limit_is_a_field_its_default_fits_and_one_past_it_is_refused_by_the_config(cls):
    import dataclasses

    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, lim in cls.LIMITS.items():
        assert name in fields, f"{cls.__name__}.LIMITS names {name!r}, not a field"
        assert lim.why and lim.high >= 1
        default = fields[name].default
        if isinstance(default, int) and not isinstance(default, bool):
            assert default <= lim.high, (name, default, lim.high)
    cls()  # the defaults are within every limit
    name, lim = next((n, lim) for n, lim in cls.LIMITS.items() if isinstance(fields[n].default, (int, type(None))))
    with pytest.raises(GeoprobeError, match=rf"= {lim.high + 1} is above the limit of {lim.high}"):
        cls(**{name: lim.high + 1})


_COMMANDS = {  # config class -> the commands whose flags set it
    "CaptureConfig": ("capture",),
    "ScanConfig": ("scan",),
    "SamplingConfig": ("scan", "sample", "compare-domains"),
    "DomainsConfig": ("compare-domains",),
    "SulaConfig": ("sula",),
    "InterventionConfig": ("intervene",),
    "PositionalConfig": ("positional",),
    "DenoiseConfig": ("denoise",),
    "DynamicsConfig": ("dynamics",),
    "WindTunnelConfig": ("windtunnel run", "windtunnel eval", "windtunnel train"),
}


def _help_line(cmd: str, flag: str) -> str | None:
    import re

    from typer.testing import CliRunner

    from geoprobe.cli import app

    res = CliRunner().invoke(app, [*cmd.split(), "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    # the option's own row: the flag first in it (after the table border)
    return next((ln for ln in res.output.splitlines() if re.match(rf"^\W*{re.escape(flag)}(?![\w-])", ln)), None)


def test_every_flag_with_a_limit_says_the_limit_in_its_help():
    """The limits in the LIMITS tables are the ones the commands' --help shows: the flag's help line
    names the largest value ("at most N")."""
    from geoprobe.cli.options import cpu_count
    from geoprobe.positional.config import LENGTH_MAX
    from geoprobe.windtunnel.config import EVAL_MAX

    checked = [("windtunnel run", "--threads", cpu_count()), ("windtunnel train", "--threads", cpu_count())]
    checked += [("positional", "--max-length", LENGTH_MAX), ("positional", "--n-eval", EVAL_MAX)]
    for cls in _limited_configs():
        for lim in cls.LIMITS.values():
            if (lim.flag or "").startswith("--"):
                checked += [(cmd, lim.flag, lim.high) for cmd in _COMMANDS[cls.__name__]]
    seen = 0
    for cmd, flag, high in checked:
        line = _help_line(cmd, flag)
        if line is None:  # this command does not take the flag (e.g. windtunnel train has no --n-eval)
            continue
        seen += 1
        assert f"at most {high}" in line, (cmd, flag, line)
    assert seen >= 40
