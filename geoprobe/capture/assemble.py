"""A capture's arrays, filled batch by batch, and the Capture they make.

:func:`geoprobe.capture.capture` fills them in one process; :mod:`geoprobe.capture.parallel` fills
them from shards captured on Ray workers. Both cut the prompts into the same batches (by length
when ``sort_by_length``, the longest first, ``batch_size`` at a time) so that every batch is padded,
computed and stored the same way wherever it runs, and both keep a resumable checkpoint of finished
batches in the same format (:mod:`geoprobe.capture.checkpoint`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
from jaxtyping import Int

from geoprobe.capture.checkpoint import CaptureCheckpoint, model_fingerprint
from geoprobe.capture.result import Capture
from geoprobe.provenance import prompts_hash

#: arrays with one row per prompt (axis 0); every other array is per layer (layer, prompt, …)
PER_PROMPT = ("next_entropy", "next_top_ids", "next_top_probs")
#: the fields of CaptureConfig that name a per-layer site array kept at each prompt's final token
SITE_FIELDS = ("values", "keys", "queries", "attn_out")


def batches_of(
    lengths: Int[np.ndarray, " n"], batch_size: int, *, by_length: bool = True, one_length: bool = False
) -> list[np.ndarray]:
    """Indices of prompts of token counts ``lengths`` cut into batches of ``batch_size``: the longest first
    (``by_length``; else in input order), or, with ``one_length``, only prompts of one length in a batch, so
    that none is padded (a model whose own output moves with padding: each prompt computed as it is alone)."""
    order = np.argsort(-lengths, kind="stable") if by_length or one_length else np.arange(len(lengths))
    groups = [order[lengths[order] == n] for n in dict.fromkeys(lengths[order].tolist())] if one_length else [order]
    return [g[i : i + batch_size] for g in groups for i in range(0, len(g), batch_size)]


class CaptureArrays:
    """The arrays of one capture of ``n`` prompts (token counts ``lengths``, tokens cut ``cut``) at model
    layers ``layers``, allocated at once; a batch's rows are written in place (:meth:`put`, or directly
    by the caller) and then recorded (:meth:`finished`: checkpoint and progress).

    ``batches`` are the prompt indices of every batch in the order they run; ``todo`` the batches still
    to compute (all of them, less those a checkpoint in ``checkpoint_dir`` already holds, which are
    loaded here, after calling ``on_resume(loaded, batches, dir)``). A layer with fewer or narrower heads
    than the widest (``Layout.layer_heads``) leaves the rest NaN; ``attn_pattern`` is as long as the
    longest prompt, zero past each prompt's own tokens."""

    def __init__(
        self,
        model: Any,
        prompts: tuple[str, ...] | list[str],
        config: Any,
        layers: tuple[int, ...],
        lengths: Int[np.ndarray, " n"],
        cut: Int[np.ndarray, " n"],
        *,
        seed: int | None = None,
        checkpoint_dir: str | os.PathLike | None = None,
        on_resume: Callable[[int, int, Path], None] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        lay = model.layout
        self.model, self.prompts, self.config, self.layers = model, prompts, config, layers
        self.lengths, self.cut, self.seed, self.progress = lengths, cut, seed, progress
        n, L = len(lengths), len(layers)
        width = {"values": lay.n_kv_heads, "keys": lay.n_kv_heads, "queries": lay.n_heads, "attn_out": lay.n_heads}
        depth = {"values": lay.d_head, "keys": lay.d_qk, "queries": lay.d_qk, "attn_out": lay.d_head}
        blank = np.zeros if lay.uniform else functools.partial(np.full, fill_value=np.nan)
        self.arrays: dict[str, np.ndarray] = {
            name: blank((L, n, width[name], depth[name]), dtype=np.float32)
            for name in SITE_FIELDS
            if getattr(config, name)
        }
        self.arrays["attn_entropy"] = blank((L, n, lay.n_heads), dtype=np.float32)
        if config.attention == "distribution":
            pattern = np.zeros((L, n, lay.n_heads, int(lengths.max())), dtype=np.float32)
            if not lay.uniform:
                for layer_pos, layer in enumerate(layers):
                    pattern[layer_pos, :, lay.heads(layer).n_heads :] = np.nan
            self.arrays["attn_pattern"] = pattern
        self.k_top = min(config.top_k, lay.vocab_size)
        self.next: dict[str, np.ndarray] = {
            "next_entropy": np.zeros(n, dtype=np.float32),
            "next_top_ids": np.zeros((n, self.k_top), dtype=np.int64),
            "next_top_probs": np.zeros((n, self.k_top), dtype=np.float32),
        }
        #: how far padding on the capture's side moves this model's own output (None: it does not)
        self.padding_moves = getattr(model.arch, "padding_dependent", {}).get(config.padding_side)
        self.batches = batches_of(
            lengths, config.batch_size, by_length=config.sort_by_length, one_length=self.padding_moves is not None
        )
        self.todo = list(range(len(self.batches)))
        self.done = 0
        self.ckpt: CaptureCheckpoint | None = None
        if checkpoint_dir is not None:
            self._resume(checkpoint_dir, on_resume)

    def record_config(self) -> dict[str, Any]:
        """The capture config as the Capture records it (layers resolved)."""
        cfg = asdict(self.config)
        cfg["layers"] = list(self.layers)
        return cfg

    def _resume(self, checkpoint_dir: str | os.PathLike, on_resume: Callable[[int, int, Path], None] | None) -> None:
        fingerprint = {
            **model_fingerprint(self.model),
            "prompts_hash": prompts_hash(self.prompts),
            "n_prompts": len(self.lengths),
            "seed": self.seed,
            "config": self.record_config(),
        }
        self.ckpt = CaptureCheckpoint(checkpoint_dir, fingerprint, len(self.batches))
        self.todo = []
        for b, batch in enumerate(self.batches):
            saved = self.ckpt.load(b, batch)
            if saved is None:
                self.todo.append(b)
                continue
            for name, rows in saved.items():
                if name in self.next:
                    self.next[name][batch] = rows
                else:
                    self.arrays[name][:, batch] = rows
            self.done += len(batch)
        if self.ckpt.resumed and on_resume is not None:
            on_resume(len(self.batches) - len(self.todo), len(self.batches), self.ckpt.dir)
        if self.progress is not None and self.done:
            self.progress(self.done, len(self.lengths))

    def shapes(self) -> list[tuple[int, int]]:
        """(prompts, longest in tokens) of every batch still to compute."""
        return [(len(self.batches[b]), int(self.lengths[self.batches[b]].max())) for b in self.todo]

    def put(self, b: int, rows: Mapping[str, np.ndarray]) -> None:
        """Write batch ``b``'s rows (one per prompt of the batch, in its order; axis 1 of the per-layer
        arrays, axis 0 of the next-token ones), computed elsewhere; ``attn_pattern`` may be shorter than
        the longest prompt (it is then as long as its own capture's longest)."""
        batch = self.batches[b]
        for name, got in rows.items():
            if name in self.next:
                self.next[name][batch] = got
            elif name == "attn_pattern":
                self.arrays[name][:, batch, :, : got.shape[-1]] = got
            else:
                self.arrays[name][:, batch] = got

    def finished(self, b: int) -> None:
        """Batch ``b`` is written: keep it in the checkpoint (if any) and report progress."""
        batch = self.batches[b]
        if self.ckpt is not None:
            rows = {name: a[batch] for name, a in self.next.items()}
            self.ckpt.save(b, batch, {**rows, **{name: a[:, batch] for name, a in self.arrays.items()}})
        self.done += len(batch)
        if self.progress is not None:
            self.progress(self.done, len(self.lengths))

    def capture(self, w_k: np.ndarray | None) -> Capture:
        """The finished Capture (every batch written), with the key weights ``w_k`` (or None)."""
        return Capture(
            layers=self.layers,
            layout=self.model.layout,
            provenance=self.model.provenance.with_prompts(self.prompts, self.seed),
            prompts=tuple(self.prompts),
            config=self.record_config(),
            n_tokens=self.lengths,
            n_truncated=self.cut,
            w_k=w_k,
            **self.next,
            **self.arrays,
        )
