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


# -- True/False where an integer goes (issue 27 part 4): bool is an int subclass, so layers=[True]
# -- was silently layer 1 through the Python API (recipes already checked their TOML types)
def _with_a_bool(hint):
    """A value of ``hint``'s shape with True where an integer goes (None: the hint takes no integer)."""
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is int:
        return True
    if origin in (typing.Union, types.UnionType):
        if bool in args:
            return None
        return next((v for v in map(_with_a_bool, args) if v is not None), None)
    if origin is tuple and args:
        inner = _with_a_bool(args[0])
        return None if inner is None else (inner,) if args[-1] is Ellipsis else None
    return None


def _config_classes():
    from geoprobe.capture import CaptureConfig
    from geoprobe.recipes import experiments
    from geoprobe.sampling import SamplingConfig

    classes = {c: e.config for c, e in experiments().items() if c != "compare-models"}
    return {**classes, "capture": CaptureConfig, "sampling": SamplingConfig}


def _integer_fields():
    import dataclasses
    import typing

    for name, cls in _config_classes().items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            bad = _with_a_bool(hints[f.name])
            if bad is not None:
                yield pytest.param(cls, f.name, bad, id=f"{name}.{f.name}")


INTEGER_FIELDS = list(_integer_fields())


def test_the_sweep_covers_the_integer_lists_of_every_config():
    ids = {p.id for p in INTEGER_FIELDS}
    for needed in ("scan.layers", "scan.scatter_layers", "capture.layers", "positional.layers", "sula.k_values"):
        assert needed in ids
    assert "intervene.experiments" in ids and len(ids) >= 50


@pytest.mark.parametrize("cls, field, bad", INTEGER_FIELDS)
def test_true_where_an_integer_goes_is_a_type_error_in_every_config(cls, field, bad):
    """Every integer and integer-list field of every config (the Python API and, under them, every
    recipe table) refuses True in one line naming the field, instead of reading it as 1."""
    with pytest.raises(GeoprobeError) as e:
        cls(**{field: bad})
    msg = str(e.value)
    assert f"setting {field} = {bad!r} is not" in msg and "true/false is no integer" in msg and "\n" not in msg, msg


def test_the_api_argument_validators_accept_iterables_of_strings_and_name_what_they_refuse(tmp_path):
    from pathlib import Path

    from geoprobe.checks import config_arg, model_arg, name_arg, prompts_arg, strings_arg
    from geoprobe.errors import ArgumentError
    from geoprobe.scan.config import ScanConfig

    assert prompts_arg(("a", "b")) == ["a", "b"] and prompts_arg(p for p in "xy") == ["x", "y"]
    assert strings_arg([Path("r1"), "r2"], "paths", paths=True) == [Path("r1"), "r2"]
    refused = {
        "prompts is a single str ('one prompt'), not a list of prompt strings: pass ['one prompt'] for one": (
            lambda: prompts_arg("one prompt")
        ),
        "prompts[1] is float (2.0), not a string; pass a list of prompt strings": lambda: prompts_arg(["a", 2.0]),
        "paths is a single PosixPath": lambda: strings_arg(Path("r1"), "paths", paths=True),
        "prompts is int (3); pass a list of prompt strings": lambda: prompts_arg(3),
        "alias is int (3), not a string; pass x": lambda: name_arg(3, "alias", "x"),
        "model is str ('m'); pass a LoadedModel": lambda: model_arg("m"),
        "config is dict ({}), not a ScanConfig; pass ScanConfig(**config)": lambda: config_arg({}, ScanConfig),
    }
    for words, call in refused.items():
        with pytest.raises(ArgumentError) as info:
            call()
        assert str(info.value).startswith(words) and isinstance(info.value, TypeError), str(info.value)
    assert model_arg("smollm2-135m", names=True) == "smollm2-135m" and name_arg(Path("d"), "name", "x") == "d"
    (tmp_path / "p.txt").write_text("a\nb\n")
    with open(tmp_path / "p.txt") as f, pytest.raises(ArgumentError, match="prompts is an open file"):
        prompts_arg(f)  # its lines would keep their newlines


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
    "TrajectoryConfig": ("trajectory",),
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
