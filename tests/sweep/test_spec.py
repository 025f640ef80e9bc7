"""Reading sweep files: the tables, and one line for every malformed file (their cells: test_plan.py)."""

from __future__ import annotations

import pytest

from geoprobe.errors import SweepError
from geoprobe.sweep.plan import cell_id, make_plan, training_step
from geoprobe.sweep.spec import MAX_CELLS, read_sweep

HEAD = '[sweep]\nexperiment = "scan"\nout = "runs/s"\n'


def _sweep(tmp_path, body: str):
    p = tmp_path / "sweep.toml"
    p.write_text(HEAD + body)
    return p


def test_the_grid_is_the_product_first_key_slowest(tmp_path):
    spec = read_sweep(_sweep(tmp_path, '[grid]\nmodel = ["a", "b"]\nseed = [0, 1, 2]\n[prompts]\nset = "mixed"\n'))
    cells = make_plan(spec).cells
    assert [tuple(c.coordinates.values()) for c in cells] == [
        ("a", 0),
        ("a", 1),
        ("a", 2),
        ("b", 0),
        ("b", 1),
        ("b", 2),
    ]
    assert len({c.id for c in cells}) == 6
    assert spec.tables == {"prompts": {"set": "mixed"}} and spec.out == "runs/s"


def test_explicit_cells_replace_the_grid_cell_they_match_or_are_added(tmp_path):
    spec = read_sweep(
        _sweep(
            tmp_path,
            '[grid]\nmodel = ["a", "b"]\nseed = [0]\n'
            '[[cell]]\nmodel = "b"\nseed = 0\ndtype = "bfloat16"\n'
            '[[cell]]\nmodel = "c"\nseed = 5\n',
        )
    )
    cells = make_plan(spec).cells
    assert [c.coordinates for c in cells] == [
        {"model": "a", "seed": 0},
        {"model": "b", "dtype": "bfloat16", "seed": 0},  # canonical order: loading settings, then the config's
        {"model": "c", "seed": 5},
    ]
    assert spec.keys() == ["model", "seed", "dtype"]


def test_a_cell_id_depends_on_its_coordinates_only_and_is_path_safe():
    a = cell_id({"model": "pythia-410m", "revision": "step512", "seed": 0})
    assert a == cell_id({"model": "pythia-410m", "revision": "step512", "seed": 0})
    assert a.startswith("pythia-410m_step512_0-") and len(a.split("-")[-1]) == 8
    assert a != cell_id({"model": "pythia-410m", "revision": "step512", "seed": 1})
    odd = cell_id({"model": "../../etc/passwd", "revision": "/abs/ckpt/step2"})
    assert cell_id({"seed": 0, "model": "m"}).split("-")[-1] == cell_id({"model": "m", "seed": 0}).split("-")[-1]
    assert "/" not in odd and ".." not in odd and odd.startswith("etc-passwd_ckpt-step2-")


@pytest.mark.parametrize(
    "revision, step", [("step0", 0), ("step143000", 143000), ("runs/traj/step512", 512), ("main", None), (None, None)]
)
def test_training_step_of_a_revision(revision, step):
    assert training_step(revision) == step


@pytest.mark.parametrize(
    "body, message",
    [
        ("[grid]\nmodel = []\n", "grid.model must be a non-empty list"),
        ('[grid]\nmodel = "a"\n', "grid.model must be a non-empty list"),
        ('[grid]\nmodel = ["a", "a"]\n', "lists a value twice"),
        ("[grid]\nmodel = [[[1]]]\n", "each value must be a string, number or boolean"),
        ("[[cell]]\n", "is empty"),
        ("", "no [grid] and no [[cell]]"),
    ],
)
def test_malformed_sweeps_are_one_line(tmp_path, body, message):
    with pytest.raises(SweepError, match="^sweep .*" + message.replace("[", r"\[").replace("]", r"\]")):
        read_sweep(_sweep(tmp_path, body))


def test_size_and_head_errors(tmp_path):
    n = int(MAX_CELLS**0.5) + 1
    with pytest.raises(SweepError, match=f"above the limit of {MAX_CELLS}"):
        read_sweep(_sweep(tmp_path, f"[grid]\na = {list(range(n))}\nb = {list(range(n))}\n"))
    p = tmp_path / "x.toml"
    p.write_text("[grid]\nseed = [0]\n")
    with pytest.raises(SweepError, match=r"no \[sweep\] table"):
        read_sweep(p)
    p.write_text('[sweep]\nexperiment = "scan"\nwhat = 1\n[grid]\nseed = [0]\n')
    with pytest.raises(SweepError, match="unknown key sweep.what"):
        read_sweep(p)
    with pytest.raises(SweepError, match="does not exist"):
        read_sweep(tmp_path / "missing.toml")
    p.write_text('[sweep]\nexperiment = "scan"\nreplicates = "seed"\n[grid]\nseed = [0]\n')
    with pytest.raises(SweepError, match="sweep.replicates = 'seed' must be a list of coordinate names"):
        read_sweep(p)
    p.write_text('[sweep]\nexperiment = "scan"\nout = "a\\u0000b"\n[grid]\nseed = [0]\n')  # was: ValueError
    with pytest.raises(SweepError, match="sweep.out = 'a.x00b' is not a usable path"):
        read_sweep(p)


def test_the_load_table_gives_every_cell_its_settings_and_a_coordinate_wins(tmp_path):
    """Was: a [load] table (as in every recipe) was refused as an unknown section; now its settings are the
    first coordinates of every cell, and a grid or [[cell]] value of the same key replaces them."""
    spec = read_sweep(
        _sweep(
            tmp_path,
            '[grid]\nmodel = ["a", "b"]\n[[cell]]\nmodel = "c"\ndtype = "float32"\n[load]\ndtype = "bfloat16"\n'
            'model = "ignored"\n',
        )
    )
    assert [dict(c.coordinates) for c in make_plan(spec).cells] == [
        {"model": "a", "dtype": "bfloat16"},
        {"model": "b", "dtype": "bfloat16"},
        {"model": "c", "dtype": "float32"},
    ]
    assert "load" not in spec.tables and spec.keys()[:2] == ["dtype", "model"]


def test_a_load_table_of_tables_is_one_line(tmp_path):
    with pytest.raises(SweepError, match=r"\[load\] must be a table of strings, numbers or booleans"):
        read_sweep(_sweep(tmp_path, '[grid]\nseed = [0]\n[load]\nmodel = ["a", "b"]\n'))
