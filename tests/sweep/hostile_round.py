"""The sweep's hostile round (issue 35): kill the driver at every commit of a sweep's life, then rerun; hand-edit
every file a sweep writes, then rerun; each case must end with the same table and results as an
uninterrupted sweep (or, where the sweep cannot tell a file is its own, a refusal that changes nothing).

    python -m tests.sweep.hostile_round               # local executor: kills and edits
    python -m tests.sweep.hostile_round --ray         # the kills again, --executor ray on a 3-node local cluster
    python -m tests.sweep.hostile_round --only edits
    python -m tests.sweep.hostile_round --ray --every 3   # every third commit (a Ray run starts its workers)

The kills run a sweep of one cell that computes and one that cannot load, so every commit of a cell's life
is killed once; the edits, a sweep of two cells (one cell's files are swapped for the other's).

Each case is a subprocess (``python -m tests.sweep.killer``, which dies by ``os._exit`` before its N-th
commit), so a kill leaves exactly what a SIGKILL would. Prints one line per case and the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from tests.sweep.kit import TABLES

ROOT = Path(__file__).resolve().parents[2]
#: two twin cells and one that cannot load, the tiny settings of the sweep tests (one capture batch per cell)
SWEEP = (
    '[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["twin:llama", "twin:qwen3"]\nseed = [0]\n'
    '[[cell]]\nmodel = "twin:nosuchthing"\nseed = 0\n' + TABLES.replace("batch_size = 8", "batch_size = 40")
)
#: the kill rounds' sweep: one cell that computes and one that cannot load (every commit of a cell's life once)
KILL_SWEEP = SWEEP.replace('model = ["twin:llama", "twin:qwen3"]', 'model = ["twin:llama"]')


def run(args: list[str], cwd: Path, kill: int | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    cmd = (
        [sys.executable, "-m", "geoprobe", *args]
        if kill is None
        else [sys.executable, "-m", "tests.sweep.killer", str(kill), *args]
    )
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def snapshot(out: Path) -> dict:
    """What must equal the uninterrupted sweep: the table's numbers and every results file but its times."""
    import pandas as pd

    table = pd.read_parquet(out / "sweep.parquet").sort_values(["cell", "metric", "layer"]).reset_index(drop=True)
    results = {}
    for p in sorted((out / "cells").glob("*/results.json")):
        d = json.loads(p.read_text())
        d.pop("timings", None)
        d["provenance"].pop("created", None)
        results[p.parent.name] = d
    return {"table": table.drop(columns=[]).to_json(), "results": results}


def strays(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if ".tmp-" in p.name or p.name.endswith(".lock"))


def kills(tmp: Path, extra: list[str], label: str, every: int = 1) -> list[tuple[str, bool, str]]:
    """Kill before commit 1, 1 + every, 1 + 2·every, … of the sweep's N commits (every one by default)."""
    spec = tmp / "s.toml"
    spec.write_text(KILL_SWEEP)
    ref = tmp / "ref"
    r = run(["sweep", str(spec), "--out", str(ref), *extra], tmp)
    assert r.returncode == 1, r.stderr
    want = snapshot(ref)
    count = run(["sweep", str(spec), "--out", str(tmp / "count"), *extra], tmp, kill=0)
    n = int(next(ln for ln in count.stderr.splitlines() if ln.startswith("commits: ")).split()[1])
    what = [ln.removeprefix("commit ") for ln in count.stderr.splitlines() if ln.startswith("commit ")]
    cases = []
    for k in range(1, n + 1, every):
        out = tmp / f"k{k}"
        first = run(["sweep", str(spec), "--out", str(out), *extra], tmp, kill=k)
        again = run(["sweep", str(spec), "--out", str(out), *extra], tmp)
        ok, why = again.returncode == 1, ""
        if not ok:
            why = f"rerun exit {again.returncode}: {again.stderr.strip().splitlines()[-1:]}"
        elif snapshot(out) != want:
            ok, why = False, "table or results differ from the uninterrupted sweep"
        elif strays(out):
            ok, why = False, f"left {strays(out)}"
        cases.append((f"{label} kill before commit {k}/{n} ({what[k - 1].replace(str(tmp), '')})", ok, why))
        print(("held  " if ok else "FAILED"), cases[-1][0], why, flush=True)
        shutil.rmtree(out, ignore_errors=True)
        del first
    return cases


def _edit_json(path: Path, **changes) -> None:
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


def edits(tmp: Path) -> list[tuple[str, bool, str]]:
    spec = tmp / "s.toml"
    spec.write_text(SWEEP)
    ref = tmp / "ref"
    assert run(["sweep", str(spec), "--out", str(ref)], tmp).returncode == 1
    want = snapshot(ref)
    cells = sorted(p.name for p in (ref / "cells").iterdir())
    llama, bad, qwen = cells  # twin-llama_…, twin-nosuchthing_…, twin-qwen3_…
    c = Path("cells")
    # (name, what to do to the copy, "same": the rerun must give the reference; "refused": exit 2, nothing changed)
    plan: list[tuple[str, Callable[[Path], None], str]] = [
        ("delete sweep.json", lambda o: (o / "sweep.json").unlink(), "same"),
        ("garble sweep.json", lambda o: (o / "sweep.json").write_text("{"), "same"),
        ("sweep.json: every cell pending", lambda o: _all(o, status="pending", result=None), "same"),
        ("sweep.json: a status 'exploded'", lambda o: _all(o, status="exploded"), "same"),
        ("sweep.json: a result outside OUT", lambda o: _all(o, result="../../etc/passwd"), "same"),
        ("delete the marker", lambda o: (o / ".geoprobe-sweep.json").unlink(), "same"),
        ("garble the marker", lambda o: (o / ".geoprobe-sweep.json").write_text("{"), "same"),
        ("marker: another digest", lambda o: _edit_json(o / ".geoprobe-sweep.json", digest="0" * 64), "refused"),
        (
            "delete marker and sweep.json",
            lambda o: [(o / n).unlink() for n in (".geoprobe-sweep.json", "sweep.json")],
            "refused",
        ),
        ("delete sweep.parquet", lambda o: (o / "sweep.parquet").unlink(), "same"),
        ("garble sweep.parquet", lambda o: (o / "sweep.parquet").write_text("x"), "refused"),
        ("delete sweep.html", lambda o: (o / "sweep.html").unlink(), "same"),
        (
            "replace sweep.html with a foreign page",
            lambda o: (o / "sweep.html").write_text("<html>mine</html>"),
            "refused",
        ),
        ("delete a cell's record", lambda o: (o / c / llama / ".geoprobe-cell.json").unlink(), "foreign"),
        ("garble a cell's record", lambda o: (o / c / llama / ".geoprobe-cell.json").write_text("{"), "foreign"),
        (
            "record: another sweep's id",
            lambda o: _edit_json(o / c / llama / ".geoprobe-cell.json", sweep="f" * 32),
            "foreign",
        ),
        (
            "record: other coordinates",
            lambda o: _edit_json(o / c / llama / ".geoprobe-cell.json", coordinates={"seed": 9}),
            "same",
        ),
        (
            "record: other settings digest",
            lambda o: _edit_json(o / c / llama / ".geoprobe-cell.json", digest="0"),
            "same",
        ),
        (
            "record: status running",
            lambda o: _edit_json(o / c / llama / ".geoprobe-cell.json", status="running"),
            "same",
        ),
        ("record: status failed", lambda o: _edit_json(o / c / llama / ".geoprobe-cell.json", status="failed"), "same"),
        ("delete results.json", lambda o: (o / c / llama / "results.json").unlink(), "same"),
        ("truncate results.json", lambda o: _truncate(o / c / llama / "results.json"), "same"),
        ("edit a number in results.json", lambda o: _number(o / c / llama / "results.json"), "same"),
        ("another cell's results and record", lambda o: _swap(o / c / qwen, o / c / llama), "same"),
        (
            "results.json a symlink to another cell's",
            lambda o: _link(o / c / qwen / "results.json", o / c / llama / "results.json"),
            "foreign",
        ),
        ("delete the run record", lambda o: (o / c / llama / ".geoprobe-run.json").unlink(), "same"),
        ("garble the run record", lambda o: (o / c / llama / ".geoprobe-run.json").write_text("{"), "same"),
        ("delete the cell's page", lambda o: (o / c / llama / "report.html").unlink(), "same"),
        ("delete the cell's capture", lambda o: shutil.rmtree(o / c / llama / "capture"), "same"),
        ("delete a cell directory", lambda o: shutil.rmtree(o / c / llama), "same"),
        ("empty a cell directory", lambda o: (shutil.rmtree(o / c / llama), (o / c / llama).mkdir()), "same"),
        (
            "a cell directory a symlink",
            lambda o: (shutil.rmtree(o / c / llama), os.symlink(o / c / qwen, o / c / llama)),
            "foreign",
        ),
        (
            "cells/ a symlink",
            lambda o: (shutil.move(o / "cells", o.parent / "moved"), os.symlink(o.parent / "moved", o / "cells")),
            "refused",
        ),
        ("a file of yours in cells/", lambda o: (o / c / "NOTES.txt").write_text("mine"), "same"),
        ("a file of yours in a cell", lambda o: (o / c / llama / "NOTES.txt").write_text("mine"), "same"),
    ]
    cases = []
    for i, (name, damage, expect) in enumerate(plan):
        out = tmp / f"e{i}"
        shutil.copytree(ref, out, symlinks=True)
        shutil.rmtree(tmp / "moved", ignore_errors=True)
        damage(out)
        before = _listing(out)
        again = run(["sweep", str(spec), "--out", str(out)], tmp)
        err = again.stderr.strip().splitlines()
        ok, why = True, ""
        if expect == "same":
            ok = again.returncode == 1 and snapshot(out) == want and not strays(out)
            why = "" if ok else f"exit {again.returncode}: {err[-1:]}"
        elif expect == "foreign":  # that cell is never touched nor tabulated: it fails naming it
            ok = again.returncode == 1 and any("not run:" in ln for ln in err) and llama not in _table_cells(out)
            why = "" if ok else f"exit {again.returncode}: {err[-2:]}"
        else:  # refused, one line, nothing changed
            ok = (
                again.returncode == 2
                and len([ln for ln in err if ln.startswith("error:")]) == 1
                and _listing(out) == before
            )
            why = "" if ok else f"exit {again.returncode}: {err[-1:]}"
        cases.append((f"edit: {name} (expect {expect})", ok, why or (err[-1] if expect == "refused" else "")))
        print(("held  " if ok else "FAILED"), cases[-1][0], cases[-1][2], flush=True)
    return cases


def _all(out: Path, **changes) -> None:
    d = json.loads((out / "sweep.json").read_text())
    for c in d["cells"]:
        c.update(changes)
    (out / "sweep.json").write_text(json.dumps(d))


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:200])


def _number(p: Path) -> None:
    p.write_text(p.read_text().replace('"n_prompts": 160', '"n_prompts": 161', 1))


def _swap(src: Path, dst: Path) -> None:
    for name in ("results.json", ".geoprobe-run.json"):
        shutil.copy(src / name, dst / name)


def _link(target: Path, link: Path) -> None:
    link.unlink()
    os.symlink(target, link)


def _listing(out: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(out)), p.lstat().st_mtime_ns) for p in out.rglob("*"))


def _table_cells(out: Path) -> set[str]:
    import pandas as pd

    return set(pd.read_parquet(out / "sweep.parquet")["cell"]) if (out / "sweep.parquet").exists() else set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["kills", "edits"])
    ap.add_argument("--ray", action="store_true", help="the kills with --executor ray on a local 3-node cluster")
    ap.add_argument("--every", type=int, default=1, help="kill before every K-th commit only (default: every one)")
    args = ap.parse_args()
    cases: list[tuple[str, bool, str]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.ray:
            from ray.cluster_utils import Cluster

            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
            for _ in range(2):
                cluster.add_node(num_cpus=1)
            try:
                (tmp / "ray").mkdir()
                cases += kills(tmp / "ray", ["--executor", "ray", "--address", cluster.address], "ray", args.every)
            finally:
                cluster.shutdown()
        else:
            if args.only in (None, "kills"):
                (tmp / "kills").mkdir()
                cases += kills(tmp / "kills", [], "local", args.every)
            if args.only in (None, "edits"):
                (tmp / "edits").mkdir()
                cases += edits(tmp / "edits")
    held = sum(ok for _, ok, _ in cases)
    print(f"{held} of {len(cases)} held, {len(cases) - held} failed")


if __name__ == "__main__":
    main()
