"""Marginal counts from the private source, and their Gaussian release.

Counting streams: each batch of the :class:`~dpevolve.data.sources.PrivateSource` is
cut into slices of at most ``batch_rows`` rows, turned into cell codes and added up with
one ``bincount`` per marginal, so memory is the requested cells plus one slice's codes,
never ``rows x marginals``.

Privacy of one marginal release. Under replace-one adjacency one record leaves one cell
and enters another (the same cell when its projection does not change), so the count
vector moves by at most ``sqrt(1^2 + 1^2) = sqrt(2)`` in L2; a record turned invalid
(``on_invalid="drop"``) leaves one cell, ``1 <= sqrt(2)``. Adding discrete Gaussian noise
of scale ``sigma`` from the one noise source is then ``rho = 2 / (2 sigma^2)``-zCDP
(Canonne, Kamath & Steinke 2020; counts are integers, so no grid slack is needed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from dpevolve.data.encoding import Records
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.errors import InputError
from dpevolve.measurements import Clique, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent
from dpevolve.release.noise import NoiseSource

#: Rows per slice when counting (bounds the codes held at once).
BATCH_ROWS = 32_768

#: Replace-one L2 sensitivity of one marginal's counts.
MARGINAL_SENSITIVITY = math.sqrt(2.0)

FINE = "fine:"
"""Prefix of the ledger label of a fine 1-way histogram."""


def _slices(source: PrivateSource, batch_rows: int) -> Iterable[Records]:
    batches = source.batches()
    for batch in (batches,) if isinstance(batches, Records) else batches:
        for start in range(0, len(batch), batch_rows):
            yield batch.take(slice(start, start + batch_rows))


def count_marginals(
    source: PrivateSource,
    discretiser: Discretiser,
    cliques: Sequence[Clique],
    fine: Sequence[str] = (),
    batch_rows: int = BATCH_ROWS,
) -> tuple[dict[Clique, np.ndarray], dict[str, np.ndarray]]:
    """Exact counts of every clique (cell shape) and fine histograms, in one pass.

    Private: the results must go through :func:`release` before they leave the engine.
    """
    domain = discretiser.domain
    cliques = list(dict.fromkeys(cliques))  # a repeat would be counted twice
    shapes = {c: domain.shape(c) for c in cliques}
    where = {c: [domain.index(a) for a in c] for c in cliques}
    counts = {c: np.zeros(math.prod(shapes[c]), dtype=np.int64) for c in cliques}
    fine_counts = {f: np.zeros(discretiser.fine[f].size, dtype=np.int64) for f in fine}
    for part in _slices(source, batch_rows):
        codes = discretiser.codes(part)
        for clique in cliques:
            flat = np.ravel_multi_index(tuple(codes[:, where[clique]].T), shapes[clique])
            counts[clique] += np.bincount(flat, minlength=counts[clique].size)
        for name in fine:
            fine_counts[name] += np.bincount(
                discretiser.fine_codes(part, name), minlength=fine_counts[name].size
            )
    exact = {c: counts[c].reshape(shapes[c]).astype(np.float64) for c in cliques}
    return exact, {f: v.astype(np.float64) for f, v in fine_counts.items()}


def marginal_event(sigma: float, label: str = "marginal") -> GaussianEvent:
    """What one marginal release at ``sigma`` costs: sensitivity ``sqrt(2)``, discrete."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise InputError(f"a marginal release needs sigma > 0, got {sigma!r}")
    return GaussianEvent(MARGINAL_SENSITIVITY, sigma, label=label, discrete=True)


def release(
    exact: np.ndarray,
    clique: Clique,
    event: GaussianEvent,
    noise: NoiseSource,
    *,
    query: MarginalQuery | None = None,
) -> Measurement:
    """``exact + N_Z(0, sigma^2)`` per cell as a :class:`Measurement` carrying ``event``.

    ``query`` (default: the fine marginal of ``clique``) may be a coarse query on the
    same clique, ``exact`` then its aggregated counts: the sensitivity is ``sqrt(2)``
    all the same (:class:`~dpevolve.measurements.MarginalQuery`).
    """
    chosen = query if query is not None else MarginalQuery(clique)
    if chosen.clique != tuple(clique):
        raise InputError("a release's query must be on its clique")
    noisy = np.asarray(noise.gaussian(exact, event.sigma), dtype=np.float64)
    noisy = noisy.reshape(exact.shape)
    noisy.setflags(write=False)
    return Measurement(chosen, noisy, event.sigma, event)


def sigma_for(rho: float) -> float:
    """The noise scale of one marginal release costing ``rho``: ``sqrt(2) / sqrt(2 rho)``."""
    if not (math.isfinite(rho) and rho > 0):
        raise InputError(f"a marginal release needs rho > 0, got {rho!r}")
    return MARGINAL_SENSITIVITY / math.sqrt(2.0 * rho)


__all__ = [
    "BATCH_ROWS",
    "FINE",
    "MARGINAL_SENSITIVITY",
    "count_marginals",
    "marginal_event",
    "release",
    "sigma_for",
]
