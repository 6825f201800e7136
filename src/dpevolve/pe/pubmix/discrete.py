"""PubMix on a discrete table: m DP samples over the product domain (docs/math.md §5).

The private and public tables become histograms over the product of their columns'
cells (categorical values; numeric columns in 20 equal-width bins over the declared
range). One release draws m samples from

* ``pubmix``: ``(1 - beta) Pbar_prv + beta P_nse``, ``P_nse`` the floor-raised public
  histogram (WF or MIFR) and ``beta = beta_min`` for the chosen floor;
* ``linmix``: the same with ``P_nse`` uniform;
* ``gaussian``: the Gaussian baseline, the private counts plus discrete-Gaussian noise
  of scale ``sigma`` calibrated in zCDP for L2 sensitivity ``sqrt(2)`` (replace-one),
  clipped at zero and normalised, then sampled (post-processing).

Samples decode to rows: a categorical cell to its value, a numeric bin to a uniform draw
inside it (integers rounded).

Private records come in through a :class:`~dpevolve.data.sources.PrivateSource` (the
one door). ``n`` is the source's row count, every row read, public under replace-one
adjacency: it sets ``beta``, the default delta and the ledger's ``private_rows``. With
``on_invalid="drop"`` or ``"clip"`` a row that breaks the schema is not removed: it
counts as one fixed, data-independent record
(:func:`~dpevolve.pe.invalid_rows.stand_in_record`), as in ``synth``, so replacing a
valid row by an invalid one is an ordinary replacement, covered by PubMix's analysis
and by the Gaussian's ``sqrt(2)``.

Every draw that reads the private table (the Gaussian noise, the mixture samples, the
private gamma estimate and floor choice) comes from one
:class:`~dpevolve.privacy.noise.NoiseSource`: secure by default, seeded only with an
explicit ``noise_seed``. ``random_state`` seeds the rest, all of it public or
post-processing: the public folds, sampling the noisy Gaussian histogram, decoding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import FrameSource, PrivateSource
from dpevolve.errors import InputError
from dpevolve.metrics import bin_codes, bin_count
from dpevolve.pe.invalid_rows import stand_in_record
from dpevolve.pe.pubmix.noise import choose_floor, choose_floor_privately, linmix, pubmix_sample
from dpevolve.privacy import (
    ApproxDPEvent,
    Budget,
    GaussianEvent,
    Ledger,
    calibrate_gaussian,
    default_delta,
)
from dpevolve.privacy.interrupt import spending
from dpevolve.privacy.noise import NoiseSource, make_noise

MAX_CELLS = 20_000_000  # float64 histograms of this size take 160 MB each

Noise = Literal["pubmix", "linmix", "gaussian"]


@dataclass(frozen=True)
class ProductDomain:
    """The product of the columns' cells, in schema order (row-major cell index)."""

    schema: Schema
    sizes: tuple[int, ...]

    @classmethod
    def of(cls, schema: Schema, max_cells: int = MAX_CELLS) -> ProductDomain:
        sizes = tuple(bin_count(c) for c in schema.columns)
        cells = math.prod(sizes)
        if cells > max_cells:
            largest = sorted(zip(sizes, schema.names, strict=True), reverse=True)[:3]
            hint = ", ".join(f"{name} ({size})" for size, name in largest)
            raise InputError(
                f"the product domain has {cells:,} cells, more than {max_cells:,} fit in "
                f"memory; drop or coarsen columns (largest: {hint})"
            )
        return cls(schema, sizes)

    @property
    def cells(self) -> int:
        return math.prod(self.sizes)

    def counts(self, frame: pd.DataFrame) -> np.ndarray:
        """Integer counts of a validated table over the cells (through
        :meth:`record_cells`: one binning for private, public and released rows)."""
        cells = self.record_cells(encode(frame, self.schema))
        return np.bincount(cells, minlength=self.cells).astype(np.int64)

    def record_cells(self, records: Records) -> np.ndarray:
        """Cell index of each encoded record (the bins of :meth:`counts`).

        Numeric values are decoded to the declared scale first (integers rounded back
        exactly), so a record lands in the cell its table row would."""
        layout = Layout.of(self.schema)
        numeric = {c.name: j for j, c in enumerate(layout.numeric)}
        categorical = {c.name: j for j, c in enumerate(layout.categorical)}
        codes = []
        for column in self.schema.columns:
            if isinstance(column, NumericColumn):
                raw = column.lo + records.numeric[:, numeric[column.name]] * column.range
                if column.integer:
                    raw = np.rint(raw)
                codes.append(bin_codes(pd.DataFrame({column.name: raw}), column))
            else:
                codes.append(records.codes[:, categorical[column.name]].astype(np.int64))
        if not codes or len(records) == 0:
            return np.zeros(len(records), dtype=np.int64)
        return np.ravel_multi_index(tuple(codes), self.sizes).astype(np.int64)

    def source_counts(self, source: PrivateSource) -> np.ndarray:
        """Counts of every one of the source's ``n`` rows over the cells.

        The valid rows count in their cells; each row validation set aside (``drop``,
        ``clip``) counts in the cell of the stand-in record, one fixed record chosen
        without looking at the data, so the counts sum to the public ``n``."""
        batches = source.batches()
        parts: Iterable[Records] = [batches] if isinstance(batches, Records) else batches
        counts = np.zeros(self.cells, dtype=np.int64)
        for part in parts:
            counts += np.bincount(self.record_cells(part), minlength=self.cells)
        missing = source.n - int(counts.sum())
        if missing < 0:
            raise AssertionError("more valid rows than rows: n must count every row")
        if missing:
            stand_in = self.record_cells(stand_in_record(Layout.of(self.schema)))
            counts[int(stand_in[0])] += missing
        return counts

    def decode(self, cells: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Rows for cell indices; numeric bins become uniform draws inside the bin."""
        codes = np.unravel_index(cells, self.sizes)
        out: dict[str, Any] = {}
        for column, code, size in zip(self.schema.columns, codes, self.sizes, strict=True):
            if isinstance(column, NumericColumn):
                width = column.range / size
                value = column.lo + (code + rng.random(len(code))) * width
                value = np.clip(value, column.lo, column.hi)
                out[column.name] = np.round(value).astype(np.int64) if column.integer else value
            else:
                out[column.name] = pd.Series(np.array(column.values, dtype=object)[code])
        return pd.DataFrame(out).infer_objects()


@dataclass(frozen=True)
class DiscreteRelease:
    """The released sample and its ledger."""

    samples: pd.DataFrame
    ledger: Ledger
    details: dict[str, Any]


def sample_discrete(
    private: PrivateSource | pd.DataFrame,
    public: pd.DataFrame | None,
    schema: Schema,
    m: int,
    budget: Budget,
    *,
    noise: Noise = "pubmix",
    floor: Literal["wf", "mifr"] = "wf",
    gamma: float | None = None,
    gamma_epsilon: float | None = None,
    floor_epsilon: float | None = None,
    random_state: int | None = None,
    noise_seed: int | None = None,
) -> DiscreteRelease:
    """Draw ``m`` DP samples of ``private`` over its product domain (one release).

    ``private`` is a :class:`~dpevolve.data.sources.PrivateSource` (a table in memory
    is read through :class:`~dpevolve.data.sources.FrameSource`, invalid cells refused).
    ``n = private.n`` counts every row; ``budget.delta`` defaults to
    :func:`~dpevolve.privacy.default_delta` of it.

    ``gamma`` bounds ``TV(P_pub, P_prv)`` for the floor choice. By default it comes from
    public folds, which measure the spread inside the public data rather than the
    public-private shift (docs/math.md §5). With ``gamma_epsilon`` it is instead estimated
    privately: ``TV(A, Pbar_prv)`` moves by at most ``1/n`` when one record changes, so
    ``TV + Laplace(1 / (n gamma_epsilon))`` is ``gamma_epsilon``-DP (discrete Laplace on
    the noise grid, its scale widened by the grid's and the float conversion's slack,
    below ``1e-9``); that share is taken from ``epsilon`` and recorded in the ledger.
    With ``floor_epsilon`` the floor itself is chosen privately, by the mixture's actual
    distance from the private histogram
    (:func:`~dpevolve.pe.pubmix.noise.choose_floor_privately`), and gamma is not needed.

    ``random_state`` seeds only public and post-processing randomness. The privacy
    noise is secure (the operating system's generator) unless ``noise_seed`` is given:
    an integer makes it reproducible for research, and anyone holding it can remove the
    noise. It never enters the ledger (which says ``"noise": "seeded"``).
    """
    if m < 1:
        raise InputError(f"m (samples to release) must be at least 1, got {m}")
    if noise not in ("pubmix", "linmix", "gaussian"):
        raise InputError(f"noise must be pubmix, linmix or gaussian, got '{noise}'")
    domain = ProductDomain.of(schema)
    if domain.cells < 3:
        raise InputError(f"PubMix needs at least 3 cells, the domain has {domain.cells}")
    source = private if isinstance(private, PrivateSource) else FrameSource(private, schema)
    n = source.n
    if n < 1:
        raise InputError("the private table is empty (0 rows)")
    seed = np.random.SeedSequence(random_state)
    rng = np.random.default_rng(seed)
    noise_source = make_noise(noise_seed)
    counts = domain.source_counts(source)
    delta = budget.delta if budget.delta is not None else default_delta(n)
    report = source.report
    ledger = Ledger(
        delta,
        metadata={
            "tool": "dpevolve pubmix",
            "seed": seed.entropy,
            "private_rows": n,
            "samples": m,
            "mechanism": noise,
            "noise": noise_source.name,
            "cells": domain.cells,
            "schema": schema.to_dict(),
            "invalid_rows": {
                "on_invalid": "error" if report is None else report.mode,
                "invalid_row_counts_as": "the stand-in record (first value, lowest number)",
            },
        },
    )
    if report is not None:
        # Counts from the private table: the full ledger only (not on the allow-list).
        ledger.add_metadata(validation=report.to_dict())
    # An interrupt from here on carries the ledger (dpevolve.privacy.interrupt).
    with spending() as spend:
        spend.ledger = ledger
        details: dict[str, Any] = {"cells": domain.cells}

        if noise == "gaussian":
            # Integer counts lie on the noise grid: no rounding slack to add.
            multiplier = calibrate_gaussian(1, budget, discrete=True)
            sigma = multiplier * math.sqrt(2.0)
            # Recorded before the noise is drawn: an interrupt can only over-count.
            ledger.record(
                GaussianEvent(sensitivity=math.sqrt(2.0), sigma=sigma, discrete=True), round=1
            )
            noisy = np.maximum(noise_source.gaussian(counts, sigma), 0.0)
            weights = (
                noisy / noisy.sum()
                if noisy.sum() > 0
                else np.full(domain.cells, 1.0 / domain.cells)
            )
            cells = rng.choice(domain.cells, size=m, p=weights)  # post-processing
            details.update(sigma=sigma)
        else:
            beta, p_noise, epsilon = _mixture_weights(
                counts, public, schema, domain, m, budget, noise,
                {"floor": floor, "gamma": gamma, "gamma_epsilon": gamma_epsilon,
                 "floor_epsilon": floor_epsilon},
                noise_source, rng, ledger, details,
            )  # fmt: skip
            ledger.record(ApproxDPEvent(epsilon, delta, label=noise), round=1, beta=beta)
            cells = pubmix_sample(counts, p_noise, beta, m, noise_source)
            details.update(beta=beta)
        ledger.add_metadata(details=details)
        return DiscreteRelease(domain.decode(cells, rng), ledger, details)


def exact_tv(public_counts: np.ndarray, private_counts: np.ndarray) -> float:
    """``TV(A / N, H / n)`` of two count vectors, correctly rounded to a float.

    Computed as ``sum |H_i N - A_i n| / (2 n N)`` in integers, so the only error is the
    final conversion (at most ``2**-53`` for a value in ``[0, 1]``) and the value's
    sensitivity to one replaced private record is ``1/n`` up to that.
    """
    big_n, n = int(public_counts.sum()), int(private_counts.sum())
    if big_n < 1 or n < 1:
        raise InputError("both tables must have at least one row")
    # int64 holds every product and the sum (at most 2 n N) below 2**31 rows each.
    kind: Any = np.int64 if max(n, big_n) < 2**31 else object
    diff = np.abs(private_counts.astype(kind) * big_n - public_counts.astype(kind) * n).sum()
    return float(Fraction(int(diff), 2 * n * big_n))


def _mixture_weights(
    counts: np.ndarray,
    public: pd.DataFrame | None,
    schema: Schema,
    domain: ProductDomain,
    m: int,
    budget: Budget,
    noise: Noise,
    options: dict[str, Any],
    noise_source: NoiseSource,
    rng: np.random.Generator,
    ledger: Ledger,
    details: dict[str, Any],
) -> tuple[float, np.ndarray, float]:
    """PubMix's or LinMix's ``beta`` and ``P_nse``, and the epsilon left for sampling.

    ``options`` holds ``floor``, ``gamma``, ``gamma_epsilon`` and ``floor_epsilon`` (see
    :func:`sample_discrete`); the private gamma estimate and floor choice are charged to
    ``ledger`` here.
    """
    floor, gamma = options["floor"], options["gamma"]
    gamma_epsilon, floor_epsilon = options["gamma_epsilon"], options["floor_epsilon"]
    n = int(counts.sum())  # every row counts (see ProductDomain.source_counts): the public n
    if budget.epsilon is None or budget.delta is None:
        raise InputError("PubMix needs an (epsilon, delta) budget, not rho")
    epsilon = budget.epsilon
    p_private = counts / n
    if noise == "linmix":
        mix = linmix(domain.cells, n, m, epsilon, budget.delta)
        beta, p_noise = mix.beta, np.asarray(mix.p_noise)
    else:
        if public is None:
            raise InputError("noise 'pubmix' needs a public table (--public)")
        public_frame, _ = schema.validate(public, what="public table")
        public_counts = domain.counts(public_frame)
        public_hist = public_counts / public_counts.sum()
        if floor_epsilon is not None:
            if gamma is not None or gamma_epsilon is not None:
                raise InputError("floor_epsilon chooses the floor itself: drop gamma")
            if not 0 < floor_epsilon < epsilon:
                raise InputError(
                    f"floor_epsilon must lie in (0, epsilon={epsilon}), got {floor_epsilon}"
                )
            epsilon -= floor_epsilon
            choice = choose_floor_privately(
                public_hist,
                p_private,
                n,
                m,
                epsilon,
                budget.delta,
                floor_epsilon,
                floor,
                noise=noise_source,
                counts=public_counts,
            )
            ledger.record(ApproxDPEvent(floor_epsilon, 0.0, label="floor_selection"), round=0)
            details.update(floor_epsilon=floor_epsilon)
        elif gamma_epsilon is not None:
            if gamma is not None:
                raise InputError("give gamma or gamma_epsilon, not both")
            if not 0 < gamma_epsilon < epsilon:
                raise InputError(
                    f"gamma_epsilon must lie in (0, epsilon={epsilon}), got {gamma_epsilon}"
                )
            true_tv = exact_tv(public_counts, counts)
            # TV moves by at most 1/n; the float conversion (2**-53) and the noise
            # grid (rounding_slack) add to it, and the scale covers the sum.
            sensitivity = 1.0 / n + noise_source.rounding_slack(1, "l1") + 2.0**-53
            noisy_tv = float(noise_source.laplace([true_tv], sensitivity / gamma_epsilon)[0])
            gamma = min(max(noisy_tv, 0.0), 1.0)
            ledger.record(ApproxDPEvent(gamma_epsilon, 0.0, label="gamma_estimate"), round=0)
            epsilon -= gamma_epsilon
            details.update(gamma_epsilon=gamma_epsilon)
        if floor_epsilon is None:
            if gamma is None:
                from dpevolve.pe.pubmix.noise import gamma_from_fold_counts

                gamma = gamma_from_fold_counts(public_counts, rng=rng)
            choice = choose_floor(
                public_hist, n, m, epsilon, budget.delta, gamma, floor, counts=public_counts
            )
            details.update(gamma=gamma)
        beta, p_noise = choice.beta, np.asarray(choice.p_noise)
        details.update(floor=choice.t, deficit=choice.deficit, z1=choice.z1, z2=choice.z2)
    return beta, p_noise, epsilon
