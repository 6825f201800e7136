"""How well a synthetic table keeps the numbers of the real one (docs/math.md §7).

Measures computed by the data owner against their own real table (they read it; none is
privatised, so none belongs in a shareable artefact):

* :func:`spearman_error`: the mean, over all pairs of numeric columns, of
  ``|rho_real - rho_synth|`` (Spearman's rank correlation, pairwise-complete rows).
* :func:`beyond_range_share`: the share of synthetic rows holding a number beyond the
  real column's range by more than ``tolerance`` times its width.
* :func:`unreached_share`: the mirror, the share of real rows holding a number beyond
  the synthetic column's range by more than ``tolerance`` times the real width (a tail
  the synthetic table cuts off).
* :func:`atom_rules`: for every numeric value that holds at least ``min_share`` of the
  real rows (an *atom*: 0 spend, a declared end, a round value), the total variation
  between ``P(label | column = value)`` in the real and the synthetic table; a rule
  such as "any expense is yes exactly when spend > 0" lives at such an atom.
* :func:`quantile_tv`: mean 1- and 2-way marginal TV with numeric columns cut at
  quantile edges of a reference (public) table instead of the declared range.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.metrics import bin_codes, marginal_report

#: A synthetic value is at an atom within this relative error: single precision's, so
#: that 4.2 written by a column of one decimal is the real table's float32 4.2.
SINGLE = 2.0**-23

QUANTILE_BINS = 20
"""Bins of a numeric column in :func:`quantile_tv` (fewer where quantiles coincide)."""


def numeric_names(schema: Schema) -> list[str]:
    """The schema's numeric columns, in schema order."""
    return [c.name for c in schema.columns if isinstance(c, NumericColumn)]


def _spearman(frame: pd.DataFrame, a: str, b: str) -> float:
    pair = frame[[a, b]].dropna()
    if len(pair) < 3 or pair[a].nunique() < 2 or pair[b].nunique() < 2:
        return 0.0  # no ordering to speak of: no correlation
    ranks = pair.rank()
    return float(np.corrcoef(ranks[a].to_numpy(), ranks[b].to_numpy())[0, 1])


def spearman_error(real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str]) -> float:
    """Mean ``|rho_real - rho_synth|`` over all pairs of ``columns`` (NaN if under two).

    A constant column (or fewer than three complete rows) counts as correlation 0.
    """
    pairs = list(combinations(columns, 2))
    if not pairs:
        return float("nan")
    gaps = [abs(_spearman(real, a, b) - _spearman(synth, a, b)) for a, b in pairs]
    return float(np.mean(gaps))


def beyond_range_share(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str], tolerance: float = 0.1
) -> float:
    """Share of synthetic rows with a value in ``columns`` below ``min - tolerance * w``
    or above ``max + tolerance * w``, where ``[min, max]`` is the real column's range
    and ``w = max - min`` (missing cells never count)."""
    if len(synth) == 0 or not columns:
        return 0.0
    beyond = np.zeros(len(synth), dtype=bool)
    for name in columns:
        values = real[name].to_numpy(dtype=np.float64)
        if np.isnan(values).all():
            continue
        lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
        slack = tolerance * (hi - lo)
        fake = synth[name].to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            beyond |= (fake < lo - slack) | (fake > hi + slack)
    return float(beyond.mean())


def _label_shares(labels: pd.Series, classes: list[str]) -> np.ndarray:
    counts = labels.astype(str).value_counts()
    shares = np.array([counts.get(c, 0) for c in classes], dtype=np.float64)
    return shares / shares.sum() if shares.sum() > 0 else shares


def unreached_share(
    real: pd.DataFrame, synth: pd.DataFrame, columns: Sequence[str], tolerance: float = 0.1
) -> float:
    """Share of real rows with a value in ``columns`` below ``min - tolerance * w`` or
    above ``max + tolerance * w``, where ``[min, max]`` is the synthetic column's range
    and ``w`` the real column's width: the rows of the real table that the synthetic one
    never comes near (a tail cut off; :func:`beyond_range_share` the other way round). A
    column with no synthetic value leaves every real value unreached; missing cells never
    count."""
    if len(real) == 0 or not columns:
        return 0.0
    unreached = np.zeros(len(real), dtype=bool)
    for name in columns:
        values = real[name].to_numpy(dtype=np.float64)
        present = ~np.isnan(values)
        if not present.any():
            continue
        fake = synth[name].to_numpy(dtype=np.float64)
        fake = fake[~np.isnan(fake)]
        if fake.size == 0:
            unreached |= present
            continue
        slack = tolerance * float(np.ptp(values[present]))
        with np.errstate(invalid="ignore"):
            unreached |= (values < fake.min() - slack) | (values > fake.max() + slack)
    return float(unreached.mean())


def atom_rules(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    columns: Sequence[str],
    label: str,
    min_share: float = 0.05,
) -> list[dict[str, Any]]:
    """``TV(P(label | column = v) real, synthetic)`` for every atom ``v`` of ``columns``.

    An atom is a value held by at least ``min_share`` of the real rows; a synthetic
    value is at it within the relative error :data:`SINGLE`. Where the
    synthetic table has no row at ``v`` the rule cannot hold there: ``tv`` is 1 and
    ``missing`` is true.

    Returns
    -------
    list of dict
        ``column``, ``value``, ``share`` (of the real rows), ``synth_share``, ``tv``,
        ``missing``; in column order, then by value.
    """
    classes = sorted(set(real[label].astype(str)) | set(synth[label].astype(str)))
    out: list[dict[str, Any]] = []
    for name in columns:
        values = real[name].to_numpy(dtype=np.float64)
        counts = pd.Series(values[~np.isnan(values)]).value_counts()
        fake = synth[name].to_numpy(dtype=np.float64)
        for value, count in sorted(counts[counts >= min_share * len(real)].items()):
            at_real = values == value
            at_fake = np.isclose(fake, value, rtol=SINGLE, atol=0.0)
            missing = not at_fake.any()
            tv = 1.0
            if not missing:
                p = _label_shares(real.loc[at_real, label], classes)
                q = _label_shares(synth.loc[at_fake, label], classes)
                tv = float(0.5 * np.abs(p - q).sum())
            out.append(
                {
                    "column": name,
                    "value": float(value),
                    "share": float(count / len(real)),
                    "synth_share": float(at_fake.mean()) if len(fake) else 0.0,
                    "tv": tv,
                    "missing": missing,
                }
            )
    return out


def quantile_edges(reference: pd.DataFrame, name: str, bins: int = QUANTILE_BINS) -> np.ndarray:
    """Inner cut points of ``name`` at the reference table's quantiles (distinct only)."""
    values = reference[name].to_numpy(dtype=np.float64)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return np.empty(0)
    edges = np.unique(np.quantile(values, np.linspace(0.0, 1.0, bins + 1)))
    return edges[1:-1]


def _codes(frame: pd.DataFrame, schema: Schema, edges: dict[str, np.ndarray]) -> dict:
    out = {}
    for column in schema.columns:
        if column.name in edges:
            x = frame[column.name].to_numpy(dtype=np.float64)
            codes = np.searchsorted(edges[column.name], x, side="right")
            codes[np.isnan(x)] = len(edges[column.name]) + 1  # missing: its own bin
            out[column.name] = codes.astype(np.int64)
        else:
            out[column.name] = bin_codes(frame, column)
    return out


def quantile_tv(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    reference: pd.DataFrame,
    bins: int = QUANTILE_BINS,
) -> dict[str, float]:
    """Mean 1-way (``tv1``) and 2-way (``tv2``) marginal TV of validated tables, numeric
    columns cut at ``reference``'s quantiles (:func:`quantile_edges`), categorical
    columns by declared value."""
    edges = {name: quantile_edges(reference, name, bins) for name in numeric_names(schema)}
    sizes = {name: len(cut) + 2 for name, cut in edges.items()}  # bins + missing
    real_codes, synth_codes = _codes(real, schema, edges), _codes(synth, schema, edges)
    one = marginal_report(schema, schema.names, 1, real_codes, synth_codes, sizes)
    out = {"tv1": one.mean, "tv2": float("nan")}
    if len(schema.names) >= 2:
        out["tv2"] = marginal_report(schema, schema.names, 2, real_codes, synth_codes, sizes).mean
    return out
