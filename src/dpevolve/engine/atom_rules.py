"""The label's 2-way marginals with the columns that hold atoms, measured before the rounds.

An atom kept as a bin of its own (:mod:`~dpevolve.engine.atoms`,
:func:`~dpevolve.engine.bins.released_edges`) can carry a rule such as "any expense is
yes exactly when spend > 0" only if its column's 2-way marginal with the label is
measured. The tree and the rounds pick pairs by how far the model is from the data, so
a column whose atoms show in the released fine histogram is often never paired with
the label (on the suite's small tables, four of the eleven whose rules at atoms were
lost). This release measures each such pair once, cell by cell, before the rounds.

**Columns** (:func:`atom_columns`, post-processing of released values): the numeric
columns other than the label whose released fine histogram, thresholded at
:data:`~dpevolve.engine.mass.THRESHOLD` noise scales, holds a single-value cell of at
least :data:`~dpevolve.data.atoms.ATOM_SHARE` of the ``n`` rows, largest atom first,
at most :data:`MOST_COLUMNS`, and of those the most ``k`` whose largest atoms all hold
:data:`RESOLVE` noise scales of a pair's release at ``rho / k``.

**Release** (:func:`release_atom_rules`). :data:`RULE_SHARE` of the adaptive rounds'
``rho`` in equal shares, one discrete Gaussian per pair at
``sigma = sqrt(2) / sqrt(2 rho_pair)`` (a 2-way marginal moves by at most ``sqrt(2)``
in L2 under replace-one; zCDP ``rho_pair = 1 / sigma^2``; docs/math.md, the Gaussian
mechanism). Each is charged to the run's :class:`~dpevolve.engine.plan.Spend`,
recorded in the ledger (``atom_rule``) and appended to the measurement list; the
rounds then spend what is left (:func:`~dpevolve.engine.rounds.adaptive_rounds`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.mass import standing
from dpevolve.engine.measure import sigma_for
from dpevolve.measurements import MarginalQuery, Measurement

#: Share of the adaptive rounds' ``rho`` (:attr:`~dpevolve.engine.plan.Plan.rounds`)
#: for the label's pairs with the atom columns. At a tenth the pairs were measured more
#: coarsely than the model inferred them from other releases on the suite's happiness
#: and bank (worst rule at an atom 0.069 -> 0.106, 0.045 -> 0.082, seeded noise); at a
#: quarter 0.085 and 0.050 (benchmarks/results/suite_atoms.md).
RULE_SHARE = 0.25

#: At most this many pairs (those with the largest atoms): on a wide table the share
#: is not spread so thin that no pair is measured well.
MOST_COLUMNS = 8

#: A column is paired only while its largest atom holds at least this many noise scales
#: of its pair's release (a two-class rule there then comes back within about 0.05): a
#: pair measured more coarsely than the model infers it from other releases pulls the
#: model off (on the suite's alcohol, whose atoms are small: TSTR 0.962 -> 0.863 on one
#: seed with every atom column paired; 0.967 with this rule, seeded noise).
RESOLVE = 16.0

RULE = "atom_rule"
"""Ledger label of an atom column's pair with the label."""


class RuleRun(Protocol):
    """What a run lends the release: its bins and a charged, recorded measurement."""

    discretiser: Discretiser

    def measure(self, query: MarginalQuery, sigma: float, round_: int, label: str) -> None: ...


def atom_columns(
    discretiser: Discretiser, fine: Mapping[str, Measurement], n: int, rho: float = 0.0
) -> list[str]:
    """The numeric columns (the label aside) whose released fine histogram holds an
    atom: a single-value cell whose count, above :data:`~dpevolve.engine.mass.THRESHOLD`
    noise scales, is at least :data:`~dpevolve.data.atoms.ATOM_SHARE` of ``n``
    (a run of heavy values, 1 to 4 hours of television, counts too); largest atom
    first, at most :data:`MOST_COLUMNS`; given the pairs' ``rho``, the most ``k`` of
    them whose largest atoms hold :data:`RESOLVE` noise scales at ``rho / k``.
    Post-processing of the fine histograms (``n`` is public)."""
    label = discretiser.schema.label
    heaviest: dict[str, float] = {}
    for column in discretiser.numeric:
        measured = fine.get(column.name)
        if column.name == label or measured is None:
            continue
        cells = discretiser.fine[column.name]
        counts = np.asarray(measured.noisy, dtype=np.float64).ravel()
        weights = standing(counts, float(measured.sigma))
        heavy = float(weights[: cells.atoms].max(initial=0.0))
        if heavy >= ATOM_SHARE * n:
            heaviest[column.name] = heavy
    ranked = sorted(heaviest, key=lambda name: -heaviest[name])[:MOST_COLUMNS]
    if rho <= 0:
        return ranked
    # the most columns whose largest atoms the pair's noise resolves
    for k in range(len(ranked), 0, -1):
        if heaviest[ranked[k - 1]] >= RESOLVE * sigma_for(rho / k):
            return ranked[:k]
    return []


def release_atom_rules(run: RuleRun, columns: list[str], rho: float) -> list[str]:
    """Measure each of ``columns`` with the label (``rho`` in equal shares; charged,
    recorded and listed by ``run.measure``); the columns measured."""
    label = run.discretiser.schema.label
    if label is None or not columns or rho <= 0:
        return []
    domain = run.discretiser.domain
    sigma = sigma_for(rho / len(columns))
    for name in columns:
        run.measure(MarginalQuery(domain.canonical((name, label))), sigma, 0, RULE)
    return list(columns)


__all__ = [
    "MOST_COLUMNS",
    "RESOLVE",
    "RULE",
    "RULE_SHARE",
    "atom_columns",
    "release_atom_rules",
]
