"""The HTML report of a run: one self-contained file a data steward can archive.

:func:`render_report` builds the page and :func:`write_report` writes it atomically. The
page has no JavaScript and loads nothing: the CSS is inline and every plot is an embedded
base64 PNG, so it opens the same way in ten years, offline, and a mail filter or an
archive tool has nothing to fetch or run.

It opens with a **verdict**: one sentence on the utility of the file written (TSTR
against the real table's own model and the majority class, and the 1-way TV), then the
privacy statement. Sections, in the order a reader needs them:

1. **Utility of the file written**: TSTR, k-way marginal TV, 1-way marginals of real vs
   synthetic, the worst 2-way marginals, per-column summaries.
2. **Rows of the file written**: distinct and duplicated rows; rows equal to a private
   record and the distance to the closest record (DCR), for the owner only.
3. **Privacy guarantee**: the ``(epsilon, delta)`` statement, the adjacency (or Blowfish
   policy), the accounting cross-checks, and what ran (preset, rounds, marginals).
4. **Releases**: one row per mechanism; every round in a collapsed detail.
5. **Ledger notes**. 6. **Schema**: the declared domains.

Utility, copies, DCR, notes, the seed and the validation counts are computed from, or
expose, the private table and are **not** differentially private. ``public_safe=True``
leaves all of them out (and never reads ``real``), so that version can be shared.

This module assembles the page; :mod:`~dpevolve.reporting.sections`,
:mod:`~dpevolve.reporting.utility` and :mod:`~dpevolve.reporting.releases` build the
sections,
:mod:`~dpevolve.reporting.html` holds the HTML pieces and
:mod:`~dpevolve.reporting.figures` draws the plots.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpevolve.data.io import atomic_write, check_writable
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.extras import require
from dpevolve.privacy.ledger import SHAREABLE_KEYS
from dpevolve.reporting.evaluation import verdict
from dpevolve.reporting.html import CSS, escape
from dpevolve.reporting.releases import release_section
from dpevolve.reporting.rows import row_report
from dpevolve.reporting.sections import (
    guarantee_section,
    notes_section,
    other_fields_section,
    run_version,
    schema_section,
    statement,
)
from dpevolve.reporting.utility import released_rows_section, rows_section, utility_section

if TYPE_CHECKING:
    from dpevolve.privacy import Ledger

__all__ = ["render_report", "write_report"]


# ------------------------------------------------------------------------ public API
def render_report(
    *,
    ledger: Mapping[str, Any] | Ledger,
    evaluation: Mapping[str, Any] | None = None,
    real: pd.DataFrame | None = None,
    synthetic: pd.DataFrame | None = None,
    schema: Schema | None = None,
    title: str = "dpevolve report",
    public_safe: bool = False,
    validated: bool = False,
) -> str:
    """The report as one self-contained HTML document.

    Parameters
    ----------
    ledger
        ``Ledger.to_dict()`` of the run (or the :class:`~dpevolve.privacy.Ledger`
        itself); needs ``"epsilon"``, ``"delta"`` and ``"events"``.
    evaluation
        The dict of :func:`dpevolve.reporting.evaluation.evaluate`: k-way TV and TSTR tables.
    real, synthetic
        The real (private) and synthetic tables, both or neither: the 1-way marginal
        plot and the worst-15 2-way TV chart. ``real`` is not read when
        ``public_safe``; ``synthetic`` (released) then gives its distinct and
        duplicated row counts.
    schema
        Declared domains for the plots; default: the schema recorded in the ledger.
    title
        Page title and heading.
    public_safe
        Leave out everything computed from, or exposing, the private table: the
        evaluation, the plots of the real data, ledger notes, validation counts, the
        seed, and ledger fields not known to be public. The result can be shared.
    validated
        ``real`` and ``synthetic`` were already validated by :meth:`Schema.validate`.

    Returns
    -------
    str
        The HTML page (UTF-8 text; no scripts, no external resources).

    Raises
    ------
    InputError
        The ledger lacks ``epsilon``, ``delta`` or ``events``; only one of ``real`` and
        ``synthetic`` is given; or the tables do not fit the schema.
    """
    led = _ledger_dict(ledger)
    if public_safe:
        # Filtered here, once, so that no section can show a private field by mistake.
        led = {k: v for k, v in led.items() if k in SHAREABLE_KEYS}
        tables = None
        released = _released_rows(led, synthetic, schema, validated)
    else:
        tables = _plot_inputs(led, real, synthetic, schema, validated)

    body: list[str] = [f"<h1>{escape(title)}</h1>"]
    body.append(
        f'<p class="meta">Generated {escape(_now())} by dpevolve {escape(_own_version())}; '
        f"run made by dpevolve {escape(run_version(led))}.</p>"
    )
    body.append(_PUBLIC_BANNER if public_safe else _OWNER_BANNER)
    summary = statement(led)
    if not public_safe and evaluation is not None:
        summary = f"<strong>{escape(verdict(evaluation))}</strong></p><p>{summary}"
    body.append(f'<div class="verdict"><p>{summary}</p></div>')
    if public_safe:
        body += [
            "<h2>1. Utility of the file written</h2>",
            "<p>Withheld: every utility measure compares the synthetic table with the "
            "private one, and is not differentially private.</p>",
        ]
        body += released_rows_section(released)
    else:
        body += utility_section(evaluation, tables)
        body += rows_section(evaluation)
    body += guarantee_section(led, public_safe, 3)
    body += release_section(led, 4)
    body += notes_section(led, public_safe, 5)
    body += schema_section(led, 6)
    if not public_safe:
        body += other_fields_section(led)

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def write_report(
    path: str | Path,
    *,
    ledger: Mapping[str, Any] | Ledger,
    evaluation: Mapping[str, Any] | None = None,
    real: pd.DataFrame | None = None,
    synthetic: pd.DataFrame | None = None,
    schema: Schema | None = None,
    title: str = "dpevolve report",
    public_safe: bool = False,
    force: bool = False,
    validated: bool = False,
) -> Path:
    """Write :func:`render_report` to ``path``, atomically.

    Parameters
    ----------
    path
        The HTML file to write; its folder must exist.
    ledger, evaluation, real, synthetic, schema, title, public_safe, validated
        As in :func:`render_report`.
    force
        Replace an existing file.

    Returns
    -------
    pathlib.Path
        Where the report was written.

    Raises
    ------
    InputError
        ``path`` exists and ``force`` is not set, its folder is missing, or the inputs
        are invalid (see :func:`render_report`).
    """
    # Checked before rendering: plots can take a while, and the answer will not change.
    target = check_writable(path, force)
    require("matplotlib", "the HTML report")
    page = render_report(
        ledger=ledger,
        evaluation=evaluation,
        real=real,
        synthetic=synthetic,
        schema=schema,
        title=title,
        public_safe=public_safe,
        validated=validated,
    )

    def write(tmp: Path) -> None:
        tmp.write_text(page, encoding="utf-8")

    atomic_write(target, write)
    return target


# ------------------------------------------------------------------------ inputs
def _ledger_dict(ledger: Mapping[str, Any] | Ledger) -> dict[str, Any]:
    led = dict(ledger) if isinstance(ledger, Mapping) else dict(ledger.to_dict())
    missing = [k for k in ("epsilon", "delta", "events") if k not in led]
    if missing:
        raise InputError(f"the ledger lacks {', '.join(missing)}: pass Ledger.to_dict()")
    return led


def _table_schema(led: Mapping[str, Any], schema: Schema | None) -> Schema:
    if schema is not None:
        return schema
    if not isinstance(led.get("schema"), Mapping):
        raise InputError("the plots need a schema: pass schema= (the ledger records none)")
    return Schema.from_dict(led["schema"])


def _plot_inputs(
    led: Mapping[str, Any],
    real: pd.DataFrame | None,
    synthetic: pd.DataFrame | None,
    schema: Schema | None,
    validated: bool,
) -> tuple[pd.DataFrame, pd.DataFrame, Schema] | None:
    if real is None and synthetic is None:
        return None
    if real is None or synthetic is None:
        raise InputError("give both the real and the synthetic table for the plots, or neither")
    schema = _table_schema(led, schema)
    if not validated:
        real = schema.validate(real, on_invalid="error", what="real table")[0]
        synthetic = schema.validate(synthetic, on_invalid="error", what="synthetic table")[0]
    return real, synthetic, schema


def _released_rows(
    led: Mapping[str, Any], synthetic: pd.DataFrame | None, schema: Schema | None, validated: bool
) -> dict[str, Any] | None:
    """Distinct and duplicated counts of the synthetic (released) table, or ``None``."""
    if synthetic is None:
        return None
    schema = _table_schema(led, schema)
    if not validated:
        synthetic = schema.validate(synthetic, on_invalid="error", what="synthetic table")[0]
    return row_report(synthetic, schema).to_dict()


def _own_version() -> str:
    try:
        return metadata.version("dpevolve")
    except metadata.PackageNotFoundError:
        return "0+unknown"


_PUBLIC_BANNER = (
    '<div class="public"><strong>Public version.</strong> This report shows only the '
    "privacy guarantee, the released quantities, the synthetic table's own row counts and "
    "the declared schema. Everything computed from the private table (utility scores, "
    "plots of the real data, copies and distances to private records, ledger notes, "
    "validation counts) and the seed are left out.</div>"
)
_OWNER_BANNER = (
    '<div class="warning"><strong>For the data owner only.</strong> Parts of this report '
    "are computed from the private table and are <strong>not</strong> differentially "
    "private: the utility scores and plots of the real data, the rows copied from it and "
    "their distances, the ledger notes and validation counts. Keep this file with the "
    "private data; for a version to share, use <code>dpevolve report ... --share</code> "
    "or <code>dpevolve synth --share-report FILE</code>.</div>"
)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
