"""Every option more than one command takes, declared once, and the groups they form.

A command asks for a group by a parameter of the group's type; :func:`takes` adds the group's
options to the command's signature (so Typer shows and parses them) and hands the command one
built value instead: ``load: LoadOptions`` (``--model`` and how to load it) and
``output: OutputOptions`` (``--out``, ``--force``, ``--figures``)::

    @app.command()
    @takes(LOAD, OUTPUT)
    def sula(load: LoadOptions, output: OutputOptions, k: str | None = ...) -> None: ...
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, get_type_hints

import typer

from geoprobe.checks import BATCH_MAX, RESAMPLES_MAX, SEED_MAX, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.experiment import OutputOptions, model_run_dir
from geoprobe.models.options import LoadOptions, load_fields

__all__ = ["LOAD", "LOAD_UNCHECKED", "OUTPUT", "Group", "OutputOptions", "model_run_dir", "takes"]


def _seed(value: Optional[int]) -> Optional[int]:
    return None if value is None else check_seed(value)


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask; os.cpu_count() where there is none)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _threads(value: Optional[int]) -> Optional[int]:  # --threads: 1 to the CPUs here
    from geoprobe.checks import check_range

    why = "the CPUs this process may use; more threads only slow torch down, and far more abort it"
    return None if value is None else check_range(value, low=1, high=cpu_count(), where="--threads", why=why)


MAX_TOKENS_HELP = (
    "keep each prompt's final N tokens (default 2048; raise it up to the model's context window, "
    "which larger values mean; docs/capture.md)"
)

SeedOpt = typer.Option(0, "--seed", callback=_seed, help=f"random seed, 0 to {SEED_MAX}")
OptionalSeedOpt = typer.Option(
    None, "--seed", callback=_seed, help=f"random seed, 0 to {SEED_MAX} (default: the recipe's)"
)
BATCH_HELP = f"prompts per forward pass (at most {BATCH_MAX}; the memory it needs is checked first)"
BatchOpt = typer.Option(16, "--batch-size", help=BATCH_HELP)
ThreadsOpt = typer.Option(
    None,
    "--threads",
    callback=_threads,
    help=f"torch CPU threads, 1 to the CPUs here (at most {cpu_count()} on this machine; default: torch's)",
)
ResamplesOpt = typer.Option(1000, "--n-resamples", help=f"bootstrap resamples (at most {RESAMPLES_MAX})")
LayersOpt = typer.Option(None, "--layers", help="comma-separated layer indices (negative from the end) or all")


@dataclass(frozen=True)
class Group:
    """Options that travel together: ``params`` (name -> (typer option, type)) become ``build(**values)``."""

    name: str
    type: type
    params: dict[str, tuple[Any, Any]]
    build: Callable[..., Any]


def _load_option(f: Any) -> tuple[Any, Any]:
    """A loading setting's typer option and type, from its LoadOptions field (flag, help, default,
    annotation: a bool is a switch; otherwise the first of int, float, str it allows, optional with None)."""
    from typing import get_args

    meta, hint = f.metadata, get_type_hints(LoadOptions)[f.name]
    flags = (meta["flag"], *((meta["short"],) if "short" in meta else ()))
    args = get_args(hint) or (hint,)
    base = next((t for t in (bool, int, float, str) if t in args), str)
    return typer.Option(f.default, *flags, help=meta["help"]), Optional[base] if type(None) in args else base


LOAD = Group(
    "load",
    LoadOptions,
    {f.name: _load_option(f) for f in load_fields()},
    lambda **v: LoadOptions(**v).check(),
)

#: the same options, built without the checks (``geoprobe run`` first refuses flags its recipe does not use)
LOAD_UNCHECKED = Group("load", LoadOptions, LOAD.params, LoadOptions)


def _executor(executor: str, workers: Optional[int], address: Optional[str]) -> Any:
    """``--executor local|ray``, ``--workers``, ``--address``: None (capture in this process) or a
    :class:`geoprobe.capture.parallel.DataParallel` (data-parallel capture on Ray workers; Ray is checked
    for here, before any model loads)."""
    if executor not in ("local", "ray"):
        raise GeoprobeError(f"--executor {executor!r} is not local or ray; pass --executor local or --executor ray")
    if executor == "local":
        for flag, value in (("--workers", workers), ("--address", address)):
            if value is not None:
                raise GeoprobeError(f"{flag} applies to --executor ray only; drop {flag} or add --executor ray")
        return None
    from geoprobe.capture.parallel import DataParallel

    return DataParallel(workers=workers, address=address).check()


EXECUTOR = Group(
    "executor",
    object,
    {
        "executor": (
            typer.Option(
                "local",
                "--executor",
                help="local (in this process) | ray (data-parallel on Ray workers; docs/scale.md)",
            ),
            str,
        ),
        "workers": (
            typer.Option(
                None,
                "--workers",
                help="--executor ray: Ray workers, one model each (default: one per CPU of the cluster, per GPU "
                "with --device cuda)",
            ),
            Optional[int],
        ),
        "address": (
            typer.Option(
                None,
                "--address",
                help="--executor ray: auto | local | ray://HOST:PORT | HOST:PORT (default: $RAY_ADDRESS, else the "
                "cluster `ray start` started here, else a new local Ray)",
            ),
            Optional[str],
        ),
    },
    _executor,
)

OUTPUT = Group(
    "output",
    OutputOptions,
    {
        "out": (typer.Option(None, "--out", "-o", help="run directory (default under runs/)"), Optional[Path]),
        "force": (
            typer.Option(
                False,
                "--force",
                "--overwrite",
                help="replace what geoprobe wrote in --out before (never anything else)",
            ),
            bool,
        ),
        "figures": (
            typer.Option(
                None,
                "--figures",
                help="also write each report figure as png|svg|pdf to <run dir>/figures/ (kaleido + Chromium)",
            ),
            Optional[str],
        ),
    },
    OutputOptions,
)


def takes(*groups: Group) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the options of ``groups`` (see the module docs). A command with a parameter
    ``given`` also receives the names of the parameters set on the command line (not defaults)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = get_type_hints(fn)
        sig = inspect.signature(fn)
        names = {g.name for g in groups} | {"given"}
        params = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in sig.parameters.values()
            if p.name not in names
        ]
        for g in groups:
            params += [
                inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=typ)
                for n, (opt, typ) in g.params.items()
            ]
        params.append(inspect.Parameter("_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))
        wants_given = "given" in sig.parameters

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            ctx = kwargs.pop("_ctx")
            given = frozenset(
                n
                for n in kwargs
                if (src := ctx.get_parameter_source(n)) is not None and src.name not in ("DEFAULT", "DEFAULT_MAP")
            )
            for g in groups:
                kwargs[g.name] = g.build(**{n: kwargs.pop(n) for n in g.params})
            if wants_given:
                kwargs["given"] = given
            return fn(**kwargs)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap


def layers(spec: Optional[str], flag: str = "--layers") -> Optional[tuple[int, ...]]:
    """``--layers``: comma-separated integers (negative from the end), or all/None for every layer."""
    if spec is None or spec.strip().lower() == "all":
        return None
    return number_list(spec, flag, example="0,12,-1 (or all)")


def number_list(
    spec: Optional[str], flag: str, *, cast: type = int, empty_ok: bool = False, example: str = "16,32,64"
) -> Optional[tuple]:
    """Comma-separated numbers (``cast``: int or float) given to ``flag``; None (flag not given) stays
    None. An empty list ('', ' , ', 'none') is () where ``empty_ok`` (a sweep to skip), otherwise a
    one-line error."""
    if spec is None:
        return None
    kind = "integers" if cast is int else "numbers"
    try:
        vals = () if spec.strip().lower() == "none" else tuple(cast(x) for x in spec.split(",") if x.strip())
    except ValueError:
        raise GeoprobeError(
            f"{flag} {spec!r} is not a comma-separated list of {kind}; pass e.g. {flag} {example}"
        ) from None
    if not vals and not empty_ok:
        raise GeoprobeError(f"{flag} {spec!r} names nothing; pass comma-separated {kind} such as {flag} {example}")
    return vals


def int_list(spec: Optional[str], flag: str, *, empty_ok: bool = False) -> Optional[tuple[int, ...]]:
    """Comma-separated integers given to ``flag`` (:func:`number_list`)."""
    return number_list(spec, flag, empty_ok=empty_ok)
