"""One batch (8 × 128 random tokens) on the full pythia-410m twin: RSS increment of a bare
bridge forward vs geoprobe.capture. Usage: python benchmarks/capture_increment.py bridge|capture
"""

import sys
import time

import psutil
import torch

from geoprobe import CaptureConfig, capture, twin

torch.set_num_threads(2)


def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024


def reset():
    open("/proc/self/clear_refs", "w").write("5")


m = twin("pythia-410m", "full")
p = psutil.Process()
ids = torch.randint(0, 49152, (8, 128))
mask = torch.ones_like(ids)
mode = sys.argv[1]
with torch.inference_mode():
    m.bridge(ids, attention_mask=mask, return_type="logits", logits_to_keep=1, use_cache=False)
base = p.memory_info().rss / 2**20
reset()
t = time.perf_counter()
with torch.inference_mode():
    if mode == "bridge":
        for _ in range(2):
            m.bridge(ids, attention_mask=mask, return_type="logits", logits_to_keep=1, use_cache=False)
    else:
        toks = [m.tokenizer.decode(r) for r in ids.tolist()]
        capture(m, toks, CaptureConfig(batch_size=8, key_weights=False))
print(mode, "loaded", round(base), "increment", round(hwm() - base), "time", round(time.perf_counter() - t, 1))
