"""The report's sections, each a list of HTML fragments built from the ledger.

Sections that show anything computed from the private table are only called by
:func:`dpevolve.reporting.report.render_report` when the report is not ``public_safe``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.privacy.ledger import SHAREABLE_KEYS
from dpevolve.reporting.figures import pairs_figure, running_epsilon_figure
from dpevolve.reporting.html import (
    as_mapping,
    compact,
    escape,
    figure_html,
    fmt_exact,
    fmt_num,
    fmt_upper,
    html_table,
    img_html,
    kv_table,
    num_cell,
    pretty_sci,
)

# Ledger keys that hold only public or released facts: the public version shows these and
# nothing else, so a key added to the ledger later is withheld until someone decides.
# Shown in their own sections; the rest goes to the "other ledger fields" table.
_SHOWN_KEYS = (SHAREABLE_KEYS - {"pilot", "marginals", "fits", "details"}) | {
    "notes",
    "seed",
    "validation",
}


_EVENT_COLUMNS = frozenset(
    {"round", "mechanism", "kind", "sensitivity", "sigma", "noise_multiplier", "rho"}
    | {"running_epsilon", "claimed_epsilon", "claimed_delta", "symmetric", "orientation"}
)


_WORST_PAIRS = 15


# ------------------------------------------------------------------------ sections
def guarantee_section(led: Mapping[str, Any], public_safe: bool) -> list[str]:
    out = ["<h2>1. Privacy guarantee</h2>"]
    out.append(f'<p class="guarantee">{_statement(led)}</p>')

    budget = as_mapping(led.get("budget"))
    if budget.get("rho") is not None:
        out.append(
            f"<p>The run was calibrated to a zCDP budget &rho; = {escape(fmt_num(budget['rho']))}; "
            "the statement above is that guarantee expressed as (&epsilon;, &delta;).</p>"
        )

    accounting = as_mapping(led.get("accounting"))
    method = accounting.get("method")
    by_method = accounting.get("by_method") or {}
    if by_method:
        rows = [
            [
                escape(name) + (" (used)" if name == method else ""),
                num_cell(eps, digits=10),
            ]
            for name, eps in by_method.items()
        ]
        out.append(
            "<p>Epsilon at the same &delta; under every accounting method that applies. "
            "The report uses the tightest valid one; the others cross-check it.</p>"
        )
        out.append(html_table(["method", "epsilon"], rows, "accounting"))

    out.append("<h3>Run</h3>")
    out.append(kv_table(_run_facts(led, public_safe), "run"))
    policy = led.get("policy")
    if isinstance(policy, Mapping) and policy.get("attributes"):
        out.append("<h3>Blowfish policy</h3>")
        rows = [
            [escape(name), f"<code>{escape(compact(spec))}</code>"]
            for name, spec in policy["attributes"].items()
        ]
        out.append(
            "<p>Protected attributes and their secret graphs. Attributes not listed are "
            "not protected"
            + (
                "; participation is protected too (any record may become any record)."
                if policy.get("participation")
                else "."
            )
            + "</p>"
        )
        out.append(html_table(["attribute", "secret graph"], rows, "policy"))
    return out


def _statement(led: Mapping[str, Any]) -> str:
    eps = fmt_upper(led.get("epsilon"))
    delta = pretty_sci(fmt_upper(led.get("delta"), digits=3, sci=True))
    n = led.get("private_rows")
    n_text = f" n = {escape(fmt_num(n))}" if isinstance(n, int) else " n"
    policy = led.get("policy")
    participation = not isinstance(policy, Mapping) or bool(policy.get("participation"))
    if led.get("epsilon") is None:
        return (
            "<strong>No finite privacy guarantee</strong> was certified for this run "
            f"(&epsilon; is unbounded at &delta; = {escape(delta)}). Do not release this table."
        )
    pair = f"(&epsilon; = {escape(eps)}, &delta; = {escape(delta)})"
    if participation:
        return (
            f"This table is <strong>{pair}-differentially private</strong> under "
            "replace-one adjacency: replacing any one record of the private table by any "
            "other record changes the probability of any outcome by at most a factor "
            f"e<sup>&epsilon;</sup>, plus &delta;. The private row count{n_text} is "
            "treated as public (bounded DP)."
        )
    return (
        f"This table is <strong>{pair}-Blowfish private</strong> under the policy below: "
        "changing one record's protected attribute along an edge of its secret graph "
        "changes the probability of any outcome by at most a factor "
        "e<sup>&epsilon;</sup>, plus &delta;. It is <strong>not</strong> a guarantee "
        "for attributes the policy leaves unprotected, nor for whether a record is in "
        f"the table. The private row count{n_text} is treated as public."
    )


def _run_facts(led: Mapping[str, Any], public_safe: bool) -> list[tuple[str, str]]:
    """Rows of the run table as (label, already-escaped HTML)."""
    facts: list[tuple[str, str]] = []
    facts.append(("epsilon (exact)", escape(fmt_exact(led.get("epsilon")))))
    facts.append(("delta", escape(fmt_exact(led.get("delta")))))
    budget = led.get("budget")
    if isinstance(budget, Mapping):
        target = ", ".join(f"{k} = {fmt_num(v)}" for k, v in budget.items() if v is not None)
        facts.append(("budget asked for", escape(target)))
    if "adjacency" in led:
        facts.append(("adjacency", escape(led["adjacency"])))
    if "seed" in led and not public_safe:
        facts.append(
            ("seed", f"<code>{escape(led['seed'])}</code> (post-processing only: not the noise)")
        )
    noise = led.get("noise")
    if noise is not None:
        facts.append(
            (
                "privacy noise",
                "secure: discrete Gaussian from the operating system's secure source"
                if noise == "secure"
                else "seeded: reproducible for research; whoever holds the noise seed can "
                "remove the noise",
            )
        )
    facts.append(("dpevolve version", escape(run_version(led))))
    for key, label in (
        ("preset", "preset"),
        ("distance", "distance"),
        ("backend", "backend"),
        ("mechanism", "mechanism"),
        ("private_rows", "private rows n"),
    ):
        if key in led:
            facts.append((label, escape(fmt_num(led[key]))))
    schedule = led.get("schedule")
    if isinstance(schedule, Mapping):
        facts.append(
            (
                "schedule",
                escape(f"population {schedule.get('population')}, rounds {schedule.get('rounds')}"),
            )
        )
    vote = led.get("vote")
    if isinstance(vote, Mapping):
        text = str(vote.get("name"))
        if vote.get("temperature") is not None:
            text += f" (temperature tau = {fmt_num(vote['temperature'])})"
        facts.append(("vote", escape(text)))
    if "policy" in led:
        policy = led["policy"]
        facts.append(
            (
                "policy",
                "none: whole records are protected"
                if policy is None
                else "Blowfish policy (below)",
            )
        )
    for key, label in (
        ("reach", "reach r"),
        ("l2_sensitivity", "L2 sensitivity per release"),
        ("noise_multiplier", "noise multiplier z = sigma / S"),
        ("sigma", "noise sigma per cell"),
    ):
        if key in led:
            facts.append((label, escape(fmt_num(led[key], digits=6))))
    invalid = led.get("invalid_rows")  # configuration only: no count from the data
    if isinstance(invalid, Mapping):
        how = f"on_invalid={invalid.get('on_invalid')}: {invalid.get('invalid_row_vote')}"
        facts.append(("invalid rows", escape(how)))
    if not public_safe and isinstance(led.get("validation"), Mapping):
        facts.append(
            (
                "validation counts (not DP)",
                f"<code>{escape(compact(led['validation']))}</code>",
            )
        )
    return facts


def release_section(led: Mapping[str, Any]) -> list[str]:
    events = [e for e in led.get("events") or [] if isinstance(e, Mapping)]
    out = ["<h2>2. Releases</h2>"]
    if not events:
        out.append("<p>No releases were recorded: no private data was used.</p>")
        return out
    out.append(
        f"<p>{len(events)} release{'s' if len(events) != 1 else ''} of private "
        "information, each recorded in the ledger. Running &epsilon; is the guarantee of "
        "the releases so far; the last one is the run's.</p>"
    )
    points = [
        (e.get("round"), e["running_epsilon"])
        for e in events
        if isinstance(e.get("running_epsilon"), (int, float))
    ]
    if points:
        budget = led.get("budget")
        target = budget.get("epsilon") if isinstance(budget, Mapping) else None
        out.append(
            figure_html(
                running_epsilon_figure(points, target),
                "Running epsilon after each round",
                "Running &epsilon; after each release (at the run's &delta;).",
            )
        )
    rows = []
    for e in events:
        rows.append(
            [
                num_cell(e.get("round")),
                escape(e.get("mechanism", "")),
                num_cell(e.get("sensitivity"), digits=6),
                escape(_noise(e)),
                num_cell(e.get("noise_multiplier"), digits=6),
                num_cell(e.get("rho"), digits=6),
                num_cell(e.get("running_epsilon"), digits=6),
                escape(_details(e)),
            ]
        )
    out.append(
        html_table(
            [
                "round",
                "mechanism",
                "sensitivity S",
                "noise (sigma / beta)",
                "z = sigma / S",
                "rho",
                "running epsilon",
                "released facts",
            ],
            rows,
            table_id="events",
        )
    )
    return out


def notes_section(led: Mapping[str, Any], public_safe: bool) -> list[str]:
    out = ["<h2>3. Ledger notes</h2>"]
    if public_safe:
        # Withheld whether or not there are any: even their presence can say that the
        # private table needed repairs.
        out.append(
            "<p>Withheld: notes can describe the private table (for example how many rows "
            "were repaired) and are not differentially private.</p>"
        )
        return out
    notes = [str(n) for n in led.get("notes") or []]
    if not notes:
        out.append("<p>No notes.</p>")
        return out
    out.append(
        "<p>Recorded during the run. Counts in them come from the private table and are "
        "not differentially private.</p>"
    )
    out.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    return out


def utility_section(
    evaluation: Mapping[str, Any] | None,
    tables: tuple[pd.DataFrame, pd.DataFrame, Schema] | None,
) -> list[str]:
    out = [
        "<h2>4. Utility</h2>",
        '<p class="warning">Everything in this section is computed from the private table '
        "and is <strong>not</strong> differentially private. It is for the data owner's own "
        "judgement of the synthetic table; leave it out of anything shared.</p>",
    ]
    if evaluation is None and tables is None:
        out.append("<p>No evaluation was given.</p>")
        return out
    if evaluation is not None:
        out += _evaluation_tables(evaluation)
    if tables is not None:
        out += _utility_plots(*tables)
    return out


def _evaluation_tables(evaluation: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    rows = evaluation.get("rows")
    if isinstance(rows, Mapping):
        out.append(
            f"<p>Real rows: {escape(fmt_num(rows.get('real')))}; synthetic rows: "
            f"{escape(fmt_num(rows.get('synthetic')))}.</p>"
        )
    marginals = evaluation.get("marginals")
    if isinstance(marginals, Mapping) and marginals:
        out.append("<h3>k-way marginal total variation</h3>")
        out.append(
            "<p>For every set S of k columns, TV<sub>S</sub> = &frac12; &sum; |p<sub>S</sub> "
            "&minus; q<sub>S</sub>| between the real and synthetic k-way tables (numeric "
            "columns in 20 bins over the declared range): 0 means identical, 1 disjoint.</p>"
        )
        table_rows = [
            [
                num_cell(k),
                num_cell(entry.get("sets")),
                num_cell(entry.get("mean")),
                num_cell(entry.get("max")),
                escape(", ".join(str(c) for c in entry.get("worst") or [])),
            ]
            for k, entry in sorted(marginals.items(), key=lambda kv: int(kv[0]))
            if isinstance(entry, Mapping)
        ]
        out.append(
            html_table(["k", "sets", "mean TV", "max TV", "worst set"], table_rows, "marginals")
        )
    tstr = evaluation.get("tstr")
    if isinstance(tstr, Mapping):
        out.append("<h3>Train on synthetic, test on real (TSTR)</h3>")
        test = "the real table itself" if tstr.get("test") == "real" else "held-out real rows"
        out.append(
            f"<p>A classifier ({escape(tstr.get('model', 'hgb'))}) trained on "
            f"{escape(fmt_num(tstr.get('n_train')))} synthetic rows predicts "
            f"<code>{escape(tstr.get('label'))}</code> on "
            f"{escape(fmt_num(tstr.get('n_test')))} rows of "
            f"{escape(test)}. An accuracy near the majority-class baseline means the synthetic "
            "table taught the model nothing.</p>"
        )
        out.append(
            html_table(
                ["measure", "score"],
                [
                    ["accuracy", num_cell(tstr.get("accuracy"))],
                    ["majority-class baseline", num_cell(tstr.get("baseline_accuracy"))],
                    ["macro-F1", num_cell(tstr.get("macro_f1"))],
                    ["AUC", num_cell(tstr.get("auc"))],
                ],
                "tstr",
            )
        )
        if tstr.get("note"):
            out.append(f"<p>Note: {escape(tstr['note'])}</p>")
    return out


def _utility_plots(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> list[str]:
    from dpevolve.reporting.evaluation import marginal_tv
    from dpevolve.reporting.figures import plot_marginals

    out = ["<h3>1-way marginals</h3>"]
    # plot_marginals only writes files; a private temporary folder keeps the PNG of the
    # real data from lingering anywhere but inside this report.
    with tempfile.TemporaryDirectory(prefix="dpevolve-report-") as folder:
        png = plot_marginals(real, synthetic, schema, Path(folder) / "marginals.png")
        data = png.read_bytes()
    out.append(
        img_html(
            data,
            "1-way marginals, real versus synthetic",
            "Share of rows per value or bin: real (blue, computed from the private "
            "table) and synthetic (orange). Panel titles give each column's TV.",
        )
    )
    if len(schema) >= 2:
        pairs = marginal_tv(real, synthetic, schema, 2).per_set
        worst = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:_WORST_PAIRS]
        out.append("<h3>Worst 2-way marginals</h3>")
        out.append(
            figure_html(
                pairs_figure(worst),
                "2-way marginal TV of the worst column pairs",
                f"TV of the {len(worst)} column pair{'s' if len(worst) != 1 else ''} whose "
                f"joint distribution the synthetic table matches worst (of {len(pairs)}).",
            )
        )
    return out


def schema_section(led: Mapping[str, Any]) -> list[str]:
    spec = led.get("schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
        return []
    out = [
        "<h2>5. Schema</h2>",
        "<p>Declared before the private table was read: no range or category comes from "
        "the private data.</p>",
    ]
    label = spec.get("label")
    rows = []
    for name, decl in spec["columns"].items():
        decl = decl if isinstance(decl, Mapping) else {}
        kind = str(decl.get("type", ""))
        if kind == "numeric":
            domain = f"[{fmt_num(decl.get('lo'))}, {fmt_num(decl.get('hi'))}]"
            if decl.get("integer"):
                domain += ", integer"
        else:
            values = [str(v) for v in decl.get("values") or []]
            domain = ", ".join(values[:30]) + (
                f", … ({len(values)} values)" if len(values) > 30 else ""
            )
            if decl.get("hierarchy") is not None:
                domain += " (with a hierarchy)"
        weight = decl.get("weight")
        rows.append(
            [
                escape(name) + (" (label)" if name == label else ""),
                escape(kind),
                escape(domain),
                num_cell(weight) if weight is not None else "default",
            ]
        )
    out.append(html_table(["column", "type", "declared domain", "weight"], rows, "schema"))
    return out


def other_fields_section(led: Mapping[str, Any]) -> list[str]:
    rest = {k: v for k, v in led.items() if k not in _SHOWN_KEYS}
    if not rest:
        return []
    return [
        "<h2>Other ledger fields</h2>",
        kv_table(
            [(str(k), f"<code>{escape(compact(v))}</code>") for k, v in rest.items()], "other"
        ),
    ]


def _noise(event: Mapping[str, Any]) -> str:
    kind = event.get("kind")
    if kind == "gaussian" or "sigma" in event:
        return f"sigma = {fmt_num(event.get('sigma'), 6)}"
    params = event.get("params")
    if kind == "privacy_loss_pair" and isinstance(params, Mapping) and "beta" in params:
        return f"beta = {fmt_num(params['beta'], 6)}"
    if kind == "approx_dp":
        return f"(eps, delta) = ({fmt_num(event.get('epsilon'))}, {fmt_num(event.get('delta'))})"
    if kind == "zero_cost":
        return "none (reads no private data)"
    return ""


def _details(event: Mapping[str, Any]) -> str:
    parts = []
    for key, value in event.items():
        if key in _EVENT_COLUMNS:
            continue
        if key == "params" and isinstance(value, Mapping):
            parts += [f"{k} = {compact(v)}" for k, v in value.items() if k != "beta"]
        elif not (event.get("kind") == "approx_dp" and key in ("epsilon", "delta")):
            parts.append(f"{key} = {compact(value)}")
    return ", ".join(parts)


def run_version(led: Mapping[str, Any]) -> str:
    """The version that made the run (from the ledger), else "unknown"."""
    version = led.get("dpevolve_version")
    return "unknown" if version is None else str(version)
