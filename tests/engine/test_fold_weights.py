"""The folds keep the bins the fine weights show data in next to the held ones
(:func:`dpevolve.engine.cells.weighed_beside`, :func:`dpevolve.engine.tails.released_inward`)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import OneWayAnswers

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.cells import weighed_beside
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.tails import released_inward
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

# causaldata's adult_services, ages of 715 rows (seed 0): 20 bins of 3.5 years on
# [10, 80], every release noise of the order of a bin's count; only [31, 34.5) stands
# out (342 +- 75), the data run from 18 to 62.
AGE_MASS = [0.0, 34, 0, 0, 69, 0, 171, 82, 79, 62, 60, 40, 0, 0, 32, 0, 38, 18, 2, 0]
AGE_COUNT = [28.0, -20, -70, -28, 75, -81, 342, 133, -23, 90, 65, 18, 66, -73, 76, -15, 39,
             42, -32, -109]  # fmt: skip
AGE_SD = np.full(20, 78.0)


def _ages() -> tuple[Discretiser, tuple[OneWayAnswers, list[Measurement]]]:
    discretiser = Discretiser(Schema((NumericColumn("age", 10.0, 80.0, integer=True),)), bins=20)
    event = GaussianEvent(np.sqrt(2.0), 140.0, label="marginal")
    oneway = Measurement(MarginalQuery(("age",)), np.array(AGE_COUNT), 140.0, event)
    return discretiser, (OneWayAnswers(np.array(AGE_MASS)), [oneway])


def _weights(discretiser: Discretiser, shown: list[int]) -> np.ndarray:
    """Decoding weights of 10 on every cell of the ``shown`` bins."""
    cells = discretiser.fine["age"]
    w = np.zeros(cells.size)
    w[: cells.values][np.isin(cells.coarse[: cells.values], shown)] = 10.0
    return w


def test_a_body_the_fine_weights_show_is_not_folded_into_its_one_held_bin() -> None:
    """Weights of nothing (the releases alone): every bin past [31, 34.5) passes for
    noise and folds into it, and all 715 ages had been drawn at 34. The fine
    histogram's weights show data over [31, 48.5): those bins decode as themselves and
    the stretch past them folds into 48.5's bin, not 34's; the bins below fold as
    before. A run of weights cut off from the held bin (ages 66-80) holds nothing up."""
    discretiser, (model, releases) = _ages()
    counts = {"age": (np.array(AGE_COUNT), AGE_SD)}
    nothing = {"age": _weights(discretiser, [])}
    blind = released_inward(discretiser, model, releases, nothing, counts=counts)  # type: ignore[arg-type]
    assert (blind["age"].target[:20] == 6).all()
    shown = _weights(discretiser, [6, 7, 8, 9, 10, 16, 17, 18, 19])
    kept = released_inward(discretiser, model, releases, {"age": shown}, counts=counts)  # type: ignore[arg-type]
    target = kept["age"].target[:20]
    assert target[6:11].tolist() == [6, 7, 8, 9, 10]
    assert (target[:6] == 6).all() and (target[11:] == 10).all()


@settings(max_examples=100, deadline=None)
@given(
    shown=st.lists(st.booleans(), min_size=10, max_size=10),
    held=st.sets(st.integers(0, 9), max_size=3),
    empty=st.sets(st.integers(0, 9), max_size=3),
)
def test_the_bins_beside_are_the_weighed_runs_joined_to_a_held_bin(
    shown: list[bool], held: set[int], empty: set[int]
) -> None:
    """A bin is returned exactly when it is not held, its cells weigh something, it is
    not shown empty, and every bin between it and some held bin is so too."""
    discretiser = Discretiser(Schema((NumericColumn("v", 0.0, 10.0),)), bins=10, fine_cells=40)
    cells = discretiser.fine["v"]
    on = np.array(shown)
    weights = np.zeros(cells.size)
    weights[: cells.values] = on[cells.coarse[: cells.values]] * 5.0
    passable = on & ~np.isin(np.arange(10), list(empty))

    def joined(b: int, h: int) -> bool:  # every bin from b up to (not into) h passable
        span = np.arange(min(b, h), max(b, h) + 1)
        return bool(passable[span[span != h]].all())

    expected = {b for b in range(10) if b not in held and any(joined(b, h) for h in held)}
    assert weighed_beside(cells, weights, held, 10, empty) == expected
    if not empty:
        assert weighed_beside(cells, weights, held, 10) == expected


def test_with_a_public_table_its_bins_not_the_weights_hold_the_data() -> None:
    """With a public table, the decoding weights carry its shape, whose tails reach past
    the private data (held, they drew 0.9-1.7% of alcohol's, cps91's and injury's rows
    beyond it): the public table's bins say which bins hold data, the weights nothing."""
    discretiser, (model, releases) = _ages()
    counts = {"age": (np.array(AGE_COUNT), AGE_SD)}
    shown = {"age": _weights(discretiser, [6, 7, 8, 9, 10])}
    public = {"age": (6,)}
    folded = released_inward(discretiser, model, releases, shown, public=public, counts=counts)  # type: ignore[arg-type]
    assert (folded["age"].target[:20] == 6).all()


def test_a_run_of_weights_through_bins_released_empty_holds_nothing_up() -> None:
    """Weights on every bin from 31 up (the smoothing lends an empty bin weight from
    both sides): the bins released at or below zero ([38, 41.5) at -23, [55.5, 59) at
    -73, ...) cut the run, and the stretch past 48.5 folds into [45, 48.5) as with no
    weights there, instead of drawing ages up to 80 where the data stop at 62."""
    discretiser, (model, releases) = _ages()
    counts = {"age": (np.array(AGE_COUNT), AGE_SD)}
    everywhere = _weights(discretiser, list(range(6, 20)))
    folded = released_inward(discretiser, model, releases, {"age": everywhere}, counts=counts)  # type: ignore[arg-type]
    target = folded["age"].target[:20]
    assert target[6:11].tolist() == [6, 7, 8, 9, 10]
    assert (target[11:] == 10).all()
