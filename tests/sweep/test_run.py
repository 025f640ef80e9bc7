"""``geoprobe sweep`` end to end on tiny twins, with the local executor: every cell an ordinary run (the
same results as the experiment run alone), a failed cell recorded while the others finish, a rerun that
computes only what is left, Ctrl-C (130) then a rerun equal to an uninterrupted sweep, the tidy table read
by pandas, polars and DuckDB, and the output directory's ownership. The Ray executor: test_ray.py."""

from __future__ import annotations

import json

import pytest

from geoprobe.sweep import cell as cell_module
from tests.cli.test_cli import run_cli
from tests.sweep.kit import BAD, SIX, TABLES, masked, rows, sweep_file


def test_a_failed_cell_is_recorded_and_named_and_a_cell_is_the_run_alone(tmp_path, capsys, monkeypatch):
    spec, out = sweep_file(tmp_path, 'model = ["twin:qwen3"]\nseed = [1]', BAD), tmp_path / "out"
    code, stdout, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 1 and "1 cell(s) failed: twin-nosuchthing_0-" in err
    manifest = json.loads((out / "sweep.json").read_text())
    failed = next(c for c in manifest["cells"] if c["status"] == "failed")
    assert "nosuchthing" in failed["error"] and "\n" not in failed["error"]
    done = next(c for c in manifest["cells"] if c["status"] == "done")
    assert done["n_params"] > 0 and done["provenance"]["seed"] == 1 and done["provenance"]["prompts_hash"]
    alone, recipe = tmp_path / "alone", tmp_path / "r.toml"  # the same settings as a recipe, run alone
    recipe.write_text('[probe]\ncommand = "scan"\n' + TABLES)
    code, _, err = run_cli(
        ["run", str(recipe), "--model", "twin:qwen3", "--seed", "1", "--out", str(alone)], capsys, monkeypatch
    )
    assert code == 0, err
    assert masked(out / done["result"]) == masked(alone / "results.json")
    code, stdout, _ = run_cli(["sweep", "status", str(out)], capsys, monkeypatch)
    assert code == 0 and "1 done, 1 failed, 0 not run of 2 cells" in stdout


def test_the_table_holds_every_finished_cell_and_reads_in_pandas_polars_duckdb(reference):
    import duckdb
    import polars as pl

    out, manifest = reference
    assert manifest.counts() == {"done": 6, "failed": 1, "pending": 0}
    t = rows(out)
    assert set(t["cell"]) == {c.id for c in manifest.cells if c.status == "done"}
    assert {"pc1", "pc12", "key_orthogonality", "attention_entropy", "focusing_reduction"} <= set(t["metric"])
    assert pl.read_parquet(out / "sweep.parquet").height == len(t)
    n = duckdb.sql(f"SELECT count(*) FROM '{out / 'sweep.parquet'}' WHERE metric = 'pc1'").fetchall()[0][0]
    assert n == (t["metric"] == "pc1").sum() == 6 * 3  # three layers per twin
    for c in manifest.cells:
        if c.status != "done":
            continue
        r = json.loads((out / c.result).read_text())
        mine = t[(t["cell"] == c.id) & (t["metric"] == "pc1")].sort_values("layer")
        assert mine["estimate"].tolist() == [e["value"] for e in r["manifold"]["pc1"]]
        assert set(mine["seed"]) == {c.coordinates["seed"]} and set(mine["model"]) == {c.coordinates["model"]}
    page = (out / "sweep.html").read_text()
    assert "pc1-by-size" in page and "Table 2" in page and "nosuchthing" in page


def test_ctrl_c_then_a_rerun_computes_only_what_is_left(reference, tmp_path, capsys, monkeypatch):
    spec, out = sweep_file(tmp_path, SIX, BAD), tmp_path / "out"
    calls = []
    real = cell_module.run_cell

    interrupted = []

    def counting(task):
        calls.append(task.cell_id)
        if len(calls) == 3 and not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt  # Ctrl-C while the third cell runs
        return real(task)

    monkeypatch.setattr("geoprobe.sweep.executors.run_cell", counting)
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 130
    assert "interrupted (Ctrl-C); rerun the same command to resume (the finished cells and each unfinished cell's" in (
        " ".join(err.split())
    )  # was: "nothing unfinished was kept", though the finished cells were
    before = {c["id"]: c["status"] for c in json.loads((out / "sweep.json").read_text())["cells"]}
    assert sorted(before.values()) == ["done"] * 2 + ["pending"] * 5
    calls.clear()
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)
    assert code == 1 and "nosuchthing" in err  # the bad cell fails again; every other cell is done
    assert sorted(calls) == sorted(i for i, s in before.items() if s == "pending")  # nothing recomputed
    once, manifest = reference
    assert rows(out).equals(rows(once))
    for c in manifest.cells:
        if c.result:
            assert masked(out / c.result) == masked(once / c.result)


def test_the_output_directory_is_checked_before_any_work(tmp_path, capsys, monkeypatch):
    spec = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [0]')
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, err = run_cli(["sweep", str(spec), "--out", str(foreign)], capsys, monkeypatch)
    assert code == 2 and "not written by geoprobe" in err and (foreign / "notes.txt").read_text() == "mine"
    out = tmp_path / "out"
    assert run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch)[0] == 0
    other = sweep_file(tmp_path, 'model = ["twin:llama"]\nseed = [3]', name="other.toml")
    code, _, err = run_cli(["sweep", str(other), "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "other settings" in err and "--force" in err
    assert run_cli(["sweep", str(other), "--out", str(out), "--force"], capsys, monkeypatch)[0] == 0
    assert [c["coordinates"]["seed"] for c in json.loads((out / "sweep.json").read_text())["cells"]] == [3]


@pytest.mark.parametrize(
    "grid, message",
    [
        ('colour = ["red"]', "colour is not a setting of scan"),
        ('model = ["twin:llama"]\nseed = [0]\n[analyses]\nwhat = 1', "what"),
    ],
)
def test_a_bad_sweep_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, grid, message):
    p = tmp_path / "s.toml"
    p.write_text(f'[sweep]\nexperiment = "scan"\n[grid]\n{grid}\n')
    code, _, err = run_cli(["sweep", str(p), "--out", str(tmp_path / "out")], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()


def test_a_load_table_is_honoured_as_in_the_recipe(tmp_path, capsys, monkeypatch):
    """[load] dtype = "bfloat16" in the sweep file: the cell is the recipe with the same [load] run alone."""
    spec = tmp_path / "s.toml"
    head = '[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["twin:qwen3"]\n'
    spec.write_text(head + '[load]\ndtype = "bfloat16"\n' + TABLES)
    code, _, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "out")], capsys, monkeypatch)
    assert code == 0, err
    (cell,) = json.loads((tmp_path / "out" / "sweep.json").read_text())["cells"]
    assert cell["provenance"]["dtype"] == "bfloat16"
    recipe = tmp_path / "r.toml"
    recipe.write_text('[probe]\ncommand = "scan"\n[load]\nmodel = "twin:qwen3"\ndtype = "bfloat16"\n' + TABLES)
    code, _, err = run_cli(["run", str(recipe), "--out", str(tmp_path / "alone")], capsys, monkeypatch)
    assert code == 0, err
    assert masked(tmp_path / "out" / cell["result"]) == masked(tmp_path / "alone" / "results.json")


def test_the_terminal_shows_cells_done_running_failed_and_an_eta(tmp_path, capsys, monkeypatch):
    from geoprobe.cli.progress import EVERY_ENV

    monkeypatch.setenv(EVERY_ENV, "0")  # a line at every update where stderr is not a terminal
    spec = sweep_file(tmp_path, 'model = ["twin:qwen3"]\nseed = [0]', BAD)
    code, _, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "out")], capsys, monkeypatch)
    assert code == 1
    lines = [ln for ln in err.splitlines() if ln.startswith("cells (")]
    assert any(ln.startswith("cells (0 failed, 1 running): 0/2") for ln in lines), lines
    assert any(ln.startswith("cells (1 failed, 0 running): 2/2") for ln in lines), lines
    assert any(ln.rstrip().endswith("left") for ln in lines), lines  # an ETA once a cell has finished


def test_without_pyarrow_the_table_is_not_written_and_it_says_so(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow then raises ImportError
    spec = sweep_file(tmp_path, 'model = ["twin:qwen3"]\nseed = [0]')
    code, _, err = run_cli(["sweep", str(spec), "--out", str(tmp_path / "out")], capsys, monkeypatch)
    assert code == 0, err
    said = " ".join(err.split())  # rich wraps the line at the terminal's width
    assert 'sweep.parquet not written: it needs pyarrow (pip install "geoprobe-attention[ray]")' in said
    assert not (tmp_path / "out" / "sweep.parquet").exists() and (tmp_path / "out" / "sweep.html").is_file()


def test_the_help_says_what_each_flag_takes(capsys, monkeypatch):
    """Was: --address listed as only ``auto or ray://HOST:PORT``, and ``default: its  out``."""
    code, out, _ = run_cli(["sweep", "--help"], capsys, monkeypatch)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "none or local (a private Ray for this command), auto (this machine's cluster)" in text
    assert "HOST:PORT (a cluster's GCS) or ray://HOST:PORT (Ray Client)" in text
    assert "(default: the sweep file's [sweep] out)" in text and "its out" not in text
