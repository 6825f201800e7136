"""The report's utility and row sections: TSTR against the real table's model, k-way
marginal TV, per-column summaries, plots, and the rows of the file written.

Everything here but :func:`released_rows_section` reads the private table and is only
called for the data owner's version of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.types import DateColumn
from dpevolve.reporting.figures import marginals_figure, pairs_figure
from dpevolve.reporting.html import escape, figure_html, fmt_num, html_table, kv_table, num_cell
from dpevolve.reporting.reliance import reliance_section

__all__ = ["released_rows_section", "rows_section", "utility_section"]

_WORST_PAIRS = 15


def utility_section(
    evaluation: Mapping[str, Any] | None,
    tables: tuple[pd.DataFrame, pd.DataFrame, Schema] | None,
) -> list[str]:
    """TSTR, marginal TV, per-column summaries and the plots (owner only)."""
    out = [
        "<h2>1. Utility of the file written</h2>",
        '<p class="warning">Everything in this section is computed from the private table '
        "and is <strong>not</strong> differentially private. It is for the data owner's own "
        "judgement of the synthetic table; leave it out of anything shared.</p>",
    ]
    if evaluation is None and tables is None:
        out.append("<p>No evaluation was given.</p>")
        return out
    sample = evaluation.get("private_sample") if evaluation is not None else None
    if isinstance(sample, Mapping):
        out.append(
            f"<p>The private table was read in batches: the measures below use a uniform "
            f"sample of {fmt_num(sample.get('rows'))} of its {fmt_num(sample.get('of'))} "
            "rows, so the report's memory stays bounded.</p>"
        )
    if evaluation is not None:
        out += _tstr_table(evaluation.get("tstr"))
        out += reliance_section(evaluation.get("reliance"))
        out += _marginal_table(evaluation)
    if tables is not None:
        out += _plots(*tables, evaluation)
    if evaluation is not None and isinstance(evaluation.get("columns"), Mapping) and tables:
        out += _column_tables(evaluation["columns"], tables[2])
    return out


def _tstr_table(tstr: Any) -> list[str]:
    if not isinstance(tstr, Mapping):
        return []
    out = ["<h3>Train on synthetic, test on real (TSTR)</h3>"]
    if tstr.get("test") == "held-out":
        where = f"{fmt_num(tstr.get('n_test'))} held-out real rows"
    else:
        where = (
            f"{fmt_num(tstr.get('n_test'))} private rows. <strong>No held-out table was "
            "given</strong>: the synthetic table was made from these rows, so its score is "
            "optimistic; give held-out rows with <code>dpevolve report PRIVATE SYNTHETIC "
            "--ledger L --test T</code> for an honest estimate"
        )
    real = tstr.get("real") if isinstance(tstr.get("real"), Mapping) else None
    out.append(
        f"<p>A classifier ({escape(tstr.get('model', 'hgb'))}) learns to predict "
        f"<code>{escape(tstr.get('label'))}</code> from the other columns of "
        f"{escape(fmt_num(tstr.get('n_train')))} synthetic rows"
        + (
            f" and, for comparison, of {escape(fmt_num(real.get('n_train')))} real rows"
            if real
            else ""
        )
        + f"; both are tested on {where}.</p>"
    )
    header = ["measure", "trained on synthetic"] + (["trained on real"] if real else [])
    rows = []
    for key, name in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"), ("auc", "AUC")):
        rows.append(
            [name, num_cell(tstr.get(key), 3)] + ([num_cell(real.get(key), 3)] if real else [])
        )
    rows.append(
        [
            "majority class (always guess the most common)",
            num_cell(tstr.get("baseline_accuracy"), 3),
        ]
        + (['<td class="num">same</td>'] if real else [])
    )
    out.append(html_table(header, rows, "tstr"))
    if tstr.get("note"):
        out.append(f"<p>Note: {escape(tstr['note'])}</p>")
    return out


def _marginal_table(evaluation: Mapping[str, Any]) -> list[str]:
    marginals = evaluation.get("marginals")
    if not isinstance(marginals, Mapping) or not marginals:
        return []
    rows = [
        [
            num_cell(k),
            num_cell(entry.get("sets")),
            num_cell(entry.get("mean"), 3),
            num_cell(entry.get("max"), 3),
            escape(", ".join(str(c) for c in entry.get("worst") or [])),
        ]
        for k, entry in sorted(marginals.items(), key=lambda kv: int(kv[0]))
        if isinstance(entry, Mapping)
    ]
    return [
        "<h3>k-way marginal total variation</h3>",
        "<p>For every set S of k columns, TV<sub>S</sub> = &frac12; &sum; |p<sub>S</sub> "
        "&minus; q<sub>S</sub>| between the real and synthetic k-way tables (numeric "
        "columns in 20 bins over the declared range): 0 means identical, 1 disjoint.</p>",
        html_table(["k", "sets", "mean TV", "max TV", "worst set"], rows, "marginals"),
    ]


def _plots(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, evaluation: Any
) -> list[str]:
    from dpevolve.metrics import bin_codes, marginal_report

    out = [
        "<h3>1-way marginals</h3>",
        figure_html(
            marginals_figure(real, synthetic, schema),
            "1-way marginals, real versus synthetic",
            "Share of rows per value or bin: real (blue, from the private table) and "
            "synthetic (orange). Panel titles give each column's TV.",
        ),
    ]
    if len(schema) >= 2:
        names = schema.names
        codes = [{n: bin_codes(t, schema[n]) for n in names} for t in (real, synthetic)]
        pairs = marginal_report(schema, names, 2, codes[0], codes[1]).per_set
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


def _column_tables(columns: Mapping[str, Any], schema: Schema) -> list[str]:
    numeric, categorical = [], []
    for name, entry in columns.items():
        if name not in schema:
            continue
        col = schema[name]
        if entry.get("type") == "numeric" and isinstance(col, NumericColumn):
            real, synth = entry["real"], entry["synthetic"]

            def pair(
                key: str, col: NumericColumn = col, real: Any = real, synth: Any = synth
            ) -> str:
                return f"{_value(col, real.get(key))} / {_value(col, synth.get(key))}"

            numeric.append(
                [
                    escape(name),
                    num_text(pair("mean")),
                    num_text(pair("median")),
                    num_text(f"{_value(col, real.get('q25'))} – {_value(col, real.get('q75'))}"),
                    num_text(f"{_value(col, synth.get('q25'))} – {_value(col, synth.get('q75'))}"),
                    num_text(f"{_pct(real.get('missing'))} / {_pct(synth.get('missing'))}"),
                ]
            )
        elif entry.get("type") == "categorical":
            for i, share in enumerate(entry.get("shares") or []):
                categorical.append(
                    [
                        escape(name) if i == 0 else "",
                        escape(share.get("value")),
                        num_text(_pct(share.get("real"))),
                        num_text(_pct(share.get("synthetic"))),
                    ]
                )
    out = ["<h3>Per column: real / synthetic</h3>"]
    if numeric:
        header = ["column", "mean", "median", "quartiles (real)", "quartiles (synthetic)"]
        out.append(html_table([*header, "missing"], numeric, "columns-numeric"))
    if categorical:
        out.append(
            "<details><summary>Category shares: the five most common real values of each "
            "categorical column</summary>"
            + html_table(
                ["column", "value", "real", "synthetic"], categorical, "columns-categorical"
            )
            + "</details>"
        )
    return out


def rows_section(evaluation: Mapping[str, Any] | None) -> list[str]:
    """Distinct, duplicated and copied rows and the DCR (owner only)."""
    rows = evaluation.get("rows") if evaluation else None
    out = ["<h2>2. Rows of the file written</h2>"]
    if not isinstance(rows, Mapping) or "distinct" not in rows:
        out.append("<p>Not measured.</p>")
        return out
    facts = _row_facts(rows, owner=True)
    matches = evaluation.get("matches") if evaluation else None
    if isinstance(matches, Mapping):
        whose = (
            "held-out real rows equal to a private record (for comparison)"
            if matches.get("reference") == "held-out"
            else "half the real rows equal to a row of the other half (for comparison)"
        )
        facts.append((whose, escape(_pct(matches.get("real")))))
    out.append(kv_table(facts, "rows"))
    dcr = evaluation.get("dcr") if evaluation else None
    if isinstance(dcr, Mapping):
        out += _dcr_table(dcr)
    return out


def released_rows_section(rows: Mapping[str, Any] | None) -> list[str]:
    """Distinct and duplicated rows, from the synthetic (released) table alone."""
    out = ["<h2>2. Rows of the file written</h2>"]
    if not rows:
        out.append("<p>Not measured: no synthetic table was given.</p>")
        return out
    out.append(kv_table(_row_facts(rows, owner=False), "rows"))
    out.append(
        "<p>Computed from the synthetic table alone, which is released: no private "
        "record is read. Comparisons with the private table are in the owner's version.</p>"
    )
    return out


def _row_facts(rows: Mapping[str, Any], owner: bool) -> list[tuple[str, str]]:
    total = rows.get("synthetic", rows.get("rows"))
    facts = [
        ("synthetic rows", escape(fmt_num(total))),
        ("distinct rows", escape(_count(rows.get("distinct"), total))),
        ("duplicated rows (repeat an earlier row)", escape(_count(rows.get("duplicated"), total))),
    ]
    if owner and "copied" in rows:
        facts.append(
            (
                "rows equal to a private record (not DP)",
                escape(_count(rows.get("copied"), total))
                + " &mdash; a row can match by chance when the columns have few values",
            )
        )
    return facts


def _dcr_table(dcr: Mapping[str, Any]) -> list[str]:
    rows = []
    for key, what in (("synthetic", "synthetic rows"), ("held_out", "held-out real rows")):
        entry = dcr.get(key)
        if isinstance(entry, Mapping):
            rows.append(
                [
                    what,
                    num_cell(entry.get("rows")),
                    num_cell(entry.get("median"), 3),
                    num_cell(entry.get("p05"), 3),
                    num_text(_pct(entry.get("zero"))),
                ]
            )
    reference = (
        "Held-out real rows give the distance a fresh record of the same population has; "
        "synthetic rows much closer than that would suggest memorised records."
        if "held_out" in dcr
        else "Give <code>--test</code> to compare with the distance of held-out real rows."
    )
    return [
        "<h3>Distance to the closest private record (DCR)</h3>",
        "<p>Gower distance (mean over columns of |a &minus; b| / declared range, or 0/1 "
        f"for categories) from each row to its closest of {escape(fmt_num(dcr.get('searched')))} "
        f"private rows; 0 is an exact copy. {reference} Not DP: never share it.</p>",
        html_table(["rows", "measured", "median", "5th percentile", "at distance 0"], rows, "dcr"),
    ]


def _value(col: NumericColumn, value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(col, DateColumn):
        return col.text(float(value))
    return fmt_num(float(value), 4)


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * float(value):.1f}%"


def _count(count: Any, total: Any) -> str:
    if not isinstance(count, int):
        return "n/a"
    share = f" ({100 * count / total:.1f}%)" if isinstance(total, int) and total else ""
    return f"{count:,}{share}"


def num_text(text: str) -> str:
    """A right-aligned table cell holding already-formatted text."""
    return f'<td class="num">{escape(text)}</td>'
