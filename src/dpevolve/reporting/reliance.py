"""What a utility score rests on: the real table's strongest relations, kept or lost.

A TSTR accuracy can look excellent while the synthetic table has lost every relation but
one: a column that nearly copies the label carries the score, and a steward who reads
only the headline publishes a table whose other relations are gone. :func:`reliance`
checks, for the label and for the strongest relations of the real table
(docs/math.md §7):

* the numeric pairs with the largest ``|Spearman rho|`` in the real table: their
  correlation in the synthetic table;
* the label's top features, by the share of the label's entropy each explains (the
  uncertainty coefficient ``U = I(label; feature) / H(label)`` on the marginal-table
  codes of :func:`~dpevolve.reporting.marginals.bin_codes`, bias-corrected): their ``U``
  in the synthetic table;
* the numeric columns whose mean differs most between the label's two most common
  classes (in standard deviations of the real column): the same gap in the synthetic
  table;
* a model trained without the single most important feature, on the synthetic table
  and on the real one, tested on the same real rows.

A relation is *lost* when the synthetic table keeps less than half of it (or reverses
it); the score *rests on* the top feature when, without it, the synthetic table's model
gains less than half of what the real table's model gains over the majority class.
:func:`findings` words them, and the verdict says them before the headline number.

Everything here reads the private table: owner's report and ``dpevolve evaluate`` only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.reporting.html import escape, html_table, num_cell
from dpevolve.reporting.marginals import bin_codes, bin_count
from dpevolve.reporting.tstr import tstr_encoded

__all__ = ["findings", "reliance", "reliance_section"]

#: How many of each kind of relation are checked (the strongest ones of the real table).
TOP = 3
#: Share of a real relation the synthetic table must keep not to count as lost.
KEPT_SHARE = 0.5
# Smallest real relations worth checking: weaker ones are noise on most tables.
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
    """The real table's strongest relations, measured in both tables (validated frames).

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
        ``{"label": name, "pairs": [...], "features": [...], "gaps": [...], "without": {...} | None,
        "findings": [str, ...]}``; every entry holds ``real``, ``synthetic`` and
        ``lost`` (or ``carries``).
    """
    rng = np.random.default_rng(random_state)
    out: dict[str, Any] = {
        "label": label.name,
        "pairs": _pairs(real, synth, schema, rng),
        "features": _features(real, synth, schema, label),
        "gaps": _gaps(real, synth, schema, label),
    }
    top = out["features"][0]["column"] if out["features"] else None
    out["without"] = (
        None
        if top is None or len(schema) < 3
        else _without(top, synth, real_train, test, schema, label, random_state, n_threads)
    )
    out["findings"] = findings(out)
    return out


# ------------------------------------------------------------------ the relations
def _pairs(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """The top numeric pairs by real ``|Spearman rho|`` and their synthetic rho."""
    numeric = [c.name for c in schema.columns if isinstance(c, NumericColumn)]
    if len(numeric) < 2:
        return []
    real_rho = _spearman(real[numeric], rng)
    synth_rho = _spearman(synth[numeric], rng)
    floor = max(_MIN_RHO, 3.0 / math.sqrt(max(len(real), 1)))
    found: list[dict[str, Any]] = []
    for i, a in enumerate(numeric):
        for b in numeric[i + 1 :]:
            r = float(real_rho.loc[a, b])
            if math.isfinite(r) and abs(r) >= floor:
                s = float(synth_rho.loc[a, b])
                s = s if math.isfinite(s) else 0.0
                found.append({"columns": [a, b], "real": r, "synthetic": s, "lost": _lost(r, s)})
    found.sort(key=lambda p: -abs(float(p["real"])))
    return found[:TOP]


def _spearman(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    if len(frame) > _CORR_ROWS:
        frame = frame.iloc[np.sort(rng.choice(len(frame), _CORR_ROWS, replace=False))]
    return frame.astype(np.float64).corr(method="spearman", min_periods=3)


def _features(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, label: CategoricalColumn
) -> list[dict[str, Any]]:
    """The label's top features by real uncertainty coefficient, and their synthetic one."""
    found: list[dict[str, Any]] = []
    for column in schema.columns:
        if column.name == label.name:
            continue
        r = _uncertainty(real, column, label)
        if r >= _MIN_U:
            s = _uncertainty(synth, column, label)
            found.append({"column": column.name, "real": r, "synthetic": s, "lost": _lost(r, s)})
    found.sort(key=lambda f: -float(f["real"]))
    return found[:TOP]


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


def _gaps(
    real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, label: CategoricalColumn
) -> list[dict[str, Any]]:
    """Mean gaps of numeric columns between the label's two most common real classes."""
    y_real = bin_codes(real, label)
    counts = np.bincount(y_real, minlength=len(label.values))
    if np.count_nonzero(counts) < 2:
        return []
    a, b = (int(c) for c in np.argsort(-counts, kind="stable")[:2])
    y_synth = bin_codes(synth, label)
    found: list[dict[str, Any]] = []
    for column in schema.columns:
        if not isinstance(column, NumericColumn):
            continue
        x = real[column.name].to_numpy(dtype=np.float64)
        sd = float(np.nanstd(x))
        if not sd > 0:
            continue
        r = _gap(x, y_real, a, b) / sd
        # Three standard errors of the gap, so that noise is not read as a relation.
        error = 3.0 * math.sqrt(1.0 / max(counts[a], 1) + 1.0 / max(counts[b], 1))
        if math.isfinite(r) and abs(r) >= max(_MIN_GAP_SD, error):
            s = _gap(synth[column.name].to_numpy(dtype=np.float64), y_synth, a, b) / sd
            s = s if math.isfinite(s) else 0.0
            found.append(
                {
                    "column": column.name,
                    "classes": [label.keys[a], label.keys[b]],
                    "real": r,
                    "synthetic": s,
                    "lost": _lost(r, s),
                }
            )
    found.sort(key=lambda g: -abs(float(g["real"])))
    return found[:TOP]


def _gap(x: np.ndarray, y: np.ndarray, a: int, b: int) -> float:
    xa, xb = x[(y == a) & ~np.isnan(x)], x[(y == b) & ~np.isnan(x)]
    if len(xa) == 0 or len(xb) == 0:
        return math.nan
    return float(xa.mean() - xb.mean())


def _lost(real: float, synthetic: float) -> bool:
    """The synthetic table keeps less than :data:`KEPT_SHARE` of the relation, or flips it."""
    return synthetic * math.copysign(1.0, real) < KEPT_SHARE * abs(real)


def _without(
    top: str,
    synth: pd.DataFrame,
    real_train: pd.DataFrame | None,
    test: pd.DataFrame,
    schema: Schema,
    label: CategoricalColumn,
    random_state: int,
    n_threads: int | None,
) -> dict[str, Any] | None:
    """TSTR without ``top``, of the synthetic table and of the real one."""
    if real_train is None:
        return None
    rest = schema.select([n for n in schema.names if n != top])
    synthetic = tstr_encoded(synth, test, rest, label, random_state, n_threads)
    own = tstr_encoded(real_train, test, rest, label, random_state, n_threads)
    majority = synthetic.baseline_accuracy
    real_gain = own.accuracy - majority
    # A real gain within two standard errors of the test accuracy is no relation at all.
    error = 2.0 * math.sqrt(max(majority * (1 - majority), 1e-6) / max(synthetic.n_test, 1))
    carries = real_gain > max(error, 0.01) and (
        synthetic.accuracy - majority < KEPT_SHARE * real_gain
    )
    return {
        "column": top,
        "synthetic": synthetic.accuracy,
        "real": own.accuracy,
        "majority": majority,
        "n_test": synthetic.n_test,
        "carries": bool(carries),
    }


# ------------------------------------------------------------------ words
def findings(result: Mapping[str, Any]) -> list[str]:
    """One clause per lost relation, the column carrying the score first."""
    out: list[str] = []
    label = result.get("label")
    without = result.get("without")
    if isinstance(without, Mapping) and without.get("carries"):
        out.append(
            f"the score rests on '{without['column']}': without it a model trained on the "
            f"synthetic table scores {without['synthetic']:.3f} against the real table's "
            f"{without['real']:.3f} (majority class {without['majority']:.3f})"
        )
    for pair in result.get("pairs") or []:
        if pair["lost"]:
            a, b = pair["columns"]
            out.append(
                f"the correlation of '{a}' and '{b}' fell from {pair['real']:.2f} to "
                f"{pair['synthetic']:.2f} (Spearman)"
            )
    for gap in result.get("gaps") or []:
        if gap["lost"]:
            first, second = gap["classes"]
            out.append(
                f"the gap in mean '{gap['column']}' between {label} '{first}' and "
                f"'{second}' fell from {gap['real']:.2f} to {gap['synthetic']:.2f} "
                "standard deviations"
            )
    for feature in result.get("features") or []:
        if feature["lost"]:
            out.append(
                f"'{feature['column']}' tells {feature['real']:.0%} of '{label}' in the real "
                f"table, {feature['synthetic']:.0%} in the synthetic one"
            )
    return out


def reliance_section(result: Any) -> list[str]:
    """The report's table of the relations checked (owner only)."""
    if not isinstance(result, Mapping):
        return []
    rows: list[list[str]] = []
    for pair in result.get("pairs") or []:
        rows.append(_row(f"Spearman rho of {' and '.join(pair['columns'])}", pair, "lost"))
    for gap in result.get("gaps") or []:
        what = f"mean {gap['column']}: {gap['classes'][0]} minus {gap['classes'][1]} (sd)"
        rows.append(_row(what, gap, "lost"))
    for feature in result.get("features") or []:
        rows.append(_row(f"share of the label told by {feature['column']}", feature, "lost"))
    without = result.get("without")
    if isinstance(without, Mapping):
        what = f"TSTR accuracy without {without['column']} (majority {without['majority']:.3g})"
        rows.append(_row(what, without, "carries"))
    if not rows:
        return []
    return [
        "<h3>What the score rests on</h3>",
        "<p>The real table's strongest relations, measured in both tables: the numeric "
        "pairs with the largest rank correlation, the numeric columns whose mean differs "
        "most between the label's two most common classes, the features that tell most "
        "of the label (uncertainty coefficient), and a model trained without the most "
        "telling one. A relation the synthetic table keeps less than half of is lost.</p>",
        html_table(["relation", "real", "synthetic", "kept"], rows, "reliance"),
    ]


def _row(what: str, entry: Mapping[str, Any], flag: str) -> list[str]:
    bad = bool(entry.get(flag))
    verdict = ("no: the score rests on it" if flag == "carries" else "no: lost") if bad else "yes"
    return [escape(what), num_cell(entry["real"], 3), num_cell(entry["synthetic"], 3), verdict]
