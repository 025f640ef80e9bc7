"""A trajectory directory on disk: the published checkpoints and the state a resumed run reads.

::

    OUT/trajectory.json           the manifest (TrajectoryResult), written at the end
    OUT/trajectory.html           its page (the CLI)
    OUT/checkpoints/step0/ …      one Hugging Face model directory per checkpoint: config.json,
                                  generation_config.json, model.safetensors, tokenizer.json,
                                  tokenizer_config.json (what ``geoprobe scan --model DIR`` loads)
    OUT/resume/spec.json          what is being trained (config, data hashes): a resumed run must match it
    OUT/resume/tokenizer.json     the BPE trained at the start (a resumed run encodes with it)
    OUT/resume/trainer.pt         the optimiser's state, the losses and the checkpoint records at the
                                  last checkpoint (``torch.load(weights_only=True)``); the weights are
                                  the published checkpoint's, checked by sha256

A checkpoint directory is written under a temporary name and renamed into place, then the trainer
state is replaced atomically: a kill at any moment leaves a state that names a complete checkpoint.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from geoprobe.errors import OutputWriteError
from geoprobe.outputs import check_replaceable_dir
from geoprobe.paths import atomic_write, atomic_write_text, public_mode, read_regular, safetensors_damage, writing
from geoprobe.trajectory.config import TrajectoryConfig, TrajectoryError

CHECKPOINTS = "checkpoints"
RESUME = "resume"
SPEC_KIND = "geoprobe.trajectory.training"
SPEC_VERSION = 1
#: what save_pretrained (model, generation config, tokenizer) writes into a checkpoint directory
CHECKPOINT_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)
RESUME_FILES = ("spec.json", "trainer.pt", "tokenizer.json")


def checkpoint_name(step: int) -> str:
    """Pythia's revision name: ``step512``."""
    return f"step{step}"


def checkpoint_path(out: Path, step: int) -> Path:
    return out / CHECKPOINTS / checkpoint_name(step)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


# -- what a trajectory directory may hold ----------------------------------------------------------
def check_checkpoints_dir(path: Path) -> None:
    """``OUT/checkpoints`` holds only checkpoint directories geoprobe wrote (``stepN`` holding
    nothing but a checkpoint's files), else a one-line error naming the first foreign entry."""
    names = [p.name for p in path.glob("step*") if p.name[4:].isdigit()] if path.is_dir() else []
    check_replaceable_dir(path, names, None)  # a file in its place, or any other entry, is refused
    for name in names:
        check_replaceable_dir(path / name, CHECKPOINT_FILES, None)


def check_resume_dir(path: Path) -> None:
    """``OUT/resume`` holds only a trajectory's resume state (its spec.json naming it)."""
    check_replaceable_dir(path, RESUME_FILES, "spec.json", marker_kind=SPEC_KIND)


def check_out(out: Path) -> None:
    """What the Python API checks before training into ``out``: its checkpoints and resume state, when
    there, are geoprobe's (the CLI checks the same when it claims the run directory)."""
    if (out / CHECKPOINTS).exists() or (out / CHECKPOINTS).is_symlink():
        check_checkpoints_dir(out / CHECKPOINTS)
    if (out / RESUME).exists() or (out / RESUME).is_symlink():
        check_resume_dir(out / RESUME)


# -- the spec: what a resumed run must match ---------------------------------------------------------
def write_spec(out: Path, config: TrajectoryConfig, data: dict[str, Any], tokenizer_json: str) -> None:
    """Start a run's resume state: the tokenizer, then the spec (its marker)."""
    atomic_write_text(out / RESUME / "tokenizer.json", tokenizer_json)
    d = {"kind": SPEC_KIND, "version": SPEC_VERSION, "config": config.identity(), "data": data}
    atomic_write_text(out / RESUME / "spec.json", json.dumps(d, indent=1))


def read_tokenizer(out: Path) -> str:
    """The tokenizer.json text a run trained at its start."""
    path = out / RESUME / "tokenizer.json"
    try:
        return read_regular(path, lambda why: TrajectoryError(f"{str(path)!r} {why}; pass another --out")).decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise TrajectoryError(
            f"resume state {str(path)!r} cannot be read ({type(exc).__name__}); delete {str(out)!r} and retrain, "
            "or pass another --out"
        ) from None


def read_spec(out: Path) -> dict[str, Any] | None:
    """The spec of the run in ``out`` (None when it has none); a damaged one is a one-line error."""
    path = out / RESUME / "spec.json"
    if not path.exists():
        return None
    fix = f"move {str(out)!r} away or pass another --out"
    try:
        d = json.loads(read_regular(path, lambda why: TrajectoryError(f"{str(path)!r} {why}; {fix}")))
        if d.get("kind") != SPEC_KIND or d.get("version") != SPEC_VERSION:
            raise ValueError(f"kind {d.get('kind')!r} version {d.get('version')!r}")
        return d
    except (ValueError, AttributeError) as exc:
        raise TrajectoryError(f"{str(path)!r} is damaged ({exc}); {fix}") from None


def differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """The settings (``name theirs vs ours``) in which two config identities differ."""
    return [
        f"{k} {theirs.get(k)!r} vs {ours.get(k)!r}"
        for k in sorted(set(theirs) | set(ours))
        if theirs.get(k) != ours.get(k)
    ]


# -- checkpoints -------------------------------------------------------------------------------------
def publish_modes(directory: Path) -> None:
    """Give ``directory`` and its files the modes a plain ``mkdir()`` / ``open()`` would under the umask
    (mkdtemp makes 0700 and the safetensors writer 0600, which would hide checkpoints from collaborators)."""
    for f in directory.rglob("*"):
        os.chmod(f, public_mode(directory=f.is_dir()))
    os.chmod(directory, public_mode(directory=True))


def save_checkpoint(out: Path, step: int, model: Any, tokenizer: Any) -> Path:
    """Write the model and tokenizer of ``step`` as a Hugging Face directory, under a temporary name
    renamed into place. A failed write (a full disk) removes the temporary directory and is one line
    naming the checkpoint; the checkpoints before it stay."""
    target = checkpoint_path(out, step)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        with writing(target):
            model.save_pretrained(tmp, safe_serialization=True)
            tokenizer.save_pretrained(tmp)
        publish_modes(tmp)
        if target.exists() or target.is_symlink():  # a kill after its rename and before the state's: rewrite it
            check_replaceable_dir(target, CHECKPOINT_FILES, None)
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputWriteError(target, exc) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def save_state(out: Path, state: dict[str, Any]) -> None:
    """Replace ``OUT/resume/trainer.pt`` atomically (``state``: tensors, numbers, strings, dicts)."""
    buf = io.BytesIO()  # torch.save's own file writer reports a full disk without its errno
    torch.save(state, buf)
    # the buffer itself, not getvalue()'s copy: the Adam moments once more (8 bytes a parameter) is the
    # difference (geoprobe.trajectory.memory)
    atomic_write(out / RESUME / "trainer.pt", lambda tmp: Path(tmp).write_bytes(buf.getbuffer()))


def load_state(out: Path) -> dict[str, Any] | None:
    path = out / RESUME / "trainer.pt"
    if not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        raise TrajectoryError(
            f"resume state {str(path)!r} is damaged ({type(exc).__name__}); delete {str(out)!r} and retrain, "
            "or pass another --out"
        ) from None


def load_weights(out: Path, step: int, sha256: str) -> Any:
    """The model of the published checkpoint ``step``, after checking its weights are the ones the
    resume state recorded."""
    from transformers import GPTNeoXForCausalLM

    from geoprobe.models.loaded import quiet_libraries

    quiet_libraries()
    d = checkpoint_path(out, step)
    weights = d / "model.safetensors"
    damage = safetensors_damage(weights) if weights.exists() else "the file is missing"
    if damage is None and file_sha256(weights) != sha256:
        damage = "its sha256 is not the one recorded at training"
    if damage is not None:
        raise TrajectoryError(
            f"checkpoint {str(weights)!r} cannot resume the run ({damage}); delete {str(out)!r} and retrain, "
            "or pass another --out"
        )
    return GPTNeoXForCausalLM.from_pretrained(d, use_safetensors=True)


def leftover_checkpoints(out: Path) -> list[str]:
    """Checkpoint directories in ``out`` (their names), for the refusal of a run without resume state."""
    root = out / CHECKPOINTS
    return sorted(p.name for p in root.glob("step*")) if root.is_dir() else []
