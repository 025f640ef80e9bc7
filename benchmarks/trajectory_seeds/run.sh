#!/usr/bin/env bash
# The multi-seed trajectory of docs/sweep.md ("How the geometry moves with training, over training runs"):
# a documented one-off run, not part of the tests. Three training seeds of the default 2.2M-parameter
# Pythia-shaped model, 12,000 steps each (12.3 M tokens, 1.7 epochs of the 7.1 M training tokens: trained until
# the held-out loss plateaus; one thread each),
# the seed-0 final checkpoint's mixed draw as the shared prompts, then one sweep over the 3 x 15 checkpoints
# (scan with the final-token attention kept, for routing stability), runs pooled as replicates.
# About 35 min of one idle core per seed (57-75 min here, beside other jobs on 2 shared cores); the sweep
# about 10 min. STEPS and OUT override the defaults.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-runs/traj-plateau}
STEPS=${STEPS:-12000}
for s in 0 1 2; do
  [ -f "$OUT/seed$s/trajectory.json" ] || .venv/bin/geoprobe trajectory --steps "$STEPS" --seed "$s" --threads 1 --out "$OUT/seed$s"
done
[ -f "$OUT/shared-prompts.jsonl" ] || .venv/bin/geoprobe sample --model "$OUT/seed0/checkpoints/step$STEPS" --prompts mixed \
  --out "$OUT/shared-prompts.jsonl"
.venv/bin/python benchmarks/trajectory_seeds/make_sweep.py "$OUT" > "$OUT/sweep.toml"
.venv/bin/geoprobe sweep "$OUT/sweep.toml" --out "$OUT/sweep" --threads 1
