"""Comparing a scan's results.json with one written on another machine, at a tolerance float32 justifies.

Bit-identity is a promise for reruns on one machine (tests/scan/test_determinism.py). Another CPU runs
other float32 kernels (another SIMD width, FMA or not, another blocking of the sums), so a fixture
written there differs in the last bits of every float32 array, and a number that is a difference of
near-equal ones (the focusing reduction, a difference of two mean entropies) or a rank statistic of
near-tied values (the alignment correlations on a random twin, whose next-token entropies all lie
within 1e-4 bits of log2 V) amplifies those bits. The tolerance of each number is derived, not chosen:

* **inputs.** Every float in results.json is computed (in float64) from the capture's float32 arrays
  and the random-init W_K; nothing else the scan reads is a float.
* **how far float32 kernels move an input.** A float32 sum of N terms taken in another order differs
  by about sqrt(N)·u of the sum of the terms' magnitudes (u = 2⁻²⁴, rounding errors adding as a random
  walk). The longest sum in the forward pass is the next-token softmax over the vocabulary (V = 49152
  for the twins' tokenizer): :data:`EPS` = sqrt(V)·u = 1.32e-5. The scale it multiplies is the element
  itself for arrays whose terms share one sign (entropies, probabilities) and the array's RMS for
  signed arrays (values, keys, W_K), where cancellation leaves an element far smaller than its terms.
  Measured on one AMD EPYC under three kernel sets (AVX-512; AVX2 through ``ATEN_CPU_CAPABILITY=avx2
  MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2``, which writes the fixture's bytes exactly;
  scalar through ``ATEN_CPU_CAPABILITY=default``): the arrays differ by at most 2e-6 of that scale
  (docs/testing.md), so EPS covers the kernels seen by a factor of 7.
* **how far that moves each number.** :func:`sensitivity` perturbs every float32 input element by
  ``EPS · scale · z`` (z standard normal), re-runs the analysis (0.1 s) and keeps each number's
  largest change over :data:`DRAWS` draws; bootstrap bounds and permutation p-values move by whole
  steps when a resample crosses the estimate, and 32 draws see such a step where it is likely.
* **the tolerance** of a number is :data:`FACTOR` × its sensitivity plus :data:`ULPS` float64 ulps
  (numbers computed from exact inputs alone, such as the uniform-attention ceiling, still differ by
  an ulp of libm or LAPACK between CPUs). Strings, integers, booleans, nulls, key order and list
  lengths are compared exactly.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterator

import numpy as np

U = 2.0**-24  # float32 unit roundoff
VOCAB = 49152  # the twins' tokenizer (SmolLM2's): the longest float32 sum of the forward pass
EPS = math.sqrt(VOCAB) * U  # 1.32e-5
DRAWS = 32
FACTOR = 4.0
ULPS = 16
#: capture arrays whose elements are sums of terms of one sign (error relative to the element itself)
ONE_SIGNED = ("next_entropy", "next_top_probs", "attn_entropy")


def leaves(d: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every leaf of a JSON document, in document order."""
    if isinstance(d, dict):
        for k, v in d.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, d


def _shape(d: Any) -> Any:
    """The document with every leaf replaced by its type name and every object by its (key, shape)
    pairs in order, so that comparing shapes compares key order and list lengths too."""
    if isinstance(d, dict):
        return [(k, _shape(v)) for k, v in d.items()]
    if isinstance(d, list):
        return [_shape(v) for v in d]
    return type(d).__name__


def perturbed(a: np.ndarray, name: str, rng: np.random.Generator, eps: float = EPS) -> np.ndarray:
    """``a`` (float32) with every element moved by ``eps`` × its scale × a standard normal draw."""
    x = a.astype(np.float64)
    scale = np.abs(x) if name in ONE_SIGNED else math.sqrt(float(np.mean(x**2)))
    return (x + eps * scale * rng.standard_normal(x.shape)).astype(a.dtype)


def sensitivity(
    analyse: Callable[[Any, np.ndarray | None], dict], cap: Any, init_w_k: np.ndarray | None, *, seed: int = 0
) -> dict[str, float]:
    """Largest change of every float of ``analyse(cap, init_w_k)`` over :data:`DRAWS` perturbed draws
    of the capture's float32 arrays and ``init_w_k`` (module docs)."""
    rng = np.random.default_rng(seed)
    base = dict(leaves(analyse(cap, init_w_k)))
    sens = {p: 0.0 for p, v in base.items() if isinstance(v, float)}
    names = [
        f.name
        for f in dataclasses.fields(cap)
        if isinstance(getattr(cap, f.name), np.ndarray) and getattr(cap, f.name).dtype == np.float32
    ]
    for _ in range(DRAWS):
        c = dataclasses.replace(cap, **{n: perturbed(getattr(cap, n), n, rng) for n in names})
        w = None if init_w_k is None else perturbed(init_w_k, "w_k", rng)
        for p, v in leaves(analyse(c, w)):
            if p in sens and isinstance(v, float):
                sens[p] = max(sens[p], abs(v - base[p]))
    return sens


def tolerances(sens: dict[str, float], fresh: dict) -> dict[str, float]:
    """Each float's tolerance: FACTOR × its sensitivity plus ULPS float64 ulps of its value."""
    values = dict(leaves(fresh))
    return {p: FACTOR * s + ULPS * math.ulp(abs(values[p])) for p, s in sens.items()}


def differences(stored: dict, fresh: dict, tol: dict[str, float], skip: tuple[str, ...] = ()) -> list[str]:
    """Where ``fresh`` departs from ``stored``: a different shape (keys, key order, list lengths, leaf
    types), a different non-float, or a float further away than its tolerance. ``skip``: path prefixes
    whose values are not compared (wall-clock readings, versions, paths); their keys still are."""
    if _shape(stored) != _shape(fresh):
        return ["the documents differ in keys, key order, list lengths or leaf types"]
    out = []
    for (p, a), (_, b) in zip(leaves(stored), leaves(fresh)):
        if p.startswith(skip):
            continue
        if isinstance(a, float):
            t = tol.get(p)
            if t is None:
                out.append(f"{p}: no tolerance derived for it")
            elif not abs(a - b) <= t:  # NaN fails, as it should (results.json never holds one)
                out.append(f"{p}: stored {a!r}, now {b!r}, |difference| {abs(a - b):.3g} > tolerance {t:.3g}")
        elif a != b:
            out.append(f"{p}: stored {a!r}, now {b!r}")
    return out
