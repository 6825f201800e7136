"""Counting kept cell codes in one compiled loop (docs/scale.md, "Dask: counting on the workers").

A pass over kept codes (:meth:`dpevolve.engine.measure.MarginalCounts.cell_codes`) counts
every clique and fine histogram of the pass. numpy does it clique by clique and slice by
slice (``ravel_multi_index`` then ``bincount`` on 8,192 rows at a time, a temporary of
every cell per slice), which at 10^7 rows and 90 three-way cliques costs several CPU
seconds a pass. :func:`count_codes` does the same counting as one numba loop: for each
clique, one sweep down its code columns (contiguous: the codes are column-major) adding
one to the row's cell. The counts are integers, so they are
:meth:`~dpevolve.engine.measure.CodeCounts.counts`' to the last bit (a property test holds
them equal); without numba :func:`count_codes` is that method.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

import numpy as np

__all__ = ["CodesPlan", "count_codes", "kernel_layout"]


class CodesPlan(Protocol):
    """What :func:`count_codes` needs of a pass (:class:`~dpevolve.engine.measure.CodeCounts`)."""

    where: tuple[tuple[int, ...], ...]
    shapes: tuple[tuple[int, ...], ...]
    fine: tuple[int, ...]
    offsets: np.ndarray

    @property
    def size(self) -> int: ...

    def counts(self, codes: np.ndarray) -> np.ndarray: ...


def kernel_layout(plan: CodesPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pass as arrays: each term's code columns, their row-major strides and its
    first count, a fine histogram being a term of one column (padding: column 0, stride 0).

    Returns
    -------
    columns, strides : numpy.ndarray
        int64, ``(terms, widest)``.
    starts : numpy.ndarray
        int64, ``(terms + 1,)``: where each term's counts begin in the stacked vector,
        then where the last ends.
    """
    terms: list[tuple[tuple[int, ...], tuple[int, ...]]] = list(
        zip(plan.where, plan.shapes, strict=True)
    )
    terms += [((column,), (1,)) for column in plan.fine]
    widest = max((len(cols) for cols, _ in terms), default=1)
    columns = np.zeros((len(terms), widest), dtype=np.int64)
    strides = np.zeros((len(terms), widest), dtype=np.int64)
    for k, (cols, shape) in enumerate(terms):
        # ravel_multi_index's C order: the last column varies fastest.
        columns[k, : len(cols)] = cols
        strides[k, : len(cols)] = np.cumprod((*shape[1:], 1)[::-1])[::-1]
    starts = np.asarray(plan.offsets[: len(terms) + 1], dtype=np.int64)
    return columns, strides, starts


def tally_kernel(
    codes: np.ndarray, columns: np.ndarray, strides: np.ndarray, starts: np.ndarray, out: np.ndarray
) -> None:
    """Add one to ``out`` at every row's cell of every term (numba compiles it).

    A code beyond its term's cells (never, from a discretiser) raises rather than
    writing outside the term: compiled code does not check bounds.
    """
    rows = codes.shape[0]
    for k in range(columns.shape[0]):
        base = starts[k]
        cells = starts[k + 1] - base
        for i in range(rows):
            cell = 0
            for w in range(columns.shape[1]):
                cell += np.int64(codes[i, columns[k, w]]) * strides[k, w]
            if cell >= cells:
                raise IndexError("a cell code beyond its clique's cells")
            out[base + cell] += 1


_compiled: dict[str, Any] = {}
_lock = threading.Lock()


def _kernel() -> Any:
    """:func:`tally_kernel` compiled (once a process; numba's disk cache as the fused
    kernels use it), or ``None`` without numba."""
    with _lock:
        if "kernel" not in _compiled:
            try:
                import numba
            except ImportError:
                _compiled["kernel"] = None
            else:
                cache = os.environ.get("DPEVOLVE_NUMBA_CACHE", "1") != "0"
                _compiled["kernel"] = numba.njit(cache=cache, nogil=True)(tally_kernel)
        return _compiled["kernel"]


def count_codes(plan: CodesPlan, codes: np.ndarray) -> np.ndarray:
    """The int64 counts of ``plan`` over kept ``codes`` (``(rows, columns)``, unsigned).

    Parameters
    ----------
    plan
        The pass: cliques' code columns and shapes, fine histograms' columns, offsets.
    codes
        One partition's codes, as :meth:`MarginalCounts.cell_codes` keeps them.

    Returns
    -------
    numpy.ndarray
        int64, ``plan.size``: ``plan.counts(codes)``, bit for bit.
    """
    kernel = _kernel()
    if kernel is None or not len(codes):
        return plan.counts(codes)
    out = np.zeros(plan.size, dtype=np.int64)
    kernel(codes, *kernel_layout(plan), out)
    return out
