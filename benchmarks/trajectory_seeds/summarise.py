"""The tables of docs/sweep.md "How the geometry moves with training, over training runs", from the sweep that
benchmarks/trajectory_seeds/run.sh writes: ``python benchmarks/trajectory_seeds/summarise.py runs/traj-plateau``.

Training runs are the replicates: a per-step value is the mean over runs with a Student-t 95 % interval
across them (k − 1 degrees of freedom); a change from step 0 is each run's paired contrast (bootstrap over
the shared prompts, in sweep.parquet), averaged over runs with the t-interval across runs, beside how many
runs are significant on their own after the sweep's simultaneous (max-|t|) adjustment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from geoprobe.analysis.stats import t_interval
from geoprobe.capture.result import Capture

HEAD = {
    "pc1": "value PC1 share",
    "alignment_spearman": "ρ(PC1, H)",
    "focusing_reduction": "focusing %",
    "key_orthogonality": "key |cos|",
}


def _fmt(e, digits: int = 2) -> str:
    if not np.isfinite(e.low):
        return f"{e.value:.{digits}f}"
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def _metric_rows(t: pd.DataFrame, metric: str, kind: str) -> pd.DataFrame:
    rows = t[(t.metric == metric) & (t.contrast == kind) & (t["head"].isna())]
    if metric == "focusing_reduction":
        return rows
    if metric == "key_orthogonality":  # the mean over layers, per cell
        agg = {"estimate": "mean", "training_step": "first", "run": "first"}
        return rows.groupby("cell", as_index=False).agg(agg)
    last = rows.layer.max()
    return rows[rows.layer == last]


def per_step(t: pd.DataFrame, losses: dict[tuple[str, int], float]) -> str:
    steps = sorted(t.training_step.unique())
    lines = ["| step | tokens | held-out loss | " + " | ".join(HEAD.values()) + " |", "|---" * (3 + len(HEAD)) + "|"]
    for s in steps:
        tok = int(t[t.training_step == s].tokens.iloc[0])
        loss = t_interval([v for (r, st), v in losses.items() if st == s])
        cols = []
        for m in HEAD:
            rows = _metric_rows(t, m, "")
            vals = rows[rows.training_step == s].estimate.to_numpy()
            cols.append(_fmt(t_interval(vals), 3 if m == "key_orthogonality" else 2))
        lines.append(f"| {s:,} | {tok:,} | {_fmt(loss)} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def versus_step0(t: pd.DataFrame) -> str:
    steps = sorted(s for s in t.training_step.unique() if s > 0)
    lines = ["| step | " + " | ".join(f"Δ {h}" for h in HEAD.values()) + " |", "|---" * (1 + len(HEAD)) + "|"]
    for s in steps:
        cols = []
        for m in HEAD:
            rows = _metric_rows(t, m, "step0")
            mine = rows[rows.training_step == s]
            e = t_interval(mine.estimate.to_numpy())
            if m == "key_orthogonality":
                cols.append(_fmt(e, 4))
                continue
            sig = ((mine.low_adj > 0) | (mine.high_adj < 0)).sum()
            cols.append(f"{_fmt(e)} ({sig}/{len(mine)})")
        lines.append(f"| {s:,} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def collapse(out: Path, t: pd.DataFrame) -> str:
    """Per run (seed order): the mean |cos| between the prompts' raw last-layer value vectors, the PC1 split-half
    |cos| (its null's upper quantile) and the PC1 share, at the last layer."""
    own = t[t.contrast == ""]
    last = own.layer.max()
    pc1 = own[(own.metric == "pc1") & (own.layer == last)].sort_values("run")
    half = own[(own.metric == "pc1_split_half") & (own.layer == last)].set_index("cell")
    lines = [
        "| step | lr | values' mean \\|cos\\| | split-half \\|cos\\| of PC1 (null ≤) | PC1 share |",
        "|---|---|---|---|---|",
    ]
    for s in sorted(pc1.training_step.unique()):
        coss, lrs, halves, shares = [], [], [], []
        for _, c in pc1[pc1.training_step == s].iterrows():
            cap = Capture.load(out / "sweep" / "cells" / c.cell / "capture")
            v = cap.per_layer("values")[-1].reshape(cap.n_prompts, -1).astype(np.float64)
            u = v / np.linalg.norm(v, axis=1, keepdims=True)
            g = np.abs(u @ u.T)
            coss.append(f"{(g.sum() - np.trace(g)) / (len(g) * (len(g) - 1)):.3f}")
            man = json.loads((Path(c.revision).parent.parent / "trajectory.json").read_text())
            lrs += [e["lr"] for e in man["checkpoints"] if e["step"] == s]
            h = half.loc[c.cell]
            halves.append(f"{h.estimate:.2f} ({h['null']:.2f})")
            shares.append(f"{c.estimate:.2f}")
        row = [f"{s:,}", f"{np.mean(lrs):.2e}", ", ".join(coss), ", ".join(halves), ", ".join(shares)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def emergence(out: Path) -> str:
    e = pd.read_parquet(out / "sweep" / "emergence.parquet")
    last = e.layer.max()
    e = e[(e.layer == last) | e.layer.isna()]
    cols = ["metric", "layer", "emergence_step", "low", "high", "t50", "t50_low", "t50_high", "t90", "t90_low"]
    cols += ["t90_high", "runs", "verdict"]
    lines = ["| " + " | ".join(cols) + " |", "|---" * len(cols) + "|"]
    for _, r in e.iterrows():
        cells = ["—" if (isinstance(r[c], float) and np.isnan(r[c])) else str(r[c]) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plateau(root: Path) -> str:
    """Per run: the held-out loss (nats) at the last three checkpoints, its fall over the last 1,000 steps and
    over the last sixth of training, and the learning rate at the end (the cosine schedule's floor)."""
    lines = [
        "| run | held-out loss at the last 3 checkpoints | fall over the last 1,000 steps | "
        "fall over the last sixth | lr at the end |",
        "|---|---|---|---|---|",
    ]
    for run in sorted(root.glob("seed*/trajectory.json")):
        man = json.loads(run.read_text())
        ck = {e["step"]: e for e in man["checkpoints"]}
        steps = sorted(ck)
        last = steps[-1]
        sixth = min(steps, key=lambda s: abs(s - last * 5 / 6))
        tail = ", ".join(f"{ck[s]['eval_loss']:.3f} (step {s:,})" for s in steps[-3:])
        fall1k = ck[steps[-2]]["eval_loss"] - ck[last]["eval_loss"]
        fall6 = ck[sixth]["eval_loss"] - ck[last]["eval_loss"]
        lines.append(
            f"| {run.parent.name} | {tail} | {fall1k:.3f} | {fall6:.3f} (from step {sixth:,}) | {ck[last]['lr']:.1e} |"
        )
    return "\n".join(lines)


def main(out: str) -> None:
    root = Path(out)
    t = pd.read_parquet(root / "sweep" / "sweep.parquet")
    losses = {}
    for run in sorted(root.glob("seed*/trajectory.json")):
        man = json.loads(run.read_text())
        for e in man["checkpoints"]:
            losses[(run.parent.name, e["step"])] = e["eval_loss"]
    print("## Held-out loss at the end of training: a plateau?\n")
    print(plateau(root))
    print("\n## Per step, mean over the 3 training runs [95 % t-interval across runs]\n")
    print(per_step(t, losses))
    print("\n## Change from step 0: the runs' paired contrasts, mean [t-interval across runs] (runs significant)\n")
    print(versus_step0(t))
    print("\n## Step 32: collapse or structure?\n")
    print(collapse(root, t))
    print("\n## Emergence, last layer (emergence.parquet; runs pooled, hierarchical bootstrap)\n")
    print(emergence(root))


if __name__ == "__main__":
    main(sys.argv[1])
