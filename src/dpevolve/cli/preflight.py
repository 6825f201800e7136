"""Checks that run before any budget is spent: whatever can fail after the release is
tried here first, so a run never spends its budget and then stops.

* :func:`check_paths`: every output is writable, none is replaced without ``--force``,
  and none names an input file, even with ``--force`` (resolved paths and
  :func:`os.path.samefile`).
* :func:`check_rows`: ``--rows`` whose table would not fit on disk or, when a report
  holds the whole table, in memory, from a bytes-per-row estimate read off the schema
  (without a report the rows are written block by block: memory bounded, docs/scale.md).
* :func:`rehearse_report`: the report (and its evaluation) made in memory on a few rows
  drawn from the schema alone, so a column type the report cannot handle stops the run
  before the release, not after it.

:func:`preflight` runs all that apply; commands call it once, where they validate their
arguments. Nothing here reads a private record.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpevolve.data.columns import MISSING
from dpevolve.data.io import check_writable, table_suffix
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.types import DateColumn
from dpevolve.errors import InputError
from dpevolve.extras import require

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "check_paths",
    "check_rows",
    "check_table_output",
    "preflight",
    "rehearse_report",
    "row_bytes",
]

# In memory a synthetic row lives several times over (encoded, decoded, the report's
# validated copy and its codes): this many 8-byte cells per column, per row.
_MEMORY_COPIES = 6
_REHEARSAL_ROWS = 40


def preflight(
    *,
    inputs: Sequence[Path | None],
    outputs: Sequence[Path | None],
    force: bool,
    schema: Schema | None = None,
    rows: int | None = None,
    table: Path | None = None,
    report: bool = False,
    share_report: bool = False,
) -> None:
    """Every check that applies, before anything is spent (see the module docstring).

    Parameters
    ----------
    inputs
        Files the command reads (``None`` entries are skipped).
    outputs
        Files the command writes (``None`` entries are skipped).
    force
        ``--force``: replace existing outputs (never an input).
    schema
        The declared domains, for ``rows`` and the report rehearsal.
    rows
        Synthetic rows to write (``--rows``), or ``None`` for as many as the input.
    table
        The output table: its format must be one the writer knows, with its extra.
    report, share_report
        An owner's and a shareable report will be written.

    Raises
    ------
    InputError
        The first check that fails, in one line.
    """
    check_paths(inputs, outputs, force)
    if table is not None:
        check_table_output(table)
    if schema is not None and rows is not None:
        first = next((p for p in outputs if p is not None), None)
        folder = first.parent if first is not None else Path(".")
        check_rows(rows, schema, folder, in_memory=report or share_report)
    if schema is not None and (report or share_report):
        rehearse_report(schema, owner=report, public=share_report)


def check_paths(inputs: Sequence[Path | None], outputs: Sequence[Path | None], force: bool) -> None:
    """Outputs are writable, distinct, never an input, and replaced only with ``force``."""
    sources = [Path(p) for p in inputs if p is not None]
    seen: list[Path] = []
    for raw in outputs:
        if raw is None:
            continue
        path = Path(raw)
        for source in sources:
            if _same_file(path, source):
                raise InputError(
                    f"output {path} is the input {source}: choose another output path "
                    "(an input is never overwritten, not even with --force)"
                )
        if any(_same_file(path, other) for other in seen):
            raise InputError(f"output {path} is named twice: give each output its own path")
        if path.is_dir():
            raise InputError(f"output {path} is a folder: give a file name")
        check_writable(path, force)
        if not os.access(path.parent, os.W_OK):
            raise InputError(f"output folder is not writable: {path.parent}")
        seen.append(path)


def check_table_output(path: Path) -> None:
    """The table can be written: a known suffix, and pyarrow for Parquet."""
    if table_suffix(path) in (".parquet", ".pq"):
        require("pyarrow", "writing .parquet tables")


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:  # one of them does not exist yet
        return False


def row_bytes(schema: Schema) -> tuple[int, int]:
    """Estimated bytes of one synthetic row: ``(in memory, as CSV text)``."""
    memory = 8 * _MEMORY_COPIES * len(schema)
    text = 0
    for col in schema.columns:
        if isinstance(col, DateColumn):
            text += len(col.text(col.hi)) + 1
        elif isinstance(col, NumericColumn):
            digits = len(str(int(max(abs(col.lo), abs(col.hi))))) + 1
            text += digits + (0 if col.integer else 17) + 1  # a float's repr: 17 digits
        else:
            text += max(len(str(v)) for v in col.values) + 1
    return memory, text


def check_rows(rows: int, schema: Schema, folder: Path, in_memory: bool = True) -> None:
    """``rows`` synthetic rows fit on the disk of ``folder`` and, ``in_memory`` (the
    whole table held at once, as a report does), in memory."""
    memory, text = row_bytes(schema)
    available = _available_memory() if in_memory else None
    if available is not None and rows * memory > available:
        raise InputError(
            f"--rows {rows} would need about {_size(rows * memory)} of memory and "
            f"{_size(available)} is available: ask for at most {available // memory} rows"
        )
    if folder.is_dir():
        free = shutil.disk_usage(folder).free
        if rows * text > free:
            raise InputError(
                f"--rows {rows} would write about {_size(rows * text)} and {folder} has "
                f"{_size(free)} free: ask for at most {free // text} rows"
            )


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def rehearse_report(schema: Schema, owner: bool = True, public: bool = True) -> None:
    """Make the report in memory on rows drawn from the schema alone (no private data).

    The rows go through the same path as a real run's: decoded as the synthetic file is
    written, validated again, evaluated and rendered. A failure is an :class:`InputError`
    raised before the budget is spent.
    """
    require("matplotlib", "--report and --share-report")
    if owner and schema.label is not None:
        require("sklearn", "the report's train-on-synthetic, test-on-real scores")
    from dpevolve.data.encoding import decode, encode
    from dpevolve.reporting.evaluation import evaluate
    from dpevolve.reporting.report import render_report

    real = schema_rows(schema, _REHEARSAL_ROWS, 0)
    written = decode(encode(schema_rows(schema, _REHEARSAL_ROWS // 2, 1), schema), schema)
    ledger: dict[str, Any] = {"epsilon": 1.0, "delta": 1e-5, "events": []}
    ledger["schema"] = schema.to_dict()
    try:
        synthetic = schema.validate(written, on_invalid="error", what="synthetic table")[0]
        if owner:
            evaluation = evaluate(real, synthetic, schema, label=schema.label, validated=True)
            render_report(
                ledger=ledger, evaluation=evaluation, real=real, synthetic=synthetic,
                schema=schema, validated=True,
            )  # fmt: skip
        if public:
            render_report(
                ledger=ledger, synthetic=synthetic, schema=schema, public_safe=True,
                validated=True,
            )  # fmt: skip
    except InputError as exc:
        raise InputError(f"the report cannot be made for this schema: {exc}") from None
    except Exception as exc:  # a report bug: say so now, not after the release
        raise InputError(
            f"the report cannot be made for this schema ({type(exc).__name__}); nothing "
            "was spent: drop --report/--share-report and make it later with `dpevolve report`"
        ) from None


def schema_rows(schema: Schema, n: int, seed: int) -> pd.DataFrame:
    """``n`` validated rows spread over the declared domains (public: schema only);
    a nullable column gets some missing cells."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for col in schema.columns:
        if isinstance(col, NumericColumn):
            lo, hi = col.whole_range
            values = col.listed(rng.uniform(lo, hi, n))  # declared values: those only
            if col.integer:
                values = np.clip(np.round(values), lo, hi)
            if col.nullable:
                values[:: max(2, math.ceil(n / 4))] = np.nan
            out[col.name] = values
        else:
            keys = np.array(col.keys, dtype=object)
            cells = keys[rng.integers(0, len(keys), n)]
            if col.nullable:
                cells[:: max(2, math.ceil(n / 4))] = MISSING
            out[col.name] = cells
    return pd.DataFrame(out)
