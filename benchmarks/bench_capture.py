"""Capture overhead benchmark: bare Hugging Face forward vs geoprobe.capture vs TransformerLens.

Run from the repository root::

    python benchmarks/bench_capture.py            # full run, rewrites a section of docs/benchmarks.md
    python benchmarks/bench_capture.py --quick    # smoke run (16 prompts, 1 repeat)

Every (model, variant) pair runs in its own subprocess, so its memory is measured alone. A
worker loads the model, makes its weights resident, records the RSS ("loaded"), resets the
kernel's peak-RSS counter (``/proc/self/clear_refs``) after one warm-up batch, then
``--repeats`` timed passes over all prompts; ``--rounds`` such workers per variant run
interleaved with the other variants. On CUDA the memory columns are torch-allocated
GPU bytes (``max_memory_allocated``) and timings are synchronised.

Variants (same token ids, same batches, ``torch.inference_mode()``, ``use_cache=False``):

* ``bare``              plain HF model (default attention: sdpa), no hooks, ``logits_to_keep=1``
* ``bare-eager``        the same with ``attn_implementation="eager"`` (what the bridge runs)
* ``bare-full-logits``  ``bare`` without ``logits_to_keep`` (full-vocabulary logits)
* ``geoprobe``          ``geoprobe.capture(model, prompts, CaptureConfig(batch_size=B))``
* ``tl``                ``bridge.run_with_cache(ids, attention_mask=mask)``, no names_filter; then the
                        final-token slices of the sites geoprobe keeps, and the cache is dropped

The bare models are separate plain HF models with the same weights (SmolLM2: the safetensors
that geoprobe.models.gguf caches; the Pythia-410M twin: the same config and seed), because
TransformerBridge wraps the HF modules in place. Prompts are Python standard-library
docstrings cut into chunks of exactly ``--tokens`` tokens and decoded; only chunks that
re-tokenise to the same ids are kept, so no prompt needs padding. The GGUF section times
``load_model("smollm2-135m")`` with an empty ``$GEOPROBE_CACHE`` against the cached load.
The machine may be shared: each timing records how much CPU other processes used meanwhile.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib
import inspect
import json
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"smollm2": "smollm2-135m", "pythia-410m": "pythia-410m", "qwen2.5-0.5b": "qwen2.5-0.5b"}
#: models measured as full-size random-init twins (same config and seed in every variant)
TWINS = frozenset({"pythia-410m", "qwen2.5-0.5b"})
#: RSS of two identical runs differs by this much (allocator arenas, page granularity): the slack of the memory check
RSS_NOISE_MIB = 16
VARIANTS = ("bare", "bare-eager", "bare-full-logits", "geoprobe", "tl")
STDLIB = (
    "argparse",
    "asyncio",
    "collections",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email.message",
    "enum",
    "fractions",
    "functools",
    "heapq",
    "http.client",
    "inspect",
    "itertools",
    "json",
    "logging",
    "os",
    "pathlib",
    "pickle",
    "random",
    "re",
    "shutil",
    "socket",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "textwrap",
    "threading",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "zipfile",
)


# ------------------------------------------------------------------ prompts
def corpus(max_chars: int) -> str:
    """Docstrings of stdlib modules and their own public members, in a fixed order."""
    parts: list[str] = []
    for name in STDLIB:
        mod = importlib.import_module(name)
        for obj in [mod] + [getattr(mod, a) for a in sorted(vars(mod)) if not a.startswith("_")]:
            doc = inspect.getdoc(obj) if obj is mod or getattr(obj, "__module__", None) == name else None
            if doc and doc not in parts:
                parts.append(doc)
        if sum(map(len, parts)) > max_chars:
            break
    return "\n\n".join(parts)


def make_prompts(tok, n: int, n_tokens: int) -> tuple[list[str], list[list[int]]]:
    """``n`` strings that tokenise (special tokens included) to exactly ``n_tokens`` ids each."""
    extra = len(tok("a")["input_ids"]) - len(tok("a", add_special_tokens=False)["input_ids"])
    size = n_tokens - extra
    ids = tok(corpus(n * n_tokens * 12), add_special_tokens=False)["input_ids"]
    texts, out = [], []
    for i in range(0, len(ids) - size, size):
        text = tok.decode(ids[i : i + size])
        again = tok(text)["input_ids"]
        if text.strip() and len(again) == n_tokens and again[extra:] == ids[i : i + size]:
            texts.append(text)
            out.append(again)
        if len(texts) == n:
            return texts, out
    raise SystemExit(f"the corpus gave only {len(texts)} prompts of exactly {n_tokens} tokens; need {n}")


# ------------------------------------------------------------------ memory and CPU
def mem_now(cuda: bool) -> float:
    """MiB: torch-allocated GPU memory on CUDA, else this process's resident set."""
    import psutil
    import torch

    return (torch.cuda.memory_allocated() if cuda else psutil.Process().memory_info().rss) / 2**20


def mem_peak(cuda: bool) -> float:
    """MiB: peak since :func:`mem_reset` (Linux VmHWM; elsewhere ru_maxrss, which never resets)."""
    import torch

    if cuda:
        return torch.cuda.max_memory_allocated() / 2**20
    m = re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()) if sys.platform == "linux" else None
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (int(m.group(1)) if m else ru // (1024 if sys.platform == "darwin" else 1)) / 1024


def mem_reset(cuda: bool) -> str:
    """Restart the peak counter (after the warm-up batch); returns how peaks are measured."""
    import torch

    if cuda:
        torch.cuda.reset_peak_memory_stats()
        return "torch.cuda.max_memory_allocated, reset after the warm-up batch"
    try:
        Path("/proc/self/clear_refs").write_text("5")  # sets VmHWM to the current RSS
        return "VmHWM, reset after the warm-up batch"
    except OSError:
        return "ru_maxrss, which includes loading"


def cpu_busy() -> float | None:
    """Busy CPU seconds of the whole machine (all processes), from /proc/stat."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def cpu_mark() -> tuple:
    return cpu_busy(), sum(os.times()[:2]), time.perf_counter()


def since(mark: tuple) -> tuple[float, float | None]:
    """(wall seconds since ``mark``, CPUs' worth of time that other processes used meanwhile)."""
    busy, own, t = mark
    wall = time.perf_counter() - t
    if busy is None:
        return wall, None
    return wall, max(0.0, (cpu_busy() - busy) - (sum(os.times()[:2]) - own)) / wall


# ------------------------------------------------------------------ worker side
def build(variant: str, model: str, dtype: str, device: str):
    """(tokenizer, run(ids, mask) -> top-1 ids, modules to make resident, LoadedModel to capture or None)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from geoprobe import load_model, twin
    from geoprobe.models.loaded import torch_dtype

    if variant.startswith("bare"):
        kw = dict(dtype=torch_dtype(dtype), attn_implementation="eager" if variant == "bare-eager" else None)
        if model in TWINS:
            from geoprobe.models.twins import embedded_tokenizer, twin_config

            tok = embedded_tokenizer()
            torch.manual_seed(0)  # twin()'s default seed: the same random weights
            hf = AutoModelForCausalLM.from_config(twin_config(model, "full", vocab_size=len(tok)), **kw)
        else:
            from geoprobe.models.gguf import embedded_gguf_path, gguf_cache_path, load_gguf
            from geoprobe.models.registry import ALIASES
            from geoprobe.provenance import file_sha256

            gguf = embedded_gguf_path(ALIASES[model].package, ALIASES[model].gguf_file)
            path = gguf_cache_path(file_sha256(gguf))
            if not (path / "DONE").exists():
                load_gguf(gguf)  # dequantise once, as geoprobe does
            tok = AutoTokenizer.from_pretrained(path)
            hf = AutoModelForCausalLM.from_pretrained(path, use_safetensors=True, **kw)
        hf = hf.to(device).eval()
        keep = {} if variant == "bare-full-logits" else {"logits_to_keep": 1}

        def run(ids, mask):
            return hf(input_ids=ids, attention_mask=mask, use_cache=False, **keep).logits[:, -1].argmax(-1)

        return tok, run, [hf], None
    lm = (
        twin(model, "full", dtype=dtype, device=device)
        if model in TWINS
        else load_model(model, dtype=dtype, device=device)
    )
    if variant == "geoprobe":  # the plain HF model: no bridge is booted
        return lm.tokenizer, None, [lm.hf_model], lm
    n_layers = lm.layout.n_layers
    sites = [f"blocks.{layer}.attn.hook_{k}" for layer in range(n_layers) for k in ("v", "k", "pattern")]

    def run(ids, mask):  # what a TransformerLens user writes
        logits, cache = lm.bridge.run_with_cache(ids, attention_mask=mask)
        last, rows = mask.sum(1) - 1, torch.arange(ids.shape[0], device=ids.device)
        kept = {
            s: (cache[s][rows, :, last] if s.endswith("pattern") else cache[s][rows, last]).cpu().clone() for s in sites
        }  # q/k/v hooks are (batch, pos, head, d_head); patterns (batch, head, q, k)
        kept["final_norm"] = cache["ln_final.hook_out"][rows, last].cpu().clone()
        top1 = logits[rows, last].argmax(-1)
        del cache, logits, kept
        return top1

    return lm.tokenizer, run, [lm.hf_model, lm.bridge], None


def worker(job: dict) -> dict:
    import torch

    torch.set_num_threads(job["threads"])
    if job["variant"] == "load":
        return load_worker(job)
    if job["variant"] == "pair":
        return pair_worker(job)
    device, B = job["device"], job["batch_size"]
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    t0 = time.perf_counter()
    tok, run, modules, lm = build(job["variant"], job["model"], job["dtype"], device)
    with torch.inference_mode():  # make mmapped weights resident, so that "loaded" means loaded
        for p in (p for m in modules for p in m.parameters()):
            p.sum()
    sync()
    load_s = time.perf_counter() - t0
    texts, ids = make_prompts(tok, job["n_prompts"], job["tokens"])
    batches = [torch.tensor(ids[i : i + B]).to(device) for i in range(0, len(ids), B)]
    loaded = mem_now(cuda)
    arrays_mib = [0.0]
    if lm is not None:
        from geoprobe import CaptureConfig, capture

        def one_pass(n_batches: int):
            cap = capture(lm, texts[: n_batches * B], CaptureConfig(batch_size=B))
            arrays_mib[0] = sum(a.nbytes for a in vars(cap).values() if hasattr(a, "nbytes")) / 2**20
            return torch.as_tensor(cap.next_top_ids[:, 0])
    else:

        def one_pass(n_batches: int):
            with torch.inference_mode():
                return torch.cat([run(b, torch.ones_like(b)).cpu() for b in batches[:n_batches]])

    one_pass(1)  # warm-up batch: first-call costs (lazy imports, allocator pools) are paid here, not measured
    sync()
    warm, peak_method = mem_now(cuda), mem_reset(cuda)
    times, others = [], []
    for _ in range(job["repeats"]):
        sync()
        mark = cpu_mark()
        top1 = one_pass(len(batches))
        sync()
        wall, other = since(mark)
        times.append(wall)
        others.append(other)
    return dict(
        job,
        times=times,
        others=others,
        load_s=load_s,
        loaded=loaded,
        warm=warm,
        peak=mem_peak(cuda),
        peak_method=peak_method,
        top1=top1.tolist(),
        arrays_mib=arrays_mib[0],
        prompts=hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:12],
    )


def pair_worker(job: dict) -> dict:
    """Timing only: the bare model and geoprobe's capture in one process, passes alternated
    (bare, capture, bare, capture, ...), so that the machine's drift between processes (the
    separate workers above differ by up to ~25 % on a VM) hits both alike; one ratio per pair."""
    import torch

    from geoprobe import CaptureConfig, capture

    B = job["batch_size"]
    tok, run, bare_modules, _ = build("bare", job["model"], job["dtype"], job["device"])
    _, _, _, lm = build("geoprobe", job["model"], job["dtype"], job["device"])
    texts, ids = make_prompts(tok, job["n_prompts"], job["tokens"])
    batches = [torch.tensor(ids[i : i + B]).to(job["device"]) for i in range(0, len(ids), B)]

    def bare_pass() -> None:
        with torch.inference_mode():
            for b in batches:
                run(b, torch.ones_like(b))

    def capture_pass() -> None:
        capture(lm, texts, CaptureConfig(batch_size=B))

    passes = [(bare_pass, []), (capture_pass, [])]
    if job.get("nnsight"):
        passes.append((nnsight_pass(job, batches), []))
    for fn, _ in passes:  # warm-up
        fn()
    for _ in range(job["pairs"]):
        for fn, out in passes:
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    bare_t, cap_t = passes[0][1], passes[1][1]
    extra = {}
    if job.get("nnsight"):
        nn_t = passes[2][1]
        extra = dict(nnsight=nn_t, nnsight_ratios=[n / b for b, n in zip(bare_t, nn_t)])
    return dict(job, bare=bare_t, geoprobe=cap_t, ratios=[c / b for b, c in zip(bare_t, cap_t)], **extra)


def nnsight_pass(job: dict, batches: list):
    """nnsight doing capture's job, as issue 18 measured it: trace the model, save every layer's
    key and value projection outputs at the final position and the final row of every layer's
    attention (``output_attentions=True``, so the model runs eager attention)."""
    import warnings

    import nnsight
    import torch
    from nnsight import LanguageModel

    tok, _, (hf,), _ = build("bare-eager", job["model"], job["dtype"], job["device"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LanguageModel's deprecation notice
        nm = LanguageModel(hf, tokenizer=tok)
    names = [n for n, _ in hf.named_modules() if n.rsplit(".", 1)[-1] in ("k_proj", "v_proj", "query_key_value")]

    def envoy(path: str):
        e = nm
        for part in path.split("."):
            e = e[int(part)] if part.isdigit() else getattr(e, part)
        return e

    def run() -> None:
        with torch.inference_mode():
            for b in batches:
                with nm.trace(
                    {"input_ids": b, "attention_mask": torch.ones_like(b)},
                    output_attentions=True,
                    use_cache=False,
                    logits_to_keep=1,
                ):
                    kv = nnsight.save([])
                    for name in names:  # in execution order (nnsight refuses out-of-order access)
                        kv.append(envoy(name).output[:, -1].save())
                    out = nm.output
                    rows = nnsight.save([a[:, :, -1] for a in out.attentions])
                    top1 = nnsight.save(out.logits[:, -1].argmax(-1))
                del kv, rows, top1

    return run


def load_worker(job: dict) -> dict:
    """Time load_model() twice in this process and, inside it, the GGUF stage (load_gguf)."""
    mark = cpu_mark()
    import geoprobe.models.gguf as gguf_mod
    from geoprobe import load_model

    if job.get("preimport"):
        # The libraries a load needs, imported before the clock starts, so that the timed
        # load is the weights (dequantise or read the cache) plus the bridge boot, not Python
        # importing transformers' lazy modules.
        import transformer_lens.model_bridge  # noqa: F401
        import transformers.integrations.ggml  # noqa: F401
        import transformers.modeling_utils  # noqa: F401
        import transformers.models.llama.modeling_llama  # noqa: F401
    import_s, _ = since(mark)
    stage: list[tuple[float, bool]] = []
    original = gguf_mod.load_gguf

    def timed(*a, **k):
        t = time.perf_counter()
        out = original(*a, **k)
        stage.append((time.perf_counter() - t, out[3]))
        return out

    gguf_mod.load_gguf = timed  # loading.py imports it at call time
    runs = []
    for _ in range(2):  # the second load finds Python's imports and lazy modules warm
        mark = cpu_mark()
        load_model(job["model"], dtype=job["dtype"], device=job["device"])
        runs.append(since(mark))
    (total, other), (warm, warm_other) = runs
    return dict(
        job,
        import_s=import_s,
        total_s=total,
        other=other,
        gguf_s=stage[0][0],
        from_cache=stage[0][1],
        warm_s=warm,
        warm_other=warm_other,
        warm_gguf_s=stage[1][0],
    )


# ------------------------------------------------------------------ parent side
def wait_idle(limit: float, cores: float = 0.2) -> None:
    """Sleep (up to ``limit`` s) until other processes use less than ``cores`` CPUs over 2 s."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        busy = cpu_busy()
        time.sleep(2.0)
        if busy is None or (cpu_busy() - busy) / 2.0 < cores:
            return


#: glibc settings under which RSS follows live allocations: every block of 64 KiB or more is its own
#: mapping, returned to the kernel when freed, so VmHWM is the peak of live memory rather than of
#: arenas that keep freed memory (which moved the same pass's peak by up to ~300 MiB)
EXACT_RSS_ENV = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0", MALLOC_ARENA_MAX="1")


def spawn(job: dict, env: dict | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return dict(job, error=f"exit {proc.returncode}: " + " | ".join(tail))
    return json.loads(lines[-1][7:])


def machine(args) -> str:
    from importlib.metadata import version

    import psutil
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    if Path("/proc/cpuinfo").exists():
        cpu = (re.findall(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text()) or [cpu])[0]
    gpu = f", {torch.cuda.get_device_name(0)}" if args.device.startswith("cuda") else ""
    return (
        f"{cpu}, {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.1f} GiB RAM{gpu}; "
        f"Python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"transformer-lens {version('transformer-lens')}; torch threads {args.threads}; "
        f"device {args.device}, {args.dtype}"
    )


def merge(rows: dict, variant: str, r: dict) -> None:
    """Pool the passes of several rounds; memory from the round with the highest peak."""
    old = rows.setdefault(variant, r)
    if old is r or "error" in old:
        return
    if "error" in r:
        rows[variant] = r
        return
    times, others = old["times"] + r["times"], old["others"] + r["others"]
    if r["peak"] > old["peak"]:
        rows[variant] = old = dict(r)
    old.update(
        times=times,
        others=others,
        prompts=",".join(sorted({old["prompts"], r["prompts"]})),
        rounds=old.get("rounds", 1) + 1,
    )


def check(model: str, name: str, value: float, text: str, ok: bool | None, threshold: str) -> tuple:
    return model, name, text or f"{value:.2f}", threshold, "info" if ok is None else ("**PASS**" if ok else "**FAIL**")


def report(args, command: str, results: dict, loads: list[dict], load_avg: tuple, pairs: dict | None = None) -> str:
    unit = "GPU MiB" if args.device.startswith("cuda") else "RSS MiB"
    method = next((r["peak_method"] for rows in results.values() for r in rows.values() if "peak_method" in r), "")
    out = [
        f"Command: `{command}`",
        "",
        f"Run {dt.datetime.now().isoformat(timespec='seconds')} on {machine(args)}; load average "
        f"{load_avg[0]:.2f} before, {load_avg[1]:.2f} after."
        + (
            " **Workers ran with `MALLOC_MMAP_THRESHOLD_=65536 MALLOC_TRIM_THRESHOLD_=0 MALLOC_ARENA_MAX=1`** "
            "(`--exact-rss`): RSS follows live allocations, so the memory columns are exact; the times include "
            "mmap costs and are not the speed figures."
            if args.exact_rss
            else ""
        ),
        "",
        f"Workload: {args.n_prompts} prompts × {args.tokens} tokens (stdlib docstrings, no padding), batch size "
        f"{args.batch_size}. Each variant ran in {args.rounds} worker process(es), interleaved with the other "
        f"variants; each worker ran one warm-up batch, then {args.repeats} timed pass(es) over all prompts. *time* "
        f"is the best pass (median of all passes in brackets). *loaded*: {unit} after loading, weights "
        f"resident; *peak*: highest during the timed passes ({method}); *increment*: peak − RSS after the warm-up "
        "batch (first-call costs such as lazy imports are paid in the warm-up and not counted). *other CPU*: CPUs' "
        "worth of time other processes used during the best pass (the machine may be shared; above ~0.2 the "
        "timing is contended). *top-1*: prompts whose next-token argmax equals `bare`'s.",
        "",
    ]
    if not any(results.values()):  # --variants none: the workload only
        out[-2] = (
            f"Workload: {args.n_prompts} prompts × {args.tokens} tokens (stdlib docstrings, no padding), "
            f"batch size {args.batch_size}."
        )
    checks = []
    for key, rows in results.items():
        if not rows:  # --variants none: timing pairs only
            continue
        out += [
            f"#### {key}"
            + (
                f" (full-size twin: the {MODELS[key]} architecture, random init)"
                if MODELS[key] in TWINS
                else f" ({MODELS[key]})"
            ),
            "",
            f"| variant | time / pass s | tokens/s | other CPU | load s | loaded {unit} | peak {unit} "
            "| increment MiB | top-1 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        ref = rows.get("bare", {}).get("top1")
        for v, r in rows.items():
            if "error" in r:
                out.append(f"| {v} | error: {r['error'][:200]} |" + " |" * 7)
                continue
            best = r["best"] = min(r["times"])
            other = r["others"][r["times"].index(best)]
            r["inc"] = r["peak"] - r.get("warm", r["loaded"])
            out.append(
                f"| {v} | {best:.2f} ({statistics.median(r['times']):.2f}) "
                f"| {args.n_prompts * args.tokens / best:.0f} | {'—' if other is None else f'{other:.2f}'} "
                f"| {r['load_s']:.1f} | {r['loaded']:.0f} | {r['peak']:.0f} | {r['inc']:.0f} | "
                + (f"{sum(a == b for a, b in zip(r['top1'], ref))}/{len(ref)} |" if ref else "— |")
            )
        digests = sorted({d for r in rows.values() if "prompts" in r for d in r["prompts"].split(",")})
        out += [
            "",
            f"Prompt token ids, sha256 prefix: {', '.join(digests)}"
            + (" — **the variants saw different prompts**" if len(digests) > 1 else ""),
            "",
        ]
        g, b, e, t = (rows.get(v, {}) for v in ("geoprobe", "bare", "bare-eager", "tl"))
        if "best" in g and "best" in b:
            tr = g["best"] / b["best"]
            med = statistics.median(g["times"]) / statistics.median(b["times"])
            inc_over = g["inc"] - b["inc"]
            checks += [
                check(
                    key,
                    "geoprobe time / bare time (best passes)",
                    tr,
                    "",
                    None if args.exact_rss else tr <= 1.10,
                    "— (--exact-rss)" if args.exact_rss else "≤ 1.10",
                ),
                check(key, "(context) geoprobe time / bare time (medians)", med, "", None, "—"),
                check(
                    key,
                    "geoprobe loaded − bare loaded (imports; no copied weights)",
                    0,
                    f"{g['loaded'] - b['loaded']:+.0f} MiB",
                    None,
                    "—",
                ),
                check(
                    key,
                    "geoprobe increment − bare increment ≤ result arrays",
                    inc_over,
                    f"{inc_over:+.0f} MiB vs arrays {g.get('arrays_mib', 0):.1f} MiB",
                    inc_over <= g.get("arrays_mib", 0) + RSS_NOISE_MIB,
                    f"≤ arrays + {RSS_NOISE_MIB} MiB RSS noise",
                ),
            ]
            if "best" in e:
                checks.append(
                    check(key, "(context) geoprobe time / bare-eager time", g["best"] / e["best"], "", None, "—")
                )
        if "best" in g and "best" in t:
            sp, mp, mi = t["best"] / g["best"], t["peak"] / g["peak"], t["inc"] / max(g["inc"], 1.0)
            won = [
                w
                for w, ok in (
                    ("faster", sp >= 3),
                    ("less memory: increment", mi >= 10),
                    ("less memory: total", mp >= 10),
                )
                if ok
            ]
            checks += [
                check(key, "TL time / geoprobe time", sp, "", sp >= 3, "≥ 3"),
                check(
                    key,
                    "TL peak / geoprobe peak (total)",
                    mp,
                    f"{mp:.2f} ({t['peak']:.0f} / {g['peak']:.0f} {unit})",
                    mp >= 10,
                    "≥ 10",
                ),
                check(
                    key,
                    "TL increment / geoprobe increment",
                    mi,
                    f"{mi:.1f} ({t['inc']:.0f} / {g['inc']:.0f} MiB)",
                    mi >= 10,
                    "≥ 10",
                ),
                check(
                    key,
                    "geoprobe ≥ 3× faster OR ≥ 10× less memory than TL",
                    0,
                    "; ".join(won) or "neither",
                    bool(won),
                    "either",
                ),
            ]
    if loads:
        out += [
            "#### GGUF load of smollm2-135m (`load_model`, fresh `$GEOPROBE_CACHE`, warm OS page cache)",
            "",
            "Each row is a new process. *imports s*: importing geoprobe (and, where marked, transformers' "
            "Llama/GGUF modules and `transformer_lens.model_bridge`) before the timed `load_model`.",
            "",
            "| run | imports s | load_model s | of which load_gguf s | other CPU |",
            "|---|---|---|---|---|",
        ]
        for r in loads:
            label = "cached, new process" if r.get("from_cache") else "first: hash, dequantise, write cache"
            if r.get("preimport"):
                label += ", libraries imported first"
            out.append(
                f"| error | {r['error'][:200]} | | | |"
                if "error" in r
                else f"| {label} | {r['import_s']:.2f} | {r['total_s']:.2f} | {r['gguf_s']:.2f} | {r['other']:.2f} |"
            )
            if "warm_s" in r:
                out.append(
                    f"| cached, again in that process (imports warm) | | {r['warm_s']:.2f} "
                    f"| {r['warm_gguf_s']:.2f} | {r['warm_other']:.2f} |"
                )
        ok = [r for r in loads if "error" not in r]
        first = [r["total_s"] + r["import_s"] for r in ok if r.get("from_cache") is False]
        cached = [r["total_s"] + r["import_s"] for r in ok if r.get("from_cache") and not r.get("preimport")]
        first_pre = [r["total_s"] for r in ok if r.get("from_cache") is False and r.get("preimport")]
        cached_pre = [r["total_s"] for r in ok if r.get("from_cache") and r.get("preimport")]
        warm = [r["warm_s"] for r in ok if "warm_s" in r]
        if first and cached:
            ratio = first[0] / min(cached)
            checks.append(
                check(
                    "smollm2",
                    "GGUF first / cached, new processes, imports + load_model",
                    ratio,
                    f"{ratio:.1f}",
                    ratio >= 10,
                    "≥ 10",
                )
            )
        if first_pre and cached_pre:
            ratio = first_pre[0] / min(cached_pre)
            checks.append(
                check(
                    "smollm2",
                    "GGUF first / cached load_model, new processes, libraries imported first",
                    ratio,
                    f"{ratio:.1f}",
                    ratio >= 10,
                    "≥ 10",
                )
            )
        if first and warm:
            checks.append(
                check(
                    "smollm2",
                    "(context) GGUF first / cached load with imports warm",
                    first[0] / min(warm),
                    f"{first[0] / min(warm):.1f}",
                    None,
                    "≥ 10",
                )
            )
        out.append("")
    if pairs:
        out += [
            "#### Alternated in one process (timing only)",
            "",
            f"Per model one process holds the bare model and geoprobe's; {args.pairs} pairs of passes (bare, then "
            "`capture`"
            + (", then nnsight tracing the same job on an eager copy of the model" if args.nnsight else "")
            + ") over the same prompts; ratio = capture / bare of each pair.",
            "",
            "| model | bare s (median) | capture s (median) | ratio median | ratio range |",
            "|---|---|---|---|---|",
        ]
        for key, r in pairs.items():
            if "error" in r:
                out.append(f"| {key} | error: {r['error'][:200]} | | | |")
                continue
            med = statistics.median(r["ratios"])
            out.append(
                f"| {key} | {statistics.median(r['bare']):.2f} | {statistics.median(r['geoprobe']):.2f} | "
                f"{med:.3f} | {min(r['ratios']):.3f}–{max(r['ratios']):.3f} |"
            )
            checks.append(
                check(key, "geoprobe / bare, alternated pairs (median)", med, f"{med:.3f}", med <= 1.10, "≤ 1.10")
            )
            if r.get("nnsight_ratios"):  # timed with --nnsight only (the worker echoes nnsight=False otherwise)
                nmed = statistics.median(r["nnsight_ratios"])
                out.append(
                    f"| {key}: nnsight | {statistics.median(r['bare']):.2f} | "
                    f"{statistics.median(r['nnsight']):.2f} | {nmed:.3f} | "
                    f"{min(r['nnsight_ratios']):.3f}–{max(r['nnsight_ratios']):.3f} |"
                )
                checks.append(
                    check(
                        key,
                        "nnsight / geoprobe, same rounds (median of nnsight/bare ÷ capture/bare)",
                        nmed / med,
                        f"{nmed / med:.2f}",
                        nmed > med,
                        "> 1 (geoprobe ahead)",
                    )
                )
        out.append("")
    out += ["#### Targets", "", "| model | target | measured | threshold | result |", "|---|---|---|---|---|"]
    return "\n".join(out + [f"| {' | '.join(c)} |" for c in checks]) + "\n"


def write_doc(path: Path, body: str, section: str = "bench_capture", title: str = "") -> None:
    from _doc import replace_section  # benchmarks/ is sys.path[0] when run as a script

    replace_section(path, section, "Capture benchmark (`benchmarks/bench_capture.py`)" + title, body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 16 prompts, 1 repeat, no idle wait")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma list of {', '.join(MODELS)}")
    ap.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma list of {', '.join(VARIANTS)}, or none (with --pairs: timing pairs only)",
    )
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    ap.add_argument("--n-prompts", type=int, help="prompts per pass (default 64; 16 with --quick)")
    ap.add_argument("--tokens", type=int, default=128, help="tokens per prompt")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, help="timed passes per worker (default 2; 1 with --quick)")
    ap.add_argument("--rounds", type=int, help="workers per variant, interleaved (default 2; 1 with --quick)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads in every worker")
    ap.add_argument(
        "--wait-idle",
        type=float,
        help="seconds to wait, before each worker, for other processes to go idle (default 120; 0 with --quick)",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=0,
        help="also time bare and capture alternated in one process, "
        "this many pairs per model (the ratio to trust on a machine whose speed drifts)",
    )
    ap.add_argument(
        "--nnsight",
        action="store_true",
        help="with --pairs: also time nnsight doing the same job "
        "(trace, save k/v projections, output_attentions) in each round (needs `pip install nnsight`)",
    )
    ap.add_argument(
        "--exact-rss",
        action="store_true",
        help="run the workers with glibc set so that RSS follows "
        "live allocations (memory columns exact to the page; timings then include mmap costs)",
    )
    ap.add_argument("--no-gguf", action="store_true", help="skip the GGUF first-vs-cached load timing")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "benchmarks.md"), help="markdown file to update")
    ap.add_argument("--no-write", action="store_true", help="print the report only")
    ap.add_argument(
        "--section",
        default="bench_capture",
        help="marker of the docs section to rewrite (one per workload, e.g. bench_capture_512)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    command = shlex.join(["python", "benchmarks/bench_capture.py", *sys.argv[1:]])
    args.n_prompts = args.n_prompts or (16 if args.quick else 64)
    args.repeats = args.repeats or (1 if args.quick else 2)
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.wait_idle = (0 if args.quick else 120) if args.wait_idle is None else args.wait_idle
    models, variants = args.models.split(","), ([] if args.variants == "none" else args.variants.split(","))
    if bad := [m for m in models if m not in MODELS] + [v for v in variants if v not in VARIANTS]:
        ap.error(f"unknown model/variant {bad}; models: {list(MODELS)}, variants: {list(VARIANTS)}")
    common = dict(
        dtype=args.dtype,
        device=args.device,
        threads=args.threads,
        n_prompts=args.n_prompts,
        tokens=args.tokens,
        batch_size=args.batch_size,
        repeats=args.repeats,
    )
    load_before = os.getloadavg()[0]
    results: dict[str, dict] = {key: {} for key in models}
    for rnd in range(args.rounds):  # interleaved, so that slow drift of the machine hits every variant alike
        for key in models:
            for v in variants:
                wait_idle(args.wait_idle)
                t = time.perf_counter()
                r = spawn(dict(common, model=MODELS[key], variant=v), EXACT_RSS_ENV if args.exact_rss else None)
                print(
                    f"[round {rnd} {key} {v}] {time.perf_counter() - t:.0f}s: "
                    + (
                        r["error"]
                        if "error" in r
                        else f"passes {', '.join(f'{x:.2f}' for x in r['times'])} s, peak {r['peak']:.0f} "
                        f"MiB, other CPU " + ", ".join(f"{o:.2f}" for o in r["others"] if o is not None)
                    ),
                    flush=True,
                )
                merge(results[key], v, r)
    pairs: dict[str, dict] = {}
    for key in models if args.pairs else []:
        wait_idle(args.wait_idle)
        pairs[key] = spawn(dict(common, model=MODELS[key], variant="pair", pairs=args.pairs, nnsight=args.nnsight))
        r = pairs[key]
        print(
            f"[pairs {key}] " + (r["error"] if "error" in r else ", ".join(f"{x:.3f}" for x in r["ratios"])), flush=True
        )
    loads: list[dict] = []
    if not args.no_gguf:
        with tempfile.TemporaryDirectory(prefix="geoprobe-bench-cache-") as cache:
            # The first run fills the empty cache; the others read it. Every run imports the
            # libraries a load needs before the clock starts, except one cached run that also
            # pays them inside its process (what a user's new shell pays).
            plan = [True, False, True] + ([] if args.quick else [True])
            for i, pre in enumerate(plan):
                wait_idle(args.wait_idle)
                loads.append(
                    spawn(
                        dict(common, model="smollm2-135m", variant="load", preimport=pre),
                        dict(os.environ, GEOPROBE_CACHE=cache),
                    )
                )
                print(f"[gguf load {i}] " + loads[-1].get("error", f"{loads[-1].get('total_s', 0):.1f}s"), flush=True)
    body = report(args, command, results, loads, (load_before, os.getloadavg()[0]), pairs)
    print("\n" + body)
    if not args.no_write:
        write_doc(Path(args.doc), body, args.section, f", {args.tokens} tokens per prompt")
        print(f"wrote {args.doc}")


if __name__ == "__main__":
    main()
