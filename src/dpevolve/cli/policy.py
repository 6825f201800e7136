"""``dpevolve policy show|audit``: what a Blowfish policy protects and what it saves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dpevolve.cli.common import Distance, SchemaPath, policy_app
from dpevolve.data.io import read_table
from dpevolve.errors import InputError

Temperatures = Annotated[
    list[float] | None,
    typer.Option(
        "--temperature", "-t", help="Soft-vote temperature (repeatable; default 0.015 0.03 0.06)."
    ),
]
DistanceOption = Annotated[
    Distance,
    typer.Option(
        "--distance", help="Record distance: gower (preset bfsoft) or tabpe (preset tabpe)."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]
DEFAULT_TAUS = (0.015, 0.03, 0.06)


@policy_app.command(
    "show",
    help="Per-attribute and record reach, soft-vote bounds, q and the budget saving (1/q^2)."
    "\n\nExample:\n\n\b\n"
    "  dpevolve policy show policy.yaml -s schema.yaml -t 0.03 -t 0.06",
)
def policy_show(
    policy: Annotated[Path, typer.Argument(metavar="POLICY", help="Policy YAML.")],
    schema: SchemaPath,
    temperature: Temperatures = None,
    distance: DistanceOption = Distance.gower,
    as_json: AsJson = False,
) -> None:
    from dpevolve.data.schema import Schema
    from dpevolve.pe.distance import make_distance
    from dpevolve.pe.policy.blowfish import Policy, summarize

    table_schema = Schema.load(schema)
    temperatures = tuple(temperature) if temperature else DEFAULT_TAUS
    for tau in temperatures:
        if not tau > 0:
            raise InputError(f"--temperature must be > 0, got {tau}")
    summary = summarize(
        Policy.load(policy, table_schema),
        make_distance(distance.value, table_schema),
        temperatures,
    )
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"record reach r = {summary['reach']:.6g}  ({distance.value} distance)")
    for name, info in summary["attributes"].items():
        typer.echo(f"  {name:20s} {info['graph']:28s} r_k = {info['reach']:.6g}")
    typer.echo(f"{'tau':>8} {'q':>8} {'L1 bound':>10} {'L2 bound':>10} {'saving 1/q^2':>13}")
    for row in summary["temperatures"]:
        saving = row["budget_saving"]
        typer.echo(
            f"{row['tau']:8.4g} {row['q']:8.4f} {row['l1_bound']:10.4f} "
            f"{row['l2_bound']:10.4f} {'inf' if saving is None else f'{saving:.3g}':>13}"
        )
    for warning in summary.get("warnings", []):
        typer.echo(f"warning: {warning}", err=True)


@policy_app.command(
    "audit",
    help="Exact hard and soft sensitivity of POPULATION by search over protected edges.\n\n"
    "Audits the closed-form bounds on a released population over the whole (small) "
    "domain; the population is public, so this spends no budget.\n\n"
    "Example:\n\n\b\n"
    "  dpevolve policy audit policy.yaml -s schema.yaml --population synthetic.csv -t 0.03",
)
def policy_audit(
    policy: Annotated[Path, typer.Argument(metavar="POLICY", help="Policy YAML.")],
    schema: SchemaPath,
    population: Annotated[
        Path, typer.Option("--population", help="A released table (the candidates: public).")
    ],
    temperature: Temperatures = None,
    distance: DistanceOption = Distance.gower,
    as_json: AsJson = False,
) -> None:
    from dpevolve.data.encoding import encode
    from dpevolve.data.schema import Schema
    from dpevolve.pe.distance import make_distance
    from dpevolve.pe.policy.blowfish import Policy
    from dpevolve.pe.policy.sensitivity import (
        exact_hard_sensitivity,
        exact_soft_sensitivity,
        soft_bound,
    )

    table_schema = Schema.load(schema)
    rule = Policy.load(policy, table_schema)
    metric = make_distance(distance.value, table_schema)
    frame, _ = table_schema.validate(read_table(population, "population"), what="population")
    candidates = encode(frame, table_schema)
    reach = rule.reach(metric)
    hard = exact_hard_sensitivity(rule, metric, candidates)
    rows = [{"vote": "hard", "bound": 2**0.5 if reach > 0 else 0.0, **hard.to_dict()}]
    for tau in temperature or DEFAULT_TAUS:
        soft = exact_soft_sensitivity(rule, metric, candidates, tau)
        rows.append(
            {
                "vote": "soft",
                "tau": tau,
                "bound": soft_bound(reach, tau),
                **{k: v for k, v in soft.to_dict().items() if k != "vote"},
            }
        )
    if as_json:
        typer.echo(
            json.dumps({"reach": reach, "candidates": len(candidates), "audit": rows}, indent=2)
        )
        return
    typer.echo(f"reach r = {reach:.6g}; {len(candidates)} candidates ({distance.value} distance)")
    typer.echo(
        f"{'vote':>6} {'tau':>7} {'exact L2':>9} {'bound':>9} {'ratio':>6} "
        f"{'edges':>10} {'seconds':>8}"
    )
    for row in rows:
        ratio = row["value"] / row["bound"] if row["bound"] > 0 else float("nan")
        tau_text = f"{row['tau']:.4g}" if "tau" in row else "-"
        typer.echo(
            f"{row['vote']:>6} {tau_text:>7} {row['value']:9.4f} {row['bound']:9.4f} "
            f"{ratio:6.3f} {row['edges_checked']:10d} {row['seconds']:8.2f}"
        )
