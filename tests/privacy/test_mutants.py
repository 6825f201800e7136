"""The privacy tests can fail: each engine mutant below, patched in, is caught.

A mutant is a plausible privacy bug, applied with ``monkeypatch`` (the source is left
alone). Each must be reported by the exact audits this folder runs on the unmutated
engine (:mod:`tests.privacy.exact`):

========================================  ==========================================
mutant                                    caught by
========================================  ==========================================
selection drawn at scale / 2, ledger      the selection's exact enumeration, and the
unchanged (and at scale / 4)              coupled run's draw checks
selection charged ``epsilon^2 / 16``      both (bounded range needs ``epsilon^2 / 8``)
fine histogram recorded as free           the coupled run's release checks
(sensitivity 0), or not recorded at all
bins placed from the exact fine counts    the coupled run (D' ends in other bins)
decoding weights from the exact counts    the coupled run and the model file
========================================  ==========================================

``benchmarks/privacy_mutants.py`` applies the same mutants to a copy of the source and
runs ``pytest tests/privacy`` on each (results in ``benchmarks/results``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from dpevolve.engine import loop, rounds, select
from dpevolve.engine.bins import released_edges
from dpevolve.engine.measure import FINE, marginal_event, release
from dpevolve.engine.smoothing import decode_weights
from dpevolve.privacy import ExponentialEvent, GaussianEvent, Ledger

from .exact import selection_audit
from .test_engine_exact import PAIRS, engine_audit
from .test_model_file import model_file_violations


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


def unrecorded_fine(mp: pytest.MonkeyPatch) -> None:
    record = Ledger.record

    def quiet(self, event, round=None, **info):
        if not event.label.startswith(FINE):
            record(self, event, round, **info)

    mp.setattr(Ledger, "record", quiet)


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


def exact_decoding(mp: pytest.MonkeyPatch) -> None:
    exact = _exact_of(mp)

    def weights(noisy, sigma, cells, tails=False):
        return decode_weights(exact[id(noisy)], sigma, cells, tails)

    mp.setattr(loop, "decode_weights", weights)


MUTANTS = {
    "selection-scale-half": scale_divided(2.0),
    "selection-scale-quarter": scale_divided(4.0),
    "selection-rho-eps2-16": rho_halved,
    "fine-histogram-free": free_fine,
    "fine-histogram-unrecorded": unrecorded_fine,
    "bins-from-exact-counts": exact_bins,
    "decoding-from-exact-counts": exact_decoding,
}
SELECTION = {"selection-scale-half", "selection-scale-quarter", "selection-rho-eps2-16"}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_is_caught(name, monkeypatch) -> None:
    MUTANTS[name](monkeypatch)
    assert engine_audit(PAIRS[:1]), name  # the first pair alone catches every mutant
    if name in SELECTION:
        assert selection_audit("fine").violations, name
    if name == "decoding-from-exact-counts":
        assert model_file_violations(), name
