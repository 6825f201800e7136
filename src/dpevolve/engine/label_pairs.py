"""The label pairs: each column the earlier phases left apart from the label, measured
with it (docs/engine.md, The label pairs).

Why (issue 25, wide tables). A label that depends a little on each of many columns has
weak pairs: the spanning tree's draws and the adaptive rounds favour the strong ones,
and on a table of 40 columns whose label is a logistic of 8 (``benchmarks/
wide_other.py``) the label shared a clique with 5-7 of them after the rounds. A model
that holds no clique of the label with a column draws the two independently given the
rest, and a classifier trained on its rows loses that column's part: with the same
cliques measured exactly the model scored 0.691, and 0.701 with the two missing pairs
added (seed 0; the real table's model 0.716).

What. After the spanning-tree phase, every column that shares no measured clique with
the label is measured with it, no draw needed: numerics in ``groups`` groups of about
equal mass (:func:`~dpevolve.engine.relations.quantile_grouping` of the model's answer
to the released 1-ways), categoricals cell by cell; the pairs the model cannot hold
(``max_model_mb``) are left out. On a table where the label tree runs
(:mod:`~dpevolve.engine.tree`) every column already shares one, and nothing is
measured.

Privacy. Which columns are measured is a function of the earlier phases' releases (the
cliques of the recorded measurements) and the schema; the groups are cut at the model's
answer to released values; the noise scale depends on public counts and on what the
recorded events have spent. Each pair is a :class:`~dpevolve.measurements.MarginalQuery`
released with the discrete Gaussian at sensitivity ``sqrt(2)`` whatever its grouping,
charged and recorded like any marginal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dpevolve.engine.measure import sigma_for
from dpevolve.engine.plan import Schedule
from dpevolve.engine.relations import quantile_grouping
from dpevolve.engine.rounds import RoundRun, grouping_facts
from dpevolve.measurements import Clique, Domain, Estimator, Grouping, MarginalQuery


def apart(names: Sequence[str], label: str, cliques: Iterable[Clique]) -> list[str]:
    """The columns of ``names`` (the label aside) that share none of ``cliques`` with
    ``label``, in schema order."""
    joined = {a for c in cliques if label in c and len(c) > 1 for a in c}
    return [a for a in names if a != label and a not in joined]


def label_queries(
    domain: Domain,
    label: str,
    columns: Sequence[str],
    masses: Mapping[str, np.ndarray],
    bins: int,
    groups: int,
) -> list[MarginalQuery]:
    """Each of ``columns`` with ``label``: a numeric column (one of ``masses``: its
    released mass) in ``groups`` quantile groups of its ``bins`` bins, a categorical
    one cell by cell."""
    out = []
    for column in columns:
        pair = domain.canonical([column, label])
        ways: list[Grouping | None] = [
            quantile_grouping(masses[a], bins, groups) if a in masses else None for a in pair
        ]
        grouped = tuple(ways) if any(g is not None for g in ways) else None
        out.append(MarginalQuery(pair, grouped))
    return out


def pair_sigma(sigma: float, pairs: int, left: float, share: float) -> float:
    """The noise scale of each of ``pairs`` label pairs: ``sigma`` (a tree pair's),
    raised where the pairs would take more than ``share`` of ``left`` (the rho the
    rounds have left)."""
    if pairs == 0:
        return sigma
    if share * left <= 0.0:
        return math.inf
    return max(sigma, sigma_for(share * left / pairs))


def label_pairs(
    run: RoundRun, schedule: Schedule, model: Estimator, start: int
) -> tuple[Estimator, list[dict[str, Any]]]:
    """The phase (module docstring): the pairs released as rounds ``start + 1, ...``,
    the model refitted once, and their history entries."""
    label = run.discretiser.schema.label
    if label is None or run.spec.label_share <= 0:
        return model, []
    columns = apart(run.discretiser.schema.names, label, run.measurements.cliques())
    masses = {c.name: np.asarray(model.answer((c.name,))).ravel() for c in run.discretiser.numeric}
    domain, bins = run.discretiser.domain, run.discretiser.bins
    queries = label_queries(domain, label, columns, masses, bins, run.spec.label_groups)
    left = run.spend.left(schedule.rounds_limit)
    sigma = pair_sigma(
        (schedule.tree or schedule.first_round)[0], len(queries), left, run.spec.label_share
    )
    if not math.isfinite(sigma):
        return model, []
    held: list[Clique] = []
    for query in queries:
        if run.fits([*held, query.clique]):
            held.append(query.clique)
    kept = [q for q in queries if q.clique in held]
    run.prefetch(kept)  # one pass for all of them
    history = []
    for round_, query in enumerate(kept, start + 1):
        run.measure(query, sigma, round_, "marginal")
        history.append(
            {"round": round_, "clique": query.clique, "groups": None, **grouping_facts(query),
             "sigma": sigma, "moved": None, "model_mb": None, "stage": "label"}
        )  # fmt: skip
    if not kept:
        return model, []
    run.say(f"label: {len(kept)} pairs, sigma {sigma:.3g}")
    return model.fit(run.fitted()), history


__all__ = ["apart", "label_pairs", "label_queries", "pair_sigma"]
