"""What a utility score rests on: the real table's strongest relations, kept or lost.

A TSTR accuracy can look excellent while the synthetic table has lost every relation but
one: a column that nearly copies the label carries the score, and a steward who reads
only the headline publishes a table whose other relations are gone. :func:`reliance`
measures, in the real and in the synthetic table (docs/math.md §7):

* the rank correlation (Spearman rho) of every pair of numeric columns (the first
  :data:`PAIR_COLUMNS` numeric columns of the schema);
* how much of the label each column tells: the uncertainty coefficient
  ``U = I(label; column) / H(label)`` on the marginal-table codes of
  :func:`~dpevolve.metrics.bin_codes`, bias-corrected;
* the gap in each numeric column's mean between the label's first declared class and
  the others, in standard deviations of the real column;
* a model trained without the column the synthetic table's model leans on most (the
  synthetic table's most telling column), on the synthetic table and on the real one,
  tested on the same real rows.

The result has the same shape for any two tables of one schema (entries in schema
order, numbers only): which relations matter is judged from the numbers by
:func:`findings`. A relation of the real table at least :data:`TOP` strongest and above
its noise floor is *lost* when the synthetic table keeps less than half of it (or
reverses it); the score *rests on* the column left out when, without it, the synthetic
table's model gains less than half of what the real table's model gains over the
majority class. The verdict says the findings before the headline number.

Everything here reads the private table: owner's report and ``dpevolve evaluate`` only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.metrics import bin_codes, bin_count
from dpevolve.reporting.html import escape, html_table, num_cell
from dpevolve.reporting.tstr import tstr_encoded

__all__ = ["PAIR_COLUMNS", "TOP", "findings", "reliance", "reliance_section"]

#: How many of each kind of relation are judged: the strongest ones of the real table.
TOP = 3
#: Numeric columns (the schema's first ones) whose pairwise correlations are measured.
PAIR_COLUMNS = 30
#: Share of a real relation the synthetic table must keep not to count as lost.
KEPT_SHARE = 0.5
# Smallest real relations worth judging: weaker ones are noise on most tables.
_MIN_RHO = 0.2
_MIN_GAP_SD = 0.2
_MIN_U = 0.02
# Rows the correlations are measured on (a seeded sample beyond): enough for 2 decimals.
_CORR_ROWS = 50_000


def reliance(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    real_train: pd.DataFrame | None,
    test: pd.DataFrame,
    schema: Schema,
    label: CategoricalColumn,
    random_state: int = 0,
    n_threads: int | None = None,
) -> dict[str, Any]:
    """The real table's relations, measured in both tables (validated frames).

    Parameters
    ----------
    real, synth
        The whole real table and the synthetic one.
    real_train, test
        The real rows the real model is trained on (``None``: no real model) and the
        real rows both models are tested on, as in TSTR.
    schema, label
        The declared domains and the label column.
    random_state, n_threads
        As in :func:`~dpevolve.reporting.tstr.tstr`.

    Returns
    -------
    dict
        ``{"label", "classes", "rows", "pairs", "features", "gaps", "without"}``: every
        entry holds the ``real`` and ``synthetic`` figure (gaps also their ``noise``,
        three standard errors); ``without`` is ``None`` without a real model or with
        fewer than three columns.
    """
    rng = np.random.default_rng(random_state)
    features = _features(real, synth, schema, label)
    out: dict[str, Any] = {
        "label": label.name,
        "classes": _classes(label),
        "rows": len(real),
        "pairs": _pairs(real, synth, schema, rng),
        "features": features,
        "gaps": _gaps(real, synth, schema, label),
        "without": None,
    }
    if features and real_train is not None and len(schema) >= 3:
        # The column the synthetic table's model leans on most: where its score may rest.
        leaned = max(features, key=lambda f: float(f["synthetic"]))["column"]
        out["without"] = _without(
            leaned, synth, real_train, test, schema, label, random_state, n_threads
        )
    return out


# ------------------------------------------------------------------ the relations
def _pairs(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Spearman rho of every pair of the first numeric columns, in both tables."""
    numeric = [c.name for c in schema.columns if isinstance(c, NumericColumn)][:PAIR_COLUMNS]
    if len(numeric) < 2:
        return []
    real_rho, synth_rho = _spearman(real[numeric], rng), _spearman(synth[numeric], rng)
    return [
        {"columns": [a, b], "real": _finite(real_rho.loc[a, b]),
         "synthetic": _finite(synth_rho.loc[a, b])}
        for i, a in enumerate(numeric)
        for b in numeric[i + 1 :]
    ]  # fmt: skip


def _spearman(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    if len(frame) > _CORR_ROWS:
        frame = frame.iloc[np.sort(rng.choice(len(frame), _CORR_ROWS, replace=False))]
    return frame.astype(np.float64).corr(method="spearman", min_periods=3)


def _finite(value: Any) -> float:
    """A figure, 0 where it is undefined (a constant column, too few rows)."""
    number = float(value)
    return number if math.isfinite(number) else 0.0


def _features(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, label: CategoricalColumn
) -> list[dict[str, Any]]:
    """How much of the label each other column tells, in both tables."""
    return [
        {"column": c.name, "real": _uncertainty(real, c, label),
         "synthetic": _uncertainty(synth, c, label)}
        for c in schema.columns
        if c.name != label.name
    ]  # fmt: skip


def _uncertainty(
    frame: pd.DataFrame, feature: NumericColumn | CategoricalColumn, label: CategoricalColumn
) -> float:
    """``I(label; feature) / H(label)`` on marginal-table codes, Miller-Madow corrected."""
    n = len(frame)
    if n < 2:
        return 0.0
    x, y = bin_codes(frame, feature), bin_codes(frame, label)
    nx, ny = bin_count(feature), len(label.values)
    joint = np.bincount(x * ny + y, minlength=nx * ny).reshape(nx, ny) / n
    px, py = joint.sum(axis=1), joint.sum(axis=0)
    h_y = _entropy(py)
    if h_y <= 0:
        return 0.0
    mi = _entropy(px) + h_y - _entropy(joint.ravel())
    # Plug-in MI is biased upwards by about (cells used - 1) / (2n) per entropy term.
    used_x, used_y, used_xy = (int(np.count_nonzero(p)) for p in (px, py, joint))
    bias = (used_x - 1 + used_y - 1 - (used_xy - 1)) / (2 * n)
    return max(0.0, float((mi + bias) / h_y))


def _entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def _classes(label: CategoricalColumn) -> list[str]:
    """The two sides of a gap: the first declared class and the rest (from the schema)."""
    rest = label.keys[1] if len(label.values) == 2 else "the other classes"
    return [label.keys[0], rest]


def _gaps(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, label: CategoricalColumn
) -> list[dict[str, Any]]:
    """Mean gaps of numeric columns between the label's first class and the rest."""
    first_real = bin_codes(real, label) == 0
    first_synth = bin_codes(synth, label) == 0
    out = []
    for column in schema.columns:
        if not isinstance(column, NumericColumn):
            continue
        x = real[column.name].to_numpy(dtype=np.float64)
        sd = float(np.nanstd(x)) if np.isfinite(x).any() else 0.0
        scale = sd if sd > 0 else math.inf  # a constant column: no gap at all
        y = synth[column.name].to_numpy(dtype=np.float64)
        # Three standard errors of the gap, so that noise is not read as a relation.
        sides = (int(first_real.sum()), int((~first_real).sum()))
        noise = 3.0 * math.sqrt(sum(1.0 / max(k, 1) for k in sides))
        out.append(
            {
                "column": column.name,
                "real": _finite(_gap(x, first_real) / scale),
                "synthetic": _finite(_gap(y, first_synth) / scale),
                "noise": noise,
            }
        )
    return out


def _gap(x: np.ndarray, first: np.ndarray) -> float:
    inside, outside = x[first & ~np.isnan(x)], x[~first & ~np.isnan(x)]
    if len(inside) == 0 or len(outside) == 0:
        return math.nan
    return float(inside.mean() - outside.mean())


def _without(
    column: str,
    synth: pd.DataFrame,
    real_train: pd.DataFrame,
    test: pd.DataFrame,
    schema: Schema,
    label: CategoricalColumn,
    random_state: int,
    n_threads: int | None,
) -> dict[str, Any]:
    """TSTR without ``column``, of the synthetic table and of the real one."""
    rest = schema.select([n for n in schema.names if n != column])
    synthetic = tstr_encoded(synth, test, rest, label, random_state, n_threads)
    own = tstr_encoded(real_train, test, rest, label, random_state, n_threads)
    return {
        "column": column,
        "synthetic": synthetic.accuracy,
        "real": own.accuracy,
        "majority": synthetic.baseline_accuracy,
        "n_test": synthetic.n_test,
    }


# ------------------------------------------------------------------ judgements
def _lost(real: float, synthetic: float) -> bool:
    """The synthetic table keeps less than :data:`KEPT_SHARE` of the relation, or flips it."""
    return synthetic * math.copysign(1.0, real) < KEPT_SHARE * abs(real)


def _strongest(entries: Sequence[Mapping[str, Any]], floor: Any) -> list[Mapping[str, Any]]:
    """The :data:`TOP` entries with the largest ``|real|`` at or above their floor."""
    strong = [e for e in entries if abs(float(e["real"])) >= floor(e)]
    return sorted(strong, key=lambda e: -abs(float(e["real"])))[:TOP]


def _judged(result: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The strongest real relations of each kind (the ones findings and the report show)."""
    rows = int(result.get("rows") or 1)
    rho_floor = max(_MIN_RHO, 3.0 / math.sqrt(max(rows, 1)))
    return {
        "pairs": _strongest(result.get("pairs") or [], lambda e: rho_floor),
        "gaps": _strongest(result.get("gaps") or [], lambda e: max(_MIN_GAP_SD, e["noise"])),
        "features": _strongest(result.get("features") or [], lambda e: _MIN_U),
    }


def carries(without: Mapping[str, Any]) -> bool:
    """Without the column, the synthetic table's model gains less than half of what the
    real table's model gains over the majority class (a real gain above noise)."""
    majority = float(without["majority"])
    real_gain = float(without["real"]) - majority
    # A real gain within two standard errors of the test accuracy is no relation at all.
    error = 2.0 * math.sqrt(max(majority * (1 - majority), 1e-6) / max(without["n_test"], 1))
    return real_gain > max(error, 0.01) and (
        float(without["synthetic"]) - majority < KEPT_SHARE * real_gain
    )


def findings(result: Mapping[str, Any]) -> list[str]:
    """One clause per lost relation, the column carrying the score first."""
    out: list[str] = []
    label = result.get("label")
    without = result.get("without")
    if isinstance(without, Mapping) and carries(without):
        out.append(
            f"the score rests on '{without['column']}': without it a model trained on the "
            f"synthetic table scores {without['synthetic']:.3f} against the real table's "
            f"{without['real']:.3f} (majority class {without['majority']:.3f})"
        )
    judged = _judged(result)
    for pair in judged["pairs"]:
        if _lost(pair["real"], pair["synthetic"]):
            a, b = pair["columns"]
            out.append(
                f"the correlation of '{a}' and '{b}' fell from {pair['real']:.2f} to "
                f"{pair['synthetic']:.2f} (Spearman)"
            )
    first, second = result.get("classes") or ("", "")
    for gap in judged["gaps"]:
        if _lost(gap["real"], gap["synthetic"]):
            out.append(
                f"the gap in mean '{gap['column']}' between {label} '{first}' and "
                f"'{second}' fell from {gap['real']:.2f} to {gap['synthetic']:.2f} "
                "standard deviations"
            )
    for feature in judged["features"]:
        if _lost(feature["real"], feature["synthetic"]):
            out.append(
                f"'{feature['column']}' tells {feature['real']:.0%} of '{label}' in the real "
                f"table, {feature['synthetic']:.0%} in the synthetic one"
            )
    return out


def reliance_section(result: Any) -> list[str]:
    """The report's table of the strongest relations (owner only)."""
    if not isinstance(result, Mapping):
        return []
    judged = _judged(result)
    first, second = result.get("classes") or ("", "")
    rows: list[list[str]] = []
    for pair in judged["pairs"]:
        rows.append(_row(f"Spearman rho of {' and '.join(pair['columns'])}", pair))
    for gap in judged["gaps"]:
        rows.append(_row(f"mean {gap['column']}: {first} minus {second} (sd)", gap))
    for feature in judged["features"]:
        rows.append(_row(f"share of the label told by {feature['column']}", feature))
    without = result.get("without")
    if isinstance(without, Mapping):
        what = f"TSTR accuracy without {without['column']} (majority {without['majority']:.3g})"
        kept = "no: the score rests on it" if carries(without) else "yes"
        rows.append([escape(what), num_cell(without["real"], 3),
                     num_cell(without["synthetic"], 3), kept])  # fmt: skip
    if not rows:
        return []
    return [
        "<h3>What the score rests on</h3>",
        "<p>The real table's strongest relations, measured in both tables: the numeric "
        "pairs with the largest rank correlation, the numeric columns whose mean differs "
        "most between the label's classes, the columns that tell most of the label "
        "(uncertainty coefficient), and a model trained without the column the synthetic "
        "table's model leans on most. A relation the synthetic table keeps less than half "
        "of is lost.</p>",
        html_table(["relation", "real", "synthetic", "kept"], rows, "reliance"),
    ]


def _row(what: str, entry: Mapping[str, Any]) -> list[str]:
    kept = "no: lost" if _lost(entry["real"], entry["synthetic"]) else "yes"
    return [escape(what), num_cell(entry["real"], 3), num_cell(entry["synthetic"], 3), kept]
