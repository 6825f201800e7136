"""Utility of a synthetic table against the real one (docs/math.md §7).

Two measures, both computed by the data owner on their own side (they read the private
table and are not privatised):

* **k-way marginal error** (:func:`~dpevolve.reporting.marginals.marginal_tv`): for
  every set ``S`` of ``k`` columns, the total variation distance between the real and
  synthetic ``k``-way contingency tables, ``TV_S = 1/2 * sum_cells |p_S(cell) - q_S(cell)|``,
  averaged over all sets.
  Numeric columns are cut into 20 equal-width bins over their *declared* range.
* **TSTR** (:func:`~dpevolve.reporting.tstr.tstr`): train a classifier on the synthetic
  table, test it on a real held-out split; accuracy, macro-F1 and AUC.

:func:`evaluate` runs both and returns a JSON-ready dict; :func:`format_report` prints it.
The measures live in :mod:`~dpevolve.reporting.marginals` and
:mod:`~dpevolve.reporting.tstr` and are re-exported here.
Figures of these numbers are drawn by :mod:`dpevolve.reporting.figures`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.reporting.marginals import (
    NUMERIC_BINS,
    MarginalReport,
    bin_codes,
    bin_count,
    marginal_columns,
    marginal_report,
    marginal_tv,
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
]


# ------------------------------------------------------------------- evaluate
def evaluate(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    label: str | None = None,
    test: pd.DataFrame | None = None,
    ks: Iterable[int] = (1, 2, 3),
    random_state: int = 0,
    n_threads: int | None = None,
) -> dict[str, Any]:
    """All docs/math.md §7 measures of ``synth`` against ``real``, as a JSON-ready dict.

    ``marginals[str(k)]`` holds the mean and max of ``TV_S = 1/2 ||p_S - q_S||_1`` over
    all ``k``-sets ``S`` (see :func:`marginal_tv`); values of ``k`` above the number of
    columns are skipped. ``tstr`` (see :func:`tstr`) is present when ``label`` is given;
    it tests on ``test`` or, without one, on ``real`` itself.

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
        Real held-out rows for TSTR (default: ``real``).
    ks
        Marginal orders to report.
    random_state
        Seed of the TSTR classifier.
    n_threads
        OpenMP threads of the TSTR classifier (see :func:`tstr`).

    Returns
    -------
    dict
        ``{"rows": {"real": n, "synthetic": m}, "marginals": {"1": {...}, ...},
        "tstr": {...}}``; NaN scores are ``None`` so ``json.dumps(allow_nan=False)`` works.

    Raises
    ------
    InputError
        A table does not fit the schema, or the label is unknown or numeric.
    """
    column = label_column(schema, label) if label is not None else None
    real_frame, _ = schema.validate(real, on_invalid="error", what="real table")
    synth_frame, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    orders = sorted({int(k) for k in ks})
    for k in orders:
        if k < 1:
            raise InputError(f"marginal orders must be at least 1, got {k}")

    names = schema.names
    real_codes = {n: bin_codes(real_frame, schema[n]) for n in names}
    synth_codes = {n: bin_codes(synth_frame, schema[n]) for n in names}
    marginals: dict[str, Any] = {}
    for k in orders:
        if k <= len(names):
            report = marginal_report(schema, names, k, real_codes, synth_codes)
            marginals[str(k)] = report.to_dict()

    result: dict[str, Any] = {
        "rows": {"real": len(real_frame), "synthetic": len(synth_frame)},
        "marginals": marginals,
    }
    if column is not None:
        if test is None:
            test_frame = real_frame
            own = (
                "tested on the real table itself (train on synthetic, test on the private "
                "table): fine for a data owner's own check, not a held-out estimate"
            )
        else:
            test_frame, _ = schema.validate(test, on_invalid="error", what="real test table")
            own = None
        report_tstr = tstr_encoded(synth_frame, test_frame, schema, column, random_state, n_threads)
        tstr_dict = report_tstr.to_dict()
        tstr_dict["test"] = "real" if test is None else "held-out"
        notes = [n for n in (own, report_tstr.note) if n]
        tstr_dict["note"] = "; ".join(notes) if notes else None
        result["tstr"] = tstr_dict
    return result


# ------------------------------------------------------------------ reporting
def format_report(result: Mapping[str, Any]) -> str:
    """Plain-text table of an :func:`evaluate` result, for the command line."""
    lines: list[str] = []
    rows = result.get("rows", {})
    if rows:
        lines.append(f"rows: real {rows.get('real')}, synthetic {rows.get('synthetic')}")
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
    tstr_result = result.get("tstr")
    if tstr_result:
        lines.append("")
        lines.append(
            f"TSTR: predict '{tstr_result.get('label')}', trained on {tstr_result.get('n_train')} "
            f"synthetic rows, tested on {tstr_result.get('n_test')} "
            + ("held-out real rows" if tstr_result.get("test") == "held-out" else "real rows")
        )
        lines.append(
            f"  {'accuracy':<9} {_fmt(tstr_result.get('accuracy'))}"
            f"  (majority class {_fmt(tstr_result.get('baseline_accuracy'))})"
        )
        lines.append(f"  {'macro-F1':<9} {_fmt(tstr_result.get('macro_f1'))}")
        lines.append(f"  {'AUC':<9} {_fmt(tstr_result.get('auc'))}")
        if tstr_result.get("note"):
            lines.append(f"  note: {tstr_result['note']}")
    return "\n".join(lines).lstrip("\n")


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{'n/a':>7}"
    return f"{float(value):7.4f}"
