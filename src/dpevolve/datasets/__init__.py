"""Public data sets and generated tables, each with a declared schema.

>>> from dpevolve import datasets
>>> ds = datasets.load("demo")                    # generated, needs no files
>>> ds.frame.shape, ds.label
((30000, 6), 'income')
>>> datasets.schema("adult5").names
['age', 'workclass', 'sex', 'hours-per-week', 'income']

Data sets (:func:`names`) and their splits (default first) and column presets:

* ``adult`` -- UCI Adult; splits ``train``, ``test``; presets ``adult-tabpe`` (the
  benchmarks' nine columns) and ``adult5`` (the BF-Soft study schema ``adult5.yaml``).
  Rows with a missing value (``?``) in the selected columns are dropped.
* ``bank`` -- UCI Bank Marketing; splits ``full``, ``small``; preset ``bank5``.
* ``person_activity`` -- UCI Localization Data for Person Activity, persons A and B;
  splits ``A``, ``B``, ``AB``; see also :func:`person_activity_holdout`.
* ``nist_ma2019``, ``nist_tx2019``, ``nist_national2019`` -- NIST Diverse Communities
  Data Excerpts; presets ``nist_subset`` and ``nist_subset7``.
* ``tabpe_person_activity`` -- the Tab-PE integer-coded copy; splits ``test``, ``val``
  (``train`` is not publicly retrievable).
* ``xor1`` .. ``xor7`` -- :func:`make_xor` (``train``: 12,000 rows, seed 0; ``test``:
  3,000 rows, seed 1).
* ``demo`` -- :func:`make_demo` (``train``: 30,000 rows, seed 0; ``test``: 2,000, seed 1;
  ``public``: 2,000, seed 2).
* ``census2000``, ``labsup``, ``happiness``, ``alcohol``, ``catholic``, ``injury``,
  ``twoyear``, ``cps91``, ``mortgages``, ``restaurant_inspections``,
  ``black_politicians``, ``fair`` -- the benchmark suite's package-served tables
  (:mod:`dpevolve.datasets.suite`; ``pip install 'dpevolve[bench]'``); splits
  ``private``, ``public``, ``test`` (40/40/20, fixed seed), the schema inferred from
  ``public``. :data:`SUITE` names every suite table, these and four of the above.

Files are looked up in ``$DPEVOLVE_DATA`` (laid out like the project's shared data
folder), then in the user cache (``$XDG_CACHE_HOME/dpevolve/data``, default
``~/.cache/dpevolve/data``) that :func:`fetch` fills from the original public sources.

Declared ranges and categories come from each data set's documentation (UCI's
``adult.names`` and ``bank-names.txt``, NIST's ``data_dictionary.json``, the data
READMEs), never from the records (the suite tables excepted: their schema is inferred
from their public split, as a steward would); the shipped YAML files in ``datasets/schemas`` say
where each domain comes from.
"""

from dpevolve.datasets._base import DATA_ENV, Dataset, cache_dir, data_dirs
from dpevolve.datasets.adult import ADULT5, ADULT_COLUMNS, ADULT_TABPE, WORKCLASS_BLOCKS
from dpevolve.datasets.bank import BANK5
from dpevolve.datasets.nist import (
    NIST_NUMERIC,
    NIST_NUMERIC_NULLS,
    NIST_SUBSET,
    NIST_SUBSET7,
    nist_restore_nulls,
)
from dpevolve.datasets.person_activity import PERSON_ACTIVITY_TAGS
from dpevolve.datasets.registry import (
    fetch,
    load,
    names,
    person_activity_holdout,
    presets,
    schema,
    splits,
)
from dpevolve.datasets.suite import SUITE
from dpevolve.datasets.synthetic import demo_schema, make_demo, make_xor, xor_schema

__all__ = [
    "ADULT5",
    "ADULT_COLUMNS",
    "ADULT_TABPE",
    "BANK5",
    "DATA_ENV",
    "NIST_NUMERIC",
    "NIST_NUMERIC_NULLS",
    "NIST_SUBSET",
    "NIST_SUBSET7",
    "PERSON_ACTIVITY_TAGS",
    "SUITE",
    "WORKCLASS_BLOCKS",
    "Dataset",
    "cache_dir",
    "data_dirs",
    "demo_schema",
    "fetch",
    "load",
    "make_demo",
    "make_xor",
    "names",
    "nist_restore_nulls",
    "person_activity_holdout",
    "presets",
    "schema",
    "splits",
    "xor_schema",
]
