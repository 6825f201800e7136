"""Atoms as cells of the model: a value holding a large share of the rows gets a bin of
its own, found from released fine histograms (post-processing) or a public table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.bins import ATOM_BINS, atom_bins, released_atoms, released_edges
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.engine.public import public_edges
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("spend", 0.0, 100.0),
        NumericColumn("wealth", -50.0, 150.0),
        NumericColumn("years", 0, 60, integer=True),
        CategoricalColumn("any", ("no", "yes")),
    ),
    label="any",
)
SPEC = {"bins": 10, "fine_cells": 96, "rounds": 6, "round_iters": 30, "final_iters": 60}


def _table(n: int, seed: int) -> pd.DataFrame:
    """spend: 40% exactly 0, else spread over (0, 30]; any = yes exactly when spend > 0;
    wealth: 20% exactly 0; years: 30% exactly 40."""
    rng = np.random.default_rng(seed)
    spend = np.where(rng.random(n) < 0.4, 0.0, rng.uniform(0.05, 30.0, n))
    wealth = np.where(rng.random(n) < 0.2, 0.0, rng.normal(20.0, 15.0, n).clip(-50, 150))
    years = np.where(rng.random(n) < 0.3, 40, rng.integers(20, 60, n))
    return pd.DataFrame(
        {"spend": spend, "wealth": wealth, "years": years, "any": np.where(spend > 0, "yes", "no")}
    )


def _released(disc: Discretiser, frame: pd.DataFrame, sigma: float, seed: int = 0):
    names = [c.name for c in disc.numeric]
    _, exact = count_marginals(FrameSource(frame, SCHEMA), disc, [], names)
    noise = SeededNoise(seed)
    return {a: release(exact[a], (a,), marginal_event(sigma, FINE + a), noise) for a in names}


def _own_bin(disc: Discretiser, name: str, value: float, step: float) -> bool:
    """Whether ``value`` and its neighbours ``step`` away (inside the range) fall in
    different bins."""
    edges = disc.edges(name)
    near = [v for v in (value - step, value + step) if edges[0] <= v <= edges[-1]]
    codes = np.searchsorted(edges[1:-1], [value, *near], side="right")
    return bool(np.all(codes[1:] != codes[0]))


def test_released_atoms_get_bins_of_their_own_nested_in_the_fine_partition() -> None:
    base = Discretiser(SCHEMA, 10, 96)
    frame = _table(5000, 1)
    edges = released_edges(base, _released(base, frame, sigma=10.0), len(frame))
    assert set(edges) == {"spend", "wealth", "years"}
    placed = Discretiser(SCHEMA, 10, 96, edges, nested=edges)  # nesting is checked here
    assert _own_bin(placed, "spend", 0.0, 0.01)
    assert _own_bin(placed, "wealth", 0.0, 0.01)
    assert _own_bin(placed, "years", 40, 1)
    assert 0.0 in placed.fine["wealth"].boundaries  # an inner 0 is a fine boundary


def test_no_atom_where_the_release_shows_none() -> None:
    """Values spread over the range, noise alone in the atom cells: no atom bin."""
    base = Discretiser(SCHEMA, 10, 96)
    frame = _table(5000, 2).assign(spend=lambda f: np.random.default_rng(3).uniform(0, 100, 5000))
    released = _released(base, frame, sigma=10.0)
    cells = base.fine["spend"]
    weights = np.asarray(released["spend"].noisy, dtype=float)
    assert released_atoms(cells, weights, len(frame)) == []


@settings(max_examples=30, deadline=None)
@given(share=st.floats(0.0, 0.2), n=st.integers(100, 10000))
def test_an_atom_is_a_value_above_the_share(share: float, n: int) -> None:
    cells = Discretiser(SCHEMA, 10, 96).fine["spend"]
    weights = np.zeros(cells.size)
    weights[0] = share * n  # the atom at lo
    atoms = released_atoms(cells, weights, n)
    assert [v for v, _ in atoms] == ([0.0] if share * n >= ATOM_SHARE * n and share > 0 else [])
    assert all(abs(s - share) < 1e-12 for _, s in atoms)


@settings(max_examples=200, deadline=None)
@given(
    bins=st.integers(2, 64),
    shares=st.lists(st.floats(ATOM_SHARE, 0.9), max_size=20).filter(lambda s: sum(s) <= 1.0),
)
def test_atom_bins_leave_the_rest_its_share_and_every_atom_two_edges(
    bins: int, shares: list[float]
) -> None:
    most = atom_bins(bins, shares)
    base = max(1, int(ATOM_BINS * bins))
    assert most >= base
    if most > base:  # raised: the inner atoms' edges fit, the rest keeps its share of bins
        assert 2 * most + 1 <= bins
        assert bins - most >= (1.0 - sum(shares)) * bins - 1e-9


def test_public_atoms_get_bins_of_their_own() -> None:
    edges = public_edges(_table(2000, 4), SCHEMA, 10)
    disc = Discretiser(SCHEMA, 10, 96, edges)
    assert _own_bin(disc, "spend", 0.0, 0.01) and _own_bin(disc, "years", 40, 1)


def test_a_rule_at_an_atom_survives_the_engine() -> None:
    """any = yes exactly when spend > 0: with 0 in a bin of its own the 2-way marginal
    carries the rule (seeded noise; statistical)."""
    frame = _table(6000, 5)
    result = fit_engine(
        FrameSource(frame, SCHEMA),
        SCHEMA,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(**SPEC),
        noise=SeededNoise(1),
        rng=np.random.default_rng(0),
    )
    assert "spend" in result.ledger.metadata["engine"]["released_bins"]
    synth = result.sample(6000, np.random.default_rng(1))
    broken = ((synth["spend"] == 0) == (synth["any"] == "yes")).mean()
    assert broken < 0.05
