"""Statistics for the report: tables of rows, paired tests, Holm, crossovers.

Pure functions of store rows (no dpevolve fits), so the report renders from any store.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


def frame(rows: Iterable[dict[str, Any]], study: str | None = None) -> pd.DataFrame:
    """Rows with status ``ok`` (of one study) as a table: config fields, ``metric.*``
    flattened to their names, ``ledger_*`` and ``wall_s``."""
    records = []
    for row in rows:
        if row.get("status") != "ok" or (study is not None and row.get("study") != study):
            continue
        rec: dict[str, Any] = {"study": row.get("study"), "config_type": row.get("config_type")}
        rec.update(row.get("config", {}))
        rec.update(row.get("metrics", {}))
        for k, v in (row.get("ledger") or {}).items():
            rec[f"ledger_{k}"] = v
        rec["wall_s"] = row.get("wall_s")
        rec["commit"] = row.get("commit")
        records.append(rec)
    return pd.DataFrame.from_records(records)


def latest_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of every key, in first-appearance order."""
    last: dict[str, dict[str, Any]] = {}
    for row in rows:
        last[row["key"]] = row
    return list(last.values())


@dataclass(frozen=True)
class Paired:
    """Paired comparison ``b - a`` over common seeds (spec §7)."""

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def relative(self) -> float:
        """Mean difference over the mean of ``a`` (e.g. -0.336 for -33.6%)."""
        return self.mean_diff / self.mean_a if self.mean_a else math.nan

    @property
    def relative_ci(self) -> tuple[float, float]:
        if not self.mean_a:
            return (math.nan, math.nan)
        return (self.ci_low / self.mean_a, self.ci_high / self.mean_a)


def paired(a: Sequence[float], b: Sequence[float]) -> Paired:
    """Mean of ``b - a`` with a 95% t-interval and the two-sided paired t-test p-value."""
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = y - x
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    if n >= 2:
        sd = float(d.std(ddof=1))
        half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
        if sd > 0:
            p = float(2 * stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))
        else:
            p = 0.0 if mean != 0 else 1.0
    else:
        half, p = math.nan, math.nan
    return Paired(
        n,
        float(x.mean()) if n else math.nan,
        float(y.mean()) if n else math.nan,
        mean,
        mean - half,
        mean + half,
        p,
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (step-down, monotone, capped at 1); NaN stays NaN."""
    p = np.asarray(p_values, dtype=float)
    valid = np.flatnonzero(~np.isnan(p))
    out = np.full(len(p), np.nan)
    order = valid[np.argsort(p[valid], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        out[idx] = running
    return out.tolist()


def crossover(rhos: Sequence[float], diffs: Sequence[float]) -> float | None:
    """The budget where ``diff = soft - hard`` first turns from negative (soft wins) to
    non-negative, interpolated linearly in log10(rho); None without such a change."""
    points = sorted(zip(rhos, diffs, strict=True))
    for (r0, d0), (r1, d1) in itertools.pairwise(points):
        if d0 < 0 <= d1:
            if d1 == d0:
                return r1
            t = -d0 / (d1 - d0)
            return float(10 ** (math.log10(r0) + t * (math.log10(r1) - math.log10(r0))))
    return None


def wilson(successes: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson 95% interval of a proportion."""
    if total == 0:
        return (math.nan, math.nan)
    phat = successes / total
    denom = 1 + z * z / total
    centre = (phat + z * z / (2 * total)) / denom
    half = z * math.sqrt(phat * (1 - phat) / total + z * z / (4 * total * total)) / denom
    return (centre - half, centre + half)


def mean_sd(values: Iterable[float]) -> tuple[float, float, int]:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if len(v) == 0:
        return (math.nan, math.nan, 0)
    return (float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else math.nan, len(v))
