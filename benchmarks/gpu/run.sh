#!/usr/bin/env bash
# geoprobe's GPU run (issue 38), on the lent machine, from the repository root:
#
#     bash benchmarks/gpu/run.sh            # results under $OUT (gpu.json, gpu.md, log.txt, ...)
#
# Needs .gpu/site.tar.xz and .gpu/cache (python benchmarks/gpu/prepare.py, here, beforehand), carried
# with the checkout: run(command="bash benchmarks/gpu/run.sh", carry=[".gpu/site.tar.xz", ".gpu/cache"],
# timeout_s=540). Extra arguments go to bench_gpu.py (e.g. --only correct).
set -euo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
SITE=/tmp/geoprobe-gpu
if [ ! -d "$SITE/site" ]; then  # a warm machine keeps it between calls
  python3 -c "import tarfile, sys; tarfile.open('.gpu/site.tar.xz').extractall(sys.argv[1])" "$SITE"
fi
export PYTHONPATH="$PWD:$SITE/site" GEOPROBE_CACHE="$PWD/.gpu/cache" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >"$OUT/nvidia-smi.txt" 2>&1 || true
python3 -c "import torch, transformers, ray; print('torch', torch.__version__, 'transformers', transformers.__version__, 'ray', ray.__version__, 'cuda', torch.cuda.is_available())"
python3 benchmarks/gpu/bench_gpu.py --out "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
