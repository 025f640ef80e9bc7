"""``geoprobe models`` and ``geoprobe prompts``: what --model and --prompts accept here."""

from __future__ import annotations

import json
import os

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.errors import GeoprobeError

#: table columns of ``geoprobe models``, most important first: (header, row key, narrowest useful width);
#: where the terminal is too narrow the last ones are left out (and named in the caption), never cut
MODEL_COLUMNS = (
    ("params", "size", 6),
    ("attention", "attention", 12),
    ("here", "here", 4),
    ("layers", "layers", 6),
    ("family", "family", 8),
    ("source", "where", 14),
)
FORMATS = ("table", "json")


def _terminal_width() -> int:
    """The width to lay the table out for: $COLUMNS when set (read now, not at import), else the console's."""
    cols = os.environ.get("COLUMNS", "")
    return min(int(cols), out.width) if cols.isdigit() and int(cols) > 0 else out.width


def _fit_columns(alias_width: int, width: int) -> tuple[list[tuple[str, str, int]], list[str]]:
    """The columns that fit beside a whole alias column (each column costs its width + 3 for padding
    and rule, the table 1 more), and the headers of those left out."""
    used = alias_width + 4
    kept: list[tuple[str, str, int]] = []
    for col in MODEL_COLUMNS:
        if used + col[2] + 3 > width:
            break
        kept.append(col)
        used += col[2] + 3
    return kept, [c[0] for c in MODEL_COLUMNS[len(kept) :]]


def _model_rows() -> list[dict]:
    from geoprobe.models.registry import ALIASES, architecture, attention_kind, weights_available

    rows = []
    for spec in ALIASES.values():
        arch = architecture(spec.config)
        rows.append(
            {
                "alias": spec.alias,
                "hf_id": spec.hf_id,
                "family": spec.family,
                "attention": attention_kind(spec.hf_config_dict()),
                "features": arch.features(),
                "layers": arch.n_layers,
                "heads": arch.n_heads,
                "kv_heads": arch.n_kv_heads,
                "d_head": arch.d_head,
                "sliding_window": arch.sliding_window,
                "parameters": arch.parameters,
                "available": weights_available(spec),
                "source": spec.source if spec.source == "hub" else f"offline package {spec.package}",
                "note": spec.note,
            }
        )
    return rows


@app.command()
def models(
    ctx: typer.Context,
    fmt: str = typer.Option("table", "--format", help="table (fits the terminal) or json (every field)"),
    as_json: bool = typer.Option(False, "--json", help="same as --format json"),
) -> None:
    """List model aliases: parameters, attention mechanisms, layers, weights available here, Hub id."""
    if fmt not in FORMATS:
        raise GeoprobeError(
            f"--format {fmt!r} is not one of {', '.join(FORMATS)}; pass --format table or --format json"
        )
    if as_json and fmt == "table" and ctx.get_parameter_source("fmt").name == "COMMANDLINE":
        raise GeoprobeError("--json and --format table contradict each other; pass one of them")
    rows = _model_rows()
    if as_json or fmt == "json":
        out.print_json(json.dumps(rows))
        return
    width = _terminal_width()
    alias_width = max(len(r["alias"]) for r in rows)
    kept, left_out = _fit_columns(alias_width, width)
    caption = (
        f"left out at this width: {', '.join(left_out)} (a wider terminal, or --format json, shows them)"
        if left_out
        else None
    )
    table = Table(title="geoprobe models", caption=caption)
    table.add_column("alias", no_wrap=True, min_width=alias_width, overflow="ignore")
    for header, _, min_width in kept:
        table.add_column(header, min_width=min_width, overflow="fold")
    for r in rows:
        p = r["parameters"]
        cells = {
            "size": f"{p / 1e9:.2f}B" if p >= 1e9 else f"{p / 1e6:.0f}M",
            "attention": ", ".join(r["features"]),
            "here": "yes" if r["available"] else "no",
            "layers": str(r["layers"]),
            "family": r["family"],
            "where": r["hf_id"] if r["source"] == "hub" else r["source"],
        }
        table.add_row(r["alias"], *(cells[key] for _, key, _ in kept))
    out.print(table, width=width)
    for r in rows:  # what an alias alone would hide (an embedded GGUF: which model, which quantisation)
        if r["note"]:
            out.print(f"{r['alias']}: {r['note']}", width=width, highlight=False)


@app.command(name="prompts")
def prompt_sets(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List the prompt sets --prompts accepts: builtin, mixed and every corpus domain (available here?)."""
    from geoprobe.corpora import DOMAINS, available_domains

    avail = available_domains()
    rows = [
        {"set": "builtin", "kind": "builtin", "available": True, "note": "160 hand-written prompts"},
        {
            "set": "mixed",
            "kind": "corpus",
            "available": sum(v is None for v in avail.values()) >= 2,
            "note": "every available domain, stratified by next-token entropy",
        },
    ]
    rows += [{"set": d, "kind": "corpus", "available": avail[d] is None, "note": avail[d] or ""} for d in DOMAINS]
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="prompt sets (--prompts / --domain)")
    for col in ("set", "kind", "available", "note"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["set"], r["kind"], "yes" if r["available"] else "no", r["note"])
    out.print(table)
