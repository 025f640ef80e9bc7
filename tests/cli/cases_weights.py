"""Error cases of local checkpoints whose weights do not match their config.json (geoprobe/models/partial.py),
and of --allow-partial-weights where it cannot apply. Joined into the audit by tests/cli/error_cases.py
(docs/errors.md is generated from the joined list); the directories are planted by tests/models/weights_kit.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import TWIN, Case, case


def _planted(how: str, name: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        from tests.models.weights_kit import broken_twin

        broken_twin(d, how, name=name)

    return make


SETUPS: dict[str, Callable[[Path], None]] = {
    "weights_renamed": _planted("renamed", "renamed"),
    "weights_removed": _planted("removed", "removed"),
    "weights_more_layers": _planted("more-layers", "deeper"),
    "weights_wrong_shape": _planted("wrong-shape", "misshaped"),
}

_FIX = "--allow-partial-weights if a partial load is intended"

CASES: tuple[Case, ...] = (
    case(
        "weights-renamed",
        "scan --model renamed --prompts builtin --out out",
        "a checkpoint whose every tensor is renamed (transformers would measure a random model)",
        "model 'renamed': its weights do not match its config.json",
        "30 tensors missing (lm_head.weight, model.embed_tokens.weight",
        "29 unexpected (foo.model.embed_tokens.weight",
        _FIX,
        setup=("weights_renamed",),
    ),
    case(
        "weights-removed",
        "scan --model removed --prompts builtin --out out",
        "a checkpoint with one tensor left out",
        "1 tensor missing (model.layers.0.mlp.gate_proj.weight)",
        "initialise the missing one at random",
        _FIX,
        setup=("weights_removed",),
    ),
    case(
        "weights-more-layers",
        "capture --model deeper --out out",
        "a config.json with more layers than the weights hold",
        "9 tensors missing (model.layers.3.input_layernorm.weight",
        _FIX,
        setup=("weights_more_layers",),
    ),
    case(
        "weights-wrong-shape",
        "scan --model misshaped --prompts builtin --out out",
        "a checkpoint with a tensor of the wrong shape",
        "1 tensor of the wrong shape (model.layers.0.mlp.down_proj.weight: [63, 128] in the weights, [64, 128]",
        _FIX,
        setup=("weights_wrong_shape",),
    ),
    case(
        "partial-weights-twin",
        f"scan --model {TWIN} --allow-partial-weights --out out",
        "--allow-partial-weights for a twin",
        "--allow-partial-weights does not apply to --model 'twin:llama-3.2-1b'",
        "drop --allow-partial-weights",
        before_load=True,
    ),
    case(
        "partial-weights-gguf",
        "capture --model model.gguf --allow-partial-weights --out out",
        "--allow-partial-weights for a .gguf file",
        "a .gguf file is not a Hugging Face checkpoint",
        before_load=True,
    ),
    case(
        "partial-weights-embedded",
        "sula --model smollm2-135m --allow-partial-weights --out out",
        "--allow-partial-weights for the embedded model",
        "its weights ship offline as one GGUF file",
        before_load=True,
    ),
)
