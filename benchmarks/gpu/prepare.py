"""Here, before a GPU machine is lent: pack what the GPU image lacks into ``.gpu/`` (ignored by git).

The lent machine (Python 3.12, torch, transformers 5.17, no network; docs/benchmarks.md "GPU") gets
geoprobe from the carried checkout and everything else from ``.gpu/``:

* ``site.tar.xz``: the wheels below for CPython 3.12 manylinux x86_64, unpacked and packed again as one
  xz archive (one solid archive of Python sources is about a third of the wheels' size). Ray is cut
  to its core (no Java jars, dashboard front end, RLlib, Serve, Data, Train, Tune, LLM): geoprobe
  uses ``ray.init``, tasks and actors only. transformers is the version geoprobe is tested with here.
* ``cache/tokenizers/smollm2-135m``: the embedded tokenizer every twin uses (``$GEOPROBE_CACHE``).

Run from the repository root: ``python benchmarks/gpu/prepare.py`` (downloads with pip: needs the
network; about a minute). The whole of ``.gpu/`` and the checkout must stay under the 64 MiB a device
call carries; this script says how much it is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / ".gpu"
#: what the GPU image lacks (KINDS.md's package list, 2026-11-17), at the versions this checkout is tested with
WHEELS = (
    "transformers==5.24.0",
    "transformer-lens==4.3.0",
    "nnsight==0.8.1",
    "ray==2.60.0",
    "plotly==7.1.0",
    "gguf==0.19.0",
    # transformer-lens
    "beartype==0.23.1",
    "datasets==5.2.0",
    "dill==0.4.1",
    "multiprocess==0.70.19",
    "fancy-einsum==0.0.3",
    "typeguard==4.6.1",
    # nnsight
    "greenlet==3.5.6",
    "pydantic==2.14.4",
    "pydantic_core==2.50.5",
    "annotated-types==0.8.0",
    "typing-inspection==0.4.5",
    # ray
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "referencing==0.37.0",
    "rpds-py==2026.9.1",
)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")  # fmt: skip
#: parts of Ray geoprobe never imports (ray.init, remote tasks and actors need none of them)
RAY_CUT = ("ray/jars/", "ray/dashboard/client/build/", "ray/rllib/", "ray/serve/", "ray/llm/", "ray/data/",
           "ray/train/", "ray/tune/")  # fmt: skip
LIMIT_MIB = 64


def download(dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    for spec in WHEELS:
        name = spec.split("==")[0].replace("-", "_").lower()
        if any(w.name.lower().startswith(name + "-") for w in dest.glob("*.whl")):
            continue
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
             "3.12", "--implementation", "cp", *platforms, "-d", str(dest), spec],
            check=True,
        )  # fmt: skip
    return sorted(dest.glob("*.whl"))


def unpack(wheels: list[Path], site: Path) -> None:
    """Each wheel's files into ``site`` as pip --target would put them (``*.data/purelib|platlib`` at the top)."""
    if site.exists():
        shutil.rmtree(site)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for info in z.infolist():
                name = info.filename
                if name.startswith("ray/") and name.startswith(RAY_CUT) or name.endswith(".js.map"):
                    continue
                parts = name.split("/")
                if parts[0].endswith(".data"):
                    if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                        continue  # scripts, headers: not needed
                    name = "/".join(parts[2:])
                target = site / name
                if info.is_dir():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(info))
                mode = info.external_attr >> 16
                if mode:
                    target.chmod(mode & 0o777 or 0o644)


def main() -> None:
    wheels = download(GPU / "wheels")
    site = GPU / "site"
    unpack(wheels, site)
    archive = GPU / "site.tar.xz"
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        tar.add(site, arcname="site")
    shutil.rmtree(site)
    from geoprobe.models.twins import embedded_tokenizer
    from geoprobe.paths import cache_dir

    embedded_tokenizer()  # fills the cache here, once
    tok = GPU / "cache" / "tokenizers" / "smollm2-135m"
    if tok.exists():
        shutil.rmtree(tok)
    shutil.copytree(cache_dir() / "tokenizers" / "smollm2-135m", tok)
    carried = sum(p.stat().st_size for p in GPU.rglob("*") if p.is_file() and "wheels" not in p.parts)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    tree = sum((ROOT / n).stat().st_size for n in tracked.decode().split("\0") if n and (ROOT / n).is_file())
    total = (carried + tree) / 2**20
    print(f".gpu/ carries {carried / 2**20:.1f} MiB (site.tar.xz {archive.stat().st_size / 2**20:.1f} MiB); "
          f"with the checkout {total:.1f} MiB of the {LIMIT_MIB} MiB a call carries")  # fmt: skip
    if total > LIMIT_MIB:
        sys.exit(f"over the limit by {total - LIMIT_MIB:.1f} MiB")


if __name__ == "__main__":
    main()
