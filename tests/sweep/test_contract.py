"""The sweep held to a single run's contract, end to end through the command line (issue 35): nothing
lost, nothing mis-tabulated, the cells the truth and the manifest derived, a sweep an output kind of its
own, and every argument honoured or refused. Each test starts from a copy of the session's reference
sweep and damages it as a kill or a hostile user would."""

from __future__ import annotations

import json
import shutil

import pytest

from geoprobe.errors import ArgumentError, SweepError
from geoprobe.kinds import CELL_MARK, RECORD
from tests.cli.test_cli import run_cli
from tests.sweep.kit import cell_of, copy_of, masked, rows, sweep_file


@pytest.fixture
def counted(monkeypatch):
    """The ids of the cells the driver runs (the real run_cell, counted)."""
    from geoprobe.sweep import cell as cell_module

    calls: list[str] = []
    real = cell_module.run_cell
    monkeypatch.setattr("geoprobe.sweep.executors.run_cell", lambda task: calls.append(task.cell_id) or real(task))
    return calls


def _same_as_reference(out, reference):
    once, manifest = reference
    assert rows(out).equals(rows(once))
    for c in manifest.cells:
        if c.result:
            assert masked(out / c.result) == masked(once / c.result)


def test_a_manifest_that_lies_is_rebuilt_from_the_cells(reference, tmp_path, capsys, monkeypatch, counted):
    """Was: a kill between a cell's last write and the manifest's rewrite broke that cell for ever ("results.json
    already exists; pass --force"), and a manifest ``result`` outside OUT was read into the table."""
    spec, out = copy_of(reference, tmp_path)
    (tmp_path / "secret.json").write_text(json.dumps({"kind": "geoprobe.scan"}))
    m = json.loads((out / "sweep.json").read_text())
    m["cells"][0].update(status="pending", result=None)
    m["cells"][1].update(result="../secret.json")
    m["cells"][2].update(status="exploded")  # was: unexpected KeyError
    (out / "sweep.json").write_text(json.dumps(m))
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 1 and "resuming: 6 of 7 cells verified as finished, 1 to run" in " ".join(err.split())
    assert counted == [cell_of(reference[1], "twin:nosuchthing", 0)]  # only the cell that fails
    assert "sweep.json was missing or damaged: rebuilt from the cells" in " ".join(err.split())
    _same_as_reference(out, reference)
    rebuilt = json.loads((out / "sweep.json").read_text())
    assert [c["result"] for c in rebuilt["cells"]] == [c.result for c in reference[1].cells]


def test_a_deleted_manifest_and_marker_are_rebuilt(reference, tmp_path, capsys, monkeypatch, counted):
    """Was: a deleted sweep.json made the finished cells "not written by geoprobe"."""
    spec, out = copy_of(reference, tmp_path)
    (out / "sweep.json").unlink()
    (out / "sweep.parquet").unlink()
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 1 and len(counted) == 1
    (out / ".geoprobe-sweep.json").unlink()  # the marker: the manifest (rewritten above) names the sweep
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 1 and len(counted) == 2 and (out / ".geoprobe-sweep.json").is_file()
    _same_as_reference(out, reference)


def test_a_cell_holding_another_run_is_computed_again_never_tabulated(
    reference, tmp_path, capsys, monkeypatch, counted
):
    """Was: a cell directory holding another model's scan was tabulated under the cell's coordinates (llama's
    numbers as model=twin:qwen3 with qwen3's parameter count); a truncated results.json was counted done and
    its rerun failed."""
    spec, out = copy_of(reference, tmp_path)
    manifest = reference[1]
    qwen, llama, gemma = (cell_of(manifest, m, 1) for m in ("twin:qwen3", "twin:llama", "twin:gemma2"))
    for name in ("results.json", RECORD):
        shutil.copy(out / "cells" / llama / name, out / "cells" / qwen / name)
    (out / "cells" / gemma / "results.json").write_bytes((out / "cells" / gemma / "results.json").read_bytes()[:500])
    llama0 = cell_of(manifest, "twin:llama", 0)
    (out / "cells" / llama0 / "results.json").unlink()  # its capture and page stay: replaced by the rerun
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    said = " ".join(err.split())
    assert code == 1 and sorted(counted) == sorted([qwen, gemma, llama0, cell_of(manifest, "twin:nosuchthing", 0)])
    assert f"{llama0}: its results.json is missing; computing it again" in said
    assert f"{qwen}: its results are of model 'twin:llama:tiny', not 'twin:qwen3:tiny'; computing it again" in said
    assert f"{gemma}: its results.json has no matching run record" in said
    _same_as_reference(out, reference)


def test_a_directory_the_sweep_did_not_write_is_never_touched(reference, tmp_path, capsys, monkeypatch, counted):
    spec, out = copy_of(reference, tmp_path)
    cid = cell_of(reference[1], "twin:llama", 0)
    shutil.rmtree(out / "cells" / cid)
    (out / "cells" / cid).mkdir()
    (out / "cells" / cid / "mine.txt").write_text("mine")
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    said = " ".join(err.split())
    assert code == 1 and f"cell {cid} not run:" in said and "holds files this sweep did not write" in said
    assert cid not in counted and (out / "cells" / cid / "mine.txt").read_text() == "mine"
    assert cid not in set(rows(out)["cell"])


def test_force_keeps_what_the_sweep_did_not_write(reference, tmp_path, capsys, monkeypatch):
    """Was: --force deleted cells/NOTES.txt, a user's cells/my_analysis/, a nested sweep under cells/."""
    _, out = copy_of(reference, tmp_path)
    (out / "cells" / "NOTES.txt").write_text("mine")
    (out / "cells" / "my_analysis").mkdir()
    (out / "cells" / "my_analysis" / "fit.py").write_text("mine")
    (out / "README.md").write_text("mine")
    other = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [3]', name="other.toml")
    code, _, err = run_cli(["sweep", str(other), "--out", str(out), "--force"], capsys, monkeypatch)
    assert code == 0, err
    assert (out / "cells" / "NOTES.txt").read_text() == "mine" and (out / "README.md").read_text() == "mine"
    assert (out / "cells" / "my_analysis" / "fit.py").read_text() == "mine"
    left = {p.name for p in (out / "cells").iterdir()}
    assert left == {"NOTES.txt", "my_analysis", json.loads((out / "sweep.json").read_text())["cells"][0]["id"]}
    code, _, _ = run_cli(["sweep", str(other), "--out", str(out), "--force"], capsys, monkeypatch)
    assert code == 0  # --force with the same settings starts again too (was: ignored)


def test_a_sweep_is_an_output_kind_of_its_own(reference, tmp_path, capsys, monkeypatch):
    """Was: ``scan --out SWEEP`` and ``trajectory --out SWEEP`` wrote into a sweep; a sweep could be made
    inside another's cells/."""
    spec, out = copy_of(reference, tmp_path)
    before = sorted(p.name for p in out.rglob("*"))
    for argv in (
        ["scan", "--model", "twin:llama", "--prompts", "builtin", "--out", str(out)],
        ["scan", "--model", "twin:llama", "--prompts", "builtin", "--out", str(out / "cells" / "mine")],
        ["trajectory", "--steps", "1", "--layers", "1", "--hidden-size", "32", "--heads", "2", "--out", str(out)],
        ["sweep", str(spec), "--out", str(out / "cells" / "inner")],
    ):
        code, _, err = run_cli(argv, capsys, monkeypatch)
        assert code == 2 and "sweep directory of geoprobe's" in err and err.count("\n") == 1, (argv, err)
    assert sorted(p.name for p in out.rglob("*")) == before


def test_python_arguments_of_the_wrong_type_are_refused(tmp_path):
    """Was: run_sweep(threads="2") raised a bare TypeError; run_sweep(executor="local", address="auto")
    ignored the address; force="false" would have been true."""
    from geoprobe.sweep import run_sweep

    spec = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]')
    for kwargs, error, words in (
        ({"threads": "2"}, ArgumentError, "threads is str ('2'), not an integer"),
        ({"force": "false"}, ArgumentError, "force is str ('false'), not a bool"),
        ({"arrays": 1}, ArgumentError, "arrays is int (1), not a bool"),
        ({"out": 5}, ArgumentError, "out is int (5), not a path"),
        ({"address": "auto"}, SweepError, "--address 'auto' is for --executor ray"),
        ({"executor": "dask"}, SweepError, "--executor 'dask' is not local or ray"),
        ({"threads": 100_000}, SweepError, "--threads 100000 is more than the"),
        ({"progress": 3}, ArgumentError, "progress is int (3), not a callable"),
    ):
        with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
            run_sweep(spec, **{"out": tmp_path / "o", **kwargs})
    assert not (tmp_path / "o").exists()


def test_a_cell_larger_than_this_machine_fails_at_once(tmp_path, capsys, monkeypatch):
    """Was: the local executor loaded twin:mixtral-8x7b:full without the memory check Ray cells get."""
    from geoprobe.capture.memory import MEMORY_ENV

    monkeypatch.setenv(MEMORY_ENV, "2GiB")
    loaded = []
    monkeypatch.setattr("geoprobe.models.loading.LoadOptions.load", lambda self: loaded.append(self.model))
    spec = sweep_file(tmp_path, 'model = ["twin:mixtral-8x7b:full"]\nseed = [0]')
    code, _, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    said = " ".join(err.split())
    assert code == 1 and not loaded and "the cell needs about" in said
    assert "and cpu here has 1.8 GiB for it (90% of the 2.0 GiB" in said


def test_the_page_pools_only_declared_replicates(tmp_path, capsys, monkeypatch):
    """Was: a grid ``max_tokens = [2, 64]`` (PC1 0.188 and 0.233) was drawn as 0.211, "mean over seeds", and
    Table 2 showed it; CI endpoints were averaged. Now a coordinate that is no declared replicate is a series;
    declared replicates are pooled with a t-interval across them."""
    from geoprobe.analysis.stats import t_interval
    from geoprobe.sweep.report import SweepPage
    from geoprobe.sweep.table import table_rows

    grid = 'model = ["twin:llama"]\nmax_tokens = [2, 64]\nseed = [0, 1]'
    spec = sweep_file(tmp_path, grid)
    text = spec.read_text().replace(
        '[sweep]\nexperiment = "scan"\n', '[sweep]\nexperiment = "scan"\nreplicates = ["seed"]\n'
    )
    pooled = tmp_path / "pooled.toml"
    pooled.write_text(text)
    for name, f in (("plain", spec), ("pooled", pooled)):
        assert run_cli(["sweep", str(f), "--out", str(tmp_path / name)], capsys, monkeypatch)[0] == 0
    from geoprobe.sweep.status import status

    plain = SweepPage(status(tmp_path / "plain"), tuple(table_rows(status(tmp_path / "plain"), tmp_path / "plain")))
    t = plain.table2()
    assert [r["series"] for r in t] == [f"max_tokens={m}, seed={s}" for m in (2, 64) for s in (0, 1)]
    m = status(tmp_path / "pooled")
    page = SweepPage(m, tuple(table_rows(m, tmp_path / "pooled")))
    pc1 = {p.series: p for p in page.latest("pc1", "last", per_model=True)}
    assert set(pc1) == {"max_tokens=2", "max_tokens=64"} and {p.k for p in pc1.values()} == {2}
    r = rows(tmp_path / "pooled")
    last = r[(r["metric"] == "pc1") & (r["layer"] == r["layer"].max()) & (r["max_tokens"] == 64)]
    e = t_interval(list(last["estimate"]))
    assert (pc1["max_tokens=64"].estimate, pc1["max_tokens=64"].low, pc1["max_tokens=64"].high) == (
        e.value,
        e.low,
        e.high,
    )
    html = (tmp_path / "pooled" / "sweep.html").read_text()
    assert "Replicates: seed" in html and "mean over seeds" not in html
    status_rows = plain.sections()[-1].html
    assert status_rows.count("<th>") == 8  # cell, status, seconds, attempts, model, max_tokens, seed, error


def test_cells_with_different_keys_line_up(reference, tmp_path, capsys, monkeypatch):
    """Was: ``sweep status`` and the page's cell table shifted columns when cells had different keys."""
    from geoprobe.sweep.status import summary

    spec = sweep_file(
        tmp_path, 'model = ["twin:llama"]\nseed = [0]', '[[cell]]\nmodel = "twin:llama"\nmax_tokens = 4\n'
    )
    assert run_cli(["sweep", str(spec), "--out", str(tmp_path / "o")], capsys, monkeypatch)[0] == 0
    from geoprobe.sweep.status import status

    got = summary(status(tmp_path / "o"))
    assert [list(r) for r in got] == [
        ["cell", "status", "seconds", "attempts", "model", "max_tokens", "seed", "error"]
    ] * 2
    assert [r["max_tokens"] for r in got] == ["", 4] and [r["seed"] for r in got] == [0, ""]
    code, out, _ = run_cli(["sweep", "status", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 0 and "2 done, 0 failed, 0 not run of 2 cells" in out
    for flag in (
        ["--force"],
        ["--threads", "9"],
        ["--executor", "dask"],
        ["--arrays"],
        ["--out", "Z"],
        ["--address", "auto"],
    ):
        code, _, err = run_cli(["sweep", "status", str(tmp_path / "o"), *flag], capsys, monkeypatch)
        assert code == 2 and f"{flag[0]} does not apply to `geoprobe sweep status`" in err  # was: exit 0, ignored
    mark = json.loads(next((tmp_path / "o" / "cells").glob(f"*/{CELL_MARK}")).read_text())
    assert mark["status"] == "done" and mark["attempts"] == 1 and mark["n_params"] > 0
