"""Voting on a CUDA GPU with torch or CuPy (docs/math.md §1, §3), for when one is present.

Optional and never needed: ``gpu_available()`` says whether torch (with CUDA) or CuPy
can see a device, and :class:`GpuBackend` refuses to start without one. The
computation is LocalBackend's, chunked, on the device, in float64 throughout:

* Gower: ``sum_k w_k |a - b|`` then the weighted table entries, term by term in the
  reference's order, so distances match :meth:`Gower.pairwise` bit for bit (every term
  is its own elementwise kernel, so nothing is contracted into an FMA);
* Tab-PE embedding: ``sqrt(sum_num (a - b)^2 + (2/9) #mismatches)`` per pair, as in
  :mod:`dpevolve.backends.fused` (not the BLAS identity);
* nullable numeric columns (missing cells NaN): each term as
  :mod:`dpevolve.pe.distance` adds it (``w`` or ``1`` when exactly one cell is
  missing, ``0`` when both are), in the same place of the sum;
* hard votes: first index of the minimum (torch and CuPy both return the first);
* soft votes: ``softmax(-d / tau)`` with the row maximum subtracted, rounded to the
  canonical grid of ``2^-30`` and summed exactly (:mod:`dpevolve.backends.canonical`). The
  device's own ``exp`` and row totals can differ from the CPU's in the last bit, so a
  vote can land one grid unit away: soft histograms agree with the CPU backends to
  within ``n 2^-30``, not bitwise. Hard votes are bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpevolve.backends.base import CountQuery, Distance, PrivateData, Vote
from dpevolve.backends.canonical import SOFT_SCALE, SOFT_UNIT
from dpevolve.backends.local import LocalBackend, chunks, stream_counts
from dpevolve.data.encoding import Records
from dpevolve.errors import InputError

_NO_GPU = (
    "no GPU: install torch with CUDA (pip install dpevolve[gpu]) or CuPy, on a machine "
    "with an NVIDIA GPU, or use LocalBackend / FusedBackend"
)


@dataclass(frozen=True)
class _Ops:
    """The handful of array operations the vote needs, for one array library."""

    library: str
    asarray: Callable[[np.ndarray], Any]
    zeros: Callable[[tuple[int, ...]], Any]
    exp: Callable[[Any], Any]
    floor: Callable[[Any], Any]
    sqrt: Callable[[Any], Any]
    argmin_rows: Callable[[Any], Any]
    bincount: Callable[[Any, int], Any]
    row_max: Callable[[Any], Any]
    row_sum: Callable[[Any], Any]
    col_sum: Callable[[Any], Any]
    to_numpy: Callable[[Any], np.ndarray]
    isnan: Callable[[Any], Any]
    where: Callable[[Any, Any, Any], Any]


def _torch_ops(device: str | None) -> _Ops | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dev = torch.device(device or "cuda")
    f64 = torch.float64

    def asarray(a: np.ndarray) -> Any:
        dtype = torch.int64 if a.dtype.kind in "iu" else f64
        return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype, device=dev)

    return _Ops(
        library="torch",
        asarray=asarray,
        zeros=lambda shape: torch.zeros(shape, dtype=f64, device=dev),
        exp=torch.exp,
        floor=torch.floor,
        sqrt=torch.sqrt,
        argmin_rows=lambda d: torch.argmin(d, dim=1),
        bincount=lambda idx, m: torch.bincount(idx, minlength=m),
        row_max=lambda a: a.max(dim=1, keepdim=True).values,
        row_sum=lambda a: a.sum(dim=1, keepdim=True),
        col_sum=lambda a: a.sum(dim=0),
        to_numpy=lambda t: t.double().cpu().numpy(),
        isnan=torch.isnan,
        where=torch.where,
    )


def _xp_ops(xp: Any) -> _Ops:
    """Ops for a numpy-compatible module (CuPy; numpy itself in the tests)."""

    def asarray(a: np.ndarray) -> Any:
        return xp.asarray(a, dtype=xp.int64 if a.dtype.kind in "iu" else xp.float64)

    def to_numpy(a: Any) -> np.ndarray:
        get = getattr(a, "get", None)
        return np.asarray(get() if get is not None else a, dtype=np.float64)

    return _Ops(
        library=xp.__name__,
        asarray=asarray,
        zeros=lambda shape: xp.zeros(shape, dtype=xp.float64),
        exp=xp.exp,
        floor=xp.floor,
        sqrt=xp.sqrt,
        argmin_rows=lambda d: xp.argmin(d, axis=1),
        bincount=lambda idx, m: xp.bincount(idx, minlength=m),
        row_max=lambda a: a.max(axis=1, keepdims=True),
        row_sum=lambda a: a.sum(axis=1, keepdims=True),
        col_sum=lambda a: a.sum(axis=0),
        to_numpy=to_numpy,
        isnan=xp.isnan,
        where=xp.where,
    )


def _cupy_ops() -> _Ops | None:
    try:
        import cupy
    except ImportError:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # CUDA driver missing or broken: no usable device
        return None
    return _xp_ops(cupy)


def _find_ops(device: str | None = None) -> _Ops | None:
    return _torch_ops(device) or _cupy_ops()


def gpu_available() -> bool:
    """Whether torch (with CUDA) or CuPy is importable and sees a CUDA device.

    Returns
    -------
    bool
        ``False`` when neither library is installed or no device is visible.
    """
    return _find_ops() is not None


class GpuBackend:
    """Votes on a CUDA GPU (torch, else CuPy), chunk by chunk, in float64.

    Implements :class:`~dpevolve.backends.base.Backend` for the distances and votes that
    describe themselves as :class:`~dpevolve.backends.base.DistanceTerms` and a
    :class:`~dpevolve.backends.base.VoteRule` (Gower and the Tab-PE embedding, hard and
    soft votes: docs/math.md §1, §3); other distances or votes go to ``LocalBackend`` on
    the CPU.

    Parameters
    ----------
    device
        torch device string (default ``"cuda"``); ignored by CuPy (current device).
    chunk_cells
        Cap on one distance block on the device (rows x candidates, float64).

    Raises
    ------
    InputError
        If no GPU library sees a CUDA device.
    """

    def __init__(self, device: str | None = None, chunk_cells: int = 1 << 24) -> None:
        ops = _find_ops(device)
        if ops is None:
            raise InputError(_NO_GPU)
        self._ops = ops
        self.chunk_cells = int(chunk_cells)

    @property
    def library(self) -> str:
        """``"torch"`` or ``"cupy"``."""
        return self._ops.library

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram ``H = sum_x vote(x)`` over ``population`` (float64, (m,))."""
        return _vote_with(self._ops, private, population, distance, vote, self.chunk_cells)

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        """Exact counts on the CPU, as on :class:`LocalBackend` (a bincount is memory-bound:
        copying the codes to the device would cost more than it saves)."""
        return stream_counts(private, query)


def _vote_with(
    ops: _Ops,
    private: PrivateData,
    population: Records,
    distance: Distance,
    vote: Vote,
    chunk_cells: int,
) -> np.ndarray:
    terms, rule = distance.terms(), vote.rule()
    if terms is None or rule is None:
        return LocalBackend().vote(private, population, distance, vote)
    nullable = [bool(v) for v in terms.nullable]
    gower = terms.kind == "gower"
    m = len(population)
    if m == 0:
        raise InputError("cannot vote over an empty population")
    cnum = ops.asarray(population.numeric)
    ccode = ops.asarray(population.codes)
    weights: list[float] = []
    tables: list[Any] = []
    if gower:
        weights = [float(w) for w in terms.numeric_weights]
        tables = [ops.asarray(np.asarray(t, dtype=np.float64)) for t in terms.tables]
    mismatch = terms.mismatch
    histogram = ops.zeros((m,))
    rows = max(1, chunk_cells // m)
    for chunk in chunks(private, rows):
        if len(chunk) == 0:
            continue
        xnum = ops.asarray(chunk.numeric)
        xcode = ops.asarray(chunk.codes)
        d = ops.zeros((len(chunk), m))
        if gower:
            # In Gower.pairwise's order, one rounding per term: bit-identical distances.
            for k, w in enumerate(weights):
                if nullable[k]:
                    d += w * _missing_term(ops, xnum[:, k, None], cnum[None, :, k], False)
                else:
                    d += w * abs(xnum[:, k, None] - cnum[None, :, k])
            for k, table in enumerate(tables):
                d += table[xcode[:, k, None], ccode[None, :, k]]
        else:
            for k in range(xnum.shape[1]):
                if not nullable[k]:  # nullable terms come after the mismatches
                    diff = xnum[:, k, None] - cnum[None, :, k]
                    d += diff * diff
            count = ops.zeros((len(chunk), m))
            for k in range(xcode.shape[1]):
                count += xcode[:, k, None] != ccode[None, :, k]
            d += count * mismatch
            for k in range(xnum.shape[1]):
                if nullable[k]:
                    d += _missing_term(ops, xnum[:, k, None], cnum[None, :, k], True)
            d = ops.sqrt(d)
        if rule.kind == "hard":
            histogram += ops.bincount(ops.argmin_rows(d), m)
        else:
            logits = -d / rule.temperature
            logits -= ops.row_max(logits)
            votes = ops.exp(logits)
            votes /= ops.row_sum(votes)
            # The canonical grid (dpevolve.backends.canonical): whole units of 2^-30, summed
            # exactly, so chunking and the device's summation order cannot matter.
            votes *= SOFT_SCALE
            votes += 0.5
            histogram += ops.col_sum(ops.floor(votes))
    out = ops.to_numpy(histogram)
    return out * SOFT_UNIT if rule.kind == "soft" else out


def _missing_term(ops: _Ops, a: Any, b: Any, squared: bool) -> Any:
    """One nullable attribute's term: ``|a - b|`` (or its square), ``1`` when exactly
    one side is missing, ``0`` when both are (:mod:`dpevolve.pe.distance`)."""
    differ = abs(a - b)
    differ = ops.where(ops.isnan(differ), 0.0, differ)
    if squared:
        differ = differ * differ
    return ops.where(ops.isnan(a) ^ ops.isnan(b), 1.0, differ)


__all__ = ["GpuBackend", "gpu_available"]
