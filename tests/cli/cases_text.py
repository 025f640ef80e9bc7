"""Error cases of issue 27 part 3: terminal and file text is inert; a recipe's [prompts] file is read
like --prompts.

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list);
the building blocks are in tests/cli/case_kit.py and tests/cli/planted_runs.py. Every case of the
audit is also checked for control characters reaching stdout or stderr raw
(tests/cli/test_error_audit.py); these cases plant them where the error line quotes a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli import planted_runs as runs
from tests.cli.case_kit import TWIN, Case, case, recipe, text

_PROMPTS = "".join(f"Prompt number {i} says that the weather\n" for i in range(12))

SETUPS: dict[str, Callable[[Path], None]] = {
    # TOML's \u escapes put raw ESC, BEL and C1 characters into the recipe's keys
    "text_recipe_key": recipe("key.toml", '[probe]\ncommand = "scan"\n[analyses]\n"n\\u001b]0;pwned\\u0007" = 1\n'),
    "text_recipe_section": recipe("section.toml", '[probe]\ncommand = "scan"\n["x\\u001b[2J\\u009b31m"]\na = 1\n'),
    "text_evil_run_twice": runs.evil_run_twice,
    "text_recipe_set_file": lambda d: (
        text("p.txt", _PROMPTS)(d),
        recipe("set.toml", '[probe]\ncommand = "scan"\n[prompts]\nset = "p.txt"\n')(d),
    ),
    "text_compare_models_prompts": lambda d: (
        text("p.txt", _PROMPTS)(d),
        recipe(
            "cm.toml",
            f'[probe]\ncommand = "compare-models"\n[models]\nrun = ["{TWIN}", "twin:gpt2"]\n'
            '[prompts]\nfile = "p.txt"\n',
        )(d),
    ),
}

CASES: tuple[Case, ...] = (
    case(
        "recipe-key-escape-sequence",
        f"run key.toml --model {TWIN}",
        "a recipe key holding an OSC title sequence (ESC ] 0;pwned BEL), printed raw before",
        r"unknown key analyses.n\x1b]0;pwned\x07;",
        setup=("text_recipe_key",),
    ),
    case(
        "recipe-section-escape-sequence",
        f"run section.toml --model {TWIN}",
        "a recipe section holding clear-screen (ESC [2J) and a C1 CSI, printed raw before",
        r"unknown section [x\x1b[2J\x9b31m]",
        setup=("text_recipe_section",),
    ),
    case(
        "compare-model-name-escape-sequence",
        "compare evil copy --out cmp",
        "the same run twice, its model name holding ESC/OSC/C1 sequences, rich markup and CR",
        f"(model {runs.EVIL_SHOWN}, prompt set",
        setup=("text_evil_run_twice",),
    ),
    case(
        "recipe-prompts-set-names-a-file",
        f"run set.toml --model {TWIN}",
        "[prompts] set naming a file (was read relative to the working directory, not the recipe)",
        "prompts.set = 'p.txt' is not a prompt set",
        "[prompts] file",
        "relative to the recipe",
        setup=("text_recipe_set_file",),
    ),
    case(
        "recipe-compare-models-prompts",
        "run cm.toml",
        "a [prompts] table in a compare-models recipe (was ignored: the models sample their sets)",
        "runs compare-models, which samples its prompts from [models] sets",
        "drop its [prompts] table",
        setup=("text_compare_models_prompts",),
    ),
)
