"""``OUT/sweep.html``: the sweep's page, drawn from its tidy table (geoprobe.sweep.table) — each headline
metric against training step (log axis, one line per model, CI bands) and against parameter count, the
analogue of Table 2 of arXiv 2512.23752 across the sweep's models, and every cell's status. Headline
metrics of a scan sweep: PC1 share and entropy alignment at each cell's last layer, key orthogonality
(mean |cos| over the first third of the layers), attention focusing (% reduction, first → last layer)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from geoprobe.report.page import Figure, Page, Section, figures_section, paragraph
from geoprobe.sweep.manifest import SweepManifest

if TYPE_CHECKING:
    import plotly.graph_objects

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

    def title(self) -> str:
        return f"geoprobe sweep: {self.manifest.experiment}, {len(self.manifest.cells)} cells"

    def subtitle(self) -> str:
        c = self.manifest.counts()
        return f"{c['done']} done, {c['failed']} failed, {c['pending']} not run; sweep file {self.manifest.sweep_file}"

    def by_cell(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for r in self.rows:
            out.setdefault(r["cell"], []).append(r)
        return out

    def points(self, metric: str, how: str) -> list[dict[str, Any]]:
        """One point per finished cell: its model, step, parameters, seed and (estimate, low, high)."""
        out = []
        for cell, rows in self.by_cell().items():
            h = headline(rows, metric, how)
            if h is not None:
                r = rows[0]
                out.append(
                    dict(
                        cell=cell,
                        model=r["model"],
                        step=r["training_step"],
                        n_params=r["n_params"],
                        seed=r["seed"],
                        value=h,
                    )
                )
        return out

    def figures(self) -> list[Figure]:
        import plotly.graph_objects as go

        figs = []
        for metric, how, label in HEADLINES:
            pts = self.points(metric, how)
            stepped = [p for p in pts if p["step"] is not None]
            if stepped:
                fig = go.Figure()
                for model in sorted({p["model"] for p in stepped}):
                    mine = _mean_over_seeds([p for p in stepped if p["model"] == model], "step")
                    xs = [x + 1 for x, _, _, _ in mine]  # step + 1: step 0 on a log axis
                    _band(fig, xs, mine, model)
                fig.update_layout(
                    title=label, xaxis_title="training step + 1", yaxis_title=label, template="plotly_white"
                )
                fig.update_xaxes(type="log")
                figs.append(
                    Figure(f"{metric}-by-step", f"{label} against training step (mean over seeds; band: mean CI)", fig)
                )
            sized = [p for p in pts if p["n_params"]]
            if len({p["n_params"] for p in sized}) > 1:
                fig = go.Figure()
                mine = _mean_over_seeds(sized, "n_params")
                _band(fig, [x for x, _, _, _ in mine], mine, "models", markers=True)
                fig.update_layout(title=label, xaxis_title="parameters", yaxis_title=label, template="plotly_white")
                fig.update_xaxes(type="log")
                figs.append(Figure(f"{metric}-by-size", f"{label} against parameter count", fig))
        return figs

    def table2(self) -> list[dict[str, str]]:
        """Per model (its latest step, seeds averaged): the Table 2 columns of arXiv 2512.23752."""
        out = []
        cols = {m: self.points(m, how) for m, how, _ in HEADLINES}
        pc12 = self.points("pc12", "last")
        models = sorted({p["model"] for ps in cols.values() for p in ps})
        for model in models:

            def latest(pts: list[dict[str, Any]]) -> str:
                mine = [p for p in pts if p["model"] == model]
                if not mine:
                    return "n/a"
                top = max((p["step"] or 0) for p in mine)
                vals = [p["value"][0] for p in mine if (p["step"] or 0) == top]
                return f"{sum(vals) / len(vals):.3f}"

            out.append(
                {
                    "model": model,
                    "PC1 (last layer)": latest(cols["pc1"]),
                    "PC1+PC2": latest(pc12),
                    "key |cos| (early)": latest(cols["key_orthogonality"]),
                    "focusing reduction": latest(cols["focusing_reduction"]),
                }
            )
        return out

    def sections(self) -> list[Section]:
        from geoprobe.report.blocks import html_table

        status = [
            {
                "cell": c.id,
                "status": c.status,
                "seconds": "" if c.seconds is None else f"{c.seconds:.1f}",
                **{k: str(v) for k, v in c.coordinates.items()},
                "error": c.error or "",
            }
            for c in self.manifest.cells
        ]
        out = [figures_section(self.figures())]
        table = self.table2()
        if table:
            out.append(
                Section("Across models (as Table 2 of arXiv 2512.23752)", paragraph(TABLE2_NOTE) + html_table(table))
            )
        out.append(Section("Cells", html_table(status)))
        return out


TABLE2_NOTE = (
    "Each model at its latest training step, seeds averaged: PC1 and PC1+PC2 shares of the final-layer value "
    "manifold on this sweep's prompts, mean |cos| of W_K columns over the first third of the layers, and % "
    "attention-entropy reduction from the first to the last layer. The paper's Table 2 is on its own prompt "
    "sets and models; compare like with like."
)


def _mean_over_seeds(pts: list[dict[str, Any]], key: str) -> list[tuple[float, float, float | None, float | None]]:
    groups: dict[Any, list[tuple]] = {}
    for p in pts:
        groups.setdefault(p[key], []).append(p["value"])
    out = []
    for x in sorted(groups):
        vals = groups[x]
        lows = [v[1] for v in vals if v[1] is not None]
        highs = [v[2] for v in vals if v[2] is not None]
        out.append(
            (
                x,
                sum(v[0] for v in vals) / len(vals),
                sum(lows) / len(lows) if lows else None,
                sum(highs) / len(highs) if highs else None,
            )
        )
    return out


def _band(
    fig: "plotly.graph_objects.Figure", xs: list[float], mine: list[tuple], name: str, markers: bool = False
) -> None:
    import plotly.graph_objects as go

    if all(lo is not None and hi is not None for _, _, lo, hi in mine):
        fig.add_trace(
            go.Scatter(
                x=xs + xs[::-1],
                y=[m[3] for m in mine] + [m[2] for m in mine][::-1],
                fill="toself",
                opacity=0.2,
                line=dict(width=0),
                showlegend=False,
                hoverinfo="skip",
                name=f"{name} CI",
            )
        )
    fig.add_trace(
        go.Scatter(x=xs, y=[m[1] for m in mine], mode="lines+markers" if not markers else "markers", name=name)
    )


def write_page(manifest: SweepManifest, directory: Path) -> Path:
    """Write ``directory/sweep.html`` from the manifest and the finished cells' rows."""
    from geoprobe.sweep.table import table_rows

    page = SweepPage(manifest, tuple(table_rows(manifest, directory)))
    return page.report(directory / "sweep.html", force=True)
