"""The building blocks of the CLI error audit (tests/cli/error_cases.py): a :class:`Case` (argv,
the bad input in words, the words its one error line must hold, the setups that plant its files),
its :class:`Outcome`, and setup helpers that plant files in a case's working directory.

The cases themselves live in ``error_cases.py`` (issues 8 and 17) and in one module per topic
that came later (``cases_*.py``), each exporting ``CASES`` and ``SETUPS``; ``error_cases.py``
joins them into the one list that ``test_error_audit.py`` runs and docs/errors.md documents.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

TWIN = "twin:llama-3.2-1b"  # three layers, loads in about a second
MARKER = "imported.marker"  # what the custom code of the auto_map directory would write if it ran


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # after `geoprobe`; paths are relative to the case's working directory
    bad: str  # the bad input, in words (docs/errors.md)
    expect: tuple[str, ...]  # substrings of the error line
    setup: tuple[str, ...] = ()  # names in SETUPS, run in the working directory first
    code: int = 2
    needs_no_cuda: bool = False  # the bad input is --device cuda: valid where CUDA exists
    env: tuple[tuple[str, str], ...] = ()  # environment variables set while the case runs (shown in the docs)
    before_load: bool = False  # refused before any model loads (a twin included)


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str
    changed: tuple[str, ...]  # files created, modified or removed under the working directory
    loaded: tuple[str, ...]  # models the case asked load_model for

    @property
    def lines(self) -> list[str]:
        """The stderr lines but the status lines (``loading MODEL …``: where stderr is not a terminal, a step
        without counts says what it does as it starts, geoprobe.cli.progress.status)."""
        return [line for line in self.err.splitlines() if line.strip() and not is_status(line)]


def is_status(line: str) -> bool:
    """A status line, "what the command is doing …", not an error or a warning."""
    return line.endswith(" …") and not line.startswith(("error", "warning"))


# ---------------------------------------------------------------- setups (run in the case's cwd)


def text(name: str, text: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text, encoding="utf-8")

    return make


def edited_config(target: Path, **changes: object) -> Path:
    """``config.json`` of a saved model with ``changes`` applied (None removes the key)."""
    cfg = json.loads((target / "config.json").read_text())
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (target / "config.json").write_text(json.dumps(cfg))
    return target


def json_file(name: str, data: object) -> Callable[[Path], None]:
    return text(name, json.dumps(data))


def tiny_model_dir(d: Path, name: str, *, pickle: bool, custom_code: bool = False) -> Path:
    """A loadable tiny Llama directory (config, tokenizer, weights as pytorch_model.bin or
    model.safetensors); with ``custom_code`` its config asks for a model class from its own .py file."""
    import torch
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import embedded_tokenizer, twin_config

    target = d / name
    target.mkdir(parents=True, exist_ok=True)
    tok = embedded_tokenizer()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(twin_config("llama-3.2-1b", "tiny", vocab_size=len(tok)))
    tok.save_pretrained(target)
    if custom_code:
        model.config.save_pretrained(target)
        cfg = json.loads((target / "config.json").read_text())
        cfg.update(
            model_type="geoprobe_custom",
            architectures=["CustomForCausalLM"],
            auto_map={
                "AutoConfig": "custom_model.CustomConfig",
                "AutoModelForCausalLM": "custom_model.CustomForCausalLM",
            },
        )
        (target / "config.json").write_text(json.dumps(cfg))
        marker = (target / MARKER).resolve()
        (target / "custom_model.py").write_text(
            f"from pathlib import Path\nPath({str(marker)!r}).write_text('custom code ran')\n"
            "from transformers import LlamaConfig, LlamaForCausalLM\n"
            "class CustomConfig(LlamaConfig):\n    model_type = 'geoprobe_custom'\n"
            "class CustomForCausalLM(LlamaForCausalLM):\n    config_class = CustomConfig\n"
        )
        model.save_pretrained(target, safe_serialization=True)
        (target / "config.json").write_text(json.dumps(cfg))  # save_pretrained rewrote it
    elif pickle:
        model.config.save_pretrained(target)
        torch.save(model.state_dict(), target / "pytorch_model.bin")
    else:
        model.save_pretrained(target, safe_serialization=True)
    return target


def kind_json(d: Path, name: str, module: str, version: int | None = None) -> None:
    """A results file head of the kind (and version) that ``module`` writes; the rest is irrelevant
    because the kind is checked first."""
    import importlib

    m = importlib.import_module(module)
    json_file(name, {"kind": m.RESULTS_KIND, "version": version or m.RESULTS_VERSION, "geoprobe": "0.0"})(d)


class Payload:
    """Unpickling this runs ``Path(marker).touch()``: what a malicious pytorch_model.bin could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def payload_model_dir(d: Path) -> None:
    """A pickled model directory whose weights also carry a code-running object."""
    import torch

    target = tiny_model_dir(d, "payload", pickle=True)
    state = torch.load(target / "pytorch_model.bin", weights_only=True)
    state["extra"] = Payload((target / MARKER).resolve())
    torch.save(state, target / "pytorch_model.bin")


def recipe(name: str, body: str) -> Callable[[Path], None]:
    return text(name, body)


def owned_json(name: str, kind: str) -> Callable[[Path], None]:
    """A results file head that geoprobe recognises as its own (the kind is all that matters here)."""
    return json_file(name, {"kind": kind, "version": 1, "geoprobe": "0.1.0"})


def owned_page(name: str) -> Callable[[Path], None]:
    from geoprobe.outputs import GENERATOR_META

    return text(name, f"<!DOCTYPE html>\n<html><head>{GENERATOR_META}<title>geoprobe scan</title></head></html>\n")


def case(
    id: str,
    argv: str | tuple[str, ...],
    bad: str,
    *expect: str,
    setup: tuple[str, ...] = (),
    code: int = 2,
    env: tuple[tuple[str, str], ...] = (),
    before_load: bool = False,
) -> Case:
    words = tuple(argv.split()) if isinstance(argv, str) else argv
    return Case(
        id=id,
        argv=words,
        bad=bad,
        expect=expect,
        setup=setup,
        code=code,
        needs_no_cuda="cuda" in words,
        env=env,
        before_load=before_load,
    )
