"""geoprobe on a GPU in one call: right, fast, end to end (issue 38; docs/benchmarks.md "GPU").

On the lent machine (``benchmarks/gpu/run.sh`` installs what the image lacks, then runs this)::

    python3 benchmarks/gpu/bench_gpu.py --out $OUT          # about 5 minutes on an H100/H200

Here, the same code on the CPU with tiny twins and one trial (the test suite runs it)::

    python benchmarks/gpu/bench_gpu.py --dry-run --out /tmp/gpu-dry

and, with the files that came back, the docs section::

    python benchmarks/gpu/bench_gpu.py --record benchmarks/gpu/results/2026-11-28-h200-run2.json \
        benchmarks/gpu/results/2026-11-28-h200-run3.json

Sections, each written to ``OUT/gpu.json`` as soon as it ends (one that fails records its error and the
next goes on):

* **correct**: capture equals the model's own eager forward on each prompt alone (``output_attentions``
  and the raw q/k/v projections; tests/capture/_reference.py), prompts of four lengths in one padded
  batch, on full-size random-init twins of pythia-410m, phi-2, llama-3.2-1b and mistral-7b drawn on
  the device, in float32 (tolerance 1e-4) and in bfloat16 (against the float32 reference, and against
  the bfloat16 model's own eager forward);
* **fast**: the nnbench protocol (warm-up, timed trials with CUDA events, median ± std) for a bare SDPA
  forward (``logits_to_keep=1``), geoprobe's capture, nnsight 0.8 and TransformerLens's
  TransformerBridge doing the same job (final-token queries, keys, values and attention entropy of
  every layer, brought to the host), at 64 / 512 / 2,048 tokens and batch 1 / 16 in bfloat16 on the
  mistral-7b twin, rounds interleaved; beside it the floor from FLOPs and bytes at the measured matmul
  rate and copy bandwidth, capture's peak device memory against geoprobe's estimate, and host syncs
  counted with ``torch.cuda.set_sync_debug_mode``;
* **end to end**: ``geoprobe scan`` and a 4-cell ``geoprobe sweep --executor ray`` (one GPU a cell).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

ALIASES = ("pythia-410m", "phi-2", "llama-3.2-1b", "mistral-7b")
SPEED_MODEL = "mistral-7b"
TOKENS, BATCHES = (64, 512, 2048), (1, 16)
#: prompt lengths of the correctness batch (one padded batch of four)
LENGTHS = (9, 23, 48, 97)
TOL_F32 = 1e-4  # bits (entropy); relative max |Δ| (values, keys): as the CPU tests
#: bfloat16 against the float32 reference: the dtype's own error through a deep random network (stated
#: before the first device run): entropy max |Δ| in bits, values/keys relative L2 error (median, max)
TOL_BF16 = {"entropy_bits": 0.02, "rel_median": 0.03, "rel_max": 0.25}
SWEEP = """[sweep]
experiment = "scan"
[grid]
model = [{models}]
seed = [0, 1]
[load]
device = "{device}"
dtype = "{dtype}"
[prompts]
set = "builtin"
[capture]
batch_size = 16
[analyses]
n_resamples = 50
pca_resamples = 10
null_draws = 10
n_permutations = 50
init_baseline = false
"""


def log(*a: object) -> None:
    print(*a, flush=True)


class Bench:
    def __init__(self, out: Path, dry: bool) -> None:
        import torch

        self.out, self.dry = out, dry
        self.device = "cpu" if dry else "cuda"
        self.cuda = self.device == "cuda"
        self.scale = "tiny" if dry else "full"
        self.trials, self.warm = (1, 1) if dry else (5, 2)
        self.tokens, self.batches = ((16, 64), (1, 4)) if dry else (TOKENS, BATCHES)
        self.results: dict = {"dry_run": dry, "device": self.device, "scale": self.scale}
        out.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(0)

    def save(self) -> None:
        (self.out / "gpu.json").write_text(json.dumps(self.results, indent=1, default=str))

    def section(self, name: str, fn) -> None:
        t = time.perf_counter()
        log(f"== {name}")
        try:
            self.results[name] = fn()
        except Exception as exc:  # a failed section is a finding: record it, run the next
            self.results[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            log(self.results[name]["traceback"])
        self.results.setdefault("seconds", {})[name] = round(time.perf_counter() - t, 1)
        self.save()
        self.free()

    def free(self) -> None:
        import torch

        gc.collect()
        if self.cuda:
            torch.cuda.empty_cache()

    def sync(self) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize()


# ------------------------------------------------------------------ models and prompts
def twin_on(alias: str, scale: str, dtype: str, device: str):
    """The random-init twin drawn on ``device`` (a 7B model is drawn in seconds there, not minutes on the
    host; its weights differ from the host twin of the same seed, which neither check depends on)."""
    import torch
    from transformers import AutoModelForCausalLM

    from geoprobe.models.loaded import boot, torch_dtype
    from geoprobe.models.registry import ALIASES as SPECS
    from geoprobe.models.twins import embedded_tokenizer, twin_config
    from geoprobe.provenance import Provenance

    tok = embedded_tokenizer()
    torch.manual_seed(0)
    with torch.device(device):
        hf = AutoModelForCausalLM.from_config(twin_config(alias, scale, vocab_size=len(tok)), dtype=torch_dtype(dtype))
    prov = Provenance(f"twin:{alias}:{scale}", "twin", f"random-init seed=0 on {device}", "smollm2-135m", dtype, seed=0)
    return boot(hf, tok, prov, SPECS[alias])


def reboot(lm, dtype: str):
    """``lm``'s model cast to ``dtype`` (in place) and booted again."""
    from dataclasses import replace

    from geoprobe.models.loaded import boot, torch_dtype

    lm.hf_model.to(torch_dtype(dtype))
    return boot(lm.hf_model, lm.tokenizer, replace(lm.provenance, dtype=dtype), lm.spec)


def texts_of_lengths(tok, lengths) -> tuple[list[str], list[list[int]]]:
    """One text per length that tokenises to exactly that many ids (stdlib docstrings, bench_capture)."""
    from bench_capture import make_prompts

    texts, ids = [], []
    for n in lengths:
        t, i = make_prompts(tok, 1, n)
        texts += t
        ids += i
    return texts, ids


# ------------------------------------------------------------------ correct
def entropy_bits(p):
    import numpy as np

    p = np.asarray(p, dtype=np.float64)
    return -(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0)).sum(-1)


def compare(cap, refs, n_layers: int) -> dict:
    """Max |Δ| of attention entropy and next-token entropy (bits); values and keys: max |Δ| over max |ref|
    (``rel``), and per-vector relative L2 error (``l2_median``, ``l2_max``)."""
    import numpy as np

    ent, nxt, rel, l2 = [], [], {"values": [], "keys": []}, {"values": [], "keys": []}
    for i, ref in enumerate(refs):
        p_next = np.exp(ref.logits - ref.logits.max())
        nxt.append(abs(entropy_bits(p_next / p_next.sum()) - float(cap.next_entropy[i])))
        for layer in range(n_layers):
            h = ref.pattern[layer].shape[0]
            ent.append(np.abs(entropy_bits(ref.pattern[layer]) - cap.attn_entropy[layer, i, :h]).max())
            for name, r in (("values", ref.v[layer]), ("keys", ref.k[layer])):
                got = getattr(cap, name)[layer, i, : r.shape[0], : r.shape[1]]
                rel[name].append(np.abs(got - r).max() / max(np.abs(r).max(), 1e-30))
                l2[name] += list(np.linalg.norm(got - r, axis=-1) / np.maximum(np.linalg.norm(r, axis=-1), 1e-30))
    out = {"entropy_bits": float(max(ent)), "next_entropy_bits": float(max(nxt))}
    for name in rel:
        out[f"{name}_rel"] = float(max(rel[name]))
        out[f"{name}_l2_median"], out[f"{name}_l2_max"] = float(np.median(l2[name])), float(max(l2[name]))
    return out


def reference(lm, ids):
    """The model's own eager forward on each prompt alone (tests/capture/_reference.py)."""
    from tests.capture._reference import run_final_token

    hf = lm.hf_model
    before = hf.config._attn_implementation
    hf.set_attn_implementation("eager")
    try:
        return [run_final_token(hf, i) for i in ids]
    finally:
        hf.set_attn_implementation(before)


def capture_eager(lm, texts, config):
    """The capture with the model on its eager attention (geoprobe wraps it): the reference's own kernels, so
    what differs from the reference is geoprobe's reading alone, not SDPA's rounding against eager's."""
    from geoprobe import capture

    hf = lm.hf_model
    before = hf.config._attn_implementation
    hf.set_attn_implementation("eager")
    try:
        return capture(lm, texts, config)
    finally:
        hf.set_attn_implementation(before)


def correct(b: Bench) -> dict:
    from geoprobe import CaptureConfig, capture

    config = CaptureConfig(batch_size=len(LENGTHS), key_weights=False)
    out = {"tolerance_float32": TOL_F32, "tolerance_bfloat16": TOL_BF16, "lengths": LENGTHS}
    for alias in ALIASES:
        t = time.perf_counter()
        lm = twin_on(alias, b.scale, "float32", b.device)
        texts, ids = texts_of_lengths(lm.tokenizer, LENGTHS)
        n = lm.layout.n_layers
        ref32 = reference(lm, ids)
        f32 = compare(capture(lm, texts, config), ref32, n)
        f32_eager = compare(capture_eager(lm, texts, config), ref32, n)
        lm = reboot(lm, "bfloat16")
        cap16 = capture(lm, texts, config)
        bf16 = compare(cap16, ref32, n)
        ref16 = reference(lm, ids)
        bf16_own = compare(cap16, ref16, n)
        bf16_eager = compare(capture_eager(lm, texts, config), ref16, n)
        ok32 = all(f32[k] <= TOL_F32 for k in ("entropy_bits", "next_entropy_bits", "values_rel", "keys_rel"))
        ok16 = (
            bf16["entropy_bits"] <= TOL_BF16["entropy_bits"]
            and max(bf16["values_l2_median"], bf16["keys_l2_median"]) <= TOL_BF16["rel_median"]
            and max(bf16["values_l2_max"], bf16["keys_l2_max"]) <= TOL_BF16["rel_max"]
        )
        out[alias] = {"float32": f32, "float32_eager": f32_eager, "bfloat16": bf16, "bfloat16_vs_own_eager": bf16_own,
                      "bfloat16_eager": bf16_eager, "float32_ok": ok32,
                      "bfloat16_ok": ok16, "layers": n, "seconds": round(time.perf_counter() - t, 1)}  # fmt: skip
        log(f"{alias}: float32 {'ok' if ok32 else 'FAIL'} {f32}\n  bfloat16 {'ok' if ok16 else 'FAIL'} {bf16}")
        del lm, cap16
        b.free()
    return out


# ------------------------------------------------------------------ fast
def peaks(b: Bench) -> dict:
    """The device's measured bf16 matmul rate and copy bandwidth (the floor's ceilings)."""
    import torch

    if not b.cuda:
        return {}
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    x = torch.empty(2**29, device="cuda", dtype=torch.uint8)
    y = torch.empty_like(x)
    for _ in range(3):
        a @ a
        y.copy_(x)
    t = timed(b, lambda: [a @ a for _ in range(10)], 3)
    c = timed(b, lambda: [y.copy_(x) for _ in range(10)], 3)
    return {"bf16_tflops": 10 * 2 * 8192**3 / statistics.median(t) / 1e12,
            "copy_tb_s": 10 * 2 * x.numel() / statistics.median(c) / 1e12}  # fmt: skip


def timed(b: Bench, fn, n: int) -> list[float]:
    """Seconds of each of ``n`` calls (CUDA events on a GPU: the device's time from the first queued
    kernel to the last, the host's own work between them included)."""
    import torch

    times = []
    for _ in range(n):
        if b.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return times


def variants(b: Bench, lm, texts, ids) -> dict:
    """name -> a function doing the job once (the bare forward does only the forward)."""
    import torch

    from geoprobe import CaptureConfig, capture

    hf, n = lm.hf_model, lm.layout.n_layers
    x = torch.tensor(ids, device=b.device)
    ones = torch.ones_like(x)
    config = CaptureConfig(batch_size=len(ids), queries=True, key_weights=False)

    def host(parts) -> None:  # the job's arrays in host memory, as capture returns them
        torch.cat([p.float().reshape(-1) for p in parts]).cpu()

    def entropy(rows):
        return torch.special.entr(rows.float()).sum(-1) / math.log(2)

    def bare():
        with torch.inference_mode():
            hf(input_ids=x, attention_mask=ones, use_cache=False, logits_to_keep=1)

    out = {"bare": bare, "geoprobe": lambda: capture(lm, texts, config)}
    try:
        import nnsight

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nm = nnsight.LanguageModel(hf, tokenizer=lm.tokenizer)

        def nnsight_job():
            before = hf.config._attn_implementation
            hf.set_attn_implementation("eager")  # attention weights need the eager path
            try:
                with torch.inference_mode(), nm.trace({"input_ids": x, "attention_mask": ones}, use_cache=False,
                                                      logits_to_keep=1):  # fmt: skip
                    saved = nnsight.save([])
                    for i in range(n):
                        a = nm.model.layers[i].self_attn
                        for proj in (a.q_proj, a.k_proj, a.v_proj):
                            saved.append(proj.output[:, -1])
                        saved.append(entropy(a.output[1][:, :, -1]))
                host(saved)
            finally:
                hf.set_attn_implementation(before)

        out["nnsight"] = nnsight_job
    except ImportError:
        pass
    try:
        bridge = lm.bridge  # TransformerLens over a copy that shares the weights (eager attention)
        names = [f"blocks.{i}.attn.hook_{k}" for i in range(n) for k in ("q", "k", "v", "pattern")]

        def tl_job():
            kept = []

            def keep(t, hook):
                kept.append(entropy(t[:, :, -1]) if hook.name.endswith("pattern") else t[:, -1].clone())

            with torch.inference_mode():
                bridge.run_with_hooks(x, attention_mask=ones, fwd_hooks=[(m, keep) for m in names])
            host(kept)

        out["transformer_lens"] = tl_job
    except Exception as exc:  # noqa: BLE001 (recorded beside the table)
        out["transformer_lens_error"] = f"{type(exc).__name__}: {exc}"
    return out


def count_syncs(fn) -> int:
    import torch

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in got)


def syncs(b: Bench, lm) -> dict:
    """Host syncs of one bare forward, of a capture of one batch and of four (16 prompts × 512 tokens)."""
    import torch
    from bench_capture import make_prompts

    from geoprobe import CaptureConfig, capture

    if not b.cuda:
        return {}
    texts, ids = make_prompts(lm.tokenizer, 16, 512)
    x = torch.tensor(ids[:4], device="cuda")

    def bare():
        with torch.inference_mode():
            lm.hf_model(input_ids=x, attention_mask=torch.ones_like(x), use_cache=False, logits_to_keep=1)

    cfg = CaptureConfig(batch_size=4, queries=True, key_weights=False)
    bare(), capture(lm, texts[:4], cfg)  # warm
    one, four = count_syncs(lambda: capture(lm, texts[:4], cfg)), count_syncs(lambda: capture(lm, texts, cfg))
    return {"bare_forward": count_syncs(bare), "capture_1_batch": one, "capture_4_batches": four,
            "per_extra_batch": (four - one) / 3}  # fmt: skip


def floor_s(lm, B: int, T: int, peak: dict) -> float | None:
    """The forward's lower bound: max(FLOPs / matmul rate, weight bytes / copy bandwidth)."""
    if not peak:
        return None
    lay, hf = lm.layout, lm.hf_model
    params = sum(p.numel() for p in hf.parameters()) - hf.get_input_embeddings().weight.numel()
    head = hf.get_output_embeddings().weight.numel()
    flops = 2 * (params - head) * B * T + 2 * head * B + 2 * lay.n_layers * B * T * T * lay.n_heads * lay.d_qk
    nbytes = 2 * params
    return max(flops / (peak["bf16_tflops"] * 1e12), nbytes / (peak["copy_tb_s"] * 1e12 / 2))


def fast(b: Bench) -> dict:
    import torch
    from bench_capture import make_prompts

    from geoprobe.capture.memory import forward_peak_bytes

    out: dict = {"model": f"twin:{SPEED_MODEL}:{b.scale}", "dtype": "bfloat16", "peak": peaks(b), "rows": []}
    lm = twin_on(SPEED_MODEL, b.scale, "bfloat16", b.device)
    out["syncs"] = syncs(b, lm)
    for T in b.tokens:
        for B in b.batches:
            texts, ids = make_prompts(lm.tokenizer, B, T)
            jobs = variants(b, lm, texts, ids)
            error = jobs.pop("transformer_lens_error", None)
            times: dict[str, list[float]] = {k: [] for k in jobs}
            for fn in jobs.values():
                timed(b, fn, b.warm)
            for _ in range(b.trials):  # rounds: each variant once per round
                for k, fn in jobs.items():
                    times[k] += timed(b, fn, 1)
            row = {"tokens": T, "batch": B, "floor_s": floor_s(lm, B, T, out["peak"])}
            for k, t in times.items():
                row[k] = {"median_s": statistics.median(t), "std_s": statistics.pstdev(t), "n": len(t)}
            base = row["bare"]["median_s"]
            row["ratio"] = {k: row[k]["median_s"] / base for k in times}
            if error:
                row["transformer_lens_error"] = error
            if b.cuda:  # capture's peak above the loaded model against geoprobe's estimate
                from geoprobe import CaptureConfig, capture

                torch.cuda.synchronize()
                before = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                capture(lm, texts, CaptureConfig(batch_size=B, queries=True, key_weights=False))
                row["peak_mib"] = (torch.cuda.max_memory_allocated() - before) / 2**20
                row["estimate_mib"] = forward_peak_bytes(lm, B, T) / 2**20
            out["rows"].append(row)
            log(json.dumps({k: v for k, v in row.items() if k in ("tokens", "batch", "ratio", "peak_mib")}))
            del jobs
            b.free()
    return out


# ------------------------------------------------------------------ end to end
def geoprobe_cli(args: list[str], timeout: float) -> dict:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "geoprobe", *args], capture_output=True, text=True, timeout=timeout)
    tail = (p.stdout + p.stderr).strip().splitlines()[-12:]
    return {"args": args, "rc": p.returncode, "wall_s": round(time.perf_counter() - t, 1), "tail": tail}


def end_to_end(b: Bench) -> dict:
    import shutil
    import tempfile

    dtype = "float32" if b.dry else "bfloat16"
    work = Path(tempfile.mkdtemp(prefix="geoprobe-gpu-"))
    model = f"twin:pythia-410m:{b.scale}"
    scan = geoprobe_cli(["scan", "--model", model, "--device", b.device, "--dtype", dtype, "--prompts", "builtin",
                         "--out", str(work / "scan")], 240)  # fmt: skip
    if (work / "scan" / "results.json").exists():
        shutil.copy(work / "scan" / "results.json", b.out / "scan-results.json")
    models = ", ".join(f'"twin:{a}:{b.scale}"' for a in ("pythia-160m", "qwen2.5-0.5b"))
    spec = work / "sweep.toml"
    spec.write_text(SWEEP.format(models=models, device=b.device, dtype=dtype))
    sweep = geoprobe_cli(["sweep", str(spec), "--executor", "ray", "--out", str(work / "sweep")], 300)
    for name in ("sweep.parquet", "sweep.json"):
        if (work / "sweep" / name).exists():
            shutil.copy(work / "sweep" / name, b.out / name)
    record = work / "sweep" / "sweep.json"
    cells = json.loads(record.read_text()).get("cells", []) if record.exists() else []
    sweep["cells_done"] = sum(c.get("status") == "done" for c in cells)
    sweep["cells"] = [{k: c.get(k) for k in ("id", "status", "seconds", "attempts", "node", "error")} for c in cells]
    shutil.rmtree(work, ignore_errors=True)
    return {"scan": scan, "sweep": sweep}


# ------------------------------------------------------------------ report
def table(r: dict) -> str:
    """The markdown tables docs/benchmarks.md shows (from a gpu.json)."""
    lines = [f"Device: {r.get('env', {}).get('device_name', r['device'])}; {r.get('env', {}).get('versions', '')}", ""]
    c = r.get("correct", {})
    if "error" in c or not c:
        lines.append(f"correct: {c.get('error', 'not run')}")
    else:
        lines += ["| twin | layers | float32: entropy Δ bits | values rel | keys rel | ok | float32, eager forward: "
                  "entropy Δ / values rel | bfloat16 vs float32: entropy Δ bits | values L2 median / max | keys L2 "
                  "median / max | ok | bfloat16 vs its own eager: entropy Δ | bfloat16, eager forward: entropy Δ / "
                  "values rel |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for alias in ALIASES:
            a = c.get(alias)
            if not a:
                continue
            f, h, o = a["float32"], a["bfloat16"], a["bfloat16_vs_own_eager"]
            fe, he = a.get("float32_eager"), a.get("bfloat16_eager")
            lines.append(
                f"| {alias} | {a['layers']} | {f['entropy_bits']:.1e} | {f['values_rel']:.1e} | {f['keys_rel']:.1e} | "
                f"{'yes' if a['float32_ok'] else '**no**'} | "
                + (f"{fe['entropy_bits']:.1e} / {fe['values_rel']:.1e}" if fe else "–")
                + f" | {h['entropy_bits']:.1e} | {h['values_l2_median']:.3f} / {h['values_l2_max']:.3f} | "
                f"{h['keys_l2_median']:.3f} / {h['keys_l2_max']:.3f} | {'yes' if a['bfloat16_ok'] else '**no**'} | "
                f"{o['entropy_bits']:.1e} | "
                + (f"{he['entropy_bits']:.1e} / {he['values_rel']:.1e}" if he else "–")
                + " |"
            )
    f = r.get("fast", {})
    if "rows" in f:
        lines += ["", f"Speed: {f['model']}, {f['dtype']}; peak {json.dumps(f.get('peak'))}; syncs "
                  f"{json.dumps(f.get('syncs'))}", "",
                  "| tokens | batch | bare ms (± std) | floor ms | geoprobe ÷ bare | nnsight ÷ bare | TL bridge ÷ bare "
                  "| nnsight ÷ geoprobe | TL ÷ geoprobe | capture peak MiB | estimate MiB |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for row in f["rows"]:
            q = row["ratio"]
            g = q.get("geoprobe", float("nan"))
            lines.append(
                f"| {row['tokens']} | {row['batch']} | {1e3 * row['bare']['median_s']:.2f} (± "
                f"{1e3 * row['bare']['std_s']:.2f}) | "
                + (f"{1e3 * row['floor_s']:.2f}" if row.get("floor_s") else "–")
                + f" | {g:.3f} | "
                + " | ".join(f"{q[k]:.2f}" if k in q else "–" for k in ("nnsight", "transformer_lens"))
                + " | "
                + " | ".join(f"{q[k] / g:.2f}" if k in q else "–" for k in ("nnsight", "transformer_lens"))
                + f" | {row.get('peak_mib', float('nan')):.0f} | {row.get('estimate_mib', float('nan')):.0f} |"
            )
    e = r.get("end_to_end", {})
    for name in ("scan", "sweep"):
        if name in e:
            lines.append(f"\n{name}: rc {e[name]['rc']}, {e[name]['wall_s']} s" + (
                f", {e[name].get('cells_done')} cells done" if name == "sweep" else ""))  # fmt: skip
    lines.append(f"\nseconds per section: {json.dumps(r.get('seconds', {}))}")
    return "\n".join(lines) + "\n"


def env(b: Bench) -> dict:
    import torch
    import transformers

    import geoprobe

    out = {"python": platform.python_version(), "versions": f"torch {torch.__version__}, transformers "
           f"{transformers.__version__}, geoprobe {geoprobe.__version__}"}  # fmt: skip
    if b.cuda:
        p = torch.cuda.get_device_properties(0)
        out.update(device_name=p.name, memory_gib=round(p.total_memory / 2**30, 1), sms=p.multi_processor_count)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")))
    ap.add_argument("--dry-run", action="store_true", help="on the CPU: tiny twins, one trial")
    ap.add_argument("--only", default="correct,fast,end_to_end", help="sections to run, comma-separated")
    ap.add_argument("--record", type=Path, nargs="+", help="write docs/benchmarks.md's GPU section from these "
                    "gpu.json files (a section of a later file replaces an earlier one's)")  # fmt: skip
    args = ap.parse_args()
    if args.record:
        from _doc import replace_section

        merged: dict = {}
        for path in args.record:
            r = json.loads(path.read_text())
            merged.update({k: v for k, v in r.items() if k != "seconds"})
            merged.setdefault("seconds", {}).update(r.get("seconds", {}))
            merged.setdefault("from", []).append(path.name)
        body = table(merged) + f"\nfrom {', '.join(merged['from'])} (benchmarks/gpu/results/)\n"
        replace_section(ROOT / "docs" / "benchmarks.md", "gpu", "GPU (benchmarks/gpu/)", body + "\n")
        print(body)
        return
    b = Bench(args.out, args.dry_run)
    b.results["env"] = env(b)
    log(json.dumps(b.results["env"]))
    sections = {"correct": correct, "fast": fast, "end_to_end": end_to_end}
    for name in args.only.split(","):
        b.section(name, lambda: sections[name](b))
    text = table(b.results)
    (args.out / "gpu.md").write_text(text)
    log(text)


if __name__ == "__main__":
    main()
