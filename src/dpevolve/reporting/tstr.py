"""Train on synthetic, test on real (TSTR, docs/math.md §7): accuracy, macro-F1 and AUC.

A classifier is trained on the synthetic table and tested on a real held-out split;
both tables are encoded by the schema alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.extras import require
from dpevolve.metrics import bin_codes

__all__ = ["TSTRReport", "baseline", "label_column", "tstr", "tstr_encoded"]


# HistGradientBoosting refuses categorical features with more than max_bins categories.
_HGB_MAX_CATEGORIES = 255


# ----------------------------------------------------------------------- TSTR
@dataclass(frozen=True)
class TSTRReport:
    """Train-on-synthetic, test-on-real classification scores (docs/math.md §7).

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
    """Train on synthetic, test on real (docs/math.md §7).

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
    column = label_column(schema, label)
    if model not in _MODELS:
        raise InputError(f"unknown TSTR model '{model}' (known: {', '.join(_MODELS)})")
    train, _ = schema.validate(synth_train, on_invalid="error", what="synthetic table")
    test, _ = schema.validate(real_test, on_invalid="error", what="real test table")
    return tstr_encoded(train, test, schema, column, random_state, n_threads)


def baseline(real_test: pd.DataFrame, schema: Schema, label: str) -> float:
    """Majority-class accuracy on the test split: ``max_c #{y == c} / n`` (docs/math.md §7).

    The accuracy of a constant predictor that knew the test split's most frequent class;
    a TSTR accuracy near this means the synthetic table taught the model nothing.
    """
    column = label_column(schema, label)
    test, _ = schema.validate(real_test, on_invalid="error", what="real test table")
    return _majority_accuracy(bin_codes(test, column), len(column.values))


def label_column(schema: Schema, label: str) -> CategoricalColumn:
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


def tstr_encoded(
    train: pd.DataFrame,
    test: pd.DataFrame,
    schema: Schema,
    column: CategoricalColumn,
    random_state: int,
    n_threads: int | None = None,
) -> TSTRReport:
    require("sklearn", "TSTR (train on synthetic, test on real)")
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import f1_score
    from threadpoolctl import threadpool_limits

    n_classes = len(column.values)
    X_train, categorical, notes = _features(train, schema, column.name)
    X_test, _, _ = _features(test, schema, column.name)
    for j in np.flatnonzero(np.isnan(X_train).all(axis=0)) if len(X_train) else ():
        # a column the synthetic table leaves all missing teaches the model nothing (the
        # engine decodes one missing where the releases cannot show its values at all)
        X_train[:, j], X_test[:, j] = 0.0, 0.0
        name = [c.name for c in schema.columns if c.name != column.name][j]
        notes.append(f"column '{name}' holds no value in the synthetic table; left out")
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


def _json_float(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
