"""Adding things, done in a test: the counts of files touched in docs/architecture.md.

* A backend is one module written against :mod:`dpevolve.backends.base` (and the
  canonical arithmetic of :mod:`dpevolve.backends.canonical`): :class:`ToyBackend`
  below is the whole of one, and a run takes it as an object (its name in
  ``backends/__init__.py`` is the one more edit that lets ``--backend NAME`` pick it).
* A data set is one module declaring ``SPECS`` in ``datasets/`` beside its schema; the
  registry finds it (checked by reading the registry's own discovery rule).
* A private source is one class with ``n``, ``report`` and ``batches()``; one entry in
  ``cli/private.py:DATABASES`` lets ``dpevolve synth`` read it.
* A selection rule is one class and its name; a measurement type one query class and
  the rule that proposes it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.backends.base import CountQuery, Distance, PrivateData, Vote
from dpevolve.backends.canonical import soft_histogram
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Records
from dpevolve.engine.rules import AIMRule
from dpevolve.measurements import Domain, MarginalQuery
from dpevolve.presets import get_method
from dpevolve.privacy.events import ExponentialEvent

SRC = Path(__file__).resolve().parents[1] / "src" / "dpevolve"


# ----------------------------------------------------------------------- a backend
class ToyBackend:
    """A complete backend: one record at a time, the interface's vocabulary only."""

    def __init__(self) -> None:
        self.votes = 0
        self.counts = 0

    @staticmethod
    def _records(private: PrivateData) -> Iterator[Records]:
        for batch in [private] if isinstance(private, Records) else private:
            for i in range(len(batch)):
                yield batch.take(slice(i, i + 1))

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        self.votes += 1
        rule = vote.rule()
        histogram = np.zeros(len(population), dtype=np.float64)
        for record in self._records(private):
            d = distance.pairwise(record, population)
            if rule is not None and rule.kind == "soft":
                histogram += soft_histogram(d, rule.temperature)
            elif rule is not None:
                histogram[int(np.argmin(d[0]))] += 1.0
            else:
                histogram += vote.histogram(d)
        return histogram

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        self.counts += 1
        total = np.zeros(query.size, dtype=np.int64)
        for record in self._records(private):
            total += query.counts(record)
        return total


def _toy_imports() -> set[str]:
    """The dpevolve modules this file's ToyBackend needs (its class and the imports it uses)."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    toy = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ToyBackend")
    used = {n.id for n in ast.walk(toy) if isinstance(n, ast.Name)}
    return {
        node.module or ""
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("dpevolve")
        and any((a.asname or a.name) in used for a in node.names)
    }


def test_a_backend_is_one_module_over_the_interface() -> None:
    # Everything the toy needs comes from the backend room and the encoded records.
    assert _toy_imports() == {
        "dpevolve.backends.base",
        "dpevolve.backends.canonical",
        "dpevolve.data.encoding",
    }


@pytest.mark.parametrize("preset", ["adaptive", "tabpe"])
def test_a_toy_backend_runs_a_fit_bit_for_bit_like_the_reference(
    small_schema, small_table: pd.DataFrame, preset: str
) -> None:
    chosen = (
        get_method("tabpe", population=30, rounds=2)
        if preset == "tabpe"
        else get_method("adaptive", engine={"pe_candidates": 15})  # 10 of the 150 rows each
    )
    settings = dict(epsilon=1.0, delta=1e-5, random_state=0, noise_seed=5, method=chosen)
    table = small_table.iloc[:150]
    toy = ToyBackend()
    got = Synthesizer(small_schema, backend=toy, **settings).fit(table).sample(60)
    want = Synthesizer(small_schema, backend=LocalBackend(), **settings).fit(table).sample(60)
    # The run read the private rows through the toy: PE votes; the engine counts (and
    # votes in its refinement stage).
    assert toy.votes > 0 and (toy.counts > 0) == (preset == "adaptive")
    pd.testing.assert_frame_equal(got, want)


# ----------------------------------------------------------------------- a data set
def test_a_data_set_is_its_schema_and_one_module() -> None:
    # The registry finds every module of datasets/ that declares SPECS (no list to edit):
    # the data sets it knows are exactly those the SPECS modules declare.
    import importlib

    from dpevolve import datasets

    declared: set[str] = set()
    for path in sorted((SRC / "datasets").glob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if not path.stem.startswith("_") and any(
            isinstance(n, (ast.Assign, ast.AnnAssign))
            and "SPECS" in ast.unparse(n.targets[0] if isinstance(n, ast.Assign) else n.target)
            for n in body
        ):
            module = importlib.import_module(f"dpevolve.datasets.{path.stem}")
            declared |= {spec.name for spec in module.SPECS}
    assert len(declared) >= 5
    assert declared == set(datasets.names())


# A whole data set family: its schema and one module declaring ``SPECS`` (the two files
# docs/architecture.md counts), written into a folder the package searches.
TOY_SCHEMA = """\
label: kind
columns:
  size: {type: numeric, lo: 0, hi: 9, integer: true}
  kind: {type: categorical, values: [a, b]}
"""
TOY_FAMILY = '''\
"""A toy data set family (a test writes it)."""
from pathlib import Path

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.datasets._base import Dataset
from dpevolve.datasets._spec import Spec

SCHEMA = Schema.load(Path(__file__).with_name("toyset.yaml"))


def _generate(split: str) -> Dataset:
    rng = np.random.default_rng(0 if split == "train" else 1)
    frame = pd.DataFrame({"size": rng.integers(0, 10, 50), "kind": rng.choice(["a", "b"], 50)})
    return Dataset("toyset", frame, SCHEMA, "kind", "toy")


SPECS = (
    Spec("toyset", "A toy table (generated).", "train", {"train": (), "test": ()},
         schema=lambda: SCHEMA, generator=_generate),
)
'''


def test_a_data_set_added_as_two_files_is_loaded_by_name(tmp_path: Path) -> None:
    import importlib

    from dpevolve import datasets
    from dpevolve.datasets import registry

    (tmp_path / "toyset.yaml").write_text(TOY_SCHEMA, encoding="utf-8")
    (tmp_path / "toyset.py").write_text(TOY_FAMILY, encoding="utf-8")
    datasets.__path__.append(str(tmp_path))
    try:
        importlib.reload(registry)
        assert "toyset" in datasets.names()
        loaded = datasets.load("toyset", "test")
        assert list(loaded.schema.names) == ["size", "kind"] and len(loaded) == 50
        model = Synthesizer(loaded.schema, epsilon=1.0, random_state=0).fit(loaded.frame)
        assert list(model.sample(10).columns) == ["size", "kind"]
    finally:
        datasets.__path__.remove(str(tmp_path))
        importlib.reload(registry)
    assert "toyset" not in datasets.names()


# ---------------------------------------------------------------- a private source
class RowsSource:
    """A complete private source (here rows from SQLite, read in batches): the public
    ``n``, the validation ``report`` and ``batches()``; ``fit_source`` takes it as is."""

    def __init__(self, path: Path, schema, rows: int = 64) -> None:
        import sqlite3

        self.path, self.schema, self.rows = path, schema, rows
        with sqlite3.connect(path) as db:
            self._n = int(db.execute("SELECT COUNT(*) FROM private").fetchone()[0])

    @property
    def n(self) -> int:
        return self._n

    @property
    def report(self) -> None:
        return None

    def batches(self) -> Iterator[Records]:
        import sqlite3

        from dpevolve.data.encoding import encode

        with sqlite3.connect(self.path) as db:
            for start in range(0, self._n, self.rows):
                query = f"SELECT * FROM private ORDER BY rowid LIMIT {self.rows} OFFSET {start}"
                frame = pd.read_sql_query(query, db)
                clean, _ = self.schema.validate(frame, on_invalid="error")
                yield encode(clean, self.schema)


@pytest.mark.parametrize("preset", ["adaptive", "tabpe"])
def test_a_private_source_is_one_class_the_fit_takes(
    tmp_path: Path, small_schema, small_table: pd.DataFrame, preset: str
) -> None:
    import sqlite3

    table = small_table.iloc[:150].reset_index(drop=True)
    with sqlite3.connect(tmp_path / "private.db") as db:
        table.to_sql("private", db, index=False)
    chosen = (
        get_method("tabpe", population=30, rounds=2)
        if preset == "tabpe"
        else get_method("adaptive", engine={"pe_candidates": 15})  # 10 of the 150 rows each
    )
    settings = dict(epsilon=1.0, delta=1e-5, random_state=0, noise_seed=5, backend="local")
    source = RowsSource(tmp_path / "private.db", small_schema)
    got = Synthesizer(small_schema, method=chosen, **settings).fit_source(source)
    want = Synthesizer(small_schema, method=chosen, **settings).fit(table)
    pd.testing.assert_frame_equal(got.sample(60), want.sample(60))


def test_a_private_source_reaches_the_command_line_by_one_entry(
    tmp_path: Path, small_schema, small_table: pd.DataFrame, monkeypatch
) -> None:
    import sqlite3

    from dpevolve.cli import main
    from dpevolve.cli.private import DATABASES, Database

    def place(text: str) -> tuple[Path, Path] | None:
        path = Path(text[len("sqlite:") :]) if text.startswith("sqlite:") else None
        return None if path is None else (path, path)

    def table(path: Path, schema, batch_rows: int, on_invalid) -> RowsSource:
        return RowsSource(path, schema, rows=batch_rows)

    monkeypatch.setitem(DATABASES, "sqlite", Database(place, table))  # the registration
    table_ = small_table.iloc[:150].reset_index(drop=True)
    with sqlite3.connect(tmp_path / "private.db") as db:
        table_.to_sql("private", db, index=False)
    table_.to_csv(tmp_path / "private.csv", index=False)
    (tmp_path / "s.yaml").write_text(small_schema.to_yaml())
    outputs = []
    for private in (f"sqlite:{tmp_path / 'private.db'}", str(tmp_path / "private.csv")):
        out = tmp_path / f"out{len(outputs)}.csv"
        argv = [
            "synth", private, "-s", str(tmp_path / "s.yaml"), "-e", "1", "--delta", "1e-5",
            "--seed", "0", "--noise-seed", "5", "-o", str(out), "--quiet",
            "--engine-options", "{max_rounds: 2}",
        ]  # fmt: skip
        assert main(argv) == 0
        outputs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(*outputs)  # the database table fits like the same file


# ------------------------------------------------------------------ a selection rule
class L2Rule:
    """A complete selection rule (:mod:`dpevolve.engine.rules`): the model's weighted L2
    error less a fresh measurement's expected noise. Replacing one record moves a
    candidate's counts by at most ``sqrt(2)`` in L2, so (triangle inequality) a score
    by at most ``sqrt(2) w_c``: the draw's sensitivity is ``sqrt(2) max w_c``."""

    def __init__(self) -> None:
        self.rounds = 0

    def propose(self, kept: list[MarginalQuery], domain: Domain) -> list[MarginalQuery]:
        return kept

    def scores(self, candidates, exact, model, weights, sigma) -> np.ndarray:
        self.rounds += 1
        return np.array(
            [
                w * (float(np.linalg.norm(exact(q) - model(q))) - sigma * math.sqrt(exact(q).size))
                for q, w in zip(candidates, weights, strict=True)
            ]
        )

    def event(self, epsilon: float, weights) -> ExponentialEvent:
        return ExponentialEvent(epsilon, math.sqrt(2.0) * max(weights), label="select")


def _engine_fit(schema, table: pd.DataFrame, selection: str):
    from dpevolve.data.sources import FrameSource
    from dpevolve.engine import EngineSpec, fit_engine
    from dpevolve.privacy import Budget
    from dpevolve.privacy.noise import SeededNoise

    spec = EngineSpec(bins=4, fine_cells=12, rounds=4, selection=selection)
    return fit_engine(
        FrameSource(table, schema), schema, Budget(epsilon=1.0, delta=1e-5), spec,
        noise=SeededNoise(3), rng=np.random.default_rng(0),
    )  # fmt: skip


def test_a_selection_rule_is_one_class_and_its_name(
    small_schema, small_table: pd.DataFrame, monkeypatch
) -> None:
    from dpevolve.engine.rules import SELECTION_RULES

    rule = L2Rule()
    monkeypatch.setitem(SELECTION_RULES, "l2", rule)  # the registration
    table = small_table.iloc[:200]
    result = _engine_fit(small_schema, table, "l2")
    rounds = [h for h in result.history if "stage" not in h]
    assert rule.rounds == len(rounds) >= 1  # every adaptive round asked the rule
    events = result.ledger.to_dict()["events"]
    picks = [e for e in events if e["kind"] == "exponential" and "stage" not in e]
    # each round's draw is priced by the rule: sqrt(2) max w (AIM's would be 2 max w),
    # the weights |c| / 2 of pairs and triples
    assert len(picks) == len(rounds)
    assert {round(e["sensitivity"] / math.sqrt(2.0), 9) for e in picks} <= {1.0, 1.5}
    assert result.ledger.metadata["engine"]["spec"]["selection"] == "l2"
    assert sum(e.rho for e in result.events) == pytest.approx(
        result.ledger.metadata["engine"]["plan_rho"], rel=1e-8
    )
    # the rule needs the privacy events' vocabulary alone; the default is still AIM's
    assert _rule_imports() == {"dpevolve.privacy.events"}
    aim = _engine_fit(small_schema, table, "aim").ledger.to_dict()["events"]
    assert {e["sensitivity"] / 2.0 for e in aim if e["kind"] == "exponential"} <= {1.0, 1.5}


def _rule_imports() -> set[str]:
    """The dpevolve modules L2Rule's own code names (beyond its signature's types)."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    rule = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "L2Rule")
    body = [n for f in rule.body if isinstance(f, ast.FunctionDef) for n in f.body]
    used = {n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name)}
    return {
        node.module or ""
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("dpevolve")
        and any((a.asname or a.name) in used for a in node.names)
    }


# ---------------------------------------------------------------- a measurement type
@dataclass(frozen=True)
class ParityQuery(MarginalQuery):
    """A complete measurement type: a pair's records by the parity of its two cell codes'
    sum (2 counts; no product of per-attribute groupings gives it). A linear map of
    the pair's fine marginal (``project``) and its adjoint (``expand``): the engine
    counts, releases and scores it and the estimator fits it through these alone.
    Replacing one record moves one count from one parity to the other: L2 ``sqrt(2)``,
    L1 2, as a marginal's."""

    cells: tuple[int, ...] = ()

    @property
    def coarse(self) -> bool:
        return True

    def shape(self, domain: Domain) -> tuple[int, ...]:
        return (2,)

    def _parity(self) -> np.ndarray:
        return np.indices(self.cells).sum(axis=0) % 2

    def project(self, counts: np.ndarray) -> np.ndarray:
        counts = np.asarray(counts, dtype=np.float64).reshape(self.cells)
        parity = self._parity()
        return np.array([counts[parity == 0].sum(), counts[parity == 1].sum()])

    def expand(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)[self._parity()]


class ParityRule(AIMRule):
    """AIM's rule, proposing each kept pair's parity query in its place (its
    registration is the second file a new measurement type touches)."""

    def propose(self, kept: list[MarginalQuery], domain: Domain) -> list[MarginalQuery]:
        pairs = [q.clique for q in kept if len(q.clique) == 2 and not q.coarse]
        return [ParityQuery(c, cells=domain.shape(c)) for c in pairs] or kept


def test_a_measurement_type_is_one_class_and_the_rule_that_proposes_it(
    small_schema, small_table: pd.DataFrame, monkeypatch
) -> None:
    from dpevolve.engine.rules import SELECTION_RULES

    monkeypatch.setitem(SELECTION_RULES, "parity", ParityRule())
    result = _engine_fit(small_schema, small_table.iloc[:200], "parity")
    parity = [m for m in result.measurements if isinstance(m.query, ParityQuery)]
    assert parity and all(m.noisy.shape == (2,) for m in parity)
    # released as the other marginals are (in the list, one per ledger event) ...
    assert result.measurements.events() == list(result.ledger.events)
    # ... and fitted: the model's parity counts sit near the released ones
    for m in parity:
        fitted = m.query.project(result.model.answer(m.clique))
        assert np.abs(fitted - m.noisy).sum() <= np.abs(m.noisy).sum()
    assert len(result.sample(50, np.random.default_rng(1))) == 50
