"""A whole engine run on adversarial neighbours: the lower bound on its ``rho`` never
above the ledger's, and an audit strong enough to catch a release drawn at the wrong
noise scale.

The run is small enough that its releases are loud: two columns (a numeric of 301
values, so the atom release runs over its candidates, and the label), 20 rows, a
budget at which the atom release, the fine histogram and the rounds' marginals draw
noise of ``sigma`` 1.5 to 1.8. The moving record of the main pair sits at a value five
rows already hold (on ``D`` an atom at the threshold's edge, on ``D'`` rather not) and
changes cell in every release: value, fine cell, bin and label. Each run draws from
the seeded twin of the noise source (:class:`~dpevolve.privacy.noise.SeededNoise`,
the same distributions), one seed a run, so the audit is deterministic.

The event. The most powerful test of ``D`` against ``D'`` given a run's releases is
their log-likelihood ratio; the auditor, who knows both tables, computes it from the
run's output alone: for every Gaussian release (its query, ``sigma`` and noisy values
are in the measurement list, the run's bins in its discretiser) it counts both tables
under that query, ``a`` and ``b``, and adds ``(a - b) . (y - (a + b) / 2) / sigma^2``
(exact for the discrete Gaussian too: its normaliser does not move with an integer
shift). The selections are left out (any function of the output is a valid event; it
costs some power). The events are ``S > t`` at a few thresholds fixed in advance.

The claim is the ledger's: the ``rho`` of its events, which its epsilon converts
(zCDP, Canonne-Kamath-Steinke). zCDP bounds the Renyi divergence of every event, so
Clopper-Pearson counts give a lower bound on ``rho``
(:func:`~dpevolve.privacy.audit.rho_lower_bound`), a far tighter test of the claim
than one ``(epsilon, delta)`` point: on the main pair the bound reaches a third of the
claim, and a noise source that draws at half the ``sigma`` it is asked for (four times
the ``rho``; the exact audits, which record what the engine asks, cannot see it) puts
it above the claim (:func:`main_pair_violations`, run on that mutant by
``test_mutants.py``).
The other pairs (an end point, a fractional value rounding onto another candidate, an
invalid record dropped, one clipped) reuse the runs on ``D`` with fewer runs on ``D'``:
no bound above the claim.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from dpevolve.backends.local import LocalBackend
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineResult, EngineSpec, fit_engine
from dpevolve.engine.atoms import ATOMS, CandidateCounts, atom_candidates
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import FINE, count_marginals
from dpevolve.engine.plan import event_rho
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import Budget, GaussianEvent
from dpevolve.privacy.audit import rho_lower_bound
from dpevolve.privacy.conversions import epsilon_from_rho
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (NumericColumn("v", 0.0, 3.0, decimals=2), CategoricalColumn("y", ("0", "1"))),
    label="y",
)
COLS = list(SCHEMA.names)
SPEC = EngineSpec(bins=4, fine_cells=8, rounds=2, pe_share=0.0, atom_share=0.3, fine_share=0.2)
BUDGET = Budget(rho=1.5)

#: The record of ``D`` (at the value five base rows hold), and per pair the record of
#: ``D'``, its ``on_invalid`` and the runs on it: the main pair (another candidate,
#: fine cell, bin and label), an end point, a fractional value that rounds onto the
#: next candidate, an out-of-range record dropped and one clipped to the end.
HERE = (1.23, "1")
PAIRS = [
    ((2.90, "0"), "error", 500),
    ((3.0, "0"), "error", 150),
    ((1.235, "0"), "error", 150),
    ((9.99, "0"), "drop", 150),
    ((9.99, "0"), "clip", 150),
]
RUNS_D = 500

#: Thresholds on the log-likelihood ratio, in units of the claimed ``rho`` (under
#: ``D`` it centres near ``+rho``, under ``D'`` near ``-rho``).
CUTS = (-0.5, 0.0, 0.5, 1.0, 1.5)


def base() -> list[tuple[float, str]]:
    """Nineteen rows: five at 1.23, the rest spread over [0.3, 2.5]."""
    rng = np.random.default_rng(1)
    spread = [(round(float(rng.uniform(0.3, 2.5)), 2), str(i % 2)) for i in range(14)]
    return [(1.23, "1")] * 5 + spread


def source(record: tuple[float, str], on_invalid: str = "error") -> FrameSource:
    return FrameSource(pd.DataFrame([*base(), record], columns=COLS), SCHEMA, on_invalid=on_invalid)


class Independent:
    """A stand-in estimator: the product of the 1-way measurements (post-processing;
    the real one would make each run a hundred times slower)."""

    def __init__(self, domain, total, spec) -> None:
        self.domain, self.total = domain, float(total)
        self.p = [np.full(s, 1.0 / s) for s in domain.sizes]

    def fit(self, measurements):
        for m in measurements:
            # a grouped 1-way (a pseudo-measurement of some bins together) is no histogram
            if len(m.clique) == 1 and not getattr(m.query, "groups", None):
                clipped = np.clip(m.noisy, 1e-9, None)
                self.p[self.domain.index(m.clique[0])] = clipped / clipped.sum()
        return self

    def answer(self, clique):
        out = np.ones(())
        for a in clique:
            out = np.multiply.outer(out, self.p[self.domain.index(a)])
        return self.total * out

    def sample(self, rows, rng):
        return np.stack([rng.choice(p.size, size=rows, p=p) for p in self.p], axis=1)


def fit(record: tuple[float, str], on_invalid: str, seed: int) -> EngineResult:
    return fit_engine(
        source(record, on_invalid),
        SCHEMA,
        BUDGET,
        SPEC,
        noise=SeededNoise(seed),
        rng=np.random.default_rng(seed),
        estimator=Independent,
        model_size=lambda domain, cliques: 0.0,
    )


def releases(result: EngineResult) -> list[Measurement]:
    """The run's Gaussian releases (the selections are left out of the event)."""
    return [m for m in result.measurements if isinstance(m.event, GaussianEvent)]


class Counter:
    """Exact counts of one table under any run's released queries (the auditor's
    side: it knows the table; the queries and bins are in the run's output)."""

    def __init__(self, record: tuple[float, str], on_invalid: str) -> None:
        self.source = source(record, on_invalid)
        query = CandidateCounts(SCHEMA, atom_candidates(SCHEMA, SPEC))
        self.atoms = query.split(LocalBackend().count(self.source.batches(), query))
        self.cache: dict[bytes, tuple[dict, dict]] = {}

    def counts(self, result: EngineResult) -> list[np.ndarray]:
        """The exact vector behind each of :func:`releases` of ``result``."""
        disc = result.discretiser
        coarse, fine = self._counted(disc)
        out = []
        for m in releases(result):
            label = m.event.label
            if label.startswith(ATOMS):
                out.append(self.atoms[label.removeprefix(ATOMS)])
            elif label.startswith(FINE):
                out.append(fine[label.removeprefix(FINE)])
            else:
                assert isinstance(m.query, MarginalQuery)
                out.append(m.query.project(coarse[m.query.clique]))
        return out

    def _counted(self, disc: Discretiser) -> tuple[dict, dict]:
        numeric = [c.name for c in disc.numeric]
        key = b"".join(disc.edges(a).tobytes() + disc.fine[a].lo.tobytes() for a in numeric)
        if key not in self.cache:
            cliques = [(a,) for a in disc.domain.names] + [tuple(disc.domain.names)]
            self.cache[key] = count_marginals(self.source, disc, cliques, numeric)
        return self.cache[key]


def log_ratio(result: EngineResult, d: Counter, n: Counter) -> float:
    """The log-likelihood ratio of ``D`` to ``D'`` of the run's Gaussian releases."""
    total = 0.0
    for m, a, b in zip(releases(result), d.counts(result), n.counts(result), strict=True):
        a, b, y = (np.ravel(np.asarray(v, dtype=np.float64)) for v in (a, b, m.noisy))
        total += float((a - b) @ (y - (a + b) / 2.0)) / m.sigma**2
    return total


@dataclass
class Runs:
    """The runs on one table: their results and the claim each ledger makes."""

    results: list[EngineResult]

    @property
    def claims(self) -> set[float]:
        return {round(sum(event_rho(e) for e in r.events), 9) for r in self.results}


@functools.cache
def runs(record: tuple[float, str], on_invalid: str, count: int, first_seed: int) -> Runs:
    return Runs([fit(record, on_invalid, first_seed + k) for k in range(count)])


def audit(d: Runs, n: Runs, there: tuple[float, str], on_invalid: str) -> tuple[float, float]:
    """``(lower bound on rho, claimed rho)`` of ``D`` (:data:`HERE`) against ``D'``."""
    (claim,) = d.claims | n.claims  # the ledger's claim is public: the same on both
    here_counts, there_counts = Counter(HERE, "error"), Counter(there, on_invalid)
    s_d = np.array([log_ratio(r, here_counts, there_counts) for r in d.results])
    s_n = np.array([log_ratio(r, here_counts, there_counts) for r in n.results])
    alpha = 0.05 / len(CUTS)  # Bonferroni over the thresholds
    bound = max(
        rho_lower_bound(
            int((s_d > t * claim).sum()), s_d.size, int((s_n > t * claim).sum()), s_n.size, alpha
        )
        for t in CUTS
    )
    return bound, claim


def _check_the_ledger(results: Sequence[EngineResult], claim: float) -> None:
    """The audited ``rho`` is what the ledger's epsilon stands for, within the budget."""
    assert claim <= BUDGET.rho * (1 + 1e-9)
    result = results[0].ledger.result()
    assert result.epsilon == pytest.approx(epsilon_from_rho(claim, result.delta, "cks"), rel=1e-6)


@pytest.mark.parametrize(("there", "on_invalid", "count"), PAIRS)
def test_a_whole_run_stays_below_its_ledger(there, on_invalid, count) -> None:
    d = runs(HERE, "error", RUNS_D, 0)
    n = runs(there, on_invalid, count, 100_000)
    bound, claim = audit(d, n, there, on_invalid)
    _check_the_ledger(d.results, claim)
    assert bound <= claim
    if count == RUNS_D:  # the main pair: the audit has power (a third of the claim)
        assert bound >= claim / 4


def main_pair_violations(count: int = 300) -> list[str]:
    """The main pair's audit on ``count`` fresh runs a side (not cached: for a mutant
    patched in), as a list of findings."""
    there, on_invalid, _ = PAIRS[0]
    d = Runs([fit(HERE, "error", k) for k in range(count)])
    n = Runs([fit(there, on_invalid, 100_000 + k) for k in range(count)])
    bound, claim = audit(d, n, there, on_invalid)
    return [f"rho >= {bound:.4g} (95%), the ledger claims {claim:.4g}"] if bound > claim else []
