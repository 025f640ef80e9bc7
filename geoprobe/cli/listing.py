"""``geoprobe models`` and ``geoprobe prompts``: what --model and --prompts accept here."""
from __future__ import annotations

import json

import typer
from rich.table import Table

from geoprobe.cli.app import app, out


@app.command()
def models(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List model aliases: family, attention kind, parameters, weights available here."""
    from geoprobe.models.registry import ALIASES, attention_kind, parameter_count, weights_available

    rows = []
    for spec in ALIASES.values():
        cfg = spec.hf_config_dict()
        rows.append({
            "alias": spec.alias,
            "hf_id": spec.hf_id,
            "family": spec.family,
            "attention": attention_kind(cfg),
            "layers": cfg["num_hidden_layers"],
            "parameters": parameter_count(spec.config),
            "available": weights_available(spec),
            "source": spec.source if spec.source == "hub" else f"offline package {spec.package}",
        })
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="geoprobe models")
    for col in ("alias", "family", "attention", "layers", "params", "weights here", "source"):
        table.add_column(col)
    for r in rows:
        p = r["parameters"]
        size = f"{p / 1e9:.2f}B" if p >= 1e9 else f"{p / 1e6:.0f}M"
        table.add_row(r["alias"], r["family"], r["attention"], str(r["layers"]), size,
                      "yes" if r["available"] else "no", r["hf_id"] if r["source"] == "hub" else r["source"])
    out.print(table)


@app.command(name="prompts")
def prompt_sets(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List the prompt sets --prompts accepts: builtin, mixed and every corpus domain (available here?)."""
    from geoprobe.corpora import DOMAINS, available_domains

    avail = available_domains()
    rows = [{"set": "builtin", "kind": "builtin", "available": True, "note": "160 hand-written prompts"},
            {"set": "mixed", "kind": "corpus", "available": sum(v is None for v in avail.values()) >= 2,
             "note": "every available domain, stratified by next-token entropy"}]
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
