"""Run a scan: capture → analysers → ScanResult. The CLI and notebooks both call this.

In Jupyter::

    from geoprobe.scan import scan
    result = scan("smollm2-135m")          # or scan(model, prompts=[...], config=recipes.load_probe(...).config)
    result.report("runs/smollm2/report.html")
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from geoprobe.analysis.initnull import InitNull
from geoprobe.capture.result import Capture
from geoprobe.checks import bool_arg, config_arg, model_arg, prompts_arg
from geoprobe.errors import GeoprobeError, PromptError
from geoprobe.scan.config import MIN_PROMPTS, ScanConfig
from geoprobe.scan.result import ScanResult
from geoprobe.scan.scorecard import build_scorecard

Progress = Callable[[str, int, int], None]  # (stage, done, total)

#: the analyses' working memory, in units of the capture's arrays: measured 4.6-5.2× (synthetic captures of
#: 8,000 and 20,000 prompts, 4 layers, 256 value features; the per-layer copies and the bootstraps' batches)
ANALYSIS_FACTOR = 5.0

#: results.json keys (dotted paths) that hold wall-clock readings; everything else is the same,
#: bit for bit, for two scans with the same model, prompts, settings and seed on the same machine
WALL_CLOCK_KEYS: tuple[str, ...] = ("timings", "provenance.created")


def dedupe_prompts(prompts: Sequence[str]) -> tuple[list[str], int]:
    """Keep the first copy of every prompt; return the kept prompts and how many were dropped.

    Duplicates would enter PCA and the bootstrap as independent samples and inflate structure."""
    seen: set[str] = set()
    kept = [p for p in prompts if not (p in seen or seen.add(p))]
    return kept, len(prompts) - len(kept)


def _drawn_prompt_set(config: ScanConfig, model: Any, progress: Any, checkpoint_dir: Path) -> Any:
    """A corpus set sampled once per checkpoint: the drawn set is kept in ``checkpoint_dir`` and
    reused by a resumed scan with the same model, set, sampling settings and seed."""
    from dataclasses import asdict

    from geoprobe.capture.checkpoint import PROMPTS, check_or_write, model_fingerprint
    from geoprobe.corpora import CORPUS_VERSION
    from geoprobe.prompts import resolve_prompt_set
    from geoprobe.sampling import PromptSet

    key = {
        **model_fingerprint(model),
        "prompts": config.prompts,
        "corpus_version": CORPUS_VERSION,
        "sampling": asdict(config.sampling),
        "seed": config.seed,
    }
    stored = check_or_write(checkpoint_dir / PROMPTS, key, what="scan") if (checkpoint_dir / PROMPTS).exists() else None
    if stored is not None:
        d = stored["prompt_set"]
        return PromptSet(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
    pset = resolve_prompt_set(config.prompts, model, sampling=config.sampling, seed=config.seed, progress=progress)
    check_or_write(checkpoint_dir / PROMPTS, key, what="scan", extra={"prompt_set": asdict(pset)})
    return pset


def resolve_prompts(
    config: ScanConfig,
    prompts: Sequence[str] | None = None,
    model: Any = None,
    progress: Progress | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
) -> tuple[list[str], list[str], Any]:
    """The prompts a scan runs on (deduplicated), the notes to report about them, and their
    :class:`~geoprobe.sampling.PromptSet` (name, kind, hash, seed, sampling record).

    Corpus sets (``mixed``, a domain) are sampled with ``model``; without one only the set's
    name and availability are checked and ``([], [], None)`` comes back (the CLI checks
    before loading the model). With ``checkpoint_dir`` a sampled set is kept there and reused."""
    from dataclasses import replace

    from geoprobe.prompts import prompt_source_kind, resolve_prompt_set
    from geoprobe.provenance import prompts_hash

    if prompts is None and prompt_source_kind(config.prompts) == "corpus" and model is None:
        return [], [], None
    sample_progress = None if progress is None else (lambda d, n: progress("sampling", d, n))
    if prompts is None and checkpoint_dir is not None and prompt_source_kind(config.prompts) == "corpus":
        pset = _drawn_prompt_set(config, model, sample_progress, Path(checkpoint_dir))
    else:
        pset = resolve_prompt_set(
            config.prompts, model, sampling=config.sampling, seed=config.seed, progress=sample_progress, texts=prompts
        )
    prompts = list(pset.prompts)
    notes = list(pset.info.get("notes", ()))
    kept, dropped = dedupe_prompts(prompts)
    if dropped:
        counts = Counter(prompts)
        msg = (
            f"{dropped} duplicate prompt(s) dropped ({sum(1 for c in counts.values() if c > 1)} distinct texts "
            f"repeated); {len(kept)} prompts remain"
        )
        warnings.warn(msg, stacklevel=2)
        notes.append(msg)
        pset = replace(
            pset, prompts=tuple(kept), hash=prompts_hash(kept), domains=(), sources=(), entropy=(), stratum=()
        )
    if len(kept) < MIN_PROMPTS:
        raise PromptError(
            f"{len(kept)} distinct prompt(s) but a scan needs at least {MIN_PROMPTS} "
            "(PCA with bootstrap CIs and permutation tests); add prompts to --prompts"
        )
    return kept, notes, pset


def check_prompts(config: ScanConfig, prompts: Sequence[str] | None = None) -> list[str] | None:
    """Fail on a bad ``--prompts`` before any model is loaded: an unknown or unavailable set,
    an unreadable file, or a file with fewer than MIN_PROMPTS distinct prompts. Returns the prompts
    read when they come from a file (the CLI says which file and how many), else None."""
    from geoprobe.prompts import prompt_source_kind, read_prompts

    if prompts is not None:
        return None
    if prompt_source_kind(config.prompts) != "file":
        return None
    read = read_prompts(config.prompts)
    distinct = len(set(read))
    if distinct < MIN_PROMPTS:
        raise PromptError(
            f"{distinct} distinct prompt(s) in {config.prompts!r} but a scan needs at least "
            f"{MIN_PROMPTS} (PCA with bootstrap CIs and permutation tests); add prompts to --prompts"
        )
    return read


def random_init_key_weights(
    cap: Capture, hf_config: Any, seed: int, arch: Any = None
) -> tuple[np.ndarray | None, str | None]:
    """W_K of the architecture's own random initialisation at the captured layers, and its label;
    (None, None) with a warning when the baseline cannot be built."""
    from geoprobe.models.twins import init_key_weights

    try:
        w = init_key_weights(hf_config, seed=seed, arch=arch)
    except Exception as exc:  # noqa: BLE001 - the baseline is optional; say why it is missing
        warnings.warn(f"no random-init baseline for key orthogonality ({type(exc).__name__}: {exc})", stacklevel=2)
        return None, None
    from geoprobe.models.init_weights import MAX_BYTES, parameter_bytes

    alone = " (key projections initialised alone)" if parameter_bytes(hf_config) > MAX_BYTES else ""
    return w[list(cap.layers)], f"{cap.provenance.model_id} architecture, random init (seed {seed}){alone}"


def check_baseline(config: ScanConfig) -> None:
    """A ``--baseline`` written as a path must be a model directory or a .gguf file here: refused before any
    model loads (it is loaded after the capture)."""
    b = config.baseline
    if b is None or not (b.startswith((".", "/", "~")) or b.count("/") > 1 or b.lower().endswith(".gguf")):
        return
    p = Path(os.path.expanduser(b))
    if not (p.is_dir() or (p.is_file() and b.lower().endswith(".gguf"))):
        raise GeoprobeError(
            f"--baseline {b!r} is no model directory or .gguf file here; pass the run's step-0 checkpoint "
            "directory (e.g. runs/traj/checkpoints/step0), an alias or a Hub id"
        )


def analyse(
    cap: Capture,
    config: ScanConfig = ScanConfig(),
    *,
    init_w_k: np.ndarray | None = None,
    init_label: str | None = None,
    null: InitNull | None = None,
    notes: Sequence[str] = (),
    timings: dict[str, float] | None = None,
    progress: Progress | None = None,
    prompt_set: dict[str, Any] | None = None,
) -> ScanResult:
    """Run the configured analysers on a capture (no model needed): each registered metric of
    ``config.analyses`` (geoprobe.scan.metrics), in the registry's order, then the scorecard against
    ``null`` (the random-init null the scan captured: ``ScanResult.init_null``; None: no criterion passes)."""
    from geoprobe.analysis.initnull import pc_shares, pc_shares_resampled, resample_indices
    from geoprobe.scan.metrics import METRICS, Context

    if cap.n_prompts < MIN_PROMPTS:
        raise PromptError(
            f"{cap.n_prompts} prompt(s) but a scan needs at least {MIN_PROMPTS}; add prompts to --prompts"
        )
    model, layers, seed = cap.provenance.model_id, tuple(cap.layers), config.seed
    t0 = time.perf_counter()
    todo = list(config.analyses)
    ctx = Context(model=model, layers=layers, seed=seed, init_w_k=init_w_k, init_label=init_label)
    parts = ctx.parts

    stage_t: dict[str, float] = {}
    last = [None, time.perf_counter()]

    def step(name: str | None) -> None:
        now = time.perf_counter()
        if last[0] is not None:
            stage_t[f"{last[0]}_s"] = now - last[1]
        last[0], last[1] = name, now
        if progress is not None and name is not None:
            progress(name, todo.index(name), len(todo))

    for name in (n for n in METRICS if n in todo):
        step(name)
        parts[name] = METRICS[name].compute(cap, config, ctx)
    step(None)
    idx = resample_indices(cap.n_prompts, config.n_resamples, seed)
    shares_boot = shares = None
    if null is not None and "manifold" in parts:
        last = cap.per_layer("values")[-1].reshape(cap.n_prompts, -1)
        shares, shares_boot = pc_shares(last), pc_shares_resampled(last, idx[: null.pc1_boot.shape[1]])
    card = build_scorecard(
        model,
        parts.get("manifold"),
        parts.get("orthogonality"),
        parts.get("focusing"),
        null=null,
        shares_boot=shares_boot,
        shares=shares,
        idx=idx,
        n_resamples=config.n_resamples,
        confidence=config.confidence,
        random_state=seed,
    )
    timings = dict(timings or {}, **stage_t, analyse_s=time.perf_counter() - t0)
    return ScanResult(
        model=model,
        provenance=cap.provenance.to_dict(),
        config=config,
        n_prompts=cap.n_prompts,
        layers=layers,
        n_layers=cap.layout.n_layers,
        scorecard=card,
        timings=timings,
        notes=tuple(notes),
        prompt_set=prompt_set,
        init_null=null,
        **parts,
    )


def scan(
    model: Any = "smollm2-135m",
    prompts: Sequence[str] | None = None,
    config: ScanConfig = ScanConfig(),
    *,
    progress: Progress | None = None,
    return_capture: bool = False,
    notes: Sequence[str] = (),
    checkpoint_dir: str | os.PathLike | None = None,
    on_resume: Callable[[int, int, Path], None] | None = None,
    capture_with: Callable[..., Any] | None = None,
    **load_options: Any,
) -> Any:
    """Load (if given a name), capture and analyse. Returns a ScanResult (and the Capture if asked).

    ``prompts`` default to ``config.prompts`` (a corpus set is sampled with the model's
    next-token entropies); duplicates are dropped with a warning. ``notes`` are earlier
    warnings to keep in the result. With ``checkpoint_dir`` (``geoprobe scan`` passes
    ``<run>/capture.partial``) the drawn corpus set and every finished capture batch are kept
    there, and a rerun resumes from them (see :mod:`geoprobe.capture.checkpoint`); the caller
    removes the directory once the results are saved. ``capture_with`` captures instead of
    :func:`geoprobe.capture.capture` (the same signature and numbers): ``DataParallel(...).bind(load)``
    (:mod:`geoprobe.capture.parallel`) captures on Ray workers."""
    from geoprobe.capture.run import CaptureConfig, capture
    from geoprobe.models.loaded import timed
    from geoprobe.models.loading import LoadedModel, load_model
    from geoprobe.scan.metrics import METRICS

    model = model_arg(model, names=True)
    prompts = None if prompts is None else prompts_arg(prompts)
    config = config_arg(config, ScanConfig)
    return_capture = bool_arg(return_capture, "return_capture")
    check_prompts(config, prompts)  # a bad set name or file fails before the model loads
    check_baseline(config)
    timings: dict[str, float] = {}
    m = model if isinstance(model, LoadedModel) else timed(lambda: load_model(model, **load_options))
    if m.load_s is not None:  # the load's own time (a model passed in loaded was timed by whoever loaded it, or not)
        timings["load_s"] = m.load_s
    t = time.perf_counter()
    texts, new_notes, pset = resolve_prompts(config, prompts, m, progress, checkpoint_dir)
    timings["prompts_s"] = time.perf_counter() - t
    notes = [*notes, *new_notes]
    if "orthogonality" in config.analyses and m.arch.key_weights_reason:  # MLA: no W_K; the rest still runs
        note = f"key orthogonality not measured: {m.arch.NO_KEY_WEIGHTS}"
        warnings.warn(note, stacklevel=2)
        notes.append(note)
        config = dataclasses.replace(config, analyses=tuple(a for a in config.analyses if a != "orthogonality"))
    cc = CaptureConfig(
        layers=config.layers,
        batch_size=config.batch_size,
        max_tokens=config.max_tokens,
        key_weights=any(METRICS[a].key_weights for a in config.analyses),
        attention=config.attention,
    )
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cap = (capture_with or capture)(
            m,
            texts,
            cc,
            seed=config.seed,
            checkpoint_dir=checkpoint_dir,
            on_resume=on_resume,
            progress=None if progress is None else (lambda d, n: progress("capture", d, n)),
            tokenize_progress=None if progress is None else (lambda d, n: progress("tokenize", d, n)),
            work_factor=ANALYSIS_FACTOR,
        )
    for w in caught:
        notes.append(str(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    timings["capture_s"] = time.perf_counter() - t
    init_w_k = init_label = null = None
    if config.init_baseline:
        from geoprobe.analysis.initnull import resample_indices
        from geoprobe.scan.nulls import init_null

        t = time.perf_counter()
        if progress is not None:
            progress("random-init null", 0, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            null, init_w_k = init_null(
                m, texts, config, cap, resample_indices(cap.n_prompts, config.n_resamples, config.seed)
            )
        for w in caught:
            notes.append(str(w.message))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if null is not None and capture_with is not None:
            note = f"the random-init null ({null.label}) was captured in this process, not on the workers"
            notes.append(note)
        if null is None:
            note = "no random-init null: no criterion can pass (--init-draws 0, or see the note above)"
            warnings.warn(note, stacklevel=2)
            notes.append(note)
        init_label = None if null is None else null.label
        if init_w_k is None and "orthogonality" in config.analyses:
            init_w_k, init_label = random_init_key_weights(cap, m.hf_model.config, config.seed, m.arch)
        timings["init_baseline_s"] = time.perf_counter() - t
    else:
        notes.append("no random-init null (--no-init-baseline): no criterion can pass")
    result = analyse(
        cap,
        config,
        init_w_k=init_w_k,
        init_label=init_label,
        null=null,
        notes=notes,
        timings=timings,
        progress=progress,
        prompt_set=pset.record(),
    )
    return (result, cap) if return_capture else result
