"""A label's released pair denoised toward independence: what a classifier trained on
the output would read as a relation of the label is at least the noise's size.

Why (issue 25, TSTR on small tables). A model trained on the output follows every
relation of the label the output holds, and noise in a released pair of the label
looks like one. On black_politicians (2,237 rows) the letter's treatment alone predicts
a response at 0.659 on the test rows, and the output held P(responded | treatment)
within 0.01 of the data's; yet a model trained on it scored 0.54-0.57, below the
majority's 0.551 on one seed: each of the label's 13 other pairs, released at noise 74
on cells of about 220 rows, held relations of the noise's size, and the model followed
them (docs/engine.md, The label's pairs and their noise).

What. A released 2-way table ``y`` of ``r x c`` cells holding the label (every cell, a
missing one included) is compared with the independence table of its own margins,
``e_ij = y_i. y_.j / y..``. The estimator sees

    e + k (y - e),   k = max(0, 1 - (r - 1)(c - 1) sigma^2 / RSS),

``RSS`` the residual's sum of squares: ``k`` is the share of the residual's energy that
is not noise, the noise read as a table of even margins holds it, ``(r - 1)(c - 1)``
directions of variance ``sigma^2`` (the empirical Wiener factor; the positive-part
James-Stein factor of Efron and Morris, JASA 1973, with ``df`` for ``df - 2``, so that a
2 x 2 table has one too). With no relation ``RSS`` is about that and the pair becomes
independent; a relation well out of its noise (a rule at an atom, a treatment's effect)
keeps ``k`` near 1. A table of skewed margins holds more noise than that (to first
order ``(r - 2 + r |a|^2)(c - 2 + c |b|^2) sigma^2``, ``a, b`` the margins' shares:
three times as much for a 5% flag against a 10% outcome), so it keeps more of its
residual: a rare category's relation with the label is a large effect on its few rows
that the counts' noise hides, and shrinking such tables by their full noise cost TSTR
(docs/engine.md). The margins are the release's own: the 1-ways the estimator fits are
untouched. A number paired at its bins (an atom's rule, a fine tree pair) is left as
released: its cells are the bins, where a rule at an atom or an empty end bin holds
cells the shrinkage would fill.

Privacy. Post-processing of one release: a function of its noisy counts and its
public ``sigma``; the release itself stays in the measurement list and the ledger as
made.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import numpy as np

from dpevolve.measurements import MarginalQuery, Measurement


def independence_shrink(noisy: np.ndarray, sigma: float) -> np.ndarray:
    """The 2-way table ``noisy`` shrunk toward the independence table of its margins
    by the factor ``k`` of the module docstring; as is where ``k`` is undefined (no
    positive total, no residual, no finite positive ``sigma``).

    Parameters
    ----------
    noisy
        A released 2-way table of noisy counts.
    sigma
        Its noise scale (public).

    Returns
    -------
    np.ndarray
        A new table of ``noisy``'s shape and margins.
    """
    table = np.array(noisy, dtype=np.float64)
    total = float(table.sum())
    if total <= 0 or not (np.isfinite(sigma) and sigma > 0):
        return table
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / total
    residual = table - expected
    rss = float((residual**2).sum())
    if rss <= 0:
        return table
    rows, cols = table.shape
    keep = max(0.0, 1.0 - (rows - 1) * (cols - 1) * sigma**2 / rss)
    return expected + keep * residual


def label_shrunk(
    measurement: Measurement[MarginalQuery], label: str | None, numeric: Collection[str]
) -> Measurement:
    """``measurement`` as the estimator should see it: a released table of ``label``
    and one other column shrunk by :func:`independence_shrink`, any other as is: a
    larger clique, an answer that is not a 2-way table (a parity's), and a pair whose
    other column is one of the ``numeric`` columns at its bins (its cells the bins,
    where a rule at an atom or an empty end bin holds cells the shrinkage would fill)."""
    query = measurement.query
    clique = query.clique
    if label is None or len(clique) != 2 or label not in clique or measurement.noisy.ndim != 2:
        return measurement
    other = 1 - clique.index(label)
    grouped = query.groups is not None and query.groups[other] is not None
    if clique[other] in numeric and not grouped:
        return measurement
    smooth = independence_shrink(measurement.noisy, measurement.sigma)
    smooth.setflags(write=False)
    return replace(measurement, noisy=smooth)


__all__ = ["independence_shrink", "label_shrunk"]
