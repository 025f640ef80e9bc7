"""Error cases of issue 27 part 5: clear errors where there were tracebacks or wrong advice.

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list);
the building blocks are in tests/cli/case_kit.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import TWIN, Case, case, owned_json, owned_page, recipe


def trained_tunnel(run: str, steps: int, seed: int = 0, evaluated: bool = True) -> Callable[[Path], None]:
    """A finished wind-tunnel run directory as `windtunnel run --scale tiny --steps STEPS --seed SEED`
    leaves it, as far as the checks read it: the transformer's run.json and its last checkpoint's
    DONE marker, and (``evaluated``) windtunnel.json and its page."""

    def make(d: Path) -> None:
        from geoprobe.windtunnel.scales import run_specs
        from geoprobe.windtunnel.train import checkpoint_dir

        spec = run_specs("bijection", "tiny", seed=seed, steps=steps)[0]
        learner = d / run / "transformer"
        learner.mkdir(parents=True)
        (learner / "run.json").write_text(spec.json_text())
        checkpoint_dir(learner, steps).mkdir(parents=True)
        (checkpoint_dir(learner, steps) / "DONE").write_text("")
        if evaluated:
            owned_json(f"{run}/windtunnel.json", "geoprobe.windtunnel")(d)
            owned_page(f"{run}/windtunnel.html")(d)

    return make


SETUPS: dict[str, Callable[[Path], None]] = {
    "clear_scan_recipe": recipe("scan.toml", '[probe]\ncommand = "scan"\n[capture]\nbatch_size = 4\n'),
    "clear_wt_20_steps": trained_tunnel("wt", 20),
    "clear_seeds_20_steps": lambda d: (trained_tunnel("wts/seed-0", 20)(d), trained_tunnel("wts/seed-1", 20, 1)(d)),
}

CASES: tuple[Case, ...] = (
    # --device: torch accepts these names, geoprobe cannot compute there (was: "unexpected RuntimeError:
    # Tensor.item() cannot be called on meta tensors", "PyTorch is not linked with support for mps devices")
    case(
        "device-meta",
        f"capture --model {TWIN} --device meta --out out",
        "--device meta (shapes, no data)",
        "--device 'meta'",
        "no data",
        "--device cpu, cuda or cuda:N",
    ),
    case(
        "device-meta-scan",
        f"scan --model {TWIN} --device meta --out run",
        "--device meta",
        "--device 'meta'",
        "--device cpu, cuda or cuda:N",
    ),
    case(
        "device-meta-positional",
        f"positional --model {TWIN} --device meta --out run",
        "--device meta",
        "--device 'meta'",
    ),
    case(
        "device-meta-sula",
        f"sula --model {TWIN} --device meta --out run",
        "--device meta",
        "--device 'meta'",
    ),
    case(
        "device-meta-recipe",
        f"run scan.toml --model {TWIN} --device meta --out run",
        "--device meta through a recipe",
        "--device 'meta'",
        setup=("clear_scan_recipe",),
    ),
    case(
        "wt-device-meta",
        "windtunnel run --scale tiny --device meta --out wt",
        "--device meta for training",
        "--device 'meta'",
        "--device cpu, cuda or cuda:N",
    ),
    case(
        "wt-train-device-xla",
        "windtunnel train --scale tiny --device xla --out wt",
        "--device xla (torch knows it, geoprobe does not compute there)",
        "--device 'xla'",
        "cpu or cuda (cuda:N) only",
    ),
    case(
        "device-mps",
        f"capture --model {TWIN} --device mps --out out",
        "--device mps",
        "--device 'mps'",
        "cpu or cuda (cuda:N) only",
        "--device cpu",
    ),
    case(
        "device-cpu-1",
        f"capture --model {TWIN} --device cpu:1 --out out",
        "--device cpu:1 (torch has one CPU device)",
        "--device 'cpu:1'",
        "one CPU device",
        "--device cpu",
    ),
    # the fix the line names: a run trained with other settings cannot be fixed by --force, which re-evaluates
    # and never retrains (was: "'wt/windtunnel.json' already exists; pass --force to replace this run or
    # choose another --out", and with --force: "run directory 'wt/transformer' was trained for 20 steps …")
    case(
        "wt-trained-other-steps",
        "windtunnel run --scale tiny --steps 30 --out wt",
        "a run trained for 20 steps, rerun with --steps 30",
        "'wt/transformer' was trained for 20 steps, not 30",
        "pass --steps 20 or another --out",
        setup=("clear_wt_20_steps",),
    ),
    case(
        "wt-trained-other-steps-force",
        "windtunnel run --scale tiny --steps 30 --out wt --force",
        "the same with --force (which never retrains)",
        "'wt/transformer' was trained for 20 steps, not 30",
        "pass --steps 20 or another --out",
        setup=("clear_wt_20_steps",),
    ),
    case(
        "wt-trained-other-seed",
        "windtunnel run --scale tiny --steps 20 --seed 3 --out wt",
        "a run trained with seed 0, rerun with --seed 3",
        "'wt/transformer' holds another task or config (seed 0 vs 3)",
        "pass what it was trained with (--seed 0) or another --out",
        setup=("clear_wt_20_steps",),
    ),
    case(
        "wt-seeds-trained-other-steps",
        "windtunnel run --scale tiny --seeds 0,1 --steps 30 --out wts",
        "--seeds over seed directories trained for 20 steps",
        "'wts/seed-0/transformer' was trained for 20 steps, not 30",
        "pass --steps 20 or another --out",
        setup=("clear_seeds_20_steps",),
    ),
    case(
        "wt-eval-evaluated-run",
        "windtunnel eval wt",
        "windtunnel eval of a run evaluated before (said: or choose another --out, a flag eval does not have)",
        "'wt/windtunnel.json' already exists",
        "; pass --force to replace this run",
        setup=("clear_wt_20_steps",),
    ),
    Case(
        id="device-cuda-99",
        argv=("sula", "--model", TWIN, "--device", "cuda:99", "--out", "run"),
        bad="--device cuda:99 without a GPU (with one: the devices present are named)",
        expect=("--device 'cuda:99'", "no CUDA device"),
        needs_no_cuda=True,
    ),
)
