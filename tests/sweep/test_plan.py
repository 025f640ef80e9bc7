"""A sweep file made into cells: canonical coordinates (key order, list settings, negative numbers), one
cell per coordinates (never two, never one dropped), explicit cells found through an index, and every
cell's settings checked before any work."""

from __future__ import annotations

import pytest

from geoprobe.errors import SweepError
from geoprobe.sweep.plan import cell_id, expected_model_id, expected_weight_seed, make_plan
from geoprobe.sweep.spec import read_sweep

HEAD = '[sweep]\nexperiment = "scan"\nout = "runs/s"\n'


def _plan(tmp_path, body: str):
    p = tmp_path / "sweep.toml"
    p.write_text(HEAD + body)
    return make_plan(read_sweep(p))


def test_the_same_coordinates_in_another_key_order_are_one_cell(tmp_path):
    """Was: ids ``twin-gpt2_0-…`` and ``0_twin-gpt2-…`` for one cell, computed twice, rows duplicated."""
    a = _plan(tmp_path, '[grid]\nmodel = ["twin:gpt2"]\nseed = [0]\n')
    b = _plan(tmp_path, '[grid]\nseed = [0]\nmodel = ["twin:gpt2"]\n')
    c = _plan(tmp_path, '[[cell]]\nseed = 0\nmodel = "twin:gpt2"\n')
    assert a.cells[0].id == b.cells[0].id == c.cells[0].id and a.cells[0].id.startswith("twin-gpt2_0-")
    assert list(b.cells[0].coordinates) == ["model", "seed"]  # loading settings first, then the config's
    same = '[[cell]]\nmodel = "twin:gpt2"\nseed = 0\n'  # the grid's cell again: it stands for that cell, once
    assert len(_plan(tmp_path, '[grid]\nseed = [0, 1]\n[load]\nmodel = "twin:gpt2"\n' + same).cells) == 2
    with pytest.raises(SweepError, match=r"\[\[cell\]\] #2 has the same coordinates as a cell of \[\[cell\]\] #1"):
        _plan(tmp_path, '[grid]\nseed = [0, 1]\n[load]\nmodel = "twin:gpt2"\n' + same + same)
    with pytest.raises(SweepError, match=r"\[\[cell\]\] #2 has the same coordinates as a cell of \[\[cell\]\] #1"):
        _plan(tmp_path, '[[cell]]\nmodel = "m"\nseed = 0\n[[cell]]\nseed = 0\nmodel = "m"\n')


def test_explicit_cells_with_the_grid_values_and_other_settings_are_both_kept(tmp_path):
    """Was: two [[cell]] tables with one grid cell's values and n_resamples 100 and 200 ran only the last.
    The first replaces the grid cell (in its place); the second, its own coordinates, is added."""
    plan = _plan(
        tmp_path,
        '[grid]\nmodel = ["a", "b"]\nseed = [0]\n'
        '[[cell]]\nmodel = "a"\nseed = 0\nn_resamples = 100\n'
        '[[cell]]\nmodel = "a"\nseed = 0\nn_resamples = 200\n',
    )
    assert [c.coordinates for c in plan.cells] == [
        {"model": "a", "n_resamples": 100, "seed": 0},
        {"model": "b", "seed": 0},
        {"model": "a", "n_resamples": 200, "seed": 0},
    ]
    assert len({c.id for c in plan.cells}) == 3


def test_list_settings_negative_numbers_and_their_ids(tmp_path):
    """Was: ``layers = [0, -1]`` failed every cell (``'int' object is not iterable``) and its id read "1";
    ``analyses = ["manifold"]`` said ``analysis 'm' is unknown``. A list setting given one value holds it
    alone; a list of lists is one cell per list."""
    plan = _plan(tmp_path, '[grid]\nlayers = [0, -1]\nanalyses = ["manifold", ["manifold", "alignment"]]\n')
    got = [(c.coordinates["layers"], c.coordinates["analyses"]) for c in plan.cells]
    assert got == [
        ((0,), ("manifold",)),
        ((0,), ("manifold", "alignment")),
        ((-1,), ("manifold",)),
        ((-1,), ("manifold", "alignment")),
    ]
    ids = [c.id for c in plan.cells]
    assert ids[0].startswith("0_manifold-") and ids[3].startswith("m1_manifold+alignment-") and len(set(ids)) == 4
    assert cell_id({"layers": (-1,)}) != cell_id({"layers": (1,)})


@pytest.mark.parametrize(
    "body, message",
    [
        ('[grid]\nseed = ["zero"]\n', "grid.seed = 'zero' is not an integer"),
        ("[grid]\nmodel = [[1]]\n", "grid.model = (1,) is not a string"),
        ('[grid]\nanalyses = ["telepathy"]\n', "analyses"),
        ("[grid]\nn_resamples = [10000000000]\n", "n_resamples"),
        ("[grid]\nseed = [-1]\n", "seed -1 is outside"),
        ('[grid]\nmodel = ["m"]\nrevision = ["runs/traj/step8"]\n', "revision 'runs/traj/step8' is written as a path"),
        ('[grid]\nmodel = ["m"]\ndtype = ["float64"]\n', "float64"),
        ("[grid]\nseed = [0]\n[sweep2]\nx = 1\n", "unknown section [sweep2]"),
        ('[sweep]\nreplicates = ["training_run"]\n', None),
        ('[grid]\nmodel = ["pythia-160m"]\nweight_seed = [1]\n', "--weight-seed 1 does not apply"),
        ('[grid]\nmodel = ["twin:gpt2@2"]\nweight_seed = [1]\n', "--weight-seed 1 and the seed @2"),
        ('[grid]\nmodel = ["twin:gpt2@two"]\n', "twin seed '@two'"),
        ('[grid]\nmodel = ["twin:gpt2"]\nweight_seed = [-3]\n', "seed -3 is outside"),
    ],
)
def test_every_cell_is_checked_before_any_work(tmp_path, body, message):
    """Each in one line naming the sweep file; the revision directory that does not exist is named (was:
    ``unknown model 'traj'``, from inside every cell)."""
    if message is None:  # a replicate that is no coordinate
        p = tmp_path / "s.toml"
        p.write_text('[sweep]\nexperiment = "scan"\nreplicates = ["training_run"]\n[grid]\nseed = [0, 1]\n')
        with pytest.raises(SweepError, match=r"sweep.replicates names 'training_run', which is no coordinate .*run"):
            make_plan(read_sweep(p))
        return
    with pytest.raises(SweepError) as info:
        _plan(tmp_path, body)
    assert message in str(info.value) and "\n" not in str(info.value) and str(info.value).startswith("sweep ")


def test_a_revision_directory_is_the_model_and_names_its_cells(tmp_path, monkeypatch):
    (tmp_path / "runs" / "traj" / "checkpoints" / "step8").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    plan = _plan(tmp_path, '[grid]\nmodel = ["traj"]\nrevision = ["runs/traj/checkpoints/step8"]\n')
    (cell,) = plan.cells
    assert cell.training_step == 8 and cell.id.startswith("traj_checkpoints-step8-")
    assert expected_model_id({"model": "traj", "revision": str(tmp_path / "runs/traj/checkpoints/step8")}) == str(
        tmp_path / "runs/traj/checkpoints/step8"
    )


def test_the_digest_is_what_the_sweep_computes_not_its_order_or_replicates(tmp_path):
    a = _plan(tmp_path, '[grid]\nmodel = ["a", "b"]\nseed = [0, 1]\n')
    b = _plan(tmp_path, '[grid]\nseed = [1, 0]\nmodel = ["b", "a"]\n')
    c = _plan(tmp_path, '[grid]\nmodel = ["a", "b"]\nseed = [0, 2]\n')
    assert a.digest == b.digest != c.digest
    p = tmp_path / "r.toml"
    p.write_text('[sweep]\nexperiment = "scan"\nreplicates = ["seed"]\n[grid]\nmodel = ["a", "b"]\nseed = [0, 1]\n')
    assert make_plan(read_sweep(p)).digest == a.digest


def test_thousands_of_explicit_cells_over_a_large_grid_expand_each_once(tmp_path):
    """Explicit cells are matched through an index of the grid (was: every grid cell compared with every
    explicit cell, three times; 96 s for 5,000 over 15,000). The timing is benchmarks/bench_sweep_driver.py's;
    this checks the result on a grid of 3,000 with 1,000 explicit cells."""
    models = [f"m{i}" for i in range(300)]
    cells = "".join(f'[[cell]]\nmodel = "m{i % 300}"\nseed = {i // 300}\nn_resamples = 70\n' for i in range(1000))
    plan = _plan(tmp_path, f"[grid]\nmodel = {models}\nseed = {list(range(10))}\n".replace("'", '"') + cells)
    assert len(plan.cells) == 3000 and len({c.id for c in plan.cells}) == 3000
    replaced = [c for c in plan.cells if c.coordinates.get("n_resamples") == 70]
    assert len(replaced) == 1000 and plan.cells[0].coordinates == {"model": "m0", "n_resamples": 70, "seed": 0}


def test_a_twins_weight_seed_is_a_coordinate_and_run_a_replicate_that_is_derived(tmp_path):
    """``weight_seed`` (or ``@N``) makes cells of their own; ``replicates = ["run"]`` names the training run,
    no coordinate of the file; the twin's model id stays its architecture, its weight seed is expected apart."""
    p = tmp_path / "s.toml"
    p.write_text(
        '[sweep]\nexperiment = "scan"\nreplicates = ["run"]\n[grid]\nmodel = ["twin:gpt2"]\nweight_seed = [0, 1]\n'
        '[[cell]]\nmodel = "twin:gpt2@2"\n'
    )
    plan = make_plan(read_sweep(p))
    assert [c.coordinates for c in plan.cells] == [
        {"model": "twin:gpt2", "weight_seed": 0},
        {"model": "twin:gpt2", "weight_seed": 1},
        {"model": "twin:gpt2@2"},
    ]
    assert plan.spec.replicates == ("run",) and "run" not in plan.keys
    assert [expected_weight_seed(c.coordinates) for c in plan.cells] == [0, 1, 2]
    assert {expected_model_id(c.coordinates) for c in plan.cells} == {"twin:gpt2:tiny"}
    assert expected_weight_seed({"model": "pythia-160m"}) is None and expected_weight_seed({"model": "twin:a"}) == 0


def test_a_cell_whose_results_are_of_another_weight_seed_does_not_verify():
    from geoprobe.sweep.directory import mismatch
    from geoprobe.sweep.plan import Cell

    class Result:
        config = None

        def __init__(self, **prov):
            self.provenance = {"model_id": "twin:gpt2:tiny", "source": "twin", **prov}

    cell = Cell({"model": "twin:gpt2", "weight_seed": 1})
    assert mismatch(Result(weight_seed=1, weights="random-init seed=1"), cell) is None
    assert mismatch(Result(weight_seed=0, weights="random-init seed=0"), cell) == "of a twin of weight seed 0, not 1"
    assert mismatch(Result(weights="random-init seed=0"), cell) == "of a twin of weight seed 0, not 1"  # older file
    assert mismatch(Result(weights="random-init seed=0"), Cell({"model": "twin:gpt2"})) is None
