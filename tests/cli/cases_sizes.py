"""Error cases of issue 27 part 2: every size bounded before work starts (flags and recipe values with
an upper limit or a memory estimate), and ``windtunnel run --threads -4`` (part 5).

Each value here was accepted by the starting commit (d03f8c0^) and then allocated without limit,
aborted, or ran with a silently ignored flag; now each is refused in one line that names the flag
(or the recipe key) and the largest value that fits. The limits and their reasons are in the
commands' docs pages; memory estimates take the available figure from GEOPROBE_MEMORY_AVAILABLE here.

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list);
the building blocks are in tests/cli/case_kit.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import TWIN, Case, case, recipe, text


def _recipe(command: str, table: str, key: str, value: int) -> str:
    return f'[probe]\ncommand = "{command}"\n[{table}]\n{key} = {value}\n'


SETUPS: dict[str, Callable[[Path], None]] = {
    "sizes_prompts": text("p.txt", "".join(f"Prompt number {i} says that the weather\n" for i in range(12))),
    # 20,000 short prompts: their capture arrays and one forward pass need about 150 MiB on the twin
    "sizes_many_prompts": text("many.txt", "".join(f"Prompt {i} reads\n" for i in range(20_000))),
    "sizes_scan_recipe": recipe("big.toml", _recipe("scan", "analyses", "n_resamples", 25_000_000)),
    "sizes_scan_pca_recipe": recipe("pca.toml", _recipe("scan", "analyses", "pca_resamples", 10**9)),
    "sizes_domains_recipe": recipe("dom.toml", _recipe("compare-domains", "sampling", "batch_size", 10**6)),
    "sizes_domains_null_recipe": recipe("domnull.toml", _recipe("compare-domains", "analyses", "null_draws", 10**8)),
    "sizes_sula_recipe": recipe("sula.toml", _recipe("sula", "sula", "n_per_k", 25_000_000)),
    "sizes_intervene_recipe": recipe("iv.toml", _recipe("intervene", "intervene", "n_texts", 10**6)),
    "sizes_positional_recipe": recipe("pos.toml", _recipe("positional", "positional", "n_prompts", 10**6)),
    "sizes_denoise_recipe": recipe("dn.toml", _recipe("denoise", "denoise", "batch_size", 10**7)),
    "sizes_dynamics_recipe": recipe("dy.toml", _recipe("dynamics", "dynamics", "d_x", 10**6)),
    "sizes_compare_recipe": recipe(
        "cmp.toml",
        '[probe]\ncommand = "compare-models"\n[models]\nrun = [' + ", ".join(f'"m{i}"' for i in range(101)) + "]\n",
    ),
    "sizes_windtunnel_recipe": recipe("wt.toml", _recipe("windtunnel", "windtunnel", "n_eval", 10**7)),
}

_K25 = ",".join(str(k) for k in range(25))  # 25 values of k
_STRENGTHS_101 = ",".join(f"{i / 100:g}" for i in range(101))

CASES: tuple[Case, ...] = (
    # -- the reported cases ------------------------------------------------------------------------
    case(
        "sizes-scan-recipe-n-resamples",
        "run big.toml --out run",
        "a scan recipe with [analyses] n_resamples = 25000000 (was OOM-killed at 23.5 GB)",
        "probe 'big.toml': analyses.n_resamples = 25000000 is above the limit of 100000",
        "set analyses.n_resamples to 100000 or less",
        setup=("sizes_scan_recipe",),
    ),
    case(
        "sizes-intervene-controls",
        f"intervene --model {TWIN} --controls 100000000 --out iv",
        "--controls 100000000 (grew 25 MB/s until killed)",
        "--controls = 100000000 is above the limit of 1000",
        "pass --controls 1000 or less",
    ),
    case(
        "sizes-denoise-ambient",
        "denoise --ambient 1000000 --out dn",
        "--ambient 1000000 (was: unexpected MemoryError)",
        "--ambient = 1000000 is above the limit of 1024",
        "pass --ambient 1024 or less",
    ),
    case(
        "sizes-denoise-context-length",
        "denoise --context-length 100000000 --out dn",
        "--context-length 100000000 (was: unexpected MemoryError)",
        "--context-length = 100000000 is above the limit of 100000",
        "pass --context-length 100000 or less",
    ),
    case(
        "sizes-denoise-n-resamples",
        "denoise --n-resamples 1000000000 --out dn",
        "--n-resamples 1000000000 (was: unexpected MemoryError)",
        "--n-resamples = 1000000000 is above the limit of 100000",
        "pass --n-resamples 100000 or less",
    ),
    # --threads 100000 (aborted): tests/windtunnel/test_cli_windtunnel.py (its limit is this machine's CPUs)
    case(
        "sizes-windtunnel-threads-negative",
        "windtunnel run --scale tiny --threads -4 --out wt",
        "--threads -4",
        "--threads = -4 is below 1",
        "pass --threads 1 or more",
    ),
    case(
        "sizes-windtunnel-threads-zero",
        "windtunnel train --scale tiny --threads 0 --out wt",
        "--threads 0 (was silently ignored)",
        "--threads = 0 is below 1",
        "pass --threads 1 or more",
    ),
    # -- scan, capture, sample, compare-domains ------------------------------------------------------
    case(
        "sizes-scan-recipe-pca-resamples",
        "run pca.toml --out run",
        "a scan recipe with [analyses] pca_resamples = 10^9",
        "analyses.pca_resamples = 1000000000 is above the limit of 100000",
        setup=("sizes_scan_pca_recipe",),
    ),
    case(
        "sizes-scan-batch-size",
        f"scan --model {TWIN} --prompts p.txt --batch-size 100000 --out run",
        "--batch-size 100000",
        "--batch-size = 100000 is above the limit of 4096",
        "pass --batch-size 4096 or less",
        setup=("sizes_prompts",),
    ),
    case(
        "sizes-scan-candidates",
        f"scan --model {TWIN} --candidates 10000000 --out run",
        "--candidates 10^7",
        "--candidates = 10000000 is above the limit of 100000",
        "each candidate costs a forward pass",
    ),
    case(
        "sizes-capture-top-k",
        f"capture --model {TWIN} --top-k 1000000 --out out",
        "--top-k 10^6",
        "--top-k = 1000000 is above the limit of 1000",
    ),
    case(
        "sizes-capture-batch-size",
        f"capture --model {TWIN} --batch-size 100000 --out out",
        "--batch-size 100000",
        "--batch-size = 100000 is above the limit of 4096",
    ),
    case(
        "sizes-capture-arrays-memory",
        f"capture --model {TWIN} --prompts many.txt --out out",
        "20,000 prompts whose arrays and forward pass need ~150 MiB, 150 MiB available (figure planted)",
        "the capture's arrays of 20000 prompts × 3 layers (and a forward pass) needs about",
        "150 MiB set by GEOPROBE_MEMORY_AVAILABLE",
        "capture at most",
        "prompts at a time (split the --prompts file)",
        setup=("sizes_many_prompts",),
        env=(("GEOPROBE_MEMORY_AVAILABLE", "150MiB"),),
    ),
    case(
        "sizes-sample-per-quintile",
        f"sample --model {TWIN} --per-quintile 1000000 --out s.jsonl",
        "--per-quintile 10^6",
        "--per-quintile = 1000000 is above the limit of 20000",
    ),
    case(
        "sizes-domains-permutations",
        f"compare-domains --model {TWIN} --n-permutations 10000000 --out run",
        "--n-permutations 10^7",
        "--n-permutations = 10000000 is above the limit of 100000",
    ),
    case(
        "sizes-domains-candidates",
        f"compare-domains --model {TWIN} --domain-candidates 10000000 --out run",
        "--domain-candidates 10^7",
        "--domain-candidates = 10000000 is above the limit of 100000",
    ),
    case(
        "sizes-domains-recipe-sampling-batch",
        "run dom.toml --out run",
        "a compare-domains recipe with [sampling] batch_size = 10^6",
        "probe 'dom.toml': sampling.batch_size = 1000000 is above the limit of 4096",
        "set sampling.batch_size to 4096 or less",
        setup=("sizes_domains_recipe",),
    ),
    case(
        "sizes-domains-recipe-null-draws",
        "run domnull.toml --out run",
        "a compare-domains recipe with [analyses] null_draws = 10^8",
        "analyses.null_draws = 100000000 is above the limit of 100000",
        setup=("sizes_domains_null_recipe",),
    ),
    # -- sula, intervene ---------------------------------------------------------------------------
    case(
        "sizes-sula-n-per-k",
        f"sula --model {TWIN} --n-per-k 50000 --out run",
        "--n-per-k 50000",
        "--n-per-k = 50000 is above the limit of 20000",
    ),
    case(
        "sizes-sula-k",
        f"sula --model {TWIN} --k 0,1,100000 --out run",
        "--k with k = 100000",
        "--k holds 100000, above the limit of 1024",
        "pass --k values of 1024 or less",
    ),
    case(
        "sizes-sula-prompts",
        f"sula --model {TWIN} --n-per-k 1000 --k {_K25} --out run",
        "--n-per-k 1000 × 25 values of --k = 25,000 prompts per condition",
        "--n-per-k 1000 × 25 values of k = 25000 prompts per condition, above the limit of 20000",
        "pass --n-per-k 800 or less",
    ),
    case(
        "sizes-sula-recipe",
        "run sula.toml --out run",
        "a sula recipe with n_per_k = 25000000",
        "sula.n_per_k = 25000000 is above the limit of 20000",
        setup=("sizes_sula_recipe",),
    ),
    case(
        "sizes-sula-n-resamples",
        f"sula --model {TWIN} --n-resamples 1000000000 --out run",
        "--n-resamples 10^9",
        "--n-resamples = 1000000000 is above the limit of 100000",
    ),
    case(
        "sizes-intervene-strengths",
        f"intervene --model {TWIN} --strength {_STRENGTHS_101} --out iv",
        "101 strengths",
        "101 strengths is above the limit of 100",
        "--strength",
    ),
    case(
        "sizes-intervene-recipe-texts",
        "run iv.toml --out iv",
        "an intervene recipe with n_texts = 10^6",
        "intervene.n_texts = 1000000 is above the limit of 1000",
        setup=("sizes_intervene_recipe",),
    ),
    case(
        "sizes-intervene-memory",
        f"intervene --model {TWIN} --n-per-k 1000 --out iv",
        "5,000 SULA prompts' next-token log-probs (1.8 GiB on the twin) with 512 MiB available (figure planted)",
        "the next-token log-probabilities of 5000 SULA prompts",
        "512 MiB set by GEOPROBE_MEMORY_AVAILABLE",
        "pass --n-per-k 245 or less",
        env=(("GEOPROBE_MEMORY_AVAILABLE", "512MiB"),),
    ),
    # -- positional ---------------------------------------------------------------------------------
    case(
        "sizes-positional-max-length",
        f"positional --model {TWIN} --max-length 1000000 --out pos",
        "--max-length 10^6",
        "--max-length = 1000000 is above the limit of 131072",
    ),
    case(
        "sizes-positional-lengths",
        f"positional --model {TWIN} --lengths 16,200000 --out pos",
        "a --lengths value of 200000",
        "--lengths holds 200000, above the limit of 131072",
    ),
    case(
        "sizes-positional-n-prompts",
        f"positional --model {TWIN} --n-prompts 5000 --out pos",
        "--n-prompts 5000",
        "--n-prompts = 5000 is above the limit of 1000",
    ),
    case(
        "sizes-positional-recipe",
        "run pos.toml --out pos",
        "a positional recipe with n_prompts = 10^6",
        "positional.n_prompts = 1000000 is above the limit of 1000",
        setup=("sizes_positional_recipe",),
    ),
    case(
        "sizes-positional-tunnel-n-eval",
        "positional --windtunnel run --n-eval 1000000 --out pos",
        "--windtunnel with --n-eval 10^6",
        "--n-eval = 1000000 is above the limit of 50000",
        setup=("damaged_tunnel",),
    ),
    # -- denoise, dynamics, windtunnel --------------------------------------------------------------
    case(
        "sizes-denoise-memory",
        "denoise --context-length 50000 --out dn",
        "2,000 evaluation prompts of 50,000 tokens (about 36 GiB) with 4 GiB available (figure planted)",
        "the evaluation of 2000 prompts of up to 50000 tokens needs about",
        "4.0 GiB set by GEOPROBE_MEMORY_AVAILABLE",
        "pass --n-eval",
        env=(("GEOPROBE_MEMORY_AVAILABLE", "4GiB"),),
    ),
    case(
        "sizes-denoise-steps",
        "denoise --steps 100000000 --out dn",
        "--steps 10^8",
        "--steps = 100000000 is above the limit of 1000000",
    ),
    case(
        "sizes-denoise-recipe",
        "run dn.toml --out dn",
        "a denoise recipe with batch_size = 10^7",
        "denoise.batch_size = 10000000 is above the limit of 65536",
        setup=("sizes_denoise_recipe",),
    ),
    case(
        "sizes-dynamics-length",
        "dynamics --length 100000 --out dy",
        "--length 100000 (its T × T attention: 240 GB)",
        "--length = 100000 is above the limit of 8192",
    ),
    case(
        "sizes-dynamics-seeds",
        "dynamics --seeds 100000 --out dy",
        "--seeds 100000",
        "--seeds = 100000 is above the limit of 100",
    ),
    case(
        "sizes-dynamics-recipe",
        "run dy.toml --out dy",
        "a dynamics recipe with d_x = 10^6",
        "dynamics.d_x = 1000000 is above the limit of 4096",
        setup=("sizes_dynamics_recipe",),
    ),
    case(
        "sizes-windtunnel-steps",
        "windtunnel run --scale tiny --steps 100000000 --out wt",
        "--steps 10^8",
        "--steps = 100000000 is above the limit of 1000000",
    ),
    case(
        "sizes-compare-models-recipe",
        "run cmp.toml --out cmp",
        "a compare-models recipe listing 101 models",
        "models.run lists 101 entries, above the limit of 100",
        setup=("sizes_compare_recipe",),
    ),
    case(
        "sizes-windtunnel-recipe-n-eval",
        "run wt.toml --out wt",
        "a windtunnel recipe with n_eval = 10^7",
        "windtunnel.n_eval = 10000000 is above the limit of 50000",
        setup=("sizes_windtunnel_recipe",),
    ),
)
