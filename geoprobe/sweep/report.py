"""``OUT/sweep.html``: the sweep's page, drawn from its tidy table (geoprobe.sweep.table) — each headline
metric against training step (log axis, one line per series, an interval band) and against parameter
count, the analogue of Table 2 of arXiv 2512.23752 across the sweep's series, and every cell's status.
Headline metrics of a scan sweep: PC1 share and entropy alignment at each cell's last layer, key
orthogonality (mean |cos| over the first third of the layers), attention focusing (% reduction, first →
last layer). Cells are combined as :mod:`geoprobe.sweep.aggregate` says: only the sweep's declared
replicates are pooled; every other coordinate that varies is its own series, named in the legend with its
model. Figures go through :func:`geoprobe.report.series.estimate_figure` (a band never joins two series; the
y axis shows 0). A scan sweep's paired contrasts, emergence and tracking: :mod:`geoprobe.sweep.contrast_page`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from geoprobe.report.page import Figure, Page, Section, figures_section, paragraph
from geoprobe.sweep.aggregate import Point, pool, varying
from geoprobe.sweep.manifest import SweepManifest

if TYPE_CHECKING:
    from geoprobe.sweep.contrasts import ContrastTable

#: (metric, how a cell's rows become one number: "last" layer, "early" third mean, or "none": layer None; label)
HEADLINES: tuple[tuple[str, str, str], ...] = (
    ("pc1", "last", "value manifold PC1 share, last layer"),
    ("alignment_spearman", "last", "entropy alignment (Spearman ρ of PC1), last layer"),
    ("key_orthogonality", "early", "key orthogonality: mean |cos| of W_K columns, first third of layers"),
    ("focusing_reduction", "none", "attention focusing: % entropy reduction, first → last layer"),
)


def headline(rows: Sequence[dict[str, Any]], metric: str, how: str) -> tuple[float, float | None, float | None] | None:
    """One cell's number for ``metric`` from its rows: (estimate, low, high) or None."""
    mine = [r for r in rows if r["metric"] == metric and r["estimate"] is not None]
    if how == "none":
        mine = [r for r in mine if r["layer"] is None]
        return None if not mine else (mine[0]["estimate"], mine[0]["low"], mine[0]["high"])
    mine = sorted((r for r in mine if r["layer"] is not None), key=lambda r: r["layer"])
    if not mine:
        return None
    if how == "last":
        r = mine[-1]
        return r["estimate"], r["low"], r["high"]
    cut = max(1, math.ceil(len(mine) / 3 - 1e-9))
    return sum(r["estimate"] for r in mine[:cut]) / cut, None, None


@dataclass(frozen=True)
class SweepPage(Page):
    """The page of a sweep: its manifest and table rows."""

    manifest: SweepManifest
    rows: tuple[dict[str, Any], ...]
    #: paired contrasts, emergence and tracking (geoprobe.sweep.contrasts.ContrastTable), None: not computed
    contrasts: ContrastTable | None = None

    def title(self) -> str:
        return f"geoprobe sweep: {self.manifest.experiment}, {len(self.manifest.cells)} cells"

    def subtitle(self) -> str:
        c = self.manifest.counts()
        return f"{c['done']} done, {c['failed']} failed, {c['pending']} not run; sweep file {self.manifest.sweep_file}"

    def cells(self, metric: str, how: str) -> list[dict[str, Any]]:
        """One entry per finished cell with this metric: its coordinates, series, run, step, parameters and
        value; a cell whose weights repeat an earlier checkpoint of its series (``duplicate_of``) is left out."""
        from geoprobe.sweep.series import series_cells

        by_cell: dict[str, list[dict[str, Any]]] = {}
        for r in series_cells(self.rows):
            by_cell.setdefault(r["cell"], []).append(r)
        done = {c.id: c for c in self.manifest.cells if c.status == "done"}
        out = []
        for cell, rows in by_cell.items():
            h = headline(rows, metric, how)
            if h is not None and cell in done:
                coords = dict(done[cell].coordinates)
                first = rows[0]
                extra = {"series": first.get("series"), "run": first.get("run")}
                step, n = first["training_step"], first["n_params"]
                out.append({**coords, **extra, "cell": cell, "step": step, "n_params": n, "value": h})
        return out

    def keys(self) -> list[str]:
        """What tells cells apart: the ``series`` (the model without its run: PolyPythias' ``-seedN``, a twin's
        ``@N``) in place of ``model`` and ``weight_seed``, every other coordinate, and ``run`` (the training
        run, geoprobe.sweep.series) unless checkpoint directories are the replicates (``revision``); with
        ``run`` a replicate, a checkpoint is its run and step, so ``revision`` is left out too."""
        reps = self.manifest.replicates
        drop = {"model", "weight_seed", *(["revision"] if "run" in reps else [])}
        return ["series", *(k for k in self.manifest.keys() if k not in drop), *([] if "revision" in reps else ["run"])]

    def series_keys(self, cells: list[dict[str, Any]], drop: Sequence[str], named: bool = False) -> list[str]:
        """The coordinates that vary among ``cells``, but for the replicates and those of the x axis (``drop``);
        ``named``: with ``series`` (the model) first even where it does not vary (a figure's legend names it)."""
        reps = set(self.manifest.replicates)
        keys = [k for k in varying(cells, self.keys()) if k not in reps and k not in drop]
        return ["series", *keys] if named and "series" not in keys and "series" not in drop else keys

    def by_step(self, metric: str, how: str, named: bool = False) -> list[Point]:
        cells = [c for c in self.cells(metric, how) if c["step"] is not None]
        series = self.series_keys(cells, ("revision",), named)
        return pool(cells, x="step", keys=self.keys(), series_keys=series, replicates=self.manifest.replicates)

    def latest(self, metric: str, how: str, *, per_model: bool = False, named: bool = False) -> list[Point]:
        """Each model of each series at its latest training step (every cell where none has a step), with x
        its parameter count; the models of a series make one line (``per_model``: each model its own series;
        ``named``: every series named with its model, as a legend names it)."""
        cells = self.cells(metric, how)
        reps = set(self.manifest.replicates)
        rest = [k for k in self.keys() if k not in ("revision", "run") and k not in reps]

        def group(c: dict[str, Any]) -> str:
            return repr([c.get(k) for k in rest])

        top: dict[str, int] = {}
        for c in cells:
            top[group(c)] = max(top.get(group(c), -1), -1 if c["step"] is None else c["step"])
        kept = [c for c in cells if (-1 if c["step"] is None else c["step"]) == top[group(c)]]
        series = self.series_keys(kept, ("revision",) if per_model else ("revision", "series"), named)
        return pool(kept, x="n_params", keys=self.keys(), series_keys=series, replicates=self.manifest.replicates)

    def note(self) -> str:
        reps = self.manifest.replicates
        dup = self.duplicated()
        left = (
            f" {len(dup)} cell(s) hold the same weights as an earlier checkpoint of their series (duplicate_of, "
            "below) and are left out of the lines."
            if dup
            else ""
        )
        if not reps:
            return (
                "No replicates are declared ([sweep] replicates): every point is one cell, its band that cell's own "
                "95 % CI, and every coordinate that varies is its own series (several training runs: one line per "
                'run; declare replicates = ["run"] to pool them).' + left
            )
        over = " over training runs" if "run" in reps else ""
        return (
            f"Replicates: {', '.join(reps)} ([sweep] replicates). A point over k ≥ 2 replicate cells is their mean "
            f"with a 95 % t-interval across them{over} (mean ± t·s/√k, k − 1 degrees of freedom; never an average of "
            "their CIs); a point of one cell is its own estimate and 95 % CI. Every other coordinate that varies is "
            "its own series (analysis seeds included, unless seed is declared)." + left
        )

    def duplicated(self) -> dict[str, tuple[str, str]]:
        """cell -> (the earlier cell with the same weights, their sha256), for every duplicate cell."""
        return {
            str(r["cell"]): (str(r["duplicate_of"]), str(r.get("weights_sha256")))
            for r in self.rows
            if r.get("duplicate_of")
        }

    def figures(self) -> list[Figure]:
        from geoprobe.report.series import estimate_figure

        figs = []
        for metric, how, label in HEADLINES:
            pts = self.by_step(metric, how, named=True)
            if pts:  # step + 1: step 0 on a log axis; the y axis shows 0 (a 1e-4 change is no trend)
                fig = estimate_figure(
                    _lines(pts, 1), title=label, x_title="training step + 1", y_title=label, log_x=True, include=(0.0,)
                )
                figs.append(Figure(f"{metric}-by-step", f"{label} against training step. {self.note()}", fig))
            sized = [p for p in self.latest(metric, how, per_model=True, named=True) if p.x]
            if len({p.x for p in sized}) > 1:  # one point per model, with error bars: no band joins two models
                lines = _lines(sized, 0, markers=True)
                fig = estimate_figure(
                    lines, title=label, x_title="parameters", y_title=label, log_x=True, include=(0.0,)
                )
                caption = (
                    f"{label} against parameter count, each model of each series at its latest training step "
                    f"(its own interval as error bars). {self.note()}"
                )
                figs.append(Figure(f"{metric}-by-size", caption, fig))
        if self.contrasts is not None:
            from geoprobe.sweep.contrast_page import contrast_figures

            figs += contrast_figures(self.contrasts)
        return figs

    def table2(self) -> list[dict[str, str]]:
        """Per series (model and every other varying coordinate but the replicates and the step), at its
        latest step: the Table 2 columns of arXiv 2512.23752, each with its interval and cell count."""
        cols = {m: self.latest(m, how, per_model=True) for m, how, _ in HEADLINES}
        cols["pc12"] = self.latest("pc12", "last", per_model=True)
        names = list(dict.fromkeys(p.series for ps in cols.values() for p in ps))
        out = []
        for name in names:

            def cell(metric: str) -> str:
                mine = [p for p in cols[metric] if p.series == name]
                if not mine:
                    return "n/a"
                p = mine[0]
                ci = "" if p.low is None or p.high is None else f" [{p.low:.3f}, {p.high:.3f}]"
                return f"{p.estimate:.3f}{ci}" + (f" (k={p.k})" if p.k > 1 else "")

            out.append(
                {
                    "series": name,
                    "PC1 (last layer)": cell("pc1"),
                    "PC1+PC2": cell("pc12"),
                    "key |cos| (early)": cell("key_orthogonality"),
                    "focusing reduction": cell("focusing_reduction"),
                }
            )
        return out

    def sections(self) -> list[Section]:
        from geoprobe.report.blocks import html_table
        from geoprobe.sweep.status import summary

        dup = self.duplicated()
        status = [{k: "" if v is None else str(v) for k, v in row.items()} for row in summary(self.manifest)]
        for row in status if dup else ():
            row["duplicate of"] = dup.get(row["cell"], ("",))[0]
        out = [figures_section(self.figures())]
        table = self.table2()
        if table:
            out.append(
                Section(
                    "Across series (as Table 2 of arXiv 2512.23752)",
                    paragraph(TABLE2_NOTE + " " + self.note()) + html_table(table),
                )
            )
        if self.contrasts is not None:
            from geoprobe.sweep.contrast_page import contrast_sections

            out += contrast_sections(self.contrasts)
        out.append(Section("Cells", (paragraph(self.duplicate_note()) if dup else "") + html_table(status)))
        return out

    def duplicate_note(self) -> str:
        """Each group of cells of one series with identical weights (EleutherAI/pythia issue #205)."""
        groups: dict[str, list[str]] = {}
        for cell, (first, digest) in self.duplicated().items():
            groups.setdefault(first, [first, digest]).append(cell)
        said = "; ".join(f"{', '.join(g[2:])} = {g[0]} (sha256 {g[1][:12]}…)" for g in groups.values())
        return (
            f"Identical weights: {said}. Each later checkpoint (by training step) of a series whose weights equal an "
            "earlier one's is marked duplicate_of and left out of the lines, the contrasts and emergence (a "
            "published checkpoint series may serve one set of weights under several steps: EleutherAI/pythia issue "
            "#205); which of them holds the weights its name promises cannot be told from the hash."
        )


TABLE2_NOTE = (
    "Each series at its latest training step: PC1 and PC1+PC2 shares of the final-layer value manifold on this "
    "sweep's prompts, mean |cos| of W_K columns over the first third of the layers, and % attention-entropy "
    "reduction from the first to the last layer, with a 95 % interval where there is one. The paper's Table 2 "
    "is on its own prompt sets and models; compare like with like."
)


def _lines(points: list[Point], shift: int, markers: bool = False) -> list[Any]:
    """One :class:`geoprobe.report.series.Line` per series of ``points`` (x + ``shift``), its own interval."""
    from geoprobe.report.series import Line

    out = []
    for name in dict.fromkeys(p.series for p in points):
        mine = [p for p in points if p.series == name]
        out.append(
            Line(
                name=name,
                x=[p.x + shift for p in mine],
                estimate=[p.estimate for p in mine],
                low=[p.low for p in mine],
                high=[p.high for p in mine],
                text=[f"k={p.k}: {p.how}" for p in mine],
                markers=markers,
            )
        )
    return out


def write_page(
    manifest: SweepManifest,
    directory: Path,
    rows: list[dict[str, Any]] | None = None,
    contrasts: ContrastTable | None = None,
) -> Path:
    """Write ``directory/sweep.html`` from the manifest and the finished cells' own rows (``rows``: when
    already read), with the paired contrasts' figures and tables when given (``contrasts``: a ContrastTable)."""
    from geoprobe.report.page import write_plotlyjs
    from geoprobe.sweep.directory import PLOTLYJS
    from geoprobe.sweep.table import table_rows

    rows = table_rows(manifest, directory) if rows is None else rows
    page = SweepPage(manifest, tuple(rows), contrasts)
    write_plotlyjs(directory / PLOTLYJS)  # the sweep's one copy (written when the cells started; kept if there)
    return page.report(directory / "sweep.html", force=True, plotlyjs=PLOTLYJS)
