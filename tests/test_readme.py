"""README's Use section runs as written, in order (issue 39 case 2).

The first bash block of README's "## Use" section is read out of README.md and run line by line, in order, in a
fresh directory holding a copy of ``probes/`` (as a clone's root holds it): ``runs/…``, ``p.jsonl`` and
``sweep.toml`` resolve there, each line using what an earlier one wrote. A ``geoprobe`` line runs in this
process (``geoprobe.cli.main``, as the console script calls it; a subprocess each would add the start-up of
torch to every line) with the command as a user types it, plus, for the slow lines, the smallest settings of
:data:`SMALLEST`; any other step (the heredoc that writes the sweep file) runs in bash. Every line must exit 0
and write what it promises. The second bash block (patterns with placeholders, Hub models, a Ray cluster) is not
run. The embedded models and the caches of ``$GEOPROBE_CACHE`` (dequantised GGUF weights, prompt entropies)
are used as they are."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli import run_main
from tests.conftest import requires_smollm2

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: the commands README's runnable block must keep showing
COVERED = {
    "models",
    "prompts",
    "scan",
    "report",
    "compare-domains",
    "sample",
    "run",
    "compare",
    "sula",
    "intervene",
    "positional",
    "capture",
    "windtunnel",
    "denoise",
    "trajectory",
    "sweep",
}

SAMPLING = ("--candidates", "60", "--per-quintile", "4", "--min-tokens", "8", "--max-prompt-tokens", "32")

#: a slow README line (its words, comment left out) → the smallest settings this test adds to it and the file it
#: must write (a line with --out not listed here must write its --out). Every key must be a line of the block.
SMALLEST: dict[str, tuple[tuple[str, ...], str]] = {
    "geoprobe scan --model smollm2-135m": ((*SAMPLING, "--init-draws", "1"), "runs/smollm2-135m/results.json"),
    "geoprobe scan --domain math --out runs/smollm2-135m-math": (
        (*SAMPLING, "--init-draws", "1"),
        "runs/smollm2-135m-math/results.json",
    ),
    "geoprobe report runs/smollm2-135m/results.json --force": ((), "runs/smollm2-135m/report.html"),
    "geoprobe compare-domains --model smollm2-135m": (
        ("--domains", "math", "--domain-candidates", "60", *SAMPLING, "--n-resamples", "100")
        + ("--n-permutations", "100"),
        "runs/smollm2-135m-domains/domains.json",
    ),
    "geoprobe sample --prompts mixed --out p.jsonl": (SAMPLING, "p.jsonl"),
    "geoprobe run probes/scan.toml --model gemma-3-270m --prompts p.jsonl --out runs/gemma3": (
        ("--init-draws", "1"),
        "runs/gemma3/results.json",
    ),
    "geoprobe compare runs/smollm2-135m runs/gemma3": ((), "runs/compare/comparison.json"),
    "geoprobe sula --model smollm2-135m": (
        ("--k", "0,2,4", "--n-per-k", "4", "--n-resamples", "100"),
        "runs/smollm2-135m-sula/sula.json",
    ),
    "geoprobe intervene --model smollm2-135m": (
        ("--layers", "-1", "--controls", "1", "--n-per-k", "2", "--strength", "1", "--n-resamples", "50"),
        "runs/smollm2-135m-intervene/intervene.json",
    ),
    "geoprobe positional --model smollm2-135m": (
        ("--lengths", "32,64", "--n-prompts", "6", "--n-resamples", "50", "--layers", "0,15,-1"),
        "runs/smollm2-135m-positional/positional.json",
    ),
    "geoprobe windtunnel run --task bijection": (
        ("--scale", "tiny"),
        "runs/windtunnel-bijection-tiny/windtunnel.json",
    ),
    "geoprobe denoise --task sphere": (("--tiny",), "runs/denoise-sphere/denoise.json"),
    "geoprobe trajectory": (
        ("--steps", "512", "--layers", "1", "--hidden-size", "32", "--heads", "2", "--vocab-size", "300"),
        "runs/trajectory/checkpoints/step512",
    ),
    "geoprobe scan --model runs/trajectory/checkpoints/step512 --out runs/step512": (
        SAMPLING,
        "runs/step512/results.json",
    ),
    "geoprobe sweep sweep.toml --out runs/sweep": ((), "runs/sweep/sweep.parquet"),
}

#: lines that write nothing: what their output must say
SAYS = {
    "geoprobe models": "smollm2-135m",
    "geoprobe prompts": "mixed",
    "geoprobe sweep status runs/sweep": "3 done, 0 failed",
}


def use_blocks(text: str) -> list[str]:
    """The bash blocks of README's "## Use" section, in order."""
    m = re.search(r"^## Use\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "README.md has no '## Use' section"
    return re.findall(r"^```bash\n(.*?)^```", m.group(1), re.S | re.M)


def steps(block: str) -> list[str]:
    """The block's steps: one line each, a heredoc with its body; blank lines and comments left out."""
    out: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        here = re.search(r"<<-?\s*'?(\w+)'?", line)
        if here:
            body = [line]
            for more in lines:
                body.append(more)
                if more.strip() == here.group(1):
                    break
            else:
                raise AssertionError(f"README: heredoc {line!r} never ends")
            out.append("\n".join(body))
        else:
            out.append(line)
    return out


def _stamp(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.exists() else None


def test_the_use_section_has_a_runnable_block_covering_the_commands_and_a_pattern_block():
    blocks = use_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2, "README's Use section needs its runnable block and its block of patterns"
    run = [shlex.split(s, comments=True) for s in steps(blocks[0]) if s.startswith("geoprobe ")]
    assert COVERED <= {argv[1] for argv in run}, COVERED - {argv[1] for argv in run}
    lines = {shlex.join(argv) for argv in run}
    assert not set(SMALLEST) - lines, f"SMALLEST names lines README no longer has: {set(SMALLEST) - lines}"
    assert not set(SAYS) - lines, f"SAYS names lines README no longer has: {set(SAYS) - lines}"
    hub = " ".join(blocks[1].split())
    for pattern in ("--revision step0", "./my_model_dir", "./weights.gguf", "--device-map", "--executor ray"):
        assert pattern in hub, pattern


@requires_smollm2
@pytest.mark.slow
def test_every_line_of_the_use_section_runs_in_order(tmp_path):
    """Each line exits 0 and writes its output (new, or rewritten by this line), in a fresh directory."""
    shutil.copytree(ROOT / "probes", tmp_path / "probes")
    ran: list[str] = []
    for step in steps(use_blocks(README.read_text(encoding="utf-8"))[0]):
        if not step.startswith("geoprobe "):
            r = subprocess.run(["bash", "-c", step], cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, f"{step!r} after {ran}: {r.stderr[-2000:]}"
            ran.append(step.splitlines()[0])
            continue
        argv = shlex.split(step, comments=True)
        line = shlex.join(argv)
        extra, product = SMALLEST.get(line, ((), None))
        if product is None and "--out" in argv:
            product = argv[argv.index("--out") + 1]
        target = tmp_path / product if product else None
        before = _stamp(target) if target else None
        code, out, err = run_main([*argv[1:], *extra], cwd=tmp_path)
        assert code == 0, f"{line} {shlex.join(extra)} (after {len(ran)} lines) exited {code}: {err[-3000:]}"
        if target is not None:
            assert target.exists(), f"{line}: {product} was not written"
            assert _stamp(target) != before, f"{line}: {product} was not rewritten"
        else:
            assert SAYS.get(line, "") in out and out.strip(), f"{line}: {out[-2000:]}"
        if line == "geoprobe compare runs/smollm2-135m runs/gemma3":  # the models were scanned on one sample
            assert "were scanned on different" not in err, err
        ran.append(line)
    assert len(ran) >= len(COVERED), ran
