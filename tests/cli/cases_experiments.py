"""Error cases of issue 27 parts 4 and 5 in the experiments: SULA label mass, intervene on constant
values, positional with few prompts. Joined into the audit by tests/cli/error_cases.py
(docs/errors.md is generated from the joined list); the building blocks are in
tests/cli/case_kit.py."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import TWIN, Case, case, recipe

SETUPS: dict[str, Callable[[Path], None]] = {
    "sula_recipe_mass": recipe("mass.toml", '[probe]\ncommand = "sula"\n[sula]\nmin_label_mass = 2\n'),
}

CASES: tuple[Case, ...] = (
    # part 5: messages that named the wrong fix
    case(
        "positional-max-distance-negative",
        f"positional --model {TWIN} --max-distance -5 --out run",
        "a negative largest distance for the positional prior (said: pass a longest length of 4 or more)",
        "--max-distance -5 is below 2",
        "pass --max-distance 2 or more",
    ),
    case(
        "sula-layer-out-of-range",
        f"sula --model {TWIN} --layer 99 --out run",
        "a SULA layer beyond the model's 3 layers (said: fix --layers, a flag sula does not have)",
        "--layer 99 is out of range for a model with 3 layers",
        "pass --layer between 0 and 2",
    ),
    case(
        "domains-layer-out-of-range",
        f"compare-domains --model {TWIN} --layer 99 --out run",
        "a compare-domains layer beyond the model's 3 layers (said: fix --layers, a flag it does not have)",
        "layer 99 is out of range for a model with 3 layers (0..2)",
        "fix --layer (domains.layer in a recipe)",
    ),
    case(
        "sula-labels-multi-token",
        f"sula --model {TWIN} --labels zorb,bip --out run",
        "a SULA label that is two tokens (said: pass first_token=True, a Python argument)",
        "label ' zorb' tokenises as [' z', 'orb'] (2 tokens)",
        "pass single-token labels to --labels",
        "--first-token",
    ),
    case(
        "intervene-labels-multi-token",
        f"intervene --model {TWIN} --labels zorb,bip --out run",
        "a SULA label that is two tokens for intervene (which had no --labels at all)",
        "label ' zorb' tokenises as [' z', 'orb'] (2 tokens)",
        "pass single-token labels to --labels",
        "--first-token",
    ),
    # part 5: intervene on a layer whose values never vary (was 'unexpected ValueError: no variance to analyse')
    case(
        "intervene-layer-0-constant-values",
        f"intervene --model {TWIN} --layers 0 --out run",
        "an intervention at layer 0, where every SULA prompt's final-token values are the same (one final token)",
        "layer 0: final-token values are identical for all 100 SULA prompts",
        "every prompt ends in the token ':'",
        "pass --layers from 1 to 2",
    ),
    # part 4: the label-mass threshold is a setting; out-of-range values refused up front
    case(
        "sula-min-label-mass-out-of-range",
        f"sula --model {TWIN} --min-label-mass 1.5 --out run",
        "a label-mass threshold above 1 (no prompt could be scored)",
        "min_label_mass = 1.5 must be at least 0 and below 1",
        "--min-label-mass",
    ),
    case(
        "sula-recipe-min-label-mass",
        f"run mass.toml --model {TWIN} --out run",
        "a recipe whose min_label_mass is 2",
        "min_label_mass = 2 must be at least 0 and below 1",
        "--min-label-mass",
        setup=("sula_recipe_mass",),
    ),
)
