"""Utility of a synthetic table against the real one (spec §7).

Two measures, both computed by the data owner on their own side (they read the private
table and are not privatised):

* **k-way marginal error** (:func:`marginal_tv`): for every set ``S`` of ``k`` columns,
  the total variation distance between the real and synthetic ``k``-way contingency
  tables, ``TV_S = 1/2 * sum_cells |p_S(cell) - q_S(cell)|``, averaged over all sets.
  Numeric columns are cut into 20 equal-width bins over their *declared* range.
* **TSTR** (:func:`tstr`): train a classifier on the synthetic table, test it on a real
  held-out split; accuracy, macro-F1 and AUC.

:func:`evaluate` runs both and returns a JSON-ready dict; :func:`format_report` prints it.
Figures of these numbers are drawn by :mod:`dpevolve.reporting.figures`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError

__all__ = [
    "NUMERIC_BINS",
    "MarginalReport",
    "TSTRReport",
    "baseline",
    "evaluate",
    "format_report",
    "marginal_columns",
    "marginal_tv",
    "tstr",
]

NUMERIC_BINS = 20
"""Equal-width bins per numeric column over its declared range (spec §7)."""

# Running mixed-radix index sizes above this are compacted with np.unique, so that the
# index never overflows int64 and bincount never allocates a huge mostly-empty table.
_MAX_DENSE_CELLS = 1 << 22

# HistGradientBoosting refuses categorical features with more than max_bins categories.
_HGB_MAX_CATEGORIES = 255


# ------------------------------------------------------------------ marginals
@dataclass(frozen=True)
class MarginalReport:
    """k-way marginal total variation between a real and a synthetic table (spec §7).

    Attributes
    ----------
    k
        Columns per marginal.
    mean
        Mean of ``TV_S`` over all ``k``-sets ``S``.
    max
        Largest ``TV_S``.
    per_set
        ``TV_S`` for every ``k``-set, keyed by its column names.
    """

    k: int
    mean: float
    max: float
    per_set: dict[tuple[str, ...], float]

    @property
    def worst(self) -> tuple[str, ...]:
        """The ``k``-set with the largest TV."""
        return max(self.per_set, key=lambda s: self.per_set[s])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the per-set values)."""
        return {
            "mean": self.mean,
            "max": self.max,
            "sets": len(self.per_set),
            # With every TV zero there is no worst set worth naming.
            "worst": list(self.worst) if self.max > 0 else [],
        }


def bin_codes(frame: pd.DataFrame, column: NumericColumn | CategoricalColumn) -> np.ndarray:
    """Cells of one validated column as marginal-table codes (spec §7).

    Numeric: bin ``i`` of ``NUMERIC_BINS`` is ``[e_i, e_{i+1})`` with
    ``e = linspace(lo, hi, NUMERIC_BINS + 1)``; ``hi`` goes into the last bin.
    Categorical: the index of the value among the declared values.

    Returns
    -------
    numpy.ndarray
        int64 codes in ``[0, bin_count(column))``.
    """
    if isinstance(column, NumericColumn):
        x = frame[column.name].to_numpy(dtype=np.float64)
        # Bins come from explicit edges (not floor((x - lo) / width)) so that a value lying
        # exactly on an edge lands in the same bin as with pandas.cut on the same edges.
        edges = np.linspace(column.lo, column.hi, NUMERIC_BINS + 1)
        codes = np.searchsorted(edges[1:-1], x, side="right")
        return codes.astype(np.int64, copy=False)
    cells = pd.Categorical(frame[column.name].astype(str), categories=list(column.keys))
    codes = np.asarray(cells.codes, dtype=np.int64)
    if (codes < 0).any():
        raise InputError(f"column '{column.name}' holds values outside the declared set")
    return codes


def bin_count(column: NumericColumn | CategoricalColumn) -> int:
    """Number of marginal-table cells of one column: bins or declared values."""
    return NUMERIC_BINS if isinstance(column, NumericColumn) else len(column.values)


def marginal_tv(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    k: int,
    columns: Sequence[str] | None = None,
) -> MarginalReport:
    """k-way marginal total variation distance (spec §7).

    For every set ``S`` of ``k`` columns, with ``p_S`` and ``q_S`` the real and synthetic
    ``k``-way contingency tables normalised by their row counts,

    ``TV_S = 1/2 * ||p_S - q_S||_1 = 1/2 * sum_cells |p_S(cell) - q_S(cell)|``,

    which lies in ``[0, 1]``. Numeric columns are cut into ``NUMERIC_BINS`` (20)
    equal-width bins over the declared ``[lo, hi]`` (never the data range; ``hi`` goes into
    the last bin); categorical columns count by declared value.

    Parameters
    ----------
    real, synth
        Tables over the schema's columns; both are validated (``on_invalid="error"``).
    schema
        The declared domains.
    k
        Columns per marginal, ``1 <= k <= len(columns)``.
    columns
        Columns to take ``k``-sets from (default: all schema columns, in schema order).

    Returns
    -------
    MarginalReport
        Mean and max of ``TV_S`` over all ``k``-sets, and every ``TV_S``.

    Raises
    ------
    InputError
        A table does not fit the schema, an unknown column, or ``k`` out of range.
    """
    real_frame, _ = schema.validate(real, on_invalid="error", what="real table")
    synth_frame, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    names = marginal_columns(schema, columns)
    _check_k(k, len(names))
    real_codes = {n: bin_codes(real_frame, schema[n]) for n in names}
    synth_codes = {n: bin_codes(synth_frame, schema[n]) for n in names}
    return _marginal_report(schema, names, k, real_codes, synth_codes)


def marginal_columns(schema: Schema, columns: Sequence[str] | None) -> list[str]:
    """The columns to score: all of ``schema``'s by default, else ``columns``, checked.

    Raises
    ------
    InputError
        ``columns`` is one string, names an unknown column, or names one twice.
    """
    if columns is None:
        return schema.names
    if isinstance(columns, str):
        raise InputError("columns must be a list of column names, not one string")
    names = [str(c) for c in columns]
    for name in names:
        schema[name]  # raises InputError naming the unknown column
    if len(set(names)) != len(names):
        raise InputError("columns lists a column twice")
    return names


def _check_k(k: int, n_columns: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InputError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= n_columns:
        raise InputError(f"k must be between 1 and the number of columns ({n_columns}), got {k}")


def _marginal_report(
    schema: Schema,
    names: Sequence[str],
    k: int,
    real_codes: Mapping[str, np.ndarray],
    synth_codes: Mapping[str, np.ndarray],
) -> MarginalReport:
    n_real = len(next(iter(real_codes.values())))
    sizes = {n: bin_count(schema[n]) for n in names}
    per_set: dict[tuple[str, ...], float] = {}
    for subset in combinations(names, k):
        real_index, synth_index, cells = _joint_index(
            [real_codes[n] for n in subset],
            [synth_codes[n] for n in subset],
            [sizes[n] for n in subset],
        )
        p = np.bincount(real_index, minlength=cells) / n_real
        q = np.bincount(synth_index, minlength=cells) / len(synth_index)
        # Rounding can push a disjoint-support TV a hair above 1.
        per_set[subset] = min(1.0, 0.5 * float(np.abs(p - q).sum()))
    values = np.fromiter(per_set.values(), dtype=np.float64, count=len(per_set))
    return MarginalReport(k=k, mean=float(values.mean()), max=float(values.max()), per_set=per_set)


def _joint_index(
    real: Sequence[np.ndarray], synth: Sequence[np.ndarray], sizes: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Combine per-column codes into one cell index (mixed radix), for both tables.

    Returns the two index arrays and the number of cells they index into.
    """
    real_index = real[0]
    synth_index = synth[0]
    cells = sizes[0]
    for r, s, size in zip(real[1:], synth[1:], sizes[1:], strict=True):
        if cells * size > _MAX_DENSE_CELLS:
            # Relabel the occupied cells 0..m-1 (m <= rows) so the radix stays small.
            both = np.concatenate([real_index, synth_index])
            _, inverse = np.unique(both, return_inverse=True)
            cells = int(inverse.max()) + 1
            real_index, synth_index = inverse[: len(real_index)], inverse[len(real_index) :]
        real_index = real_index * size + r
        synth_index = synth_index * size + s
        cells *= size
    return real_index, synth_index, cells


# ----------------------------------------------------------------------- TSTR
@dataclass(frozen=True)
class TSTRReport:
    """Train-on-synthetic, test-on-real classification scores (spec §7).

    Attributes
    ----------
    label
        The predicted column.
    accuracy
        Share of real test rows predicted correctly.
    macro_f1
        Unweighted mean of per-class F1 over classes in the test labels or predictions.
    auc
        ROC AUC: of the positive class when the test split has two classes, else the
        macro one-vs-rest mean over the test split's classes; NaN when undefined.
    baseline_accuracy
        Accuracy of always predicting the test split's majority class.
    n_train, n_test
        Synthetic training rows and real test rows.
    classes
        Label values present in the real test split, in declared order.
    model
        Classifier name.
    note
        Why a score is missing or degenerate, else ``None``.
    """

    label: str
    accuracy: float
    macro_f1: float
    auc: float
    baseline_accuracy: float
    n_train: int
    n_test: int
    classes: tuple[str, ...]
    model: str = "hgb"
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN becomes ``None``)."""
        return {
            "label": self.label,
            "model": self.model,
            "accuracy": _json_float(self.accuracy),
            "macro_f1": _json_float(self.macro_f1),
            "auc": _json_float(self.auc),
            "baseline_accuracy": _json_float(self.baseline_accuracy),
            "n_train": self.n_train,
            "n_test": self.n_test,
            "classes": list(self.classes),
            "note": self.note,
        }


_MODELS = ("hgb",)

# Below this many training rows the classifier runs on one thread: OpenMP start-up costs
# more than it saves on small tables, and on a busy machine (CI, a shared server) idle
# threads spinning for a core made a 600-row fit 10-40x slower than the 1-thread fit.
_SINGLE_THREAD_ROWS = 100_000


def tstr(
    synth_train: pd.DataFrame,
    real_test: pd.DataFrame,
    schema: Schema,
    label: str,
    model: str = "hgb",
    random_state: int = 0,
    n_threads: int | None = None,
) -> TSTRReport:
    """Train on synthetic, test on real (spec §7).

    A scikit-learn ``HistGradientBoostingClassifier`` is fitted on ``synth_train`` to
    predict ``label`` from every other schema column, then scored on ``real_test``.
    Both tables are encoded by the schema alone: numeric columns as raw values,
    categorical columns as ordinal codes into the declared values (declared to the model
    as ``categorical_features``), so the encoding never depends on which values a table
    happens to contain.

    Scores: ``accuracy = mean(yhat == y)``; ``macro_f1 = mean_c F1_c``; ``auc`` is
    ``roc_auc(y == c+, P(c+))`` with ``c+`` the later declared of the two test classes, or
    with three or more test classes ``mean_c roc_auc(y == c, P(c))`` over the test
    classes (one-vs-rest macro; a class the model never saw scores ``P(c) = 0``).

    Parameters
    ----------
    synth_train
        Synthetic table to train on.
    real_test
        Real held-out table to test on.
    schema
        The declared domains; ``label`` must be one of its categorical columns.
    label
        Column to predict.
    model
        Classifier; only ``"hgb"`` (histogram gradient boosting).
    random_state
        Seed of the classifier.
    n_threads
        OpenMP threads for the classifier; ``None``: one below 100,000 training rows,
        else all cores.

    Returns
    -------
    TSTRReport
        If the synthetic labels hold a single class the model is not fitted: every row is
        predicted as that class, ``auc`` is NaN and ``note`` says so.

    Raises
    ------
    InputError
        Unknown or non-categorical label, unknown model, or a table not fitting the schema.
    """
    column = _label_column(schema, label)
    if model not in _MODELS:
        raise InputError(f"unknown TSTR model '{model}' (known: {', '.join(_MODELS)})")
    train, _ = schema.validate(synth_train, on_invalid="error", what="synthetic table")
    test, _ = schema.validate(real_test, on_invalid="error", what="real test table")
    return _tstr(train, test, schema, column, random_state, n_threads)


def baseline(real_test: pd.DataFrame, schema: Schema, label: str) -> float:
    """Majority-class accuracy on the test split: ``max_c #{y == c} / n`` (spec §7).

    The accuracy of a constant predictor that knew the test split's most frequent class;
    a TSTR accuracy near this means the synthetic table taught the model nothing.
    """
    column = _label_column(schema, label)
    test, _ = schema.validate(real_test, on_invalid="error", what="real test table")
    return _majority_accuracy(bin_codes(test, column), len(column.values))


def _label_column(schema: Schema, label: str) -> CategoricalColumn:
    if label not in schema:
        raise InputError(
            f"label '{label}' is not a schema column (schema has: {', '.join(schema.names)})"
        )
    column = schema[label]
    if not isinstance(column, CategoricalColumn):
        raise InputError(f"label '{label}' must be a categorical column for TSTR, it is numeric")
    if len(schema) < 2:
        raise InputError(f"TSTR needs at least one column besides the label '{label}'")
    return column


def _majority_accuracy(y: np.ndarray, n_classes: int) -> float:
    return float(np.bincount(y, minlength=n_classes).max() / len(y))


def _features(
    frame: pd.DataFrame, schema: Schema, label: str
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Feature matrix, categorical mask and fallback notes, from the schema only."""
    columns = [c for c in schema.columns if c.name != label]
    X = np.empty((len(frame), len(columns)), dtype=np.float64)
    categorical = np.zeros(len(columns), dtype=bool)
    notes: list[str] = []
    for j, col in enumerate(columns):
        if isinstance(col, NumericColumn):
            X[:, j] = frame[col.name].to_numpy(dtype=np.float64)
        else:
            X[:, j] = bin_codes(frame, col)
            if len(col.values) <= _HGB_MAX_CATEGORIES:
                categorical[j] = True
            else:
                notes.append(
                    f"column '{col.name}' has {len(col.values)} values, more than the "
                    f"{_HGB_MAX_CATEGORIES} the model takes as categories; used as ordinal codes"
                )
    return X, categorical, notes


def _tstr(
    train: pd.DataFrame,
    test: pd.DataFrame,
    schema: Schema,
    column: CategoricalColumn,
    random_state: int,
    n_threads: int | None = None,
) -> TSTRReport:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import f1_score
    from threadpoolctl import threadpool_limits

    n_classes = len(column.values)
    X_train, categorical, notes = _features(train, schema, column.name)
    X_test, _, _ = _features(test, schema, column.name)
    y_train = bin_codes(train, column)
    y_test = bin_codes(test, column)
    test_classes = np.unique(y_test)  # sorted = declared order
    train_classes = np.unique(y_train)

    if len(train_classes) == 1:
        only = int(train_classes[0])
        y_pred = np.full(len(y_test), only, dtype=np.int64)
        proba = None
        notes.append(
            f"the synthetic table has a single '{column.name}' class "
            f"({column.keys[only]!r}); predicted it for every row, AUC undefined"
        )
    else:
        clf = HistGradientBoostingClassifier(
            categorical_features=categorical, random_state=random_state
        )
        if n_threads is None and len(y_train) < _SINGLE_THREAD_ROWS:
            n_threads = 1
        with threadpool_limits(limits=n_threads, user_api="openmp"):
            clf.fit(X_train, y_train)
            y_pred = np.asarray(clf.predict(X_test), dtype=np.int64)
            # Probabilities over all declared classes; classes absent from training get 0.
            proba = np.zeros((len(y_test), n_classes))
            proba[:, np.asarray(clf.classes_, dtype=np.int64)] = clf.predict_proba(X_test)

    auc = math.nan
    if len(test_classes) < 2:
        notes.append(f"the real test split has a single '{column.name}' class; AUC undefined")
    elif proba is not None:
        auc = _auc(y_test, proba, test_classes)

    return TSTRReport(
        label=column.name,
        accuracy=float(np.mean(y_pred == y_test)),
        macro_f1=float(f1_score(y_test, y_pred, average="macro", zero_division=0.0)),
        auc=auc,
        baseline_accuracy=_majority_accuracy(y_test, n_classes),
        n_train=len(y_train),
        n_test=len(y_test),
        classes=tuple(column.keys[int(c)] for c in test_classes),
        model="hgb",
        note="; ".join(notes) if notes else None,
    )


def _auc(y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    if len(classes) == 2:
        positive = int(classes[1])
        return float(roc_auc_score(y == positive, proba[:, positive]))
    # One-vs-rest by hand: sklearn's multi_class="ovr" insists the scores of the listed
    # classes sum to 1, which fails when the synthetic and test class sets differ.
    return float(np.mean([roc_auc_score(y == c, proba[:, c]) for c in classes]))


# ------------------------------------------------------------------- evaluate
def evaluate(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    label: str | None = None,
    test: pd.DataFrame | None = None,
    ks: Iterable[int] = (1, 2, 3),
    random_state: int = 0,
    n_threads: int | None = None,
) -> dict[str, Any]:
    """All spec §7 measures of ``synth`` against ``real``, as a JSON-ready dict.

    ``marginals[str(k)]`` holds the mean and max of ``TV_S = 1/2 ||p_S - q_S||_1`` over
    all ``k``-sets ``S`` (see :func:`marginal_tv`); values of ``k`` above the number of
    columns are skipped. ``tstr`` (see :func:`tstr`) is present when ``label`` is given;
    it tests on ``test`` or, without one, on ``real`` itself.

    Parameters
    ----------
    real
        The real (private) table.
    synth
        The synthetic table.
    schema
        The declared domains.
    label
        Column for TSTR; ``None`` skips TSTR.
    test
        Real held-out rows for TSTR (default: ``real``).
    ks
        Marginal orders to report.
    random_state
        Seed of the TSTR classifier.
    n_threads
        OpenMP threads of the TSTR classifier (see :func:`tstr`).

    Returns
    -------
    dict
        ``{"rows": {"real": n, "synthetic": m}, "marginals": {"1": {...}, ...},
        "tstr": {...}}``; NaN scores are ``None`` so ``json.dumps(allow_nan=False)`` works.

    Raises
    ------
    InputError
        A table does not fit the schema, or the label is unknown or numeric.
    """
    column = _label_column(schema, label) if label is not None else None
    real_frame, _ = schema.validate(real, on_invalid="error", what="real table")
    synth_frame, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    orders = sorted({int(k) for k in ks})
    for k in orders:
        if k < 1:
            raise InputError(f"marginal orders must be at least 1, got {k}")

    names = schema.names
    real_codes = {n: bin_codes(real_frame, schema[n]) for n in names}
    synth_codes = {n: bin_codes(synth_frame, schema[n]) for n in names}
    marginals: dict[str, Any] = {}
    for k in orders:
        if k <= len(names):
            report = _marginal_report(schema, names, k, real_codes, synth_codes)
            marginals[str(k)] = report.to_dict()

    result: dict[str, Any] = {
        "rows": {"real": len(real_frame), "synthetic": len(synth_frame)},
        "marginals": marginals,
    }
    if column is not None:
        if test is None:
            test_frame = real_frame
            own = (
                "tested on the real table itself (train on synthetic, test on the private "
                "table): fine for a data owner's own check, not a held-out estimate"
            )
        else:
            test_frame, _ = schema.validate(test, on_invalid="error", what="real test table")
            own = None
        report_tstr = _tstr(synth_frame, test_frame, schema, column, random_state, n_threads)
        tstr_dict = report_tstr.to_dict()
        tstr_dict["test"] = "real" if test is None else "held-out"
        notes = [n for n in (own, report_tstr.note) if n]
        tstr_dict["note"] = "; ".join(notes) if notes else None
        result["tstr"] = tstr_dict
    return result


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


# ------------------------------------------------------------------ reporting
def format_report(result: Mapping[str, Any]) -> str:
    """Plain-text table of an :func:`evaluate` result, for the command line."""
    lines: list[str] = []
    rows = result.get("rows", {})
    if rows:
        lines.append(f"rows: real {rows.get('real')}, synthetic {rows.get('synthetic')}")
    marginals = result.get("marginals", {})
    if marginals:
        lines.append("")
        lines.append("k-way marginal TV (spec §7; 0 = identical, 1 = disjoint)")
        lines.append(f"  {'k':>2}  {'sets':>5}  {'mean':>7}  {'max':>7}  worst set")
        for k, entry in sorted(marginals.items(), key=lambda kv: int(kv[0])):
            worst = ", ".join(entry.get("worst", []))
            sets = entry.get("sets", "")
            lines.append(
                f"  {k:>2}  {sets:>5}  {_fmt(entry.get('mean'))}  {_fmt(entry.get('max'))}  {worst}"
            )
    tstr_result = result.get("tstr")
    if tstr_result:
        lines.append("")
        lines.append(
            f"TSTR: predict '{tstr_result.get('label')}', trained on {tstr_result.get('n_train')} "
            f"synthetic rows, tested on {tstr_result.get('n_test')} real rows"
        )
        lines.append(
            f"  {'accuracy':<9} {_fmt(tstr_result.get('accuracy'))}"
            f"  (majority class {_fmt(tstr_result.get('baseline_accuracy'))})"
        )
        lines.append(f"  {'macro-F1':<9} {_fmt(tstr_result.get('macro_f1'))}")
        lines.append(f"  {'AUC':<9} {_fmt(tstr_result.get('auc'))}")
        if tstr_result.get("note"):
            lines.append(f"  note: {tstr_result['note']}")
    return "\n".join(lines).lstrip("\n")


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{'n/a':>7}"
    return f"{float(value):7.4f}"
