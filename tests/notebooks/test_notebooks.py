"""Every notebook runs top to bottom (stored without outputs; executed here with nbclient), and every figure it
shows carries a static PNG beside plotly's JSON (geoprobe.show), so a saved notebook shows it without plotly."""

import base64
import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.chromium import has_chromium
from tests.conftest import requires_smollm2

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
PLOTLY = "application/vnd.plotly.v1+json"
PNG = "image/png"


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def _shown(nb, mime=None):
    """Rich outputs (plotly figures, HTML tables) that rendered inline."""
    kinds = (mime,) if mime else (PLOTLY, "text/html")
    return [o for o in _outputs(nb) if any(k in o.get("data", {}) for k in kinds)]


def _check_01_scan(nb, out: Path) -> None:
    assert (out / "report.html").stat().st_size > 1_000_000
    assert len(_shown(nb)) >= 5  # the scorecard and the figures rendered inline


def _check_02_domains(nb, out: Path) -> None:
    assert (out / "domains.html").stat().st_size > 1_000_000  # plotly.js inlined
    doc = json.loads((out / "domains.json").read_text(encoding="utf-8"))
    assert doc["kind"] == "geoprobe.domains" and doc["domains"] == ["math", "code"]
    assert set(doc["sets"]) == {"mixed", "math", "code", "math-control", "code-control"}
    assert len({s["n"] for s in doc["sets"].values()}) == 1  # every set the same size
    lines = (out / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 * doc["sets"]["mixed"]["n"]
    assert len(_shown(nb, "text/html")) >= 2  # the sampled prompts and the Table 1 analogue
    assert len(_shown(nb, PLOTLY)) >= 2  # figure() and difference_figure()


def _check_03_compare(nb, out: Path) -> None:
    assert (out / "compare.html").stat().st_size > 1_000_000  # plotly.js inlined
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert doc["kind"] == "geoprobe.compare" and len(doc["rows"]) == 2
    assert doc["global_pca"] is not None  # both models saw exactly the same prompts
    for run in ("smollm2-135m", "twin-llama-3.2-1b"):
        assert (out / run / "results.json").is_file() and (out / run / "capture").is_dir()
    assert (out / "prompts.jsonl").is_file()
    assert len(_shown(nb, "text/html")) >= 1 and len(_shown(nb, PLOTLY)) >= 2  # table, figure(), global_figure()


def _check_04_sula(nb, out: Path) -> None:
    from geoprobe.sula import CONDITIONS, SulaResult

    assert (out / "sula.html").stat().st_size > 1_000_000  # plotly.js inlined
    r = SulaResult.load(out / "sula.json")
    assert tuple(r.conditions) == CONDITIONS and r.config.n_per_k == 4
    assert r.main.n == 4 * len(r.config.k_values) and r.layer == 29
    assert len(_shown(nb, "text/html")) >= 3  # the prompts, the paired controls, the summary
    assert len(_shown(nb, PLOTLY)) >= 3  # calibration, per-k, trajectory


def _check_05_intervene(nb, out: Path) -> None:
    from geoprobe.intervene import InterventionResult

    assert (out / "intervene.html").stat().st_size > 1_000_000  # plotly.js inlined
    r = InterventionResult.load(out / "intervene.json")
    assert r.experiments() == [((20,), 0.5), ((20,), 1.0)]
    assert {row.axis for row in r.rows} == {"entropy", "random-0", "random-1"}
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    assert "resumed from layer 20: True" in text and "forward passes edited: {20:" in text
    after = float(text.split("after the cut ")[1].split()[0])
    assert after < 1e-4  # the full cut removed the axis component
    assert len(_shown(nb, "text/html")) >= 1 and len(_shown(nb, PLOTLY)) >= 1  # summary table, figure()
    assert len(_shown(nb)) >= 2


def _check_06_windtunnel(nb, out: Path) -> None:
    from geoprobe.windtunnel.result import WindTunnelResult

    run = out / "bijection-tiny"
    assert (run / "windtunnel.html").stat().st_size > 1_000_000  # plotly.js inlined
    r = WindTunnelResult.load(run)
    assert r.name == "bijection" and set(r.metrics) == {"transformer", "mlp"}
    assert r.specs["transformer"]["train"]["steps"] == 300
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    assert "resumed from step 300" in text
    assert len(_shown(nb, PLOTLY)) >= 4 and len(_shown(nb, "text/html")) >= 2


def _check_07_denoise(nb, out: Path) -> None:
    from geoprobe.denoise.result import DenoiseResult

    run = out / "denoise-sphere"
    assert (run / "denoise.html").stat().st_size > 1_000_000  # plotly.js inlined
    r = DenoiseResult.load(run)
    assert r.name == "sphere" and r.config["steps"] == 400 and r.config["context_length"] == 200
    assert r.energy["one_step_max_abs_diff"] < 1e-12
    assert r.score("softmax").ratio.value < 1.5  # predicting zero scores about 2.3
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    assert "closed form 0.3333" in text and "one step == attention" in text
    assert len(_shown(nb, PLOTLY)) >= 5 and len(_shown(nb, "text/html")) >= 3


def _check_08_positional(nb, out: Path) -> None:
    import numpy as np

    from geoprobe.positional.run import load_positional

    r = load_positional(out)
    assert sum(r.class_counts().values()) == len(r.layers) * r.n_heads == 30 * 9
    assert all(h.reason for h in r.heads if h.beta is None)  # an unfit head says why
    assert np.allclose(r.profiles.sum(-1), 1.0, atol=1e-6)
    assert r.stability is not None and r.stability.lengths == (16, 32, 64)
    assert (out / "positional.html").stat().st_size > 1_000_000
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    assert "planted μ= 0.0 σ=  6.0 β=1.0" in text and "K = 12: MAE (paper)" in text
    assert len(_shown(nb, PLOTLY)) >= 6 and len(_shown(nb, "text/html")) >= 1


def _check_10_sweep(nb, out: Path) -> None:
    import pandas as pd

    manifest = json.loads((out / "sweep" / "sweep.json").read_text(encoding="utf-8"))
    assert [c["status"] for c in manifest["cells"]] == ["done"] * 4
    table = pd.read_parquet(out / "sweep" / "sweep.parquet")
    assert set(table["cell"]) == {c["id"] for c in manifest["cells"]} and (out / "sweep" / "sweep.html").is_file()
    assert len(_shown(nb, "text/html")) >= 2  # the table's head and the final-layer PC1 rows
    # the DuckDB cell prints, per model and weight seed, the mean key |cos| over layers and its null (the Gaussian
    # E|cos|: init_baseline = false); before, it printed None for the null (a bare `null` is SQL's literal) and one
    # number for every cell (its grid varied the analysis seed, which never changes a twin's weights)
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    line = re.compile(r"^(\S+) weight seed (\d+): mean \|cos\| ([0-9.]+) vs Gaussian E\|cos\| ([0-9.]+)$", re.M)
    printed = {(m, int(s)): (float(c), float(g)) for m, s, c, g in line.findall(text)}
    keys = table[table.metric == "key_orthogonality"]
    expected = keys.groupby(["model", "weight_seed"]).agg(cos=("estimate", "mean"), null=("null", "first"))
    assert len(printed) == len(expected) == 4
    for (model, seed), row in expected.iterrows():
        assert printed[(model, int(seed))] == (round(row["cos"], 4), round(row["null"], 4))
    assert keys.groupby(["model", "weight_seed"])["null"].nunique().eq(1).all()  # one null per cell
    assert len({c for c, _ in printed.values()}) == 4  # each model and each weight seed measures other weights


def _check_09_dynamics(nb, out: Path) -> None:
    from geoprobe.dynamics.result import DynamicsResult

    run = out / "dynamics"
    assert (run / "dynamics.html").stat().st_size > 1_000_000  # plotly.js inlined
    r = DynamicsResult.load(run)
    assert (r.config.steps, r.config.seeds, r.config.length) == (100, 2, 200) and len(r.runs) == 2
    assert all(len(x.sgd) == len(x.em) == 100 for x in r.runs)
    assert all(x.em[-1] < x.sgd[-1] for x in r.runs)  # the faster value timescale is ahead at the end
    assert 0 < r.em_steps_to_sgd().value < 100 and r.speedup() > 1
    text = "".join(o.get("text", "") for o in _outputs(nb) if o.output_type == "stream")
    for label in ("routing law vs autograd: max |diff| = ", "value gradient vs autograd: max |diff| = "):
        assert float(text.split(label)[1].split(";")[0].split()[0]) < 1e-12, label
    assert f"speed-up {r.speedup():.2f}x" in text
    assert len(_shown(nb, PLOTLY)) >= 1 and len(_shown(nb, "text/html")) >= 1  # loss curves, steps table


CHECKS = {
    "01_scan.ipynb": _check_01_scan,
    "02_domains.ipynb": _check_02_domains,
    "03_compare.ipynb": _check_03_compare,
    "04_sula.ipynb": _check_04_sula,
    "05_intervene.ipynb": _check_05_intervene,
    "06_windtunnel.ipynb": _check_06_windtunnel,
    "07_denoise.ipynb": _check_07_denoise,
    "08_positional.ipynb": _check_08_positional,
    "09_dynamics.ipynb": _check_09_dynamics,
    "10_sweep.ipynb": _check_10_sweep,
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_valid_and_documented(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


def _check_figure_images(nb) -> None:
    """Every figure output holds plotly's JSON and a PNG of it (viewers without plotly show the PNG); without a
    Chromium, the figures are still shown (without PNG) and the notebook says why, once."""
    figures = _shown(nb, PLOTLY)
    if has_chromium():
        for o in figures:
            assert PNG in o["data"], f"a figure without a static image: {sorted(o['data'])}"
            assert base64.b64decode(o["data"][PNG])[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert all(PNG not in o["data"] for o in figures)
        warned = [o for o in _outputs(nb) if o.output_type == "stream" and "without a static image" in o["text"]]
        assert len(warned) == (1 if figures else 0)


def test_notebook_01_comment_names_the_default_prompt_set():
    """The scan cell's comment says which prompts ScanConfig() scans (it once said "the built-in prompt set")."""
    from geoprobe.scan import ScanConfig

    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    (line,) = [x for c in nb.cells for x in c.source.splitlines() if x.startswith("result = scan(")]
    comment = line.split("#", 1)[1]
    assert ScanConfig().prompts == "mixed" and "mixed" in comment and "built-in" not in comment
    sampling = ScanConfig().sampling
    assert f"({sampling.per_stratum * sampling.n_strata} prompts)" in comment  # per entropy stratum × strata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_shows_figures_through_geoprobe_show(path):
    """Figures go through geoprobe.show (plotly JSON + PNG in one output), never plotly's own fig.show()."""
    code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert ".show()" not in code
    if "figures()" in code or "go.Figure" in code:
        assert "show(" in code and "from geoprobe import" in code


@requires_smollm2
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GEOPROBE_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("GEOPROBE_NOTEBOOK_SMALL", "1")  # the notebooks that read it run on fewer prompts
    nb = nbformat.read(path, as_version=4)
    # shutdown_kernel="immediate": once the last cell has run (its files written, its outputs collected) the kernel
    # is stopped at once; a graceful shutdown waited 1-3 s for each kernel to exit on its own
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
        shutdown_kernel="immediate",
    ).execute()
    errors = [o for o in _outputs(nb) if o.output_type == "error"]
    assert not errors, "\n".join(f"{o.ename}: {o.evalue}" for o in errors)
    _check_figure_images(nb)
    check = CHECKS.get(path.name)
    if check is not None:
        check(nb, tmp_path)
