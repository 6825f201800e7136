"""The parity cliques' cuts (:func:`~dpevolve.engine.select.parity_candidates`) in
whole coupled runs: public, cut at quantiles of the model's released 1-ways.

Three numeric columns and the label give one all-numeric label clique of four, which
the rounds propose cut at each column's released quantiles. Runs on neighbouring tables
are coupled by the same noisy outputs (:func:`tests.privacy.exact.engine_violations`),
so every candidate list the rounds score, parity cuts included, must be the same on
both sides (:func:`tests.privacy.exact.read_queries`). The tables are built so that
the moving record moves an exact quantile past a bin edge: the first column's bins
hold 10, 4, 3, 3 rows with the record in the first, 9, 4, 3, 4 with it in the last, and
the bin edge nearest its upper quartile moves from the second to the third (a cut the
exact counts would add).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

from .exact import engine_violations, read_queries

SCHEMA = Schema(
    (
        NumericColumn("a", 0, 7, integer=True),
        NumericColumn("b", 0, 7, integer=True),
        NumericColumn("c", 0, 7, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
#: The rounds alone after the 1-ways (no tree, relations or label pairs): their first
#: pick is the parity clique.
SPEC = EngineSpec(
    bins=4, fine_cells=8, fine_share=0.0, rounds=2, pe_share=0.0, tree_share=0.0,
    relation_share=0.0, label_share=0.0, coarse_order=4, coarse_all=10,
)  # fmt: skip
BUDGET = Budget(rho=80.0)


def base() -> list[tuple[int, int, int, str]]:
    """Nineteen rows; ``a``'s bins (values 0-1, 2-3, 4-5, 6-7) hold 9, 4, 3, 3."""
    a = [0, 1] * 4 + [0] + [2, 3] * 2 + [4, 5, 4] + [6, 7, 6]
    return [(x, (3 * k) % 8, (5 * k + 2) % 8, str((x + k) % 2)) for k, x in enumerate(a)]


#: (record of D, record of D', on_invalid of D'): the first bin's record moved to the
#: last (the cut moves), and dropped as invalid.
PAIRS = [
    ((0, 0, 0, "1"), (7, 7, 7, "0"), "error"),
    ((0, 0, 0, "1"), (9, 7, 7, "0"), "drop"),
]


def tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = list(SCHEMA.names)
    rows = base()
    return pd.DataFrame([*rows, here], columns=cols), pd.DataFrame([*rows, there], columns=cols)


def parity_audit(pairs=PAIRS) -> list[str]:
    """:func:`~tests.privacy.exact.engine_violations` of every pair, each named."""
    out = []
    for here, there, on_invalid in pairs:
        found = engine_violations(SCHEMA, *tables(here, there), on_invalid, SPEC, BUDGET)
        out += [f"{here} -> {there} ({on_invalid}): {v}" for v in found]
    return out


@pytest.mark.parametrize("pair", PAIRS)
def test_the_parity_cuts_are_post_processing(pair) -> None:
    assert parity_audit([pair]) == []


#: A parity of three signs cut at 4, every sign combination twice (the round's first
#: pick is the parity clique, so the later rounds propose its cuts moved).
XOR_ROWS = [
    (a, b, c, str(int(a >= 4) ^ int(b >= 4) ^ int(c >= 4)))
    for a in (1, 3, 4, 6)
    for b in (1, 3, 4, 6)
    for c in (1, 3, 4, 6)
]
XOR_SPEC = dataclasses.replace(SPEC, bins=8, rounds=3)
#: A record of the first sign cell moved to the last, and dropped as invalid.
XOR_PAIRS = [
    ((1, 1, 1, "0"), (6, 6, 6, "1"), "error"),
    ((1, 1, 1, "0"), (9, 6, 6, "1"), "drop"),
]


def xor_tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = list(SCHEMA.names)
    return (
        pd.DataFrame([*XOR_ROWS, here], columns=cols),
        pd.DataFrame([*XOR_ROWS, there], columns=cols),
    )


def moved_audit(pairs=XOR_PAIRS, spec: EngineSpec = XOR_SPEC) -> list[str]:
    """Coupled runs on the parity table (:func:`engine_violations`), each pair named."""
    out = []
    for here, there, on_invalid in pairs:
        tables = xor_tables(here, there)
        found = engine_violations(SCHEMA, *tables, on_invalid, spec, BUDGET)
        out += [f"{here} -> {there} ({on_invalid}): {v}" for v in found]
    return out


@pytest.mark.parametrize("parity_weight", [XOR_SPEC.parity_weight, 4.0])
@pytest.mark.parametrize("pair", XOR_PAIRS)
def test_the_moved_cuts_are_post_processing(pair, parity_weight) -> None:
    """The measured parity query's moved cuts (``parity_reach``) are candidates of the
    later rounds, the same on both sides; every draw within its charge whether the
    parity queries' weight is the default or the largest (it then sets the draw's
    sensitivity)."""
    spec = dataclasses.replace(XOR_SPEC, parity_weight=parity_weight)
    assert moved_audit([pair], spec) == []


def test_the_parity_table_proposes_moved_cuts() -> None:
    """The audit above sees moved cuts: after the first round the candidates hold a
    parity query cut where none of the first round's was."""
    here, _ = xor_tables(*XOR_PAIRS[0][:2])
    with read_queries() as seen:
        fit_engine(
            FrameSource(SCHEMA.validate(here)[0], SCHEMA), SCHEMA, BUDGET, XOR_SPEC,
            noise=SeededNoise(0), rng=np.random.default_rng(0),
        )  # fmt: skip
    parity = [[q for q in read if q.coarse and len(q.clique) == 4] for read in seen]
    first = next(set(p) for p in parity if p)
    assert any(set(p) - first for p in parity)
