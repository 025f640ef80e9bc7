"""Error cases of issue 27 part 4: no silent wrong result (mismatched captures, auto_map, odd prompt
files, odd recipe values, FIFOs).

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list);
the building blocks are in tests/cli/case_kit.py and tests/cli/planted_runs.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from tests.cli import planted_runs as runs
from tests.cli.case_kit import TWIN, Case, case, owned_json, owned_page, text, tiny_model_dir


def _auto_map_llama(d: Path) -> None:
    """A tiny Llama directory whose config names its own code (auto_map) and the stock model_type
    "llama": transformers ran its stock LlamaForCausalLM in place of the shipped code, silently."""
    target = tiny_model_dir(d, "llama_am", pickle=False, custom_code=True)
    cfg = json.loads((target / "config.json").read_text())
    cfg.update(model_type="llama", architectures=["LlamaForCausalLM"])
    (target / "config.json").write_text(json.dumps(cfg))


def _fifo_config(d: Path) -> None:
    target = tiny_model_dir(d, "fifo_cfg", pickle=False)
    (target / "config.json").unlink()
    os.mkfifo(target / "config.json")


_PROMPTS = "".join(f"Prompt number {i} says that the weather\n" for i in range(12))


def _partial_fifo(d: Path) -> None:
    text("p.txt", _PROMPTS)(d)
    (d / "run" / "capture.partial").mkdir(parents=True)
    os.mkfifo(d / "run" / "capture.partial" / "manifest.json")


def _record_fifo(d: Path) -> None:
    """A finished scan run whose run record (.geoprobe-run.json) is a FIFO."""
    owned_json("run/results.json", "geoprobe.scan")(d)
    owned_page("run/report.html")(d)
    os.mkfifo(d / "run" / ".geoprobe-run.json")


def _tunnel_spec_fifo(d: Path) -> None:
    """A two-step tiny wind-tunnel run whose transformer/run.json is a FIFO."""
    from geoprobe.windtunnel.run import train_tunnel

    train_tunnel("bijection", "tiny", d / "run", arch="transformer", steps=2)
    spec = d / "run" / "transformer" / "run.json"
    spec.unlink()
    os.mkfifo(spec)


SETUPS: dict[str, Callable[[Path], None]] = {
    "wrong_swapped_capture": runs.swapped_capture,
    "wrong_capture_prompts": runs.edited_capture_prompts,
    "wrong_capture_json_fifo": runs.fifo_at("capture/capture.json"),
    "wrong_results_fifo": runs.fifo_at("results.json"),
    "wrong_auto_map_llama": _auto_map_llama,
    "wrong_config_fifo": _fifo_config,
    "wrong_partial_fifo": _partial_fifo,
    "wrong_recipe_fifo": lambda d: os.mkfifo(d / "fifo.toml"),
    "wrong_record_fifo": _record_fifo,
    "wrong_partial_prompts": text("p.txt", _PROMPTS),
    "wrong_tunnel_spec_fifo": _tunnel_spec_fifo,
}

CASES: tuple[Case, ...] = (
    case(
        "compare-capture-of-another-model",
        "compare a b --out cmp",
        "run a's capture/ replaced by run b's (another model's arrays; was analysed under a's name, exit 0)",
        "run 'a'",
        "model_id is 'model-b' in 'a/capture/capture.json' but 'model-a' in 'a/results.json'",
        "put back the capture",
        setup=("wrong_swapped_capture",),
    ),
    case(
        "compare-capture-other-prompts",
        "compare a b --out cmp",
        "run a's capture.json holds other prompts than its results were computed on",
        "run 'a'",
        "the prompts in 'a/capture/capture.json' are not the ones its results were computed on",
        setup=("wrong_capture_prompts",),
    ),
    case(
        "compare-capture-json-fifo",
        "compare a b --out cmp",
        "run a's capture/capture.json is a FIFO (compare used to wait on it forever)",
        "run 'a'",
        "'a/capture/capture.json' is a FIFO (named pipe), not a regular file",
        setup=("wrong_capture_json_fifo",),
    ),
    case(
        "compare-results-fifo",
        "compare a b --out cmp",
        "run a's results.json is a FIFO (compare used to wait on it forever)",
        "'a/results.json' is a FIFO (named pipe), not a regular file",
        setup=("wrong_results_fifo",),
    ),
    case(
        "report-results-fifo",
        "report a",
        "a run whose results.json is a FIFO (was: 'holds no geoprobe results file')",
        "'a/results.json' is a FIFO (named pipe), not a regular file",
        setup=("wrong_results_fifo",),
    ),
    case(
        "scan-checkpoint-fifo",
        f"scan --model {TWIN} --prompts p.txt --out run",
        "a scan resumed from a capture.partial whose manifest.json is a FIFO (used to wait forever)",
        "'run' holds an unfinished scan whose manifest.json is a FIFO (named pipe)",
        "--force",
        setup=("wrong_partial_fifo",),
    ),
    case(
        "scan-run-record-fifo",
        f"scan --model {TWIN} --prompts p.txt --out run",
        "a finished run whose .geoprobe-run.json is a FIFO (re-running the command used to wait forever)",
        "'run/results.json' already exists",
        "--force",
        setup=("wrong_record_fifo", "wrong_partial_prompts"),
    ),
    case(
        "windtunnel-run-json-fifo",
        "windtunnel eval run",
        "a wind-tunnel run whose transformer/run.json is a FIFO (eval used to wait forever)",
        "'run/transformer/run.json' is a FIFO (named pipe), not a regular file",
        setup=("wrong_tunnel_spec_fifo",),
    ),
    case(
        "recipe-fifo",
        "run fifo.toml",
        "a FIFO as the recipe (was: 'does not exist')",
        "probe file 'fifo.toml' is a FIFO (named pipe), not a regular file",
        setup=("wrong_recipe_fifo",),
    ),
    case(
        "local-model-config-fifo",
        "capture --model fifo_cfg --out out",
        "a local model whose config.json is a FIFO (used to wait forever)",
        "'fifo_cfg/config.json' is a FIFO (named pipe), not a regular file",
        "--model",
        setup=("wrong_config_fifo",),
    ),
    case(
        "remote-code-stock-model-type",
        "capture --model llama_am --out out",
        "config with auto_map and the stock model_type llama (the stock class ran silently, exit 0)",
        "'llama_am' needs its own Python code",
        "auto_map",
        "--trust-remote-code",
        "stock 'llama' class",
        setup=("wrong_auto_map_llama",),
    ),
)
