"""Declared ranges and precision proposed from **public** values (docs/guide.md#schemas).

The range rule (:func:`round_outward`), for public extremes ``[lo, hi]`` with span
``S = hi - lo`` and a margin ``m`` (0.1 by default):

* a *natural bound* is kept exactly: an extreme equal to 0, or to plus or minus a power
  of ten at least half the span (1 for ``[0, 1]`` shares, 100 for a ``0-100`` index,
  1000 for a ``0-1000`` score). Data that reach such a value are taken to stop there;
* any other extreme moves outward by at least ``w`` and at most ``2 w``, to the
  coarsest "nice" number in that window (a multiple of 1, 2 or 5 times a power of ten):
  ``[13769, 1366120]`` becomes ``[0, 1600000]``, ``[17, 90]`` becomes ``[5, 100]``.
  ``w`` is ``m S``, or the spread of the public tail beyond it when that is larger: the
  distance from the extreme to the 10th most extreme public value (:data:`TAIL_RANK`).
  A heavy tail (incomes, spend, weights) is where a private table of the same kind goes
  furthest past the public extreme, and its spread says how far;
* the low end never goes below 0 when every public value is non-negative, nor the high
  end above 0 when every one is negative (a loss, a debt: ``[-158.84, -0.21]`` becomes
  ``[-180, 0]``, not ``[-180, 20]``);
* an integer column's bounds stay whole numbers (a step of at least 1, which can add
  up to 1 beyond the window when ``2 m S < 1``).

``m = 0`` declares the public extremes themselves. The precision rule
(:func:`decimals_of`): the fewest decimals, at most :data:`MAX_INFERRED_DECIMALS`,
that write every public value exactly (values read from single precision: whose
single-precision values are theirs); none when more are needed. Values read from single
precision (:func:`read_from_single`) are declared ``float32``, so the output writes
them as the input does.
"""

from __future__ import annotations

import math

import numpy as np

#: Values needing more decimals than this are declared without ``decimals``.
MAX_INFERRED_DECIMALS = 6

#: The rank of the public value whose distance to the extreme measures a tail.
TAIL_RANK = 10

_NICE = (5.0, 2.0, 1.0)


def tail_spreads(values: np.ndarray) -> tuple[float, float]:
    """How far the low and high public extremes lie from the :data:`TAIL_RANK`-th most
    extreme values (0 with fewer values than that)."""
    finite = np.sort(values[np.isfinite(values)])
    if len(finite) < TAIL_RANK:
        return 0.0, 0.0
    k = TAIL_RANK - 1
    return float(finite[k] - finite[0]), float(finite[-1] - finite[-1 - k])


def is_natural_bound(value: float, span: float) -> bool:
    """0, or plus or minus a power of ten at least half of ``span`` (see the module)."""
    if value == 0:
        return True
    size = abs(value)
    power = round(math.log10(size))
    return bool(math.isclose(size, 10.0**power, rel_tol=1e-12) and size >= span / 2)


def _nice(target: float, limit: float, up: bool, min_step: float) -> float:
    """The coarsest multiple of a nice step between ``target`` and ``limit``."""
    width = abs(limit - target)
    scale = max(abs(target), abs(limit), width)
    k = math.floor(math.log10(scale)) + 1
    while True:
        for mult in _NICE:
            step = mult * 10.0**k
            if step <= scale * 1e-15:  # a window narrower than float resolution
                return target
            if step < min_step:
                # The finest allowed grid: the nearest point beyond the target.
                grid = math.ceil(target / min_step) if up else math.floor(target / min_step)
                return _beyond(grid * min_step, target, up, 0)
            grid = math.ceil(target / step) if up else math.floor(target / step)
            value = _beyond(grid * step, target, up, max(0, -k))
            if (value <= limit) if up else (value >= limit):
                return value
        k -= 1


def _beyond(value: float, target: float, up: bool, decimals: int) -> float:
    """``value`` written with ``decimals`` (no binary tail), never inside ``target``."""
    tidy = round(value, decimals)
    if (tidy < target) if up else (tidy > target):
        tidy = value
    # floor(x / step) * step can land an ulp inside the range: never narrower than asked.
    return max(tidy, target) if up else min(tidy, target)


def round_outward(
    lo: float,
    hi: float,
    margin: float,
    non_negative: bool,
    integer: bool = False,
    tails: tuple[float, float] = (0.0, 0.0),
    open_top: bool = False,
) -> tuple[float, float]:
    """The declared range proposed for public extremes ``[lo, hi]`` (see the module).

    Parameters
    ----------
    lo, hi
        The public minimum and maximum.
    margin
        The least widening of a bound that is not natural, as a share of ``hi - lo``;
        a bound moves by at most twice this.
    non_negative
        Every public value is >= 0: the low end stays >= 0.
    integer
        Whole-number bounds (steps of at least 1).
    tails
        The public tails' spreads (:func:`tail_spreads`): a bound moves by at least its
        tail's spread when that exceeds ``margin * (hi - lo)`` (``margin=0``: ignored).
    """
    if margin == 0:
        return float(lo), float(hi if hi > lo else lo + 1.0)
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    min_step = 1.0 if integer else 0.0
    low, high = (max(margin * span, tail) for tail in tails)
    if is_natural_bound(lo, span):
        out_lo = float(lo)
    else:
        out_lo = _nice(lo - low, lo - 2 * low, up=False, min_step=min_step)
        if non_negative:
            out_lo = max(out_lo, 0.0)
    if is_natural_bound(hi, span) and hi > lo and not open_top:
        out_hi = float(hi)
    else:
        out_hi = _nice(hi + high, hi + 2 * high, up=True, min_step=min_step)
        if hi < 0:  # every public value is negative: the high end stays <= 0
            out_hi = min(out_hi, 0.0)
    return float(out_lo), float(out_hi)


def decimals_of(values: np.ndarray) -> int | None:
    """The fewest decimals (at most :data:`MAX_INFERRED_DECIMALS`) writing every value
    exactly, or ``None`` when they need more (see the module)."""
    finite = values[np.isfinite(values)]
    # A few units in the last place: what writing a decimal text as a float can cost.
    tolerance = 8 * np.spacing(np.abs(finite))
    for decimals in range(MAX_INFERRED_DECIMALS + 1):
        if np.all(np.abs(np.round(finite, decimals) - finite) <= tolerance):
            return decimals
    # Values read from single precision (a Stata or Parquet float32: 4.2 arrives as
    # 4.19999980926514): the fewest decimals whose single-precision value is theirs.
    single = finite.astype(np.float32)
    if finite.size == 0 or not np.array_equal(single.astype(np.float64), finite):
        return None
    for decimals in range(MAX_INFERRED_DECIMALS + 1):
        if np.array_equal(np.round(finite, decimals).astype(np.float32), single):
            return decimals
    return None


def read_from_single(values: np.ndarray) -> bool:
    """Whether ``values`` were read from single precision: each is its float32 value,
    and some are not written exactly with :data:`MAX_INFERRED_DECIMALS` decimals (4.2
    read as 4.19999980926514; values such as 2.5 alone say nothing)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0 or not np.array_equal(finite.astype(np.float32).astype(np.float64), finite):
        return False
    tolerance = 8 * np.spacing(np.abs(finite))
    exact = np.abs(np.round(finite, MAX_INFERRED_DECIMALS) - finite) <= tolerance
    return not bool(exact.all())


__all__ = [
    "MAX_INFERRED_DECIMALS",
    "TAIL_RANK",
    "decimals_of",
    "is_natural_bound",
    "read_from_single",
    "round_outward",
    "tail_spreads",
]
