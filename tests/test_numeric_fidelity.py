"""Unit tests of reporting/numeric_fidelity (Spearman error, beyond-range and unreached
shares, atom rules, quantile TV): each checked against a hand count, and each able to fail."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import Schema
from dpevolve.reporting import numeric_fidelity as nf

SCHEMA = Schema.from_dict(
    {
        "columns": {
            "spend": {"type": "numeric", "lo": 0, "hi": 100},
            "income": {"type": "numeric", "lo": 0, "hi": 1000},
            "any": {"type": "categorical", "values": ["no", "yes"]},
        },
        "label": "any",
    }
)


def _rule_table(n: int, seed: int, broken: float = 0.0) -> pd.DataFrame:
    """spend is 0 in 40% of rows; any = yes exactly when spend > 0 (a share ``broken``
    of the zero rows says yes)."""
    rng = np.random.default_rng(seed)
    spend = np.where(rng.random(n) < 0.4, 0.0, rng.uniform(1, 100, n))
    income = spend * 5 + rng.normal(0, 20, n).clip(-spend * 5, None)
    yes = (spend > 0) | ((spend == 0) & (rng.random(n) < broken))
    return pd.DataFrame({"spend": spend, "income": income.clip(0, 1000),
                         "any": np.where(yes, "yes", "no")})  # fmt: skip


def test_spearman_error_zero_on_itself_and_large_when_shuffled() -> None:
    real = _rule_table(2000, 0)
    assert nf.spearman_error(real, real, ["spend", "income"]) == 0.0
    shuffled = real.assign(income=np.random.default_rng(1).permutation(real["income"]))
    assert nf.spearman_error(real, shuffled, ["spend", "income"]) > 0.8
    assert np.isnan(nf.spearman_error(real, real, ["spend"]))


def test_spearman_error_counts_a_constant_column_as_no_correlation() -> None:
    real = _rule_table(500, 0)
    flat = real.assign(income=1.0)
    rho = pd.Series(real["spend"]).corr(real["income"], method="spearman")
    assert nf.spearman_error(real, flat, ["spend", "income"]) == pytest.approx(abs(rho))


def test_beyond_range_share_counts_rows_past_ten_percent_of_the_width() -> None:
    real = pd.DataFrame({"x": [0.0, 10.0], "y": [0.0, 1.0]})
    synth = pd.DataFrame({"x": [-0.9, 11.0, 11.1, 5.0], "y": [0.5, 0.5, 0.5, 1.2]})
    # x: [-1, 11] allowed; 11.1 is beyond; y: [-0.1, 1.1]: 1.2 is beyond
    assert nf.beyond_range_share(real, synth, ["x", "y"]) == pytest.approx(0.5)
    assert nf.beyond_range_share(real, synth, ["x", "y"], tolerance=0.2) == pytest.approx(0.0)


def test_unreached_share_counts_real_rows_past_the_synthetic_range() -> None:
    """The mirror of the beyond-range share: real rows beyond the synthetic range by
    more than a tenth of the real width (10 here, so 1.0)."""
    real = pd.DataFrame({"x": [0.0, 2.0, 5.0, 7.9, 10.0], "y": [1.0, np.nan, 1.0, 1.0, 1.0]})
    synth = pd.DataFrame({"x": [3.0, 7.0], "y": [1.0, 1.0]})
    # x reached within [2, 8]: 0.0 and 10.0 are unreached, 2.0 and 7.9 are near enough
    assert nf.unreached_share(real, synth, ["x", "y"]) == pytest.approx(0.4)
    assert nf.unreached_share(real, synth, ["x", "y"], tolerance=0.3) == pytest.approx(0.0)
    none = pd.DataFrame({"x": [np.nan, np.nan], "y": [1.0, 1.0]})
    assert nf.unreached_share(real, none, ["x"]) == pytest.approx(1.0)  # nothing drawn


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-100.0, 100.0), min_size=2, max_size=30),
    st.floats(-5.0, 5.0),
    st.floats(0.1, 3.0),
)
def test_a_synthetic_table_spanning_the_real_range_leaves_nothing_unreached(
    values: list[float], shift: float, stretch: float
) -> None:
    """A synthetic column covering the real range reaches every real row; the share is
    never above one and falls as the tolerance grows."""
    real = pd.DataFrame({"x": values})
    lo, hi = min(values), max(values)
    cover = pd.DataFrame({"x": [lo, hi]})
    assert nf.unreached_share(real, cover, ["x"]) == 0.0
    centre = 0.5 * (lo + hi) + shift
    narrow = pd.DataFrame({"x": [centre - stretch, centre + stretch]})
    tight = nf.unreached_share(real, narrow, ["x"], tolerance=0.0)
    loose = nf.unreached_share(real, narrow, ["x"], tolerance=0.5)
    assert 0.0 <= loose <= tight <= 1.0


def test_atom_rules_find_the_rule_and_its_break() -> None:
    real = _rule_table(4000, 0)
    kept = nf.atom_rules(real, _rule_table(4000, 1), ["spend"], "any")
    assert [(a["column"], a["value"]) for a in kept] == [("spend", 0.0)]
    assert kept[0]["tv"] == 0.0 and not kept[0]["missing"]
    assert kept[0]["share"] == pytest.approx(0.4, abs=0.03)
    broken = nf.atom_rules(real, _rule_table(4000, 1, broken=0.77), ["spend"], "any")
    assert broken[0]["tv"] == pytest.approx(0.77, abs=0.04)
    lost = nf.atom_rules(real, real.assign(spend=real["spend"] + 0.5), ["spend"], "any")
    assert lost[0]["tv"] == 1.0 and lost[0]["missing"]


def test_an_atom_of_single_precision_is_met_by_its_decimal() -> None:
    """The real float32 4.2 (4.19999980926514) is the synthetic 4.2, not 4.2001."""
    real = pd.DataFrame({"x": np.float32([4.2] * 10 + [7.0] * 10).astype(float), "y": "a"})
    near = nf.atom_rules(real, real.assign(x=[4.2] * 10 + [7.0] * 10), ["x"], "y")
    assert [a["missing"] for a in near] == [False, False]
    off = nf.atom_rules(real, real.assign(x=4.2001), ["x"], "y")
    assert off[0]["missing"]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_quantile_tv_is_zero_on_itself_and_one_on_disjoint_support(seed: int) -> None:
    real = _rule_table(300, seed)
    assert nf.quantile_tv(real, real, SCHEMA, real) == {"tv1": 0.0, "tv2": 0.0}
    far = real.assign(spend=100.0, income=1000.0, any="no")
    tv = nf.quantile_tv(real, far, SCHEMA, real)
    assert 0.0 < tv["tv1"] <= 1.0 and 0.0 < tv["tv2"] <= 1.0


def test_quantile_edges_follow_the_reference() -> None:
    reference = pd.DataFrame({"x": np.arange(101, dtype=float)})
    assert list(nf.quantile_edges(reference, "x", bins=4)) == [25.0, 50.0, 75.0]
    atoms = pd.DataFrame({"x": [0.0] * 90 + list(range(1, 11))})
    assert list(nf.quantile_edges(atoms, "x", bins=4)) == []  # quantiles all at 0 but the max
