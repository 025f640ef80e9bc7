#!/usr/bin/env bash
# The multi-seed trajectory of docs/sweep.md ("How the geometry moves with training, over training runs"):
# a documented one-off run, not part of the tests. Three training seeds of the default 2.2M-parameter
# Pythia-shaped model, 4,000 steps each (4.1 M tokens, ~0.6 epoch; one thread each, one after another),
# the seed-0 final checkpoint's mixed draw as the shared prompts, then one sweep over the 3 x 15 checkpoints
# (scan with the final-token attention kept, for routing stability), runs pooled as replicates.
# About 25 min of one core per seed here (2 cores, shared); the sweep about 10 min.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-runs/traj-seeds}
for s in 0 1 2; do
  [ -f "$OUT/seed$s/trajectory.json" ] || .venv/bin/geoprobe trajectory --steps 4000 --seed "$s" --threads 1 --out "$OUT/seed$s"
done
[ -f "$OUT/shared-prompts.jsonl" ] || .venv/bin/geoprobe sample --model "$OUT/seed0/checkpoints/step4000" --prompts mixed \
  --out "$OUT/shared-prompts.jsonl"
.venv/bin/python benchmarks/trajectory_seeds/make_sweep.py "$OUT" > "$OUT/sweep.toml"
.venv/bin/geoprobe sweep "$OUT/sweep.toml" --out "$OUT/sweep" --threads 1
