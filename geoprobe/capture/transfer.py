"""A batch's captured tensors copied to host memory in one transfer, awaited one batch later.

On a GPU, copying each layer's slices to the host as the forward pass makes them (``.cpu()``) stops
the host until the device has caught up, once per layer and site: the device then idles while Python
queues the next layer. :class:`HostCopy` instead packs every tensor of a batch that lives on a CUDA
device into one flat buffer per dtype, copies it into pinned host memory without blocking, and
records an event; :meth:`HostCopy.wait` waits on that event only when the arrays are needed. The
capture loop waits for batch ``b - 1`` after it has queued batch ``b``, so the device computes one
batch while the host stores the previous one. Tensors already in host memory pass through as they are.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import torch


def to_device(x: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """``x`` (host memory) on ``device``; to a CUDA device through pinned memory without waiting (a
    plain ``.to`` from pageable memory waits for the device to finish what it was given before)."""
    device = torch.device(device)
    if device.type != "cuda" or x.device.type != "cpu":
        return x.to(device)
    return x.pin_memory().to(device, non_blocking=True)


class HostCopy:
    """``tensors`` (name -> tensor, on any device) on their way to host memory."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        self.ready: dict[str, torch.Tensor] = {}
        self.flat: list[tuple[list[tuple[str, torch.Size]], torch.Tensor]] = []
        self.event: torch.cuda.Event | None = None
        on_device: dict[torch.dtype, list[tuple[str, torch.Tensor]]] = {}
        for name, t in tensors.items():
            if t.device.type == "cuda":
                on_device.setdefault(t.dtype, []).append((name, t))
            else:
                self.ready[name] = t
        for group in on_device.values():
            packed = torch.cat([t.reshape(-1) for _, t in group])
            host = torch.empty(packed.shape, dtype=packed.dtype, pin_memory=True)
            host.copy_(packed, non_blocking=True)
            self.flat.append(([(name, t.shape) for name, t in group], host))
        if self.flat:
            self.event = torch.cuda.Event()
            self.event.record()

    def wait(self) -> dict[str, np.ndarray]:
        """Every tensor as a numpy array in host memory (waits for the copy once)."""
        if self.event is not None:
            self.event.synchronize()
        out = {name: t.numpy() for name, t in self.ready.items()}
        for shapes, host in self.flat:
            start = 0
            for name, shape in shapes:
                n = shape.numel()
                out[name] = host[start : start + n].reshape(shape).numpy()
                start += n
        return out
