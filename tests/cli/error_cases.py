"""Bad inputs across the whole CLI and the one-line error each one gets (issue 8, part 9).

One list, two uses: ``tests/cli/test_error_audit.py`` runs every case and checks the contract
(exit 2, exactly one stderr line starting ``error: ``, the expected words, no traceback, nothing
written), and ``python -m tests.cli.error_cases --markdown`` writes docs/errors.md from the same
runs, so the documentation cannot drift from what the CLI prints.

Every case runs in-process in a fresh working directory (its cwd, so relative paths in argv and
in the messages are the same on every machine); ``setup`` names helpers below that put the files
a case needs there first. A case may load a tiny twin or a model directory it made itself, never
a real model: :func:`run_case` refuses any other load.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Callable, Iterator

from tests.cli import (
    cases_clear,
    cases_executor,
    cases_experiments,
    cases_force,
    cases_sizes,
    cases_sweep,
    cases_text,
    cases_trajectory,
    cases_weights,
    cases_wrong,
)
from tests.cli import odd_inputs as odd
from tests.cli.case_kit import (
    TWIN,
    Case,
    Outcome,
    case,
    edited_config,
    json_file,
    kind_json,
    owned_json,
    owned_page,
    payload_model_dir,
    recipe,
    text,
    tiny_model_dir,
)

SETUPS: dict[str, Callable[[Path], None]] = {
    "empty_prompts": text("empty.txt", "\n   \n"),
    "few_prompts": text("few.txt", "The cat sat on the\nOnce upon a time\nIn 1905 Einstein published\n"),
    "latin1_prompts": lambda d: (d / "latin1.txt").write_bytes("café au lait\n".encode("latin-1")),
    "prompts": text("p.txt", "".join(f"Prompt number {i} says that the weather\n" for i in range(12))),
    "fake_gguf": text("model.gguf", "this is a text file, not GGUF\n"),
    "scan_run": lambda d: (owned_json("run/results.json", "geoprobe.scan")(d), owned_page("run/report.html")(d)),
    "sula_run": lambda d: owned_json("run/sula.json", "geoprobe.sula")(d),
    "intervene_run": lambda d: owned_json("run/intervene.json", "geoprobe.intervene")(d),
    "domains_run": lambda d: owned_json("run/domains.json", "geoprobe.domains")(d),
    "positional_run": lambda d: owned_json("run/positional.json", "geoprobe.positional")(d),
    "denoise_run": lambda d: owned_json("run/denoise.json", "geoprobe.denoise")(d),
    "windtunnel_run": lambda d: owned_json("run/windtunnel.json", "geoprobe.windtunnel")(d),
    "capture_dir": text("out/existing.txt", "keep me\n"),
    # issue 17: what geoprobe did not write is never replaced; where it cannot write, it says so first
    "owned_capture": lambda d: (
        owned_json("out/capture.json", "geoprobe.capture")(d),
        text("out/arrays.safetensors", "arrays")(d),
    ),
    "foreign_project": lambda d: (text("proj/important.txt", "x\n")(d), (d / "proj" / "other_run").mkdir()),
    "a_file": text("afile", "a regular file, not a directory\n"),
    "scan_run_foreign_page": lambda d: (
        owned_json("run/results.json", "geoprobe.scan")(d),
        text("run/report.html", "<html><body>my own notes</body></html>")(d),
    ),
    "scan_capture_foreign": lambda d: (
        owned_json("run/results.json", "geoprobe.scan")(d),
        owned_page("run/report.html")(d),
        text("run/capture/notes.txt", "mine\n")(d),
    ),
    "sula_json_foreign": text("run/sula.json", '{"my": "own data"}'),
    "wt_foreign_learner": text("wt/transformer/notes.txt", "my notes\n"),
    "capture_results": lambda d: owned_json("capture.json", "geoprobe.capture")(d),
    "sula_recipe": recipe("sula.toml", '[probe]\ncommand = "sula"\n'),
    "recipe_layers_string": recipe("layers.toml", '[probe]\ncommand = "scan"\n[capture]\nlayers = "0,1"\n'),
    "recipe_nested": recipe("nested.toml", '[probe]\ncommand = "intervene"\n[intervene]\nexperiments = [[1, [2]]]\n'),
    "recipe_empty": recipe("empty.toml", ""),
    "recipe_no_probe": recipe("noprobe.toml", "[capture]\nbatch_size = 2\n"),
    "recipe_set_and_file": recipe("both.toml", '[probe]\ncommand = "scan"\n[prompts]\nset = "mixed"\nfile = "p.txt"\n'),
    "sample_out": text("sampled.jsonl", '{"set": "mixed", "prompt": "The cat sat on the"}\n'),
    "sample_out_foreign": text("mine.jsonl", '"keep me"\n'),
    "wt_results": json_file("wt.json", {"kind": "geoprobe.windtunnel", "version": 1, "geoprobe": "0.0"}),
    "scan_results_kind": lambda d: kind_json(d, "scan.json", "geoprobe.scan.result"),
    "sula_results": json_file("sula.json", {"kind": "geoprobe.sula", "version": 1, "geoprobe": "0.0"}),
    "corrupt_results": text("results.json", '{"kind": "geoprobe.scan", "layers": [0, 1'),
    "future_results": lambda d: kind_json(d, "results.json", "geoprobe.scan.result", version=999),
    "recipe_unknown_key": recipe("bad_key.toml", '[probe]\ncommand = "scan"\n[analyses]\nn_resampels = 10\n'),
    "recipe_unknown_section": recipe("bad_section.toml", '[probe]\ncommand = "scan"\n[analysis]\nseed = 1\n'),
    "recipe_wrong_type": recipe("bad_type.toml", '[probe]\ncommand = "scan"\n[analyses]\nn_resamples = "many"\n'),
    "recipe_unknown_command": recipe("bad_cmd.toml", '[probe]\ncommand = "scna"\n'),
    "recipe_bad_toml": recipe("broken.toml", "[probe\ncommand = scan\n"),
    "recipe_wt_wrong_type": recipe("wt.toml", '[probe]\ncommand = "windtunnel"\n[windtunnel]\nvocab = "ten"\n'),
    "recipe_sula_unknown_key": recipe("sula.toml", '[probe]\ncommand = "sula"\n[sula]\nn_per_kk = 3\n'),
    "pickle_dir": lambda d: tiny_model_dir(d, "pickled", pickle=True),
    "heads_5_dir": lambda d: edited_config(
        tiny_model_dir(d, "heads5", pickle=False), num_attention_heads=5, head_dim=None
    ),
    "kv_heads_3_dir": lambda d: edited_config(tiny_model_dir(d, "kv3", pickle=False), num_key_value_heads=3),
    "plain_model_dir": lambda d: tiny_model_dir(d, "plain", pickle=False),
    "custom_code_dir": lambda d: tiny_model_dir(d, "custom", pickle=False, custom_code=True),
    "payload_pickle_dir": payload_model_dir,
    "not_a_run": text("notarun/readme.txt", "not a wind-tunnel run\n"),
    # issue 17: runaway and odd inputs
    "huge_prompts": odd.sparse_file("big.txt", 50 * 2**20),
    "fifo_prompts": lambda d: os.mkfifo(d / "fifo.txt"),
    "zero_width_prompts": text("zw.txt", "\u200b\n\ufeff\u200d\n \u2060 \n"),
    "link_loops": odd.link_loops,
    "damaged_model_dir": lambda d: odd.truncate_half(tiny_model_dir(d, "damaged", pickle=False) / "model.safetensors"),
    "damaged_tunnel": odd.damaged_tunnel,
    "long_prompts": odd.long_prompts,
    "results_n_huge": odd.edited_results(n_prompts=10**30),
    "results_n_inconsistent": odd.edited_results(n_prompts=13),
}


# ---------------------------------------------------------------- the cases


CASES: tuple[Case, ...] = (
    # usage errors from typer/click
    case("no-such-command", "scna", "misspelt subcommand", "No such command 'scna'"),
    case("models-unknown-option", "models --jsn", "unknown option", "No such option: --jsn"),
    case("models-format-unknown", "models --format xml", "--format not table/json", "--format 'xml'", "--format json"),
    case("models-json-and-table", "models --json --format table", "--json with --format table", "contradict"),
    case("prompts-extra-argument", "prompts mixed", "unexpected argument", "unexpected extra argument(s) (mixed)"),
    case("capture-missing-out", f"capture --model {TWIN}", "required --out missing", "Missing option '--out'"),
    case(
        "capture-batch-not-int",
        f"capture --model {TWIN} --batch-size many --out out",
        "non-integer --batch-size",
        "Invalid value 'many' for '--batch-size'",
        "valid integer",
    ),
    # models
    case(
        "unknown-alias",
        "capture --model pythia-41m --out out",
        "unknown model alias",
        "unknown model 'pythia-41m'",
        "closest aliases: pythia-410m",
    ),
    case(
        "missing-local-dir",
        "capture --model ./no/such/model --out out",
        "local model directory that does not exist",
        "model directory './no/such/model' does not exist",
        "--model",
    ),
    case(
        "missing-gguf",
        "capture --model nothere.gguf --out out",
        ".gguf path that does not exist",
        "'nothere.gguf'",
        "does not exist",
    ),
    case(
        "not-gguf",
        "capture --model model.gguf --out out",
        "a .gguf that is not GGUF",
        "'model.gguf'",
        "not a GGUF file",
        "--model",
        setup=("fake_gguf",),
    ),
    case(
        "bad-revision",
        "capture --model pythia-410m --revision step7 --out out",
        "a Pythia checkpoint that does not exist",
        "'step7'",
        "step143000",
        "--revision",
    ),
    case("dtype", f"capture --model {TWIN} --dtype float8 --out out", "--dtype nonsense", "'float8'", "--dtype"),
    case(
        "device-cuda",
        f"capture --model {TWIN} --device cuda --out out",
        "--device cuda without a GPU",
        "--device 'cuda'",
        "no CUDA device",
        "--device cpu",
    ),
    case(
        "device-nonsense",
        f"scan --model {TWIN} --device gpu0 --prompts p.txt --out run",
        "--device nonsense",
        "--device 'gpu0'",
        "not a torch device",
        setup=("prompts",),
    ),
    case(
        "pickle-without-flag",
        "capture --model pickled --out out",
        "weights only as pytorch_model.bin (pickle)",
        "'pickled'",
        "--allow-pickle",
        setup=("pickle_dir",),
    ),
    case(
        "pickle-payload",
        "capture --model payload --allow-pickle --out out",
        "--allow-pickle, but the pickle holds a code-running object",
        "'payload'",
        "weights_only=True",
        setup=("payload_pickle_dir",),
    ),
    case(
        "remote-code-without-flag",
        "capture --model custom --out out",
        "config with auto_map (custom model code)",
        "'custom'",
        "auto_map",
        "--trust-remote-code",
        setup=("custom_code_dir",),
    ),
    # capture options
    case("layers-syntax", f"capture --model {TWIN} --layers a,b --out out", "--layers not integers", "--layers 'a,b'"),
    case(
        "layer-out-of-range",
        f"capture --model {TWIN} --layers 0,9 --out out",
        "layer beyond the model",
        "9",
        "out of range",
        "--layers",
    ),
    case("batch-size-zero", f"capture --model {TWIN} --batch-size 0 --out out", "--batch-size 0", "0", "--batch-size"),
    case(
        "padding-side",
        f"capture --model {TWIN} --padding-side middle --out out",
        "--padding-side nonsense",
        "'middle'",
        "--padding-side",
    ),
    case(
        "capture-out-exists",
        f"capture --model {TWIN} --out out",
        "--out holds a capture, no --overwrite",
        "'out'",
        "--overwrite",
        setup=("owned_capture",),
    ),
    case(
        "capture-out-foreign",
        f"capture --model {TWIN} --out out",
        "--out holds a file geoprobe did not write",
        "'existing.txt'",
        "did not write",
        setup=("capture_dir",),
    ),
    case(
        "capture-overwrite-foreign",
        f"capture --model {TWIN} --out proj --overwrite",
        "--overwrite on a directory holding other files",
        "'important.txt'",
        "did not write",
        setup=("foreign_project",),
    ),
    case(
        "capture-out-cwd",
        f"capture --model {TWIN} --out .",
        "--out is the working directory",
        "'.'",
        "working directory",
    ),
    case(
        "capture-out-is-file",
        f"capture --model {TWIN} --out afile",
        "--out names a regular file",
        "'afile'",
        "is a file",
        setup=("a_file",),
    ),
    case(
        "out-under-a-file",
        f"scan --model {TWIN} --prompts p.txt --out afile/run",
        "--out lies under a regular file",
        "'afile'",
        "not a directory",
        setup=("a_file", "prompts"),
    ),
    case(
        "out-not-writable",
        f"scan --model {TWIN} --prompts p.txt --out /proc/geoprobe-run",
        "--out where nothing can be written",
        "/proc",
        "cannot write",
        setup=("prompts",),
    ),
    case(
        "layers-empty",
        ("capture", "--model", TWIN, "--layers", " , ,", "--out", "out"),
        "--layers naming no layer",
        "names nothing",
        "--layers 0,12,-1 (or all)",
    ),
    case(
        "revision-on-twin",
        f"capture --model {TWIN} --revision step0 --out out",
        "--revision on a twin",
        "--revision 'step0'",
        "does not apply",
        "twin",
    ),
    case(
        "seed-too-large",
        f"scan --model {TWIN} --prompts p.txt --seed 18446744073709551616 --out run",
        "--seed of 2**64",
        "18446744073709551616",
        "4294967295",
        "--seed",
        setup=("prompts",),
    ),
    case(
        "seed-negative",
        f"scan --model {TWIN} --prompts p.txt --seed -1 --out run",
        "negative --seed",
        "seed -1",
        "--seed",
        setup=("prompts",),
    ),
    # prompts
    case(
        "prompt-file-missing",
        f"capture --model {TWIN} --prompts nope.txt --out out",
        "prompt file missing",
        "'nope.txt'",
        "does not exist",
        "--prompts",
    ),
    case(
        "prompt-file-empty",
        f"capture --model {TWIN} --prompts empty.txt --out out",
        "prompt file empty",
        "'empty.txt'",
        "holds no prompts",
        setup=("empty_prompts",),
    ),
    case(
        "prompt-file-latin1",
        f"capture --model {TWIN} --prompts latin1.txt --out out",
        "prompt file not UTF-8",
        "'latin1.txt'",
        "UTF-8",
        setup=("latin1_prompts",),
    ),
    case(
        "too-few-prompts",
        f"scan --model {TWIN} --prompts few.txt --out run",
        "3 prompts for a scan",
        "3 distinct prompt(s)",
        "at least",
        "--prompts",
        setup=("few_prompts",),
    ),
    case(
        "unknown-prompt-set",
        f"scan --model {TWIN} --prompts mathz --out run",
        "unknown prompt set",
        "'mathz'",
        "available: builtin, mixed",
        "--prompts/--domain",
    ),
    case(
        "prompts-and-domain",
        f"scan --model {TWIN} --prompts builtin --domain math --out run",
        "--prompts and --domain both",
        "--prompts 'builtin'",
        "--domain 'math'",
        "only one",
    ),
    case(
        "sample-not-corpus",
        f"sample --model {TWIN} --prompts builtin --out s.jsonl",
        "sample from a non-corpus set",
        "--prompts 'builtin'",
        "not a corpus set",
    ),
    case(
        "sample-out-exists",
        f"sample --model {TWIN} --out sampled.jsonl",
        "--out exists, no --force",
        "'sampled.jsonl'",
        "--force",
        setup=("sample_out",),
    ),
    case(
        "sample-force-foreign",
        f"sample --model {TWIN} --out mine.jsonl --force",
        "--force on a file of the user's",
        "'mine.jsonl'",
        "not written by geoprobe",
        setup=("sample_out_foreign",),
    ),
    # scan / run
    case(
        "scan-out-exists",
        f"scan --model {TWIN} --prompts p.txt --out run",
        "existing run without --force",
        "'run/results.json' already exists",
        "--force",
        setup=("prompts", "scan_run"),
    ),
    case(
        "scan-force-foreign-page",
        f"scan --model {TWIN} --prompts p.txt --out run --force",
        "--force where report.html is not geoprobe's",
        "'run/report.html'",
        "not written by geoprobe",
        setup=("prompts", "scan_run_foreign_page"),
    ),
    case(
        "scan-force-foreign-capture",
        f"scan --model {TWIN} --prompts p.txt --out run --force",
        "--force where capture/ holds a file of the user's",
        "'notes.txt'",
        "did not write",
        setup=("prompts", "scan_capture_foreign"),
    ),
    case("scan-null", f"scan --model {TWIN} --null uniform --out run", "--null nonsense", "'uniform'", "--null"),
    case(
        "scan-init-draws",
        f"scan --model {TWIN} --init-draws 99 --out run",
        "--init-draws beyond the limit of the random-init null's draws",
        "init draws 99 outside 0..20",
        "--init-draws",
    ),
    case(
        "scan-weight-seed-real-model",
        "scan --model smollm2-135m --weight-seed 3 --out run",
        "--weight-seed for a model with real weights (a weight seed is a twin's)",
        "--weight-seed 3 does not apply to --model 'smollm2-135m'",
        before_load=True,
    ),
    case(
        "scan-ci-layers",
        f"scan --model {TWIN} --ci-layers some --out run",
        "--ci-layers nonsense",
        "'some'",
        "--ci-layers",
    ),
    case(
        "scan-scatter-layers",
        f"scan --model {TWIN} --scatter-layers x --out run",
        "--scatter-layers not integers",
        "'x'",
        "--scatter-layers",
    ),
    case(
        "recipe-missing",
        "run nope.toml --model twin:llama-3.2-1b",
        "recipe file missing",
        "'nope.toml'",
        "does not exist",
    ),
    case(
        "recipe-unknown-key",
        f"run bad_key.toml --model {TWIN}",
        "recipe: unknown key",
        "unknown key analyses.n_resampels",
        setup=("recipe_unknown_key",),
    ),
    case(
        "recipe-unknown-section",
        f"run bad_section.toml --model {TWIN}",
        "recipe: unknown section",
        "unknown section [analysis]",
        setup=("recipe_unknown_section",),
    ),
    case(
        "recipe-wrong-type",
        f"run bad_type.toml --model {TWIN}",
        "recipe: string where a number belongs",
        "n_resamples = 'many'",
        "not an integer",
        setup=("recipe_wrong_type",),
    ),
    case(
        "recipe-unknown-command",
        f"run bad_cmd.toml --model {TWIN}",
        "recipe: unknown command",
        "command 'scna'",
        "this geoprobe runs",
        setup=("recipe_unknown_command",),
    ),
    case(
        "recipe-bad-toml",
        f"run broken.toml --model {TWIN}",
        "recipe: TOML syntax error",
        "'broken.toml'",
        "not valid UTF-8 TOML",
        setup=("recipe_bad_toml",),
    ),
    case(
        "recipe-windtunnel-type",
        "run wt.toml",
        "windtunnel recipe: string V",
        "vocab",
        "'ten'",
        setup=("recipe_wt_wrong_type",),
    ),
    case(
        "recipe-sula-unknown-key",
        f"run sula.toml --model {TWIN}",
        "sula recipe: unknown key",
        "unknown key sula.n_per_kk",
        setup=("recipe_sula_unknown_key",),
    ),
    case(
        "recipe-flag-unused",
        f"run sula.toml --model {TWIN} --layers 3",
        "a flag the recipe's command does not use",
        "--layers is not used by recipe 'sula.toml'",
        "[sula]",
        setup=("sula_recipe",),
    ),
    case(
        "recipe-model-unused",
        "run sula.toml --prompts p.txt",
        "--prompts on a SULA recipe",
        "--prompts",
        "not used by recipe 'sula.toml'",
        setup=("sula_recipe", "prompts"),
    ),
    case(
        "recipe-layers-string",
        f"run layers.toml --model {TWIN}",
        "recipe: layers as a string",
        "capture.layers = '0,1'",
        "list of integers",
        setup=("recipe_layers_string",),
    ),
    case(
        "recipe-nested-list",
        f"run nested.toml --model {TWIN}",
        "recipe: a list nested wrongly",
        "intervene.experiments",
        "list of",
        setup=("recipe_nested",),
    ),
    case(
        "recipe-empty",
        f"run empty.toml --model {TWIN}",
        "recipe: empty file",
        "'empty.toml'",
        "[probe]",
        setup=("recipe_empty",),
    ),
    case(
        "recipe-no-probe",
        f"run noprobe.toml --model {TWIN}",
        "recipe: no [probe] table",
        "'noprobe.toml'",
        "[probe]",
        setup=("recipe_no_probe",),
    ),
    case(
        "recipe-set-and-file",
        f"run both.toml --model {TWIN}",
        "recipe: [prompts] set and file",
        "both set and file",
        setup=("recipe_set_and_file",),
    ),
    # report / compare: wrong kind, damaged, missing
    case(
        "report-wrong-kind",
        "report capture.json",
        "a file without a report given to report",
        "'capture.json'",
        "kind 'geoprobe.capture'",
        setup=("capture_results",),
    ),
    case(
        "report-damaged",
        "report wt.json",
        "a wind-tunnel results file missing its data",
        "'wt.json'",
        "damaged",
        setup=("wt_results",),
    ),
    case(
        "report-corrupt",
        "report results.json",
        "a truncated results.json",
        "'results.json'",
        "not valid JSON",
        setup=("corrupt_results",),
    ),
    case(
        "report-future-version",
        "report results.json",
        "results.json from a newer geoprobe",
        "version 999",
        setup=("future_results",),
    ),
    case(
        "report-missing",
        "report nowhere/results.json",
        "results.json that does not exist",
        "'nowhere/results.json'",
        "does not exist",
    ),
    case(
        "windtunnel-report-wrong-kind",
        "windtunnel report scan.json",
        "a scan results.json given to windtunnel report",
        "'scan.json'",
        "kind 'geoprobe.scan'",
        setup=("scan_results_kind",),
    ),
    case(
        "compare-wrong-kind",
        "compare sula.json wt.json --out cmp",
        "non-scan results given to compare",
        "'sula.json'",
        "kind 'geoprobe.sula'",
        setup=("sula_results", "wt_results"),
    ),
    case(
        "compare-corrupt",
        "compare results.json results.json --out cmp",
        "a truncated results.json given to compare",
        "'results.json'",
        "not valid JSON",
        setup=("corrupt_results",),
    ),
    # compare-domains
    case(
        "domains-unknown",
        f"compare-domains --model {TWIN} --domains math,poetry --out run",
        "unknown domain",
        "'poetry'",
    ),
    # sula / intervene
    case("sula-k-syntax", f"sula --model {TWIN} --k 0,two --out run", "--k not integers", "--k '0,two'"),
    case("sula-k-negative", f"sula --model {TWIN} --k -1,2 --out run", "negative --k", "-1", "--k"),
    case(
        "sula-agreement", f"sula --model {TWIN} --agreement 1.5 --out run", "--agreement above 1", "1.5", "--agreement"
    ),
    case(
        "sula-labels",
        f"sula --model {TWIN} --labels bip --out run",
        "one label",
        "--labels 'bip'",
        "two different labels",
    ),
    case(
        "sula-out-exists",
        f"sula --model {TWIN} --out run",
        "existing sula run",
        "sula.json",
        "--force",
        setup=("sula_run",),
    ),
    case(
        "sula-force-foreign-json",
        f"sula --model {TWIN} --out run --force",
        "--force where sula.json is not geoprobe's",
        "'run/sula.json'",
        "not written by geoprobe",
        setup=("sula_json_foreign",),
    ),
    case("intervene-op", f"intervene --model {TWIN} --op flip --out run", "--op nonsense", "'flip'", "--op"),
    case(
        "intervene-strength",
        f"intervene --model {TWIN} --op cut --strength 2 --out run",
        "cut strength above 1",
        "2",
        "--strength",
    ),
    case(
        "intervene-layer-range",
        f"intervene --model {TWIN} --layers 7 --out run",
        "layer beyond the model",
        "7",
        "--layers",
    ),
    case("intervene-controls", f"intervene --model {TWIN} --controls 0 --out run", "no random controls", "--controls"),
    # windtunnel
    case(
        "wt-vocab",
        "windtunnel train --task bijection --scale tiny --vocab 1 --out wt",
        "bijection V below 2",
        "1",
        "--vocab",
        "2",
    ),
    case(
        "wt-length",
        "windtunnel train --task hmm --scale tiny --length 900 --out wt",
        "HMM K above 500",
        "900",
        "--length",
        "500",
    ),
    case(
        "wt-states", "windtunnel run --task hmm --scale tiny --states 11 --out wt", "HMM S above 10", "11", "--states"
    ),
    case(
        "wt-convention",
        "windtunnel train --task hmm --scale tiny --convention theirs --out wt",
        "unknown convention",
        "'theirs'",
        "--convention",
    ),
    case(
        "wt-authors-repeat",
        "windtunnel run --task bijection --scale tiny --convention authors --repeat 0.5 --out wt",
        "--repeat under the authors' convention",
        "--repeat",
        "--convention geoprobe",
    ),
    case("wt-task", "windtunnel train --task maze --scale tiny --out wt", "unknown task", "'maze'", "--task"),
    case("wt-scale", "windtunnel train --scale huge --out wt", "unknown scale", "'huge'", "--scale"),
    case(
        "wt-device",
        "windtunnel train --scale tiny --device cuda --out wt",
        "--device cuda without a GPU",
        "no CUDA device",
        "--device cpu",
    ),
    case(
        "wt-eval-not-a-run",
        "windtunnel eval notarun",
        "eval on a directory that is no run",
        "'notarun",
        "windtunnel train",
        setup=("not_a_run",),
    ),
    case(
        "wt-run-exists",
        "windtunnel run --scale tiny --out run",
        "existing windtunnel.json",
        "windtunnel.json",
        "--force",
        setup=("windtunnel_run",),
    ),
    case(
        "wt-foreign-learner-dir",
        "windtunnel run --scale tiny --out wt --force",
        "a learner directory of the user's",
        "'notes.txt'",
        "did not write",
        setup=("wt_foreign_learner",),
    ),
    case(
        "wt-seeds-one",
        "windtunnel run --task hmm --scale tiny --seeds 1 --out wt",
        "--seeds 1 (a spread needs two seeds)",
        "seeds = 1",
        "--seeds",
        "between 2 and 50",
    ),
    case(
        "wt-seeds-repeat",
        "windtunnel run --task hmm --scale tiny --seeds 0,2,0 --out wt",
        "a seed listed twice",
        "[0, 2, 0]",
        "--seeds",
    ),
    # denoise
    case("denoise-task", "denoise --task spiral --tiny --out dn", "unknown task", "'spiral'", "--task"),
    case("denoise-L", "denoise --context-length 0 --tiny --out dn", "L = 0", "0", "--context-length"),
    case("denoise-lengths", "denoise --lengths 20,x --tiny --out dn", "--lengths not integers", "--lengths '20,x'"),
    case(
        "denoise-convention", "denoise --convention paper --tiny --out dn", "unknown --convention", "'paper'", "authors"
    ),
    case(
        "denoise-authors-dim",
        "denoise --task sphere --convention authors --dim 6 --tiny --out dn",
        "an authors' sphere dimension too large for n",
        "S^6 in a 7-dim subspace",
        "--dim between 1 and 5",
    ),
    case(
        "denoise-out-exists",
        "denoise --tiny --out run",
        "existing denoise run",
        "denoise.json",
        "--force",
        setup=("denoise_run",),
    ),
    # dynamics
    case("dynamics-steps", "dynamics --steps 0 --out dy", "--steps 0", "steps 0 is below 1", "--steps"),
    case("dynamics-lr", "dynamics --lr-value -1 --out dy", "negative --lr-value", "lr_value -1.0", "--lr-value"),
    # positional
    case(
        "positional-decreasing",
        f"positional --model {TWIN} --lengths 32,16 --out pos",
        "decreasing --lengths",
        "32,16",
        "--lengths",
    ),
    case(
        "positional-max-length",
        f"positional --model {TWIN} --max-length 8 --out pos",
        "--max-length below 16",
        "8",
        "--max-length",
    ),
    case(
        "positional-both",
        f"positional --model {TWIN} --lengths 16,32 --max-length 64 --out pos",
        "--lengths and --max-length",
        "--lengths",
        "--max-length",
    ),
    case(
        "positional-windtunnel",
        "positional --windtunnel notarun --out pos",
        "--windtunnel not a run",
        "'notarun'",
        "windtunnel train",
        setup=("not_a_run",),
    ),
    case(
        "positional-exists",
        f"positional --model {TWIN} --out run",
        "existing positional run",
        "positional.json",
        "--force",
        setup=("positional_run",),
    ),
    case(
        "positional-windtunnel-model",
        f"positional --windtunnel notarun --model {TWIN}",
        "--model with --windtunnel",
        "--model",
        "does not apply with --windtunnel",
        setup=("not_a_run",),
    ),
    # issue 17: runaway and odd inputs
    case(
        "prompt-file-huge",
        f"capture --model {TWIN} --prompts big.txt --out out",
        "a 50 MiB prompt file (sparse)",
        "'big.txt' is 50.0 MiB",
        "16 MiB limit",
        "split it",
        setup=("huge_prompts",),
    ),
    case(
        "prompt-file-fifo",
        f"capture --model {TWIN} --prompts fifo.txt --out out",
        "a FIFO as --prompts (used to block)",
        "'fifo.txt' is a FIFO",
        "not a regular file",
        "--prompts",
        setup=("fifo_prompts",),
    ),
    case(
        "prompt-file-dev-zero",
        f"scan --model {TWIN} --prompts /dev/zero --out run",
        "/dev/zero as --prompts",
        "'/dev/zero' is a character device",
        "not a regular file",
    ),
    case(
        "prompt-file-zero-width",
        f"capture --model {TWIN} --prompts zw.txt --out out",
        "a prompt file of only zero-width and blank lines",
        "'zw.txt'",
        "holds no prompts",
        setup=("zero_width_prompts",),
    ),
    case(
        "model-link-loop",
        "capture --model loop --out out",
        "--model a symbolic-link loop (ln -s loop loop)",
        "model path 'loop' is a symbolic-link loop",
        "--model",
        setup=("link_loops",),
    ),
    case(
        "model-link-loop-dot",
        "capture --model ./loop --out out",
        "the same loop as ./loop",
        "model path './loop' is a symbolic-link loop",
        setup=("link_loops",),
    ),
    case(
        "model-link-loop-subdir",
        "scan --model dir/loop --out run",
        "a loop inside a directory (dir/loop)",
        "model path 'dir/loop' is a symbolic-link loop",
        setup=("link_loops",),
    ),
    case(
        "model-weights-damaged",
        "capture --model damaged --out out",
        "a local model whose model.safetensors is truncated",
        "model file 'damaged/model.safetensors' is damaged",
        "--model",
        setup=("damaged_model_dir",),
    ),
    case(
        "wt-checkpoint-damaged",
        "windtunnel eval run",
        "a wind-tunnel run whose final model.safetensors is truncated",
        "checkpoint file 'run/transformer/checkpoints/step-0000002/model.safetensors' is damaged",
        "delete 'run/transformer/checkpoints/step-0000002'",
        setup=("damaged_tunnel",),
    ),
    case(
        "capture-max-tokens-zero",
        f"capture --model {TWIN} --max-tokens 0 --out out",
        "--max-tokens 0",
        "max tokens 0",
        "--max-tokens 1 or more",
    ),
    case(
        "scan-max-tokens-zero",
        f"scan --model {TWIN} --prompts p.txt --max-tokens 0 --out run",
        "--max-tokens 0 (was checked only after the model loaded)",
        "max tokens 0",
        "--max-tokens 1 or more",
        setup=("prompts",),
    ),
    case(
        "capture-out-of-memory",
        f"capture --model {TWIN} --prompts long.txt --batch-size 12 --out out",
        "12 prompts of ~1900 tokens in one batch, 300 MiB available (figure planted)",
        "batch of 12 prompt(s) of 1911 tokens needs about",
        "300 MiB set by GEOPROBE_MEMORY_AVAILABLE",
        "--batch-size 5",
        "--max-tokens",
        setup=("long_prompts",),
        env=(("GEOPROBE_MEMORY_AVAILABLE", "300MiB"),),
    ),
    case(
        "report-n-prompts-huge",
        "report results.json",
        "a results.json whose n_prompts is 10^30",
        "'results.json' is damaged",
        "the integer 1000000000000000000000000000000",
        setup=("results_n_huge",),
    ),
    case(
        "report-n-prompts-inconsistent",
        "report results.json",
        "n_prompts 13 where the analyses hold 12 prompts",
        "'results.json' is damaged",
        "n_prompts is 13 but manifold.n holds 12",
        setup=("results_n_inconsistent",),
    ),
    case(
        "local-heads-do-not-divide",
        "capture --model heads5 --out out",
        "a local model whose config.json says 5 heads on d_model 64 (no head_dim)",
        "LlamaForCausalLM (heads5)",
        "hidden_size 64 does not divide into num_attention_heads 5",
        setup=("heads_5_dir",),
    ),
    case(
        "local-kv-heads-do-not-divide",
        "capture --model kv3 --out out",
        "a local model whose config.json says 3 key/value heads for 4 query heads",
        "LlamaForCausalLM (kv3)",
        "does not divide into num_key_value_heads 3",
        setup=("kv_heads_3_dir",),
    ),
    case(
        "device-map-bad-json",
        "capture --model plain --device-map {model.layers.1:disk} --out out",
        "--device-map that looks like a JSON object but is not JSON",
        "is not valid JSON",
        setup=("plain_model_dir",),
    ),
)


def _join(*modules: object) -> tuple[tuple[Case, ...], dict[str, Callable[[Path], None]]]:
    """The cases and setups above followed by each topic module's (issue 27: one module a topic)."""
    cases, setups = list(CASES), dict(SETUPS)
    for m in modules:
        for name, make in m.SETUPS.items():  # type: ignore[attr-defined]
            assert name not in setups, f"setup {name!r} is defined twice"
            setups[name] = make
        cases += m.CASES  # type: ignore[attr-defined]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "two cases share an id"
    return tuple(cases), setups


CASES, SETUPS = _join(
    cases_force,
    cases_sizes,
    cases_text,
    cases_wrong,
    cases_clear,
    cases_experiments,
    cases_trajectory,
    cases_executor,
    cases_sweep,
    cases_weights,
)

# ---------------------------------------------------------------- running a case


def _snapshot(d: Path) -> dict[str, str]:
    snap = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        snap[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return snap


@contextmanager
def _model_guard(workdir: Path, loaded: list[str]) -> Iterator[None]:
    """Record what the case asks load_model for; let weights load only from files the case made
    (twins need none), so that a case that would load a real model fails instead."""
    from geoprobe.models import loading

    real = (loading.load_model, loading._load_gguf_file, loading._load_pretrained)

    def refuse(what: object) -> None:
        raise AssertionError(f"error case loaded {what!r}: it must fail before a real model loads")

    def ours(location: object) -> bool:
        p = Path(str(location))
        return (p if p.is_absolute() else workdir / p).resolve().is_relative_to(workdir.resolve())

    def load_model(name: str = "", *a, **k):
        loaded.append(name)
        return real[0](name, *a, **k)

    def load_gguf_file(path, *a, **k):
        return real[1](path, *a, **k) if ours(path) else refuse(path)

    def load_pretrained(model_id, location, *a, source=None, **k):
        return (
            real[2](model_id, location, *a, source=source, **k)
            if source == "local" and ours(location)
            else refuse(location)
        )

    loading.load_model, loading._load_gguf_file, loading._load_pretrained = load_model, load_gguf_file, load_pretrained
    try:
        yield
    finally:
        loading.load_model, loading._load_gguf_file, loading._load_pretrained = real


def run_case(case: Case, workdir: Path) -> Outcome:
    """Run ``geoprobe <case.argv>`` in-process with ``workdir`` as cwd (made and set up first)."""
    from geoprobe.cli import main

    workdir.mkdir(parents=True, exist_ok=True)
    for name in case.setup:
        SETUPS[name](workdir)
    before = _snapshot(workdir)
    out, err, loaded = io.StringIO(), io.StringIO(), []
    old_cwd, old_argv = os.getcwd(), sys.argv
    old_env = {k: os.environ.get(k) for k, _ in case.env}
    code: int = 0
    try:
        os.environ.update(dict(case.env))
        os.chdir(workdir)
        sys.argv = ["geoprobe", *case.argv]
        with _model_guard(workdir, loaded), redirect_stdout(out), redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(old_cwd)
        sys.argv = old_argv
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    after = _snapshot(workdir)
    changed = sorted({k for k in before.keys() | after.keys() if before.get(k) != after.get(k)})
    return Outcome(code=code, out=out.getvalue(), err=err.getvalue(), changed=tuple(changed), loaded=tuple(loaded))


#: what must never reach the terminal raw (issue 27 part 3): C0 controls but tab and newline, DEL, C1
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def check(case: Case, outcome: Outcome) -> list[str]:
    """What is wrong with ``outcome`` (empty: the case meets the error contract)."""
    problems = []
    if outcome.code != case.code:
        problems.append(f"exit {outcome.code}, expected {case.code}")
    if len(outcome.lines) != 1:
        problems.append(f"{len(outcome.lines)} stderr lines, expected 1")
    line = outcome.lines[0] if outcome.lines else ""
    if not line.startswith("error: "):
        problems.append("the line does not start with 'error: '")
    missing = [s for s in case.expect if s not in line]
    if missing:
        problems.append(f"missing {missing}")
    if "Traceback" in outcome.err or "Traceback" in outcome.out:
        problems.append("a traceback was printed")
    if RAW_CONTROL.search(outcome.out + outcome.err):
        problems.append("a control character reached the terminal raw")
    if outcome.changed:
        problems.append(f"wrote or changed {list(outcome.changed)}")
    if case.before_load and outcome.loaded:
        problems.append(f"loaded {list(outcome.loaded)} before refusing")
    return problems


# ---------------------------------------------------------------- docs/errors.md

HEADER = """# Error messages

Every bad input below gets one line on stderr, `error: …`, naming the value, the limit and the
flag to change, and exit status 2 (`--debug` anywhere on the command line shows the traceback
instead). Where stderr is not a terminal, a status line such as `loading twin:llama-3.2-1b …` may come
before it: a step that runs over 2 s says what it does. Nothing already on disk is written or replaced.
Paths are relative to the working directory; `twin:…` models are tiny random-init twins.

Generated by `python -m tests.cli.error_cases --markdown > docs/errors.md` from the cases that
`tests/cli/test_error_audit.py` runs; a test fails when this file and the CLI disagree.

| # | command | bad input | error line |
|---|---|---|---|
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(outcomes: dict[str, Outcome]) -> str:
    rows = []
    for i, c in enumerate(CASES, 1):
        o = outcomes[c.id]
        line = o.lines[0] if len(o.lines) == 1 else " / ".join(o.lines)
        cmd = "".join(f"{k}={v} " for k, v in c.env) + "geoprobe " + " ".join(c.argv)
        rows.append(f"| {i} | `{_cell(cmd)}` | {_cell(c.bad)} | `{_cell(line)}` |")
    return HEADER + "\n".join(rows) + "\n"


def run_all(base: Path) -> dict[str, Outcome]:
    return {c.id: run_case(c, base / c.id) for c in CASES}


def main(argv: list[str]) -> int:
    import tempfile

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = run_all(Path(tmp))
    if "--markdown" in argv:
        sys.stdout.write(markdown(outcomes))
        return 0
    bad = 0
    for c in CASES:
        o = outcomes[c.id]
        problems = check(c, o)
        bad += bool(problems)
        print(
            f"{'FAIL' if problems else 'ok  '} {c.id:28} exit {o.code} {o.lines!r}"
            + (f"  <- {'; '.join(problems)}" if problems else "")
        )
    print(f"{len(CASES)} cases, {bad} failing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
