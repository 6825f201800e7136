"""Generated tables: the XOR stress test and the built-in demo table.

Both need no data files. Their schemas are declared by the generator (every cell is
drawn inside them), so they validate by construction.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.datasets._base import Dataset, finish, shipped_schema
from dpevolve.datasets._spec import Spec
from dpevolve.errors import InputError

XOR_LO = -10.0
XOR_HI = 10.0


def xor_schema(k: int) -> Schema:
    """Schema of the ``k``-feature XOR table.

    Parameters
    ----------
    k
        Number of features, at least 1.

    Returns
    -------
    Schema
        ``num_feat_0 .. num_feat_{k-1}`` numeric on ``[-10, 10]`` (Tab-PE's column names
        and feature range) and the label ``target`` with values ``[0, 1]``.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"xor needs k >= 1 features, got {k!r}")
    columns: list[NumericColumn | CategoricalColumn] = [
        NumericColumn(f"num_feat_{i}", XOR_LO, XOR_HI) for i in range(int(k))
    ]
    columns.append(CategoricalColumn("target", (0, 1)))
    return Schema(tuple(columns), label="target")


def make_xor(k: int, n: int, seed: int) -> Dataset:
    """The XOR (parity) stress test of Tab-PE.

    Parameters
    ----------
    k
        Number of features; each is uniform on ``[-10, 10]``.
    n
        Number of rows, at least 1.
    seed
        Seed of the NumPy generator (the same seed gives the same table).

    Returns
    -------
    Dataset
        Named ``xor{k}``. ``target`` is the parity of the number of positive features
        (1 when an odd number of features are ``> 0``); for ``k = 1`` that is the sign.
    """
    schema = xor_schema(k)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"xor needs n >= 1 rows, got {n!r}")
    rng = np.random.default_rng(seed)
    features = rng.uniform(XOR_LO, XOR_HI, size=(int(n), int(k)))
    target = (features > 0).sum(axis=1) % 2
    frame = pd.DataFrame(features, columns=[f"num_feat_{i}" for i in range(int(k))])
    frame["target"] = target.astype(np.int64)
    name = f"xor{k}"
    return Dataset(
        name=name,
        frame=finish(frame, schema, f"dataset {name}"),
        schema=schema,
        label="target",
        description=(
            f"XOR stress test with {k} feature(s) uniform on [-10, 10]; target = parity of "
            f"the number of positive features (generated: n={n}, seed={seed})."
        ),
        source=None,
    )


_EDUCATION = ("no-diploma", "high-school", "some-college", "bachelors", "graduate")
_EMPLOYMENT = ("employee", "self-employed", "unemployed", "retired")


def demo_schema() -> Schema:
    """Schema of :func:`make_demo` (shipped as ``schemas/demo.yaml``)."""
    return shipped_schema("demo.yaml")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=np.float64)


def _draw(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` (rows need not be normalised)."""
    cum = np.cumsum(probs, axis=1)
    cum /= cum[:, -1:]
    u = rng.random((probs.shape[0], 1))
    return np.minimum((u > cum).sum(axis=1), probs.shape[1] - 1)


def make_demo(n: int = 30_000, seed: int = 0) -> Dataset:
    """A census-like demo table with real structure, generated in code.

    Columns (schema ``demo.yaml``): ``age`` (17..90), ``sex``, ``education`` (five levels
    with a school/college hierarchy; younger people are more often in college, the
    oldest less schooled, nobody under 22 has a graduate degree), ``employment``
    (retirement rises steeply after 60; unemployment is higher without a diploma),
    ``hours-per-week`` (1..99; about 40 for employees, longer and more spread for the
    self-employed, short for the unemployed and retired) and the label ``income``
    (``>50K`` more likely with more education, more hours, mid-career age, and in work).

    Parameters
    ----------
    n
        Number of rows, at least 1.
    seed
        Seed of the NumPy generator (the same ``n`` and seed give the same table).

    Returns
    -------
    Dataset
        Named ``demo``; about a quarter of the rows have ``income = >50K``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"demo needs n >= 1 rows, got {n!r}")
    n = int(n)
    rng = np.random.default_rng(seed)

    age = np.clip(np.round(17 + rng.gamma(shape=3.0, scale=8.0, size=n)), 17, 90)
    male = rng.random(n) < 0.5

    # education: base shares, shifted by age
    base = np.array([0.10, 0.32, 0.24, 0.22, 0.12])
    young = age < 25
    old = age >= 60
    probs = np.tile(base, (n, 1))
    probs[young] *= np.array([0.8, 1.2, 1.8, 0.6, 0.1])
    probs[old] *= np.array([2.2, 1.3, 0.7, 0.7, 0.8])
    probs[age < 22, 3] *= 0.15
    probs[age < 22, 4] = 0.0
    edu = _draw(rng, probs)

    # employment: retirement after ~62, unemployment higher without a diploma
    p_retired = _sigmoid((age - 64.0) / 2.5)
    p_unemployed = np.where(edu == 0, 0.12, 0.05) * (1 - p_retired)
    p_self = (0.06 + 0.10 * np.clip((age - 25) / 35, 0, 1)) * (1 - p_retired)
    p_employee = np.clip(1 - p_retired - p_unemployed - p_self, 0, None)
    employment = _draw(rng, np.column_stack([p_employee, p_self, p_unemployed, p_retired]))

    # hours-per-week by employment
    hours = np.empty(n)
    emp = employment == 0
    hours[emp] = rng.normal(39 + 2.0 * (edu[emp] >= 3), 7.0)
    selfemp = employment == 1
    hours[selfemp] = rng.normal(46, 12.0, size=int(selfemp.sum()))
    idle = employment >= 2
    hours[idle] = rng.uniform(1, 20, size=int(idle.sum()))
    hours = np.clip(np.round(hours), 1, 99)

    # income: education, hours, a mid-career age peak, sex gap, working status
    logit = (
        -2.7
        + 0.85 * edu
        + 0.045 * (hours - 40)
        - 0.0018 * (age - 50) ** 2
        + 0.35 * male
        - 1.2 * (employment >= 2)
    )
    rich = rng.random(n) < _sigmoid(logit)

    frame = pd.DataFrame(
        {
            "age": age.astype(np.int64),
            "sex": np.where(male, "Male", "Female"),
            "education": np.asarray(_EDUCATION, dtype=object)[edu],
            "employment": np.asarray(_EMPLOYMENT, dtype=object)[employment],
            "hours-per-week": hours.astype(np.int64),
            "income": np.where(rich, ">50K", "<=50K"),
        }
    )
    schema = demo_schema()
    return Dataset(
        name="demo",
        frame=finish(frame, schema, "dataset demo"),
        schema=schema,
        label="income",
        description=(
            "Census-like demo table generated in code (age, sex, education, employment, "
            f"hours-per-week, income) with realistic dependencies (n={n}, seed={seed})."
        ),
        source=None,
    )


# ----------------------------------------------------------------- registry entries
XOR_TRAIN_ROWS = 12000


XOR_TEST_ROWS = 3000


DEMO_TRAIN_ROWS = 30_000


DEMO_TEST_ROWS = 2000
#: Rows of the demo's public split: a public table of the same kind (another seed).
DEMO_PUBLIC_ROWS = 2000


def _xor_generator(k: int) -> Callable[[str], Dataset]:
    def generate(split: str) -> Dataset:
        if split == "train":
            return make_xor(k, XOR_TRAIN_ROWS, seed=0)
        return make_xor(k, XOR_TEST_ROWS, seed=1)

    return generate


def _demo_generator(split: str) -> Dataset:
    if split == "train":
        return make_demo(DEMO_TRAIN_ROWS, seed=0)
    if split == "public":
        return make_demo(DEMO_PUBLIC_ROWS, seed=2)
    return make_demo(DEMO_TEST_ROWS, seed=1)


def _xor_schema(k: int) -> Callable[[], Schema]:
    return lambda: xor_schema(k)


SPECS: tuple[Spec, ...] = (
    *(
        Spec(
            name=f"xor{k}",
            description=(
                f"XOR stress test (Tab-PE) with {k} feature(s) uniform on [-10, 10], label "
                "target = parity of the number of positive features; generated: split "
                f"'train' = make_xor({k}, {XOR_TRAIN_ROWS}, seed=0), 'test' = "
                f"make_xor({k}, {XOR_TEST_ROWS}, seed=1)."
            ),
            default_split="train",
            splits={"train": (), "test": ()},
            schema=_xor_schema(k),
            generator=_xor_generator(k),
        )
        for k in range(1, 8)
    ),
    Spec(
        name="demo",
        description=(
            "Census-like demo table generated in code (no files needed): split 'train' "
            f"= make_demo({DEMO_TRAIN_ROWS}, seed=0), 'test' = make_demo({DEMO_TEST_ROWS}, "
            f"seed=1), 'public' = make_demo({DEMO_PUBLIC_ROWS}, seed=2)."
        ),
        default_split="train",
        splits={"train": (), "test": (), "public": ()},
        schema=demo_schema,
        generator=_demo_generator,
    ),
)
