"""Capture results: arrays + metadata, frozen, saved losslessly as safetensors + JSON."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from jaxtyping import Float, Int

from geoprobe.errors import ForeignOutputError, GeoprobeError, OutputExistsError, OutputWriteError, ResultsError
from geoprobe.kinds import CAPTURE_KIND, directory_kind
from geoprobe.models.layout import Layout
from geoprobe.outputs import CAPTURE_FILES, check_replaceable_dir, refuse_cwd
from geoprobe.paths import public_mode, read_regular, safetensors_damage, writing
from geoprobe.provenance import Provenance

FORMAT_VERSION = 1
ARRAYS = (
    "n_tokens",
    "n_truncated",
    "next_entropy",
    "next_top_ids",
    "next_top_probs",
    "attn_entropy",
    "values",
    "keys",
    "queries",
    "attn_out",
    "attn_pattern",
    "w_k",
)

#: per-layer arrays: (the Heads field counting their heads, the Heads field of their width or None)
_PER_LAYER: dict[str, tuple[str, str | None]] = {
    "attn_entropy": ("n_heads", None),
    "values": ("n_kv_heads", "d_head"),
    "keys": ("n_kv_heads", "d_qk"),
    "queries": ("n_heads", "d_qk"),
    "attn_out": ("n_heads", "d_head"),
    "attn_pattern": ("n_heads", None),
    "w_k": ("n_kv_heads", "d_qk"),
}

#: the kind a capture.json names (its ownership marker; the files are outputs.CAPTURE_FILES)


def ensure_writable(path: str | os.PathLike, overwrite: bool) -> None:
    """Refuse, in one line, to write the capture directory ``path`` when geoprobe may not: something
    there that geoprobe did not write (never replaced), an existing capture without ``overwrite``
    (the CLI's --overwrite), or the working directory itself."""
    p = Path(path)
    refuse_cwd(p)
    if p.exists() or p.is_symlink():
        other = directory_kind(p)
        if other is not None and other.kind != CAPTURE_KIND:
            raise ForeignOutputError(
                f"{str(p)!r} is {other.describe()}, not a capture directory; geoprobe replaces only its own kind "
                "of output, with any flag: choose another --out"
            )
        check_replaceable_dir(p, CAPTURE_FILES, "capture.json", marker_kind=CAPTURE_KIND)
        if not overwrite:
            raise OutputExistsError(f"output {str(path)!r} already exists; choose another --out or pass --overwrite")


def remove_strays(target: Path) -> None:
    """The temporaries a killed :meth:`Capture.save` of ``target`` left beside it (``.NAME.tmp-*`` before its
    rename, ``.NAME.old-*`` after the old capture was moved aside): removed when they hold nothing but a
    capture's own files. Another writer of the same target is locked out before this runs."""
    for pattern in (f".{target.name}.tmp-*", f".{target.name}.old-*"):
        for stray in target.parent.glob(pattern):
            if stray.is_dir() and not stray.is_symlink() and set(os.listdir(stray)) <= set(CAPTURE_FILES):
                shutil.rmtree(stray, ignore_errors=True)


@dataclass(frozen=True, eq=False)
class Capture:
    """Final-token geometry of every captured layer for a set of prompts.

    Axes: ``L`` captured layers (``layers`` gives their indices), ``n`` prompts, ``H`` query
    heads, ``Hkv`` key/value heads, ``d`` head width, ``T`` longest prompt in tokens.
    Entropies are in bits. ``attn_pattern[l, i, h, t]`` is the final token's attention to the
    ``t``-th real token of prompt ``i`` (padding removed; zero for ``t >= n_tokens[i]``).
    """

    layers: tuple[int, ...]
    layout: Layout
    provenance: Provenance
    prompts: tuple[str, ...]
    config: dict[str, Any]
    n_tokens: Int[np.ndarray, " n"]
    n_truncated: Int[np.ndarray, " n"]
    next_entropy: Float[np.ndarray, " n"]
    next_top_ids: Int[np.ndarray, "n k"]
    next_top_probs: Float[np.ndarray, "n k"]
    attn_entropy: Float[np.ndarray, "L n H"]
    values: Float[np.ndarray, "L n Hkv d"] | None = None
    keys: Float[np.ndarray, "L n Hkv d"] | None = None
    queries: Float[np.ndarray, "L n H d"] | None = None
    attn_out: Float[np.ndarray, "L n H d"] | None = None
    attn_pattern: Float[np.ndarray, "L n H T"] | None = None
    w_k: Float[np.ndarray, "L Hkv D d"] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n, L, lay = len(self.prompts), len(self.layers), self.layout
        if n == 0:
            raise ValueError("a capture needs at least one prompt")
        if any(not 0 <= layer < lay.n_layers for layer in self.layers):
            raise ValueError(f"layers {self.layers} out of range for {lay.n_layers} layers")
        expect = {
            "n_tokens": (n,),
            "n_truncated": (n,),
            "next_entropy": (n,),
            "attn_entropy": (L, n, lay.n_heads),
            "values": (L, n, lay.n_kv_heads, lay.d_head),
            "keys": (L, n, lay.n_kv_heads, lay.d_qk),
            "queries": (L, n, lay.n_heads, lay.d_qk),
            "attn_out": (L, n, lay.n_heads, lay.d_head),
            "w_k": (L, lay.n_kv_heads, lay.d_model, lay.d_qk),
        }
        for name, shape in expect.items():
            arr = getattr(self, name)
            if arr is not None and tuple(arr.shape) != shape:
                raise ValueError(f"{name} has shape {tuple(arr.shape)}, expected {shape}")
        if self.next_top_ids.shape != self.next_top_probs.shape or self.next_top_ids.shape[0] != n:
            raise ValueError("next_top_ids and next_top_probs must both be (n, k)")
        if self.attn_pattern is not None:
            if self.attn_pattern.shape[:3] != (L, n, lay.n_heads):
                raise ValueError(
                    f"attn_pattern has shape {self.attn_pattern.shape}, expected ({L}, {n}, {lay.n_heads}, T)"
                )
        for name in ARRAYS:
            arr = getattr(self, name)
            if arr is not None:
                arr.setflags(write=False)

    # -- access -----------------------------------------------------------------------
    @property
    def n_prompts(self) -> int:
        return len(self.prompts)

    def index(self, layer: int) -> int:
        """Position of model layer ``layer`` in the captured arrays (negative counts from the end)."""
        if layer < 0:
            layer += self.layout.n_layers
        try:
            return self.layers.index(layer)
        except ValueError:
            raise GeoprobeError(f"layer {layer} was not captured; captured layers: {list(self.layers)}") from None

    def layer(self, name: str, layer: int) -> np.ndarray:
        """Array ``name`` of model layer ``layer`` (negative counts from the end), cut to that layer's own
        heads and widths: the whole slice where every layer has the same layout; where layers differ
        (``layout.layer_heads``), the arrays are as wide as the widest layer, NaN beyond a layer's own.

        ``attn_entropy``: (n, H); ``values``: (n, Hkv, d); ``keys``: (n, Hkv, d_qk); ``queries``: (n, H,
        d_qk); ``attn_out``: (n, H, d); ``attn_pattern``: (n, H, T); ``w_k``: (Hkv, D, d_qk)."""
        if name not in _PER_LAYER:
            raise ValueError(f"{name!r} is not a per-layer array; one of {sorted(_PER_LAYER)}")
        arr = getattr(self, name)
        if arr is None:
            how = {"attn_pattern": "attention='distribution'", "w_k": "key_weights=True"}.get(name, f"{name}=True")
            raise GeoprobeError(f"{name} were not captured; capture with {how}")
        i = self.index(layer)
        h, (heads, width) = self.layout.heads(self.layers[i]), _PER_LAYER[name]
        if name == "w_k":
            return arr[i, : getattr(h, heads), :, : getattr(h, width)]
        a = arr[i, :, : getattr(h, heads)]
        return a if width is None else a[..., : getattr(h, width)]

    def per_layer(self, name: str) -> list[np.ndarray]:
        """:meth:`layer` of every captured layer, in ``layers`` order."""
        return [self.layer(name, layer) for layer in self.layers]

    def values_flat(self, layer: int) -> Float[np.ndarray, "n Hkv_d"]:
        """Value vectors of ``layer`` concatenated over KV heads: (n, Hkv·d)."""
        if self.values is None:
            raise GeoprobeError("values were not captured; capture with values=True")
        v = self.layer("values", layer)
        return v.reshape(v.shape[0], -1)

    # -- persistence ------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        return {
            "kind": CAPTURE_KIND,
            "format_version": FORMAT_VERSION,
            "layers": list(self.layers),
            "layout": self.layout.to_dict(),
            "provenance": self.provenance.to_dict(),
            "prompts": list(self.prompts),
            "config": self.config,
            "extra": self.extra,
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write ``arrays.safetensors`` and ``capture.json`` into directory ``path``.

        The directory is written under a temporary name and renamed into place, so a crash
        never leaves half a result. An existing capture directory is only replaced with
        ``overwrite``, and a directory holding anything geoprobe did not write never is.
        Files follow the umask, as a plain ``open()`` would create them.
        """
        from safetensors.numpy import save_file

        from geoprobe.checks import bool_arg, path_arg

        target = path_arg(path, "path", "a directory path such as 'runs/capture'", optional=False)
        ensure_writable(target, bool_arg(overwrite, "overwrite"))
        tmp: Path | None = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_strays(target)
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
            arrays = {n: np.ascontiguousarray(getattr(self, n)) for n in ARRAYS if getattr(self, n) is not None}
            with writing(target / "arrays.safetensors"):  # a full disk inside safetensors: an OSError
                save_file(arrays, str(tmp / "arrays.safetensors"))
            (tmp / "capture.json").write_text(json.dumps(self.metadata(), indent=1, ensure_ascii=False))
            for name in CAPTURE_FILES:
                os.chmod(tmp / name, public_mode())  # the safetensors writer makes its file private (0600)
            os.chmod(tmp, public_mode(directory=True))  # mkdtemp makes it private (0700)
            if target.exists():
                ensure_writable(target, overwrite)  # again, just before replacing: nothing foreign arrived meanwhile
                old = target.with_name(f".{target.name}.old-{os.getpid()}")
                os.replace(target, old)
                os.replace(tmp, target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, target)
        except OSError as exc:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            named = Path(exc.filename) if isinstance(exc.filename, str) else None
            raise OutputWriteError(named if named is not None and named.parent == target else target, exc) from exc
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Capture":
        """The capture saved in directory ``path``; a damaged ``capture.json`` or
        ``arrays.safetensors`` (truncated, garbled, arrays that disagree with the metadata) is a
        one-line :class:`ResultsError` naming the file, never a bare SafetensorError."""
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        p = Path(path)
        meta_path, arr_path = p / "capture.json", p / "arrays.safetensors"
        if not meta_path.exists() or not arr_path.exists():
            raise GeoprobeError(f"{str(p)!r} is not a geoprobe capture (needs capture.json and arrays.safetensors)")
        fix = "capture again into a fresh --out"
        try:
            meta = json.loads(
                read_regular(meta_path, lambda why: ResultsError(f"capture file {str(meta_path)!r} {why}; {fix}"))
            )
        except OSError as exc:
            raise ResultsError(f"capture file {str(meta_path)!r} cannot be read ({exc.strerror}); {fix}") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise ResultsError(f"capture file {str(meta_path)!r} is damaged (not valid JSON: {exc}); {fix}") from None
        if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
            found = meta.get("format_version") if isinstance(meta, dict) else None
            raise GeoprobeError(f"capture {str(p)!r} has format {found}, this geoprobe reads {FORMAT_VERSION}")
        damage = safetensors_damage(arr_path)
        if damage is not None:
            raise ResultsError(f"capture file {str(arr_path)!r} is damaged ({damage}); {fix}")
        try:
            arrays = load_file(str(arr_path))
        except SafetensorError as exc:
            raise ResultsError(
                f"capture file {str(arr_path)!r} is damaged ({' '.join(str(exc).split())}); {fix}"
            ) from None
        known = {f.name for f in fields(cls)}
        try:
            return cls(
                layers=tuple(meta["layers"]),
                layout=Layout.from_dict(meta["layout"]),
                provenance=Provenance.from_dict(meta["provenance"]),
                prompts=tuple(meta["prompts"]),
                config=meta["config"],
                extra=meta.get("extra", {}),
                **{k: v for k, v in arrays.items() if k in known},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsError(
                f"capture {str(p)!r} is damaged: its capture.json and arrays.safetensors disagree or "
                f"miss a field ({type(exc).__name__}: {' '.join(str(exc).split())}); {fix}"
            ) from None
