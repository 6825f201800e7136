"""Utility of a synthetic table against the real one (docs/math.md §7).

Two measures, both computed by the data owner on their own side (they read the private
table and are not privatised):

* **k-way marginal error** (:func:`~dpevolve.metrics.marginal_tv`): for
  every set ``S`` of ``k`` columns, the total variation distance between the real and
  synthetic ``k``-way contingency tables, ``TV_S = 1/2 * sum_cells |p_S(cell) - q_S(cell)|``,
  averaged over all sets.
  Numeric columns are cut into 20 equal-width bins over their *declared* range.
* **TSTR** (:func:`~dpevolve.reporting.tstr.tstr`): train a classifier on the synthetic
  table, test it on a real held-out split; accuracy, macro-F1 and AUC.

:func:`evaluate` runs both and returns a JSON-ready dict; :func:`format_report` prints it.
The measures live in :mod:`~dpevolve.metrics` and
:mod:`~dpevolve.reporting.tstr` and are re-exported here.
Figures of these numbers are drawn by :mod:`dpevolve.reporting.figures`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, Schema
from dpevolve.errors import InputError
from dpevolve.metrics import (
    NUMERIC_BINS,
    MarginalReport,
    bin_codes,
    bin_count,
    marginal_columns,
    marginal_report,
    marginal_tv,
)
from dpevolve.reporting.columns import column_summaries
from dpevolve.reporting.reliance import findings, reliance
from dpevolve.reporting.rows import (
    DCR_PRIVATE_ROWS,
    distance_to_closest,
    match_share,
    row_report,
)
from dpevolve.reporting.tstr import TSTRReport, baseline, label_column, tstr, tstr_encoded

__all__ = [
    "NUMERIC_BINS",
    "MarginalReport",
    "TSTRReport",
    "baseline",
    "bin_codes",
    "bin_count",
    "evaluate",
    "format_report",
    "marginal_columns",
    "marginal_tv",
    "tstr",
    "verdict",
]


# ------------------------------------------------------------------- evaluate
#: Share of the private rows held out, when no test table is given, to test both the
#: synthetic table's model and the real table's own model on the same rows.
HOLDOUT_SHARE = 0.2
# Below this many private rows there is no split: TSTR tests on every private row.
_MIN_SPLIT_ROWS = 20


def evaluate(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    label: str | None = None,
    test: pd.DataFrame | None = None,
    ks: Iterable[int] = (1, 2, 3),
    random_state: int = 0,
    n_threads: int | None = None,
    *,
    validated: bool = False,
    privacy_checks: bool = True,
    relations: bool = True,
) -> dict[str, Any]:
    """All docs/math.md §7 measures of ``synth`` against ``real``, as a JSON-ready dict.

    ``marginals[str(k)]`` holds the mean and max of ``TV_S = 1/2 ||p_S - q_S||_1`` over
    all ``k``-sets ``S`` (see :func:`marginal_tv`); values of ``k`` above the number of
    columns are skipped. ``tstr`` (see :func:`tstr`) is present when ``label`` is given:
    tested on ``test``, with ``tstr["real"]`` the scores of the same model trained on
    ``real`` and tested on the same rows. Without ``test`` a seeded 20% of ``real`` is
    held out from the real model's training and both are tested on it; the synthetic
    table was made from those rows, so its score is optimistic (``tstr["test"]`` is
    ``"private"`` and the note says so).

    Parameters
    ----------
    real
        The real (private) table.
    synth
        The synthetic table.
    schema
        The declared domains.
    label
        Column for TSTR; ``None`` skips TSTR.
    test
        Real held-out rows for TSTR.
    ks
        Marginal orders to report.
    random_state
        Seed of the TSTR classifier, the holdout split and the DCR samples.
    n_threads
        OpenMP threads of the TSTR classifier (see :func:`tstr`).
    validated
        The tables were already validated by :meth:`Schema.validate` (dates as numbers).
    privacy_checks
        Also count distinct, duplicated and copied rows and measure the distance to the
        closest private record (:mod:`~dpevolve.reporting.rows`), and summarise each
        column (:mod:`~dpevolve.reporting.columns`).
    relations
        With a label, also check what the score rests on
        (:func:`~dpevolve.reporting.reliance.reliance`: the real table's strongest
        relations in both tables, and a model without the most telling feature).

    Returns
    -------
    dict
        ``{"rows": {"real": n, "synthetic": m, ...}, "marginals": {"1": {...}, ...},
        "tstr": {...}, "reliance": {...}, "dcr": {...}, "columns": {...}}``; NaN scores
        are ``None`` so ``json.dumps(allow_nan=False)`` works.

    Raises
    ------
    InputError
        A table does not fit the schema, or the label is unknown or numeric.
    """
    column = label_column(schema, label) if label is not None else None
    orders = sorted({int(k) for k in ks})
    for k in orders:
        if k < 1:
            raise InputError(f"marginal orders must be at least 1, got {k}")
    real_frame = _valid(real, schema, "real table", validated)
    synth_frame = _valid(synth, schema, "synthetic table", validated)
    test_frame = None if test is None else _valid(test, schema, "real test table", validated)

    result: dict[str, Any] = {
        "rows": {"real": len(real_frame), "synthetic": len(synth_frame)},
        "marginals": _marginals(real_frame, synth_frame, schema, orders),
    }
    if column is not None:
        split = _split(real_frame, test_frame, random_state)
        result["tstr"] = _tstr(synth_frame, split, schema, column, random_state, n_threads)
        if relations:
            real_train, test_rows = split[0], split[1]
            result["reliance"] = reliance(
                real_frame, synth_frame, real_train, test_rows, schema, column,
                random_state, n_threads,
            )  # fmt: skip
    if privacy_checks:
        rows = row_report(synth_frame, schema, real_frame).to_dict()
        result["rows"].update({k: v for k, v in rows.items() if k != "rows"})
        result["matches"] = _matches(result["rows"], real_frame, test_frame, schema, random_state)
        result["dcr"] = _dcr(real_frame, synth_frame, test_frame, schema, random_state)
        result["columns"] = column_summaries(real_frame, synth_frame, schema)
    return result


def _marginals(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, orders: list[int]
) -> dict[str, Any]:
    """The marginal report of every order up to the number of columns."""
    names = schema.names
    real_codes = {n: bin_codes(real, schema[n]) for n in names}
    synth_codes = {n: bin_codes(synth, schema[n]) for n in names}
    return {
        str(k): marginal_report(schema, names, k, real_codes, synth_codes).to_dict()
        for k in orders
        if k <= len(names)
    }


def _valid(frame: pd.DataFrame, schema: Schema, what: str, validated: bool) -> pd.DataFrame:
    if validated:
        return frame
    return schema.validate(frame, on_invalid="error", what=what)[0]


Split = tuple[pd.DataFrame | None, pd.DataFrame, str, str | None]


def _split(real: pd.DataFrame, test: pd.DataFrame | None, random_state: int) -> Split:
    """The real rows the real model trains on (``None``: none), the rows both models are
    tested on, what those are (``held-out`` or ``private``) and why, when optimistic."""
    if test is not None:
        return real, test, "held-out", None
    if len(real) >= _MIN_SPLIT_ROWS:
        rng = np.random.default_rng(random_state)
        held = rng.random(len(real)) < HOLDOUT_SHARE
        return (
            real.loc[~held],
            real.loc[held],
            "private",
            "tested on private rows the synthetic table was made from (no --test given): "
            "optimistic, not a held-out estimate",
        )
    return (
        None,
        real,
        "private",
        "tested on the private table itself (no --test given, too few rows to hold "
        "some out): optimistic, not a held-out estimate",
    )


def _tstr(
    synth: pd.DataFrame,
    split: Split,
    schema: Schema,
    column: CategoricalColumn,
    random_state: int,
    n_threads: int | None,
) -> dict[str, Any]:
    """TSTR of the synthetic table and, on the same test rows, of the real one."""
    real_train, test_rows, kind, why = split
    notes: list[str | None] = [why]
    synthetic = tstr_encoded(synth, test_rows, schema, column, random_state, n_threads)
    out = synthetic.to_dict()
    out["test"] = kind
    notes.append(synthetic.note)
    if real_train is not None:
        own = tstr_encoded(real_train, test_rows, schema, column, random_state, n_threads)
        out["real"] = {
            "accuracy": own.to_dict()["accuracy"],
            "macro_f1": own.to_dict()["macro_f1"],
            "auc": own.to_dict()["auc"],
            "n_train": own.n_train,
        }
    kept = [n for n in notes if n]
    out["note"] = "; ".join(kept) if kept else None
    return out


def _matches(
    rows: Mapping[str, Any],
    real: pd.DataFrame,
    test: pd.DataFrame | None,
    schema: Schema,
    random_state: int,
) -> dict[str, Any]:
    """Share of synthetic rows equal to a real row, beside the same share for real rows
    the synthesizer never saw (held-out rows, else one random half of the real table
    against the other): where columns take few values, equal rows come by chance."""
    if test is not None:
        reference, against, kind = test, real, "held-out"
    else:
        half = np.random.default_rng(random_state).random(len(real)) < 0.5
        reference, against, kind = real.loc[half], real.loc[~half], "half"
    synthetic = rows.get("synthetic") or 0
    return {
        "synthetic": (rows.get("copied") or 0) / synthetic if synthetic else 0.0,
        "real": match_share(reference, against, schema),
        "reference": kind,
        "columns": len(schema),
    }


def _dcr(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    test: pd.DataFrame | None,
    schema: Schema,
    random_state: int,
) -> dict[str, Any]:
    """Summary of the synthetic rows' distance to the closest private record, and of
    held-out real rows' for reference when ``test`` is given."""

    def summary(values: np.ndarray) -> dict[str, Any]:
        return {
            "rows": len(values),
            "median": float(np.median(values)),
            "p05": float(np.quantile(values, 0.05)),
            "zero": float(np.mean(values == 0.0)),
        }

    out: dict[str, Any] = {
        "synthetic": summary(distance_to_closest(synth, real, schema, random_state)),
        "searched": min(len(real), DCR_PRIVATE_ROWS),
    }
    if test is not None:
        out["held_out"] = summary(distance_to_closest(test, real, schema, random_state))
    return out


# ------------------------------------------------------------------ reporting
def verdict(result: Mapping[str, Any]) -> str:
    """One sentence on the evaluated table: the TSTR accuracy against the real table's
    model and the majority class, and the 1-way marginals' mean TV; before them, what the
    score rests on when a relation of the real table is lost
    (:func:`~dpevolve.reporting.reliance.findings`)."""
    parts: list[str] = []
    warning = ""
    checked = result.get("reliance")
    if isinstance(checked, Mapping):
        lost = findings(checked)
        if lost:
            warning = "Check before trusting the score: " + "; ".join(lost) + ". "
    tstr_result = result.get("tstr")
    if isinstance(tstr_result, Mapping) and tstr_result.get("accuracy") is not None:
        acc = float(tstr_result["accuracy"])
        where = "held-out real rows" if tstr_result.get("test") == "held-out" else "private rows"
        text = f"a model trained on the synthetic table predicts '{tstr_result.get('label')}' "
        text += f"with accuracy {acc:.3f} on {where}"
        real = tstr_result.get("real")
        if isinstance(real, Mapping) and real.get("accuracy") is not None:
            text += f", {_points(acc - float(real['accuracy']))} the real table's model"
            text += f" ({float(real['accuracy']):.3f})"
        majority = tstr_result.get("baseline_accuracy")
        if majority is not None:
            gap = acc - float(majority)
            text += f" and {_points(gap)} the majority class ({float(majority):.3f})"
            if gap <= 0:
                text += ": it does not beat always guessing the most common class"
        parts.append(text)
    one_way = result.get("marginals", {}).get("1")
    if isinstance(one_way, Mapping) and one_way.get("mean") is not None:
        parts.append(
            f"its columns' distributions are {float(one_way['mean']):.3f} from the real ones "
            "(mean 1-way TV; 0 is identical, 1 disjoint)"
        )
    if not parts:
        return warning + "No utility measure was computed."
    sentence = "; ".join(parts)
    return warning + sentence[0].upper() + sentence[1:] + "."


def _points(gap: float) -> str:
    """An accuracy difference in percentage points: "2.1 points below"."""
    points = round(abs(gap) * 100, 1)
    if points == 0:
        return "level with"
    return f"{points:g} point{'s' if points != 1 else ''} {'above' if gap > 0 else 'below'}"


def format_report(result: Mapping[str, Any]) -> str:
    """Plain-text table of an :func:`evaluate` result, for the command line."""
    lines: list[str] = [verdict(result), ""]
    rows = result.get("rows", {})
    if rows:
        lines.append(f"rows: real {rows.get('real')}, synthetic {rows.get('synthetic')}")
        if "distinct" in rows:
            lines.append(
                f"  synthetic rows: {rows['distinct']} distinct, {rows['duplicated']} duplicated"
            )
            lines += _match_lines(rows, result.get("matches"))
    marginals = result.get("marginals", {})
    if marginals:
        lines.append("")
        lines.append("k-way marginal TV (docs/math.md §7)")
        lines.append(f"  {'k':>2}  {'sets':>5}  {'mean':>7}  {'max':>7}  worst set")
        for k, entry in sorted(marginals.items(), key=lambda kv: int(kv[0])):
            worst = ", ".join(entry.get("worst", []))
            sets = entry.get("sets", "")
            lines.append(
                f"  {k:>2}  {sets:>5}  {_fmt(entry.get('mean'))}  {_fmt(entry.get('max'))}  {worst}"
            )
    lines += _tstr_lines(result.get("tstr"))
    dcr = result.get("dcr")
    if isinstance(dcr, Mapping):
        lines.append("")
        lines.append("distance to the closest real record (Gower, 0 = a copy; not for sharing)")
        for key, what in (("synthetic", "synthetic rows"), ("held_out", "held-out real rows")):
            entry = dcr.get(key)
            if isinstance(entry, Mapping):
                lines.append(
                    f"  {what:<19} median {_fmt(entry.get('median'))}  "
                    f"5th percentile {_fmt(entry.get('p05'))}  ({entry.get('rows')} rows)"
                )
    return "\n".join(lines).strip("\n")


def _match_lines(rows: Mapping[str, Any], matches: Any) -> list[str]:
    """Synthetic rows equal to a real row, with the real-to-real figure beside them."""
    if "copied" not in rows:
        return []
    line = f"  {rows['copied']} synthetic rows equal some real row"
    if not isinstance(matches, Mapping):
        return [line]
    ours, theirs = float(matches["synthetic"]), float(matches["real"])
    whose = (
        "of held-out real rows equal some private row"
        if matches.get("reference") == "held-out"
        else "of one half of the real rows equal some row of the other half"
    )
    line += f" ({ours:.0%}); for comparison, {theirs:.0%} {whose}"
    if ours <= 1.5 * theirs + 0.01:
        line += (
            f": expected on a {matches.get('columns')}-column table with few distinct "
            "values, not a sign of copying"
        )
    else:
        line += ": more than real rows match each other; see the distance to the closest record"
    return [line]


def _tstr_lines(tstr_result: Any) -> list[str]:
    if not isinstance(tstr_result, Mapping):
        return []
    where = (
        "held-out real rows"
        if tstr_result.get("test") == "held-out"
        else "private rows (optimistic)"
    )
    real: Mapping[str, Any] = tstr_result.get("real") or {}
    lines = [
        "",
        f"TSTR: predict '{tstr_result.get('label')}', trained on {tstr_result.get('n_train')} "
        f"synthetic rows, tested on {tstr_result.get('n_test')} {where}",
        f"  {'':<9} {'synthetic':>9}  {'real':>9}",
    ]
    for key, name in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"), ("auc", "AUC")):
        lines.append(f"  {name:<9} {_fmt(tstr_result.get(key)):>9}  {_fmt(real.get(key)):>9}")
    lines.append(f"  majority class {_fmt(tstr_result.get('baseline_accuracy'))}")
    if tstr_result.get("note"):
        lines.append(f"  note: {tstr_result['note']}")
    return lines


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{'n/a':>7}"
    return f"{float(value):7.4f}"
