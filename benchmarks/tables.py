"""Generated tables for the fidelity benchmark: wide tables with a known tree structure,
and an XOR whose signs change off the declared range's midpoint.

:func:`make_wide` draws a table of ``d`` feature columns and a binary ``label`` from a
:class:`Structure`, itself drawn from ``structure_seed`` alone, so train and test rows
(different ``seed``) share one distribution:

* **Columns.** ``c00 .. c{d-1}``; every third column (``j % 3 == 2``) is numeric on the
  declared range ``[-10, 10]``, the others categorical with 2 to 6 values ``v0, v1, ...``.
* **Tree.** Column 0 is the root; column ``j >= 1`` has one parent among the three
  columns before it (``parent[j] = j - 1`` for every ``j`` when ``chain=True``). A column
  depends on its parent's *state* only: a categorical parent's value, or a numeric
  parent's quarter of the declared range (``[-10, -5), [-5, 0), [0, 5), [5, 10]``). So
  every column is independent of its non-descendants given its parent's state.
* **Conditionals.** A categorical column's values given each parent state follow a
  Dirichlet(0.5) draw (a strong, uneven dependence). A numeric column is exactly 0 with
  probability 0.2 (a point mass, as 47% of Adult's hours are exactly 40), else
  ``Normal(mu[state], 2.5)`` clipped to the range, with ``mu[state]`` uniform on
  ``[-6, 6]``.
* **Label.** ``label`` in ``(0, 1)`` depends on four columns (:attr:`Structure.label_columns`,
  spread over the table) only: ``P(label = 1) = sigmoid(score - intercept)`` with a
  per-state weight for each of the four columns (Normal(0, 1.2)) and an interaction of
  the first two (``+-1.2`` by the parity of their states), ``intercept`` the 60% quantile
  of the score on a 5,000-row pilot draw, so about 40% of rows have ``label = 1``.

:func:`make_xor_offset` is the XOR stress test (three features uniform on ``[-10, 10]``)
with the parity taken of the features above ``cut`` (2.5), not above the declared
range's midpoint (0): a 2-bin cut of the declared range then carries nothing of it.

Everything here is seeded and public (generated, not read from any person's record).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.datasets import xor_schema

LO, HI = -10.0, 10.0
NUMERIC_STATES = 4  # a numeric parent's state: its quarter of the declared range
POINT_MASS = 0.2  # share of a numeric column's cells that are exactly 0
LABEL = "label"
LABEL_POSITIVE = 0.4  # share of label = 1, set by the intercept on a pilot draw
XOR_CUT = 2.5


@dataclass(frozen=True)
class Structure:
    """The public structure of a :func:`make_wide` table (all drawn from one seed).

    Attributes
    ----------
    cards
        Per column: number of categories, or 0 for a numeric column.
    parents
        Per column: index of its parent column, -1 for the root.
    cpts
        Per column: ``(parent states, own categories)`` conditional probabilities of a
        categorical column, or ``(parent states,)`` means of a numeric one.
    label_columns
        The four columns the label depends on.
    label_weights
        Per label column: one weight per state of that column.
    interaction, intercept
        Weight of the parity of the first two label columns' states; the score's shift.
    """

    cards: tuple[int, ...]
    parents: tuple[int, ...]
    cpts: tuple[np.ndarray, ...]
    label_columns: tuple[int, ...]
    label_weights: tuple[np.ndarray, ...]
    interaction: float
    intercept: float

    @property
    def names(self) -> list[str]:
        width = max(2, len(str(len(self.cards) - 1)))
        return [f"c{j:0{width}d}" for j in range(len(self.cards))]

    def schema(self) -> Schema:
        """Declared domains: numerics on ``[-10, 10]``, categories ``v0 ..``, the label."""
        columns: list[NumericColumn | CategoricalColumn] = [
            NumericColumn(name, LO, HI)
            if card == 0
            else CategoricalColumn(name, tuple(f"v{i}" for i in range(card)))
            for name, card in zip(self.names, self.cards, strict=True)
        ]
        columns.append(CategoricalColumn(LABEL, (0, 1)))
        return Schema(tuple(columns), label=LABEL)


def states(values: np.ndarray, card: int) -> np.ndarray:
    """A column's state: its category code, or a numeric value's quarter of the range."""
    if card > 0:
        return values.astype(np.int64)
    width = (HI - LO) / NUMERIC_STATES
    return np.clip(((values - LO) // width).astype(np.int64), 0, NUMERIC_STATES - 1)


def _state_count(card: int) -> int:
    return card if card > 0 else NUMERIC_STATES


def make_structure(d: int, structure_seed: int = 0, chain: bool = False) -> Structure:
    """Draw the tree, the conditionals and the label function of a ``d``-column table."""
    if d < 4:
        raise ValueError(f"a wide table needs d >= 4 columns (the label reads 4), got {d}")
    rng = np.random.default_rng([structure_seed, d, int(chain)])
    cards = tuple(0 if j % 3 == 2 else int(rng.integers(2, 7)) for j in range(d))
    parents = tuple(
        -1 if j == 0 else (j - 1 if chain else int(rng.integers(max(0, j - 3), j)))
        for j in range(d)
    )
    cpts: list[np.ndarray] = []
    for j in range(d):
        parent_states = 1 if j == 0 else _state_count(cards[parents[j]])
        if cards[j] > 0:
            cpts.append(rng.dirichlet(np.full(cards[j], 0.5), size=parent_states))
        else:
            cpts.append(rng.uniform(-6.0, 6.0, size=parent_states))
    # four label columns spread over the table: one in each quarter
    label_columns = tuple(int(q * d // 4 + rng.integers(0, max(1, d // 4))) for q in range(4))
    weights = tuple(rng.normal(0.0, 1.2, size=_state_count(cards[c])) for c in label_columns)
    draft = Structure(cards, parents, tuple(cpts), label_columns, weights, 1.2, 0.0)
    pilot = draw_features(draft, 5000, rng)
    intercept = float(np.quantile(label_score(draft, pilot), 1.0 - LABEL_POSITIVE))
    return Structure(cards, parents, tuple(cpts), label_columns, weights, 1.2, intercept)


def draw_features(structure: Structure, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Feature columns in tree order: category codes, or float values."""
    out: list[np.ndarray] = []
    for card, parent, cpt in zip(structure.cards, structure.parents, structure.cpts, strict=True):
        s = (
            np.zeros(n, dtype=np.int64)
            if parent < 0
            else states(out[parent], structure.cards[parent])
        )
        if card > 0:
            cum = np.cumsum(cpt[s], axis=1)
            u = rng.random((n, 1))
            out.append(np.minimum((u > cum).sum(axis=1), card - 1))
        else:
            x = np.clip(cpt[s] + rng.normal(0.0, 2.5, size=n), LO, HI)
            x[rng.random(n) < POINT_MASS] = 0.0
            out.append(x)
    return out


def label_score(structure: Structure, features: list[np.ndarray]) -> np.ndarray:
    """The label's logit before the intercept; reads the four label columns only."""
    cols = structure.label_columns
    st = [states(features[c], structure.cards[c]) for c in cols]
    score = np.zeros(len(st[0]))
    for w, s in zip(structure.label_weights, st, strict=True):
        score += w[s]
    parity = np.where((st[0] + st[1]) % 2 == 0, 1.0, -1.0)
    return np.asarray(score + structure.interaction * parity, dtype=np.float64)


def label_probability(structure: Structure, features: list[np.ndarray]) -> np.ndarray:
    """``P(label = 1 | features)``."""
    z = label_score(structure, features) - structure.intercept
    return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


def make_wide(
    d: int, n: int, seed: int, structure_seed: int = 0, chain: bool = False
) -> tuple[pd.DataFrame, Schema, Structure]:
    """``n`` rows of the ``d``-column table of ``structure_seed`` (see the module doc).

    Parameters
    ----------
    d
        Feature columns (at least 4); the table has ``d + 1`` columns with the label.
    n
        Rows.
    seed
        Seed of the rows (train and test: different seeds, the same structure).
    structure_seed
        Seed of the tree, conditionals and label function.
    chain
        Every column's parent is the column before it (a chain) instead of a random
        one among the three before it.

    Returns
    -------
    (DataFrame, Schema, Structure)
        The rows (categorical cells ``"v0", ...``, numerics float64, ``label`` 0/1), the
        declared schema and the structure that generated them.
    """
    structure = make_structure(d, structure_seed, chain)
    rng = np.random.default_rng([seed, d, 1 + int(chain), structure_seed])
    features = draw_features(structure, n, rng)
    label = (rng.random(n) < label_probability(structure, features)).astype(np.int64)
    data: dict[str, np.ndarray] = {}
    for name, card, values in zip(structure.names, structure.cards, features, strict=True):
        data[name] = (
            np.asarray([f"v{i}" for i in range(card)], dtype=object)[values] if card > 0 else values
        )
    data[LABEL] = label
    return pd.DataFrame(data), structure.schema(), structure


def make_xor_offset(n: int, seed: int, k: int = 3, cut: float = XOR_CUT) -> pd.DataFrame:
    """XOR-``k`` with the parity of the features above ``cut`` (schema: ``xor_schema(k)``).

    Features are uniform on the declared ``[-10, 10]``; ``target`` is 1 when an odd
    number of them exceed ``cut``. With ``cut = 2.5`` and ``k = 3`` about 49% of rows
    have ``target = 1``.
    """
    rng = np.random.default_rng([seed, k, 7])
    x = rng.uniform(LO, HI, size=(n, k))
    frame = pd.DataFrame(x, columns=[f"num_feat_{i}" for i in range(k)])
    frame["target"] = ((x > cut).sum(axis=1) % 2).astype(np.int64)
    return frame


def xor_offset_schema(k: int = 3) -> Schema:
    """The declared schema of :func:`make_xor_offset`: the XOR one."""
    return xor_schema(k)
