"""The privacy tests can fail: each engine mutant below, patched in, is caught.

A mutant is a plausible privacy bug, applied with ``monkeypatch`` (the source is left
alone). Each must be reported by the audits this folder runs on the unmutated engine:
the exact ones (:mod:`tests.privacy.exact`) and, for a bug in the noise source itself,
the empirical whole-run audit (:mod:`tests.privacy.test_run_audit`):

========================================  ==========================================
mutant                                    caught by
========================================  ==========================================
selection drawn at scale / 2, ledger      the selection's exact enumeration, and the
unchanged (and at scale / 4)              coupled run's draw checks
selection charged ``epsilon^2 / 16``      both (bounded range needs ``epsilon^2 / 8``)
fine histogram recorded as free           the coupled run's release checks
(sensitivity 0), or not recorded at all
bins placed from the exact fine counts    the coupled run (D' ends in other bins)
(spied on the release, or counted afresh)
decoding weights from the exact counts    the coupled run and the model file
atom candidates read from the private     the coupled atom run (the release's shape,
values                                    and its ledger entry, follow the data)
atom release calibrated and charged at    the coupled atom run (the two count vectors
sensitivity 1                             lie ``sqrt(2)`` apart)
atoms found from the exact counts, or     the coupled atom run (D' gets other cells,
the atom release left out of the ledger   or a noise call has no event)
parity cliques cut at quantiles of the    the coupled parity run (the candidates the
exact 1-ways                              rounds score differ)
decoding span from the private min/max    the coupled atom run (a moved column's
(tails.py and bins.released_support)      support follows the data)
the same, in tails.py alone               the coupled tails run (the lone top row's
                                          bin folds inward on one side only)
the label's pairs with the atom columns   the wide atom-rule runs (an atom of 20
chosen from the exact fine counts         rows of 400 or 19: paired on one side)
a pair with the label recorded at         the wide atom-rule runs (a label flipped:
sensitivity 1                             the 2-way moves ``sqrt(2)``)
a moved column's support read from the    the coupled run (D' decodes within another
exact fine counts                         span)
a column's present rows read from its     the coupled faint run (D keeps the values,
exact missing count                       D' decodes them missing)
``n`` counted after invalid rows are      the coupled run's drop pair (bins, rows
dropped                                   drawn and the ledger follow the drop)
relation / label-tree groups cut at the   the cut tables' coupled runs (the moving
exact 1-way counts                        record crosses x's median)
relation closing draws neither charged    the triangle tables' coupled runs (a noise
nor recorded                              call no ledger event pays for)
the last fit's smoothed 1-ways read from  the coupled tails run (D' fits another
the exact fine counts                     model)
vacant bins read from the exact fine      the coupled tails run (D' leaves the top
counts (those no private row lies in)     bin empty: the model is told so)
the bins the last refit holds empty read  the coupled tails run (D' leaves the top
from the exact fine counts, not the folds bin empty: the refit is told so)
the density an end bin's rows reach out   the coupled reach run (D' holds a third
at read from the exact fine counts        fewer rows next to the end bin)
point bins' counts read from the exact    the coupled atom run (a whole number's own
fine counts                               bin holds another count in D')
the known values a fine histogram shows   the coupled shown-value run (a declared
read from its exact counts                value's count crosses the bar: D' shows none)
decoding span from the private min/max    the coupled atom run (the end bins decode
                                          inward on one side only)
zoom span from the private min/max        the coupled zoom run (D' zooms into another
                                          span: another partition is counted)
zoom release recorded as free             the coupled zoom run's release checks
the cells the last fit holds empty (a     the coupled zero run (the held cell holds 3
rule at an atom) read from the exact      rows in D, 4 in D': held on one side only)
counts of the released pairs
a declared atom given its bin only where  the coupled declared-atom run (the atom
the exact fine counts hold it             holds a row in D, none in D')
a coarse pair's tilt within its groups    the cut tables' coupled runs (the moving
read from the pair's exact counts         record changes the pair's association)
a label's pair shrunk by a factor read    the coupled run (the moving record changes
from its exact counts                     the pair's residual: D' fits another model)
the draw's sensitivity from the fine      the coupled parity run at parity weight 4
cliques' weights, the parity weight left  (a parity query's score moves past the
out                                       charge)
the noise source drawing at half the      the whole-run audit (the exact audits
``sigma`` asked of it                     record what is asked: they cannot see it)
========================================  ==========================================

``benchmarks/privacy_mutants.py`` applies six as text edits to a copy of the
source, the others as these patches for a whole session, and runs
``pytest tests/privacy`` on each (results in ``benchmarks/results``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable

import numpy as np
import pytest

from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import NumericColumn
from dpevolve.data.sources import FrameSource, PrivateSource
from dpevolve.engine import (
    atoms,
    independence,
    loop,
    model,
    reach,
    rounds,
    rules,
    select,
    tails,
    tilt,
    vacant,
    zoom,
)
from dpevolve.engine.atom_rules import RULE, atom_columns
from dpevolve.engine.atoms import ATOMS, release_atoms
from dpevolve.engine.bins import released_edges, released_support
from dpevolve.engine.cells import weighed_beside
from dpevolve.engine.density import density_measurements
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.engine.points import point_measurements
from dpevolve.engine.smoothing import decode_weights
from dpevolve.engine.tails import released_inward
from dpevolve.engine.tilt import tilts
from dpevolve.engine.zeros import zero_measurements
from dpevolve.measurements import MarginalQuery
from dpevolve.privacy import ExponentialEvent, GaussianEvent, Ledger, gaussian_sigma
from dpevolve.privacy.noise import SeededNoise

from . import (
    test_atoms_exact,
    test_declared_atoms_exact,
    test_faint_exact,
    test_tails_exact,
    test_zeros_exact,
    test_zoom_exact,
)
from .conftest import MUTANT_VARIABLE
from .exact import engine_violations, selection_audit
from .test_atom_rules_exact import WIDE_CASES
from .test_engine_exact import PAIRS, engine_audit
from .test_label_pairs_exact import exact_label_groups, label_audit
from .test_label_tree_exact import exact_tree_groups, tree_audit
from .test_model_file import model_file_violations
from .test_parity_exact import XOR_SPEC, moved_audit, parity_audit
from .test_relations_exact import cut_audit, exact_groups, triangle_audit, unrecorded_closing
from .test_run_audit import main_pair_violations
from .test_tree_coarse_exact import coarse_audit


def scale_divided(factor: float) -> Callable[[pytest.MonkeyPatch], None]:
    def apply(mp: pytest.MonkeyPatch) -> None:
        def draw(values, event, noise):
            return noise.noisy_argmax(values, event.scale / factor)

        mp.setattr(select, "draw", draw)
        mp.setattr(rounds, "draw", draw)

    return apply


def rho_halved(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(ExponentialEvent, "rho", property(lambda self: self.epsilon**2 / 16.0))


def free_fine(mp: pytest.MonkeyPatch) -> None:
    def event(sigma, label="marginal"):
        if label.startswith(FINE):
            return GaussianEvent(0.0, sigma, label=label, discrete=True)
        return marginal_event(sigma, label)

    mp.setattr(loop, "marginal_event", event)


def unrecorded(prefix: str) -> Callable[[pytest.MonkeyPatch], None]:
    """The releases whose ledger label starts with ``prefix`` left out of the ledger."""

    def apply(mp: pytest.MonkeyPatch) -> None:
        record = Ledger.record

        def quiet(self, event, round=None, **info):
            if not event.label.startswith(prefix):
                record(self, event, round, **info)

        mp.setattr(Ledger, "record", quiet)

    return apply


def _exact_of(mp: pytest.MonkeyPatch) -> dict[int, np.ndarray]:
    """Patches the engine's release to remember each released array's exact input."""
    exact: dict[int, np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        out = release(counts, clique, event, noise, query=query)
        exact[id(out.noisy)] = np.asarray(counts, dtype=np.float64)
        return out

    mp.setattr(loop, "release", spied)
    return exact


def exact_bins(mp: pytest.MonkeyPatch) -> None:
    exact = _exact_of(mp)

    def edges(discretiser, released, n, mode="range", skip=(), known=None):
        leaked = {k: dataclasses.replace(m, noisy=exact[id(m.noisy)]) for k, m in released.items()}
        return released_edges(discretiser, leaked, n, mode, skip, known)

    mp.setattr(loop, "released_edges", edges)


def exact_declared(mp: pytest.MonkeyPatch) -> None:
    test_declared_atoms_exact.exact_declared(mp, _exact_of(mp))


def exact_decoding(mp: pytest.MonkeyPatch) -> None:
    exact = _exact_of(mp)

    def weights(noisy, sigma, cells, tails=False):
        return decode_weights(exact[id(noisy)], sigma, cells, tails)

    mp.setattr(model, "decode_weights", weights)


def private_values(source: PrivateSource, column: NumericColumn, index: int) -> np.ndarray:
    """The private values of a numeric column (what a mutant must never read)."""
    batches = source.batches()
    parts = [batches] if isinstance(batches, Records) else list(batches)
    raw = np.concatenate([column.lo + b.numeric[:, index] * column.range for b in parts])
    return raw[np.isfinite(raw)]


def private_candidates(mp: pytest.MonkeyPatch) -> None:
    """The atom release counts the values the private column holds (not a public grid)."""

    def leaky(source, schema, candidates, *args, **kwargs):
        numeric = Layout.of(schema).numeric
        held = {
            c.name: np.unique(np.round(private_values(source, c, k), 6))
            for k, c in enumerate(numeric)
            if c.name in candidates
        }
        return release_atoms(source, schema, held, *args, **kwargs)

    mp.setattr(loop, "release_atoms", leaky)


def atom_sensitivity_one(mp: pytest.MonkeyPatch) -> None:
    """The atom release calibrated and charged at sensitivity 1 (a row is at one
    candidate at most, but replacing it moves two counts: ``sqrt(2)``)."""
    mp.setattr(atoms, "sigma_for", lambda rho: gaussian_sigma(1.0, rho))

    def event(sigma, label="marginal"):
        return GaussianEvent(1.0, sigma, label=label, discrete=True)

    mp.setattr(atoms, "marginal_event", event)


def exact_atoms(mp: pytest.MonkeyPatch) -> None:
    """The atoms found from the exact candidate counts, not the released ones."""
    exact: dict[int, np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        out = release(counts, clique, event, noise, query=query)
        exact[id(out.noisy)] = np.asarray(counts, dtype=np.float64)
        return out

    found = atoms.found_atoms
    mp.setattr(atoms, "release", spied)
    mp.setattr(atoms, "found_atoms", lambda v, noisy, *a: found(v, exact[id(noisy)], *a))


def private_parity(mp: pytest.MonkeyPatch) -> None:
    """The parity cliques cut at quantiles of the exact 1-way counts, not the model's."""
    pool = rounds._pool

    class Exact:
        def __init__(self, run) -> None:
            self.run = run

        def answer(self, clique):
            return self.run.counts(MarginalQuery(tuple(clique)))

    mp.setattr(rounds, "_pool", lambda run, label, model: pool(run, label, Exact(run)))


def parity_weight_uncharged(mp: pytest.MonkeyPatch) -> None:
    """The draw's sensitivity from weights no larger than a fine triple with the label
    holds (1.5): a parity weight above it scores its queries past the charge."""
    event = rules.AIMRule.event
    mp.setattr(rules.AIMRule, "event", lambda self, e, w: event(self, e, np.minimum(w, 1.5)))


def exact_moves(mp: pytest.MonkeyPatch) -> None:
    """The parity cuts' moves (``parity_reach``) kept where the exact count of the
    query's first cell is odd: a candidate list that one record changes."""
    pool = rounds._pool

    def leaky(run, label, model):
        made = pool(run, label, model)
        proposed = made._parity

        def moved(queries):
            found = proposed(queries)
            return [q for q in found if q in made.parity or int(run.counts(q).ravel()[0]) % 2]

        mp.setattr(made, "_parity", moved)
        return made

    mp.setattr(rounds, "_pool", leaky)


def _sources(mp: pytest.MonkeyPatch) -> dict[int, PrivateSource]:
    """Patches the engine's counting to remember the source each discretiser counted."""
    seen: dict[int, PrivateSource] = {}

    def spied(source, discretiser, *args, **kwargs):
        seen[id(discretiser)] = source
        return count_marginals(source, discretiser, *args, **kwargs)

    mp.setattr(loop, "count_marginals", spied)
    return seen


def column_bins(mp: pytest.MonkeyPatch) -> None:
    """The bins placed from the private column's fine counts, read afresh."""
    seen = _sources(mp)

    def edges(discretiser, released, n, mode="range", skip=(), known=None):
        if not released:
            return released_edges(discretiser, released, n, mode, skip, known)
        _, fine = count_marginals(seen[id(discretiser)], discretiser, [], list(released))
        leaked = {k: dataclasses.replace(m, noisy=fine[k]) for k, m in released.items()}
        return released_edges(discretiser, leaked, n, mode, skip, known)

    mp.setattr(loop, "released_edges", edges)


def _span_inward(mp: pytest.MonkeyPatch, seen: dict[int, PrivateSource]) -> None:
    """The decoding's span (tails.py) from the private column's min and max: the cells
    between them stand in for the released decoding weights."""

    def inward(
        discretiser, fitted, measurements, weights, fine=None, public=None, counts=None,
        rows=None, held_ends=None,
    ):  # fmt: skip
        source = seen[id(discretiser)]
        numeric = {c.name: (k, c) for k, c in enumerate(Layout.of(discretiser.schema).numeric)}
        bounded = {}
        for name, w in weights.items():
            cells = discretiser.fine[name]
            values = private_values(source, numeric[name][1], numeric[name][0])
            inside = (cells.hi >= values.min()) & (cells.lo <= values.max())
            bounded[name] = np.where(inside, 1.0, 0.0)[: np.asarray(w).size]
        return released_inward(
            discretiser, fitted, measurements, bounded, fine, public, counts, rows, held_ends
        )

    mp.setattr(model, "released_inward", inward)


def private_inward(mp: pytest.MonkeyPatch) -> None:
    """The decoding's span (tails.py) alone from the private min and max."""
    _span_inward(mp, _sources(mp))


def private_span(mp: pytest.MonkeyPatch) -> None:
    """The decoding's span (tails.py) and a moved column's support (bins.py) from the
    private column's min and max."""
    seen = _sources(mp)
    _span_inward(mp, seen)

    def support(discretiser, released, n, columns):
        source = seen[id(discretiser)]
        numeric = {c.name: (k, c) for k, c in enumerate(Layout.of(discretiser.schema).numeric)}
        out = {}
        for name in columns:
            values = private_values(source, numeric[name][1], numeric[name][0])
            out[name] = (float(values.min()), float(values.max()))
        return out

    mp.setattr(loop, "released_support", support)


def _leaked_fine(exact: dict[int, np.ndarray], fine: dict) -> dict:
    """The fine histograms with their exact counts in place of the released ones."""
    return {k: dataclasses.replace(m, noisy=exact[id(m.noisy)]) for k, m in fine.items()}


def exact_density(mp: pytest.MonkeyPatch) -> None:
    """The smoothed 1-ways of the last fit read from the exact fine counts."""
    exact = _exact_of(mp)

    def smoothed(discretiser, marginals, fine):
        return density_measurements(discretiser, marginals, _leaked_fine(exact, fine))

    mp.setattr(loop, "density_measurements", smoothed)


def exact_tilt(mp: pytest.MonkeyPatch) -> None:
    """A coarse pair's tilt within its groups read from the pair's exact counts."""
    exact = _exact_of(mp)

    def leaky(measurements, values, counts):
        seen = [dataclasses.replace(m, noisy=exact.get(id(m.noisy), m.noisy)) for m in measurements]
        return tilts(seen, values, counts)

    mp.setattr(tilt, "tilts", leaky)


def exact_label_shrink(mp: pytest.MonkeyPatch) -> None:
    """A pair of the label shrunk toward independence by the share of its exact
    residual that is not noise (the oracle's factor), not its released one."""
    exact = _exact_of(mp)

    def leaky(measurement, label, numeric):
        counts = exact.get(id(measurement.noisy))
        if counts is None or independence.label_shrunk(measurement, label, numeric) is measurement:
            return measurement
        noisy = np.asarray(measurement.noisy, dtype=np.float64)
        truth = np.asarray(counts, dtype=np.float64).reshape(noisy.shape)
        expected = np.outer(noisy.sum(axis=1), noisy.sum(axis=0)) / noisy.sum()
        signal = float(((truth - np.outer(truth.sum(1), truth.sum(0)) / truth.sum()) ** 2).sum())
        df = (noisy.shape[0] - 1) * (noisy.shape[1] - 1)
        keep = signal / (signal + df * measurement.sigma**2)
        return dataclasses.replace(measurement, noisy=expected + keep * (noisy - expected))

    mp.setattr(loop, "label_shrunk", leaky)


def exact_points(mp: pytest.MonkeyPatch) -> None:
    """The point bins' counts read from the exact fine counts."""
    exact = _exact_of(mp)

    def measured(discretiser, fine, n):
        return point_measurements(discretiser, _leaked_fine(exact, fine), n)

    mp.setattr(loop, "point_measurements", measured)


def exact_shown(mp: pytest.MonkeyPatch) -> None:
    """The known values a column's fine histogram shows read from its exact counts."""
    exact = _exact_of(mp)
    shown = tails.shown_values

    def leaky(cells, fine):
        if fine is None:
            return shown(cells, fine)
        noisy = exact.get(id(fine.noisy), fine.noisy)
        return shown(cells, dataclasses.replace(fine, noisy=noisy))

    mp.setattr(tails, "shown_values", leaky)


def exact_folded(mp: pytest.MonkeyPatch) -> None:
    """The bins the last refit holds empty read from the exact fine counts (the bins no
    private row lies in), not from the folds."""
    seen: dict[str, np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        if event.label.startswith(FINE):
            seen[clique[0]] = np.asarray(counts, dtype=np.float64)
        return release(counts, clique, event, noise, query=query)

    def leaky(discretiser, targets, model, n, sigma):
        empty = {}
        for name in targets:
            cells = discretiser.fine[name]
            counts = seen[name][: cells.values]
            held = np.bincount(cells.coarse[: cells.values], counts, minlength=discretiser.bins)
            empty[name] = held[: discretiser.bins] == 0
        return vacant.empty_measurements(discretiser, empty, n, sigma, vacant.FOLDED)

    mp.setattr(loop, "release", spied)
    mp.setattr(loop, "folded_measurements", leaky)


def exact_zeros(mp: pytest.MonkeyPatch) -> None:
    """The cells the last fit holds empty read from the exact counts of the released
    pairs, not from their releases."""
    seen: dict[tuple, np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        key = (tuple(clique), query.groups if query is not None else None)
        seen[key] = np.asarray(counts, dtype=np.float64)
        return release(counts, clique, event, noise, query=query)

    def leaky(discretiser, marginals, fitted, n):
        exact = [
            dataclasses.replace(m, noisy=seen.get((m.query.clique, m.query.groups), m.noisy))
            for m in marginals
        ]
        return zero_measurements(discretiser, exact, fitted, n)

    mp.setattr(loop, "release", spied)
    mp.setattr(loop, "zero_measurements", leaky)


def exact_beside(mp: pytest.MonkeyPatch) -> None:
    """The bins the folds hold beside a held bin read from the exact fine counts (the
    bins holding a row), not from the decoding weights."""
    exact = _exact_of(mp)
    folds = tails.released_inward

    def leaky(discretiser, fitted, measurements, weights, fine=None, *args, **kw):
        counts = {
            id(discretiser.fine[k]): exact[id(m.noisy)]
            for k, m in (fine or {}).items()
            if id(m.noisy) in exact
        }

        def beside(cells, w, held, bins, empty=()):
            return weighed_beside(cells, counts.get(id(cells), w), held, bins, empty)

        with pytest.MonkeyPatch.context() as inner:
            inner.setattr(tails, "weighed_beside", beside)
            return folds(discretiser, fitted, measurements, weights, fine, *args, **kw)

    mp.setattr(model, "released_inward", leaky)


def exact_reach(mp: pytest.MonkeyPatch) -> None:
    """The densities next to a column's end bins, which say whether its rows thin out
    or stop sharply, read from the exact counts of its bins (its fine histogram's)."""
    exact = _exact_of(mp)
    folds = tails.released_inward
    densities = reach.inner_densities

    def leaky(discretiser, fitted, measurements, weights, fine=None, *args, **kw):
        bins = discretiser.bins
        counts = {}
        for name, m in (fine or {}).items():
            if id(m.noisy) in exact:
                cells = discretiser.fine[name]
                per_bin = cells.bin_sums(exact[id(m.noisy)], bins)
                counts[discretiser.edges(name).tobytes()] = per_bin

        def inner(edges, count, sd, *rest):
            return densities(edges, counts.get(edges.tobytes(), count), sd, *rest)

        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(reach, "inner_densities", inner)
            return folds(discretiser, fitted, measurements, weights, fine, *args, **kw)

    mp.setattr(model, "released_inward", leaky)


def exact_vacant(mp: pytest.MonkeyPatch) -> None:
    """Vacant bins read from the exact fine counts: the bins no private row lies in."""
    seen: dict[str, np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        if event.label.startswith(FINE):
            seen[clique[0]] = np.asarray(counts, dtype=np.float64)
        return release(counts, clique, event, noise, query=query)

    def empty(discretiser, name):
        cells = discretiser.fine[name]
        counts = seen[name][: cells.values]
        held = np.bincount(cells.coarse[: cells.values], counts, minlength=discretiser.bins)
        return held[: discretiser.bins] == 0

    mp.setattr(loop, "release", spied)
    mp.setattr(vacant, "vacant_bins", empty)


def exact_rules(mp: pytest.MonkeyPatch) -> None:
    """The columns paired with the label chosen from the exact fine counts."""
    exact = _exact_of(mp)

    def columns(discretiser, fine, n, rho=0.0):
        return atom_columns(discretiser, _leaked_fine(exact, fine), n, rho)

    mp.setattr(loop, "atom_columns", columns)


def rule_sensitivity_one(mp: pytest.MonkeyPatch) -> None:
    """A pair with the label recorded at sensitivity 1 (a row moves two of its cells)."""

    def event(sigma, label="marginal"):
        if label == RULE:
            return GaussianEvent(1.0, sigma, label=label, discrete=True)
        return marginal_event(sigma, label)

    mp.setattr(loop, "marginal_event", event)


def exact_support(mp: pytest.MonkeyPatch) -> None:
    """A moved column's support read from its exact fine counts."""
    exact = _exact_of(mp)

    def support(discretiser, released, n, columns):
        return released_support(discretiser, _leaked_fine(exact, released), n, columns)

    mp.setattr(loop, "released_support", support)


def exact_faint(mp: pytest.MonkeyPatch) -> None:
    """Whether a column's present rows stand out read from its exact missing count."""
    exact = _exact_of(mp)
    counts = tails.released_counts

    def leaky(discretiser, name, measurements, fine=None, missing=False):
        count, sd = counts(discretiser, name, measurements, fine, missing)
        if missing and fine is not None:
            count = count.copy()
            count[-1] = exact[id(fine.noisy)][-1]
        return count, sd

    mp.setattr(tails, "released_counts", leaky)


def valid_rows(mp: pytest.MonkeyPatch) -> None:
    """``n`` counted after the invalid rows are dropped (private), not as read (public)."""
    mp.setattr(FrameSource, "n", property(lambda self: self.report.rows_out))


def private_zoom(mp: pytest.MonkeyPatch) -> None:
    """The zoom's span (:mod:`dpevolve.engine.zoom`) from the private column's min and
    max, not from its released fine histogram."""
    held: dict[str, PrivateSource] = {}

    def leaky(source, *args, **kwargs):
        held["source"] = source
        return zoom.release_zoom(source, *args, **kwargs)

    def support(discretiser, released, n, columns):
        numeric = {c.name: (k, c) for k, c in enumerate(Layout.of(discretiser.schema).numeric)}
        out = {}
        for name in columns:
            values = private_values(held["source"], numeric[name][1], numeric[name][0])
            out[name] = (float(values.min()), float(values.max()))
        return out

    mp.setattr(loop, "release_zoom", leaky)
    mp.setattr(zoom, "released_support", support)


def free_zoom(mp: pytest.MonkeyPatch) -> None:
    """The zoom release recorded at sensitivity 0 (free)."""

    def event(sigma, label="marginal"):
        return GaussianEvent(0.0, sigma, label=label, discrete=True)

    mp.setattr(zoom, "marginal_event", event)


def noise_source_half_scale(mp: pytest.MonkeyPatch) -> None:
    """The noise source draws at half the ``sigma`` it is asked for (every release at
    four times its ledger's ``rho``); the engine and its ledger are right."""
    gaussian = SeededNoise.gaussian

    def loud(self, values, sigma):
        return gaussian(self, values, sigma / 2)

    mp.setattr(SeededNoise, "gaussian", loud)


MUTANTS = {
    "selection-scale-half": scale_divided(2.0),
    "selection-scale-quarter": scale_divided(4.0),
    "selection-rho-eps2-16": rho_halved,
    "fine-histogram-free": free_fine,
    "fine-histogram-unrecorded": unrecorded(FINE),
    "bins-from-exact-counts": exact_bins,
    "declared-atoms-held-in-private": exact_declared,
    "decoding-from-exact-counts": exact_decoding,
    "atom-candidates-private": private_candidates,
    "atom-sensitivity-one": atom_sensitivity_one,
    "atoms-found-from-exact-counts": exact_atoms,
    "atom-release-unrecorded": unrecorded(ATOMS),
    "parity-cut-at-private-quantiles": private_parity,
    "parity-moves-from-exact-counts": exact_moves,
    "parity-weight-uncharged": parity_weight_uncharged,
    "bins-read-the-private-column": column_bins,
    "decode-span-from-private-range": private_span,
    "decode-span-tails-only": private_inward,
    "zoom-span-from-private-range": private_zoom,
    "zoom-release-free": free_zoom,
    "noise-source-half-scale": noise_source_half_scale,
    "atom-rules-from-exact-counts": exact_rules,
    "atom-rule-sensitivity-one": rule_sensitivity_one,
    "support-from-exact-counts": exact_support,
    "faint-from-exact-counts": exact_faint,
    "n-counts-valid-rows-only": valid_rows,
    "relation-groups-at-exact-counts": exact_groups,
    "label-tree-groups-at-exact-counts": exact_tree_groups,
    "tree-coarse-groups-at-exact-counts": exact_tree_groups,
    "relation-closing-draws-unrecorded": unrecorded_closing,
    "label-pair-groups-at-exact-counts": exact_label_groups,
    "density-from-exact-counts": exact_density,
    "vacant-bins-from-exact-counts": exact_vacant,
    "point-bins-from-exact-counts": exact_points,
    "shown-values-from-exact-counts": exact_shown,
    "beside-bins-from-exact-counts": exact_beside,
    "folded-bins-from-exact-counts": exact_folded,
    "reach-from-exact-counts": exact_reach,
    "zero-cells-from-exact-counts": exact_zeros,
    "pair-tilt-from-exact-counts": exact_tilt,
    "label-shrink-from-exact-counts": exact_label_shrink,
}
#: The parity run with its queries weighed above every other (they set the sensitivity).
HEAVY_PARITY = dataclasses.replace(XOR_SPEC, parity_weight=4.0)
SELECTION = {"selection-scale-half", "selection-scale-quarter", "selection-rho-eps2-16"}


def zoom_audit() -> list[str]:
    """The coupled runs of ``test_zoom_exact.py`` on its first pair (a row far out, in
    another cell of the first histogram, moved into the data)."""
    here, there, on_invalid = test_zoom_exact.PAIRS[0]
    tables = test_zoom_exact.tables(here, there)
    spec, budget = test_zoom_exact.SPEC, test_zoom_exact.BUDGET
    return engine_violations(test_zoom_exact.SCHEMA, *tables, on_invalid, spec, budget)


def atoms_audit(pair: int = 0) -> list[str]:
    """The coupled runs of ``test_atoms_exact.py`` on one of its pairs (the first: the
    atom's third row moved to the far end; the second: a row at the low end moved into
    the data, which moves the span a moved column's end bins decode within, read from
    the released fine histogram: ``bins.released_support``)."""
    return test_atoms_exact.CASE.violations(test_atoms_exact.PAIRS[pair])


#: The coupled audit that catches each mutant (default: ``test_engine_exact.py``'s
#: first pair).
CAUGHT_BY: dict[str, Callable[[], list[str]]] = {
    "atom-candidates-private": atoms_audit,
    "atom-sensitivity-one": atoms_audit,
    "atoms-found-from-exact-counts": atoms_audit,
    "atom-release-unrecorded": atoms_audit,
    "decode-span-from-private-range": functools.partial(atoms_audit, 1),
    "decode-span-tails-only": test_tails_exact.CASE.violations,
    "density-from-exact-counts": test_tails_exact.CASE.violations,
    "vacant-bins-from-exact-counts": test_tails_exact.CASE.violations,
    "folded-bins-from-exact-counts": test_tails_exact.CASE.violations,
    "reach-from-exact-counts": test_tails_exact.REACH_CASE.violations,
    "shown-values-from-exact-counts": test_tails_exact.SHOWN_CASE.violations,
    "beside-bins-from-exact-counts": test_tails_exact.BESIDE_CASE.violations,
    "point-bins-from-exact-counts": atoms_audit,
    "faint-from-exact-counts": test_faint_exact.CASE.violations,
    "parity-cut-at-private-quantiles": parity_audit,
    "parity-moves-from-exact-counts": moved_audit,
    "parity-weight-uncharged": functools.partial(moved_audit, spec=HEAVY_PARITY),
    "atom-rules-from-exact-counts": WIDE_CASES[0].violations,
    "atom-rule-sensitivity-one": WIDE_CASES[1].violations,
    "zero-cells-from-exact-counts": test_zeros_exact.CASE.violations,
    "declared-atoms-held-in-private": test_declared_atoms_exact.CASE.violations,
    "n-counts-valid-rows-only": functools.partial(engine_audit, PAIRS[3:4]),
    "relation-groups-at-exact-counts": cut_audit,
    "label-tree-groups-at-exact-counts": tree_audit,
    "tree-coarse-groups-at-exact-counts": coarse_audit,
    "relation-closing-draws-unrecorded": triangle_audit,
    "label-pair-groups-at-exact-counts": label_audit,
    "pair-tilt-from-exact-counts": cut_audit,
    "zoom-span-from-private-range": zoom_audit,
    "zoom-release-free": zoom_audit,
    "noise-source-half-scale": main_pair_violations,
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_is_caught(name, monkeypatch) -> None:
    if os.environ.get(MUTANT_VARIABLE):  # one patched in for the session: not stacked
        pytest.skip("benchmarks/privacy_mutants.py runs a mutant for the whole session")
    MUTANTS[name](monkeypatch)
    assert CAUGHT_BY.get(name, lambda: engine_audit(PAIRS[:1]))(), name
    if name in SELECTION:
        assert selection_audit("fine").violations, name
    if name == "decoding-from-exact-counts":
        assert model_file_violations(), name
