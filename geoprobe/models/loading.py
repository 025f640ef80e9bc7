"""Load a model by alias, Hub id, local directory or .gguf file, and inspect its attention.

The model stays a plain Hugging Face model: capture reads it through transformers'
AttentionInterface (``geoprobe.models.architecture``). A TransformerBridge is booted only when
something asks for ``LoadedModel.bridge``, on a structural copy that shares every weight, so
the Hugging Face model itself is never rewrapped."""

from __future__ import annotations

import errno
import os
import pickle
import shutil
import weakref
from pathlib import Path
from typing import Any, Literal

import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors import SafetensorError

from geoprobe.checks import name_arg
from geoprobe.errors import (
    GeoprobeError,
    ModelUnavailableError,
    UnknownModelError,
    UnsupportedArchitectureError,
)
from geoprobe.models.device_map import offload_folder, parse_device_map
from geoprobe.models.fingerprint import hub_weights_sha256
from geoprobe.models.fingerprint import local_weights_hash as local_weights_hash  # its home before fingerprint.py
from geoprobe.models.gguf import embedded_gguf_path, gguf_quantisation, load_gguf
from geoprobe.models.heads import check_heads
from geoprobe.models.loaded import LoadedModel, boot, quiet_libraries, torch_dtype
from geoprobe.models.options import (  # noqa: F401 - their home is options (no torch), imported from here before
    DEVICE_TYPES,
    MODEL_HELP,
    DType,
    LoadOptions,
    check_device,
    load_fields,
    model_kind,
)
from geoprobe.models.partial import LOAD_KWARGS, check_report, shape_error, split_report
from geoprobe.models.registry import (
    ALIASES,
    DEFAULT_MODEL,
    ModelSpec,
    closest_aliases,
    find_spec_by_hf_id,
)
from geoprobe.models.twins import parse_twin, twin, twin_seed
from geoprobe.paths import read_regular, safetensors_damage
from geoprobe.provenance import Provenance


def _offline_message(model: str, revision: str | None, exc: Exception) -> str:
    rev = f" at revision {revision!r}" if revision else ""
    return (
        f"model {model!r}{rev}: weights are not in the local Hugging Face cache and the hub is unreachable "
        f"({type(exc).__name__}); fix: point HF_HOME at a cache that holds them, pass --model /path/to/model_dir, "
        "or a .gguf file (or --model smollm2-135m, which ships offline)"
    )


def _check_revision(spec: ModelSpec | None, revision: str | None) -> None:
    if spec is None or revision is None or not spec.revisions:
        return
    if revision.startswith("step") and revision not in spec.revisions:
        raise GeoprobeError(
            f"revision {revision!r} is not a {spec.alias} checkpoint; valid: step0, step1, step2, …, step512 "
            "and every 1000 steps to step143000 (pass one of them to --revision)"
        )


def load_model(
    name: str = DEFAULT_MODEL,
    *,
    revision: str | None = None,
    dtype: DType = "float32",
    device: str = "cpu",
    device_map: str | dict | None = None,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    allow_partial_weights: bool = False,
    weight_seed: int | None = None,
) -> LoadedModel:
    """Load ``name`` (alias, Hub id, local directory, .gguf path, or ``twin:ALIAS[:tiny|full][@SEED]``;
    ``weight_seed``: a twin's weight seed, as ``@SEED`` says).

    ``trust_remote_code`` and ``allow_pickle`` are off by default: only safetensors weights
    and library model code are loaded unless the caller opts in explicitly. So is
    ``allow_partial_weights``: weights that do not match the config are refused (``models/partial.py``).
    """
    name = name_arg(name, "name", "a model name such as 'smollm2-135m', a local directory or a .gguf file")
    quiet_libraries()
    opts = LoadOptions(
        name, revision, dtype, device, device_map, trust_remote_code, allow_pickle, allow_partial_weights, weight_seed
    ).check()
    tdtype = torch_dtype(dtype)
    if name.startswith("twin:"):
        t = parse_twin(name)
        return twin(t.alias, t.scale or "tiny", twin_seed(name, weight_seed), dtype, device)  # type: ignore[arg-type]
    path = Path(os.path.expanduser(name))
    _check_not_a_link_loop(name, path)
    if name.lower().endswith(".gguf"):
        return _load_gguf_file(path, tdtype, device, spec=None)
    if path.is_dir():
        return _load_pretrained(str(path), str(path), opts, source="local", spec=None)
    if name.startswith((".", "/", "~")) or name.count("/") > 1:  # a path, not an alias or a Hub id (owner/name)
        what = (
            f"path {name!r} is a file, not a model directory" if path.exists() else f"directory {name!r} does not exist"
        )
        raise UnknownModelError(
            f"model {what}; pass a directory with config.json, tokenizer files "
            "and *.safetensors weights, a .gguf file, an alias or a Hub id to --model"
        )
    spec = ALIASES.get(name.lower()) or (find_spec_by_hf_id(name) if "/" in name else None)
    if spec is not None and spec.source == "embedded":
        assert spec.package is not None and spec.gguf_file is not None
        return _load_gguf_file(embedded_gguf_path(spec.package, spec.gguf_file), tdtype, device, spec=spec)
    if spec is not None:
        _check_revision(spec, revision)
        return _load_pretrained(spec.hf_id, spec.hf_id, opts, source="hub", spec=spec)
    if "/" in name and not name.startswith((".", "/", "~")):
        return _load_pretrained(name, name, opts, source="hub", spec=None)
    near = closest_aliases(name)
    hint = f"closest aliases: {', '.join(near)}" if near else "see 'geoprobe models' for the aliases"
    raise UnknownModelError(
        f"unknown model {name!r}: not an alias, a Hub id (owner/name), a directory or a .gguf file; {hint}"
    )


def _check_not_a_link_loop(name: str, path: Path) -> None:
    """A ``--model`` path whose symbolic links never end (``ln -s loop loop``) is named as such; left
    alone it reads as a missing directory, an unknown alias or an unreachable Hub id."""
    if not os.path.lexists(path):
        return
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnknownModelError(
                f"model path {name!r} is a symbolic-link loop (following its links never reaches a "
                "file); fix the link, or pass a model directory, a .gguf file, an alias or a Hub "
                "id to --model"
            ) from None


def _load_gguf_file(path: Path, dtype: torch.dtype, device: str, spec: ModelSpec | None) -> LoadedModel:
    model, tok, digest, _ = load_gguf(path, dtype)
    model = model.to(device)
    model_id = spec.alias if spec is not None else str(path)
    dtype_name = str(dtype).removeprefix("torch.")
    quant = f"GGUF {gguf_quantisation(path)}, dequantised to float32"
    quant += f", then cast to {dtype_name}" if dtype_name != "float32" else ""
    prov = Provenance(
        model_id=model_id,
        source="gguf",
        weights=f"sha256:{digest}",
        tokenizer=f"gguf:{path.name}",
        dtype=dtype_name,
        weights_sha256=digest,
        weights_note=f"{spec.note}; {quant}" if spec is not None and spec.note else quant,
    )
    return boot(model, tok, prov, spec)


def _load_pretrained(
    model_id: str, location: str, opts: LoadOptions, *, source: Literal["hub", "local"], spec: ModelSpec | None
) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    revision, dtype, device, device_map = opts.revision, torch_dtype(opts.dtype), opts.device, opts.device_map
    trust_remote_code, allow_pickle = opts.trust_remote_code, opts.allow_pickle

    if source == "hub" and not _in_local_cache(location, revision) and not _hub_reachable():
        raise ModelUnavailableError(_offline_message(model_id, revision, ConnectionError("no route to the hub")))
    kwargs: dict[str, Any] = dict(revision=revision, trust_remote_code=trust_remote_code, dtype=dtype, **LOAD_KWARGS)
    kwargs["use_safetensors"] = None if allow_pickle else True
    offload: str | None = None
    if device_map is not None:
        kwargs["device_map"] = parse_device_map(device_map)
        offload = kwargs["offload_folder"] = offload_folder(kwargs["device_map"])
    if source == "local":
        _check_weight_files(Path(location))
        _check_local_config(Path(location), trust_remote_code)
    try:
        tok = AutoTokenizer.from_pretrained(location, revision=revision, trust_remote_code=trust_remote_code)
        model, info = split_report(AutoModelForCausalLM.from_pretrained(location, **kwargs))
        partial = check_report(model_id, info, opts.allow_partial_weights)
    except StrictDataclassError as exc:  # transformers' config validation (multi-line): one line of it
        why = next((ln.strip() for ln in str(exc).splitlines() if "Error:" in ln), " ".join(str(exc).split()))
        raise UnsupportedArchitectureError(
            f"model {model_id!r}: its config is invalid ({why}); fix config.json or pass another --model"
        ) from exc
    except (OSError, ValueError, pickle.UnpicklingError, SafetensorError) as exc:
        text = str(exc)
        if (shape := shape_error(model_id, exc)) is not None:
            raise shape from exc
        if isinstance(exc, SafetensorError):  # a hub cache file; a local directory's were checked above
            raise ModelUnavailableError(
                f"model {model_id!r}: a weights file is damaged ({' '.join(text.split())}); delete the model from "
                "the Hugging Face cache (HF_HOME) and download it again, or pass another --model"
            ) from exc
        if isinstance(exc, pickle.UnpicklingError):  # --allow-pickle, but the file holds more than tensors
            raise GeoprobeError(
                f"model {model_id!r}: its pickled weights hold objects other than tensors, which "
                "torch.load(weights_only=True) refuses to unpickle; geoprobe will not run them (get safetensors "
                "weights or pass another --model)"
            ) from exc
        if "trust_remote_code" in text:
            raise GeoprobeError(
                f"model {model_id!r} needs its own Python code (auto_map in its config) from "
                f"{'its directory' if source == 'local' else 'the hub'}; geoprobe will not run it unless you pass "
                "--trust-remote-code"
            ) from exc
        if "safetensors" in text.lower() and not allow_pickle:
            raise GeoprobeError(
                f"model {model_id!r} has no safetensors weights, only pickled ones; pass --allow-pickle to load "
                "them (with torch.load(weights_only=True))"
            ) from exc
        if source == "local":
            raise ModelUnavailableError(
                f"directory {location!r} is not a loadable model ({type(exc).__name__}); it needs config.json, "
                "tokenizer files and *.safetensors weights (fix the directory or pass another --model)"
            ) from exc
        raise ModelUnavailableError(_offline_message(model_id, revision, exc)) from exc
    except RuntimeError as exc:  # tensors of the wrong shape, refused by transformers itself (one line of it)
        if (shape := shape_error(model_id, exc)) is None:
            raise
        raise shape from exc
    finally:
        if offload is not None and "partial" not in locals():  # not loaded, or its weights refused
            shutil.rmtree(offload, ignore_errors=True)
    if offload is not None:
        weakref.finalize(model, shutil.rmtree, offload, True)  # the folder lives as long as the model
    if device_map is None:
        model = model.to(device)
    if source == "hub":
        commit = getattr(model.config, "_commit_hash", None)
        weights, digest = f"{revision or 'main'}@{commit or 'unknown'}", hub_weights_sha256(location, commit)
    else:
        weights = local_weights_hash(Path(location))
        digest = weights.removeprefix("sha256:") if weights.startswith("sha256:") else None
    prov = Provenance(
        model_id=model_id,
        source=source,
        weights=weights,
        tokenizer=getattr(tok, "name_or_path", location),
        dtype=str(dtype).removeprefix("torch."),
        partial_weights=partial,
        weights_sha256=digest,
    )
    return boot(model, tok, prov, spec)


def _check_local_config(directory: Path, trust_remote_code: bool) -> None:
    """From config.json, before transformers reads it: head counts that do not divide are refused
    (``heads.py``), and so is a config that names its own model code (``auto_map``) without
    ``trust_remote_code``, even when its ``model_type`` is one transformers knows (transformers would
    then run its stock class in place of the code the directory ships, silently)."""
    import json

    path = directory / "config.json"
    try:  # never waits on a FIFO
        cfg = json.loads(
            read_regular(
                path,
                lambda why: UnsupportedArchitectureError(
                    f"{str(path)!r} {why}; fix the model directory or pass another --model"
                ),
            )
        )
    except (OSError, ValueError):
        return  # transformers says what is wrong with a missing or unreadable config
    if not isinstance(cfg, dict):
        return
    if cfg.get("auto_map") and not trust_remote_code:
        from transformers import CONFIG_MAPPING

        stock, auto = cfg.get("model_type"), cfg["auto_map"]
        names = ", ".join(sorted(map(str, auto))) if isinstance(auto, (dict, list)) else repr(auto)
        raise GeoprobeError(
            f"model {str(directory)!r} needs its own Python code (auto_map in its config.json names "
            f"{names}); geoprobe will not run it unless you pass "
            "--trust-remote-code"
            + (
                f", and does not swap in transformers' stock {stock!r} class for it either (to use that class, "
                "remove auto_map from config.json)"
                if isinstance(stock, str) and stock in CONFIG_MAPPING
                else ""
            )
        )
    check_heads(cfg, str(directory))


def _check_weight_files(directory: Path) -> None:
    """Name a truncated or garbled ``*.safetensors`` of a local model directory before transformers
    fails on it with a bare SafetensorError (only headers are read: cheap beside the load)."""
    for f in sorted(directory.glob("*.safetensors")):
        damage = safetensors_damage(f)
        if damage is not None:
            raise ModelUnavailableError(
                f"model file {str(f)!r} is damaged ({damage}); save or download the model "
                "again, or pass another --model"
            )


def _in_local_cache(repo_id: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json", revision=revision), str)


def _hub_reachable(timeout: float = 3.0) -> bool:
    """One quick TCP connection to the hub instead of the client's minute of retries.

    Never called with HF_HUB_OFFLINE set: then nothing opens a connection."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False
