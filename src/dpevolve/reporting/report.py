"""The HTML report of a run: one self-contained file a data steward can archive.

:func:`render_report` builds the page and :func:`write_report` writes it atomically. The
page has no JavaScript and loads nothing: the CSS is inline and every plot is an embedded
base64 PNG, so it opens the same way in ten years, offline, and a mail filter or an
archive tool has nothing to fetch or run.

Sections, in the order a reader needs them:

1. **Privacy guarantee**: the ``(epsilon, delta)`` statement in plain words, the adjacency
   (or Blowfish policy) it holds under, the accounting method and its cross-checks, seed,
   reproducibility, version, reach, sensitivity and noise.
2. **Releases**: running epsilon per round (plot) and every release event (table).
3. **Ledger notes**.
4. **Utility**: k-way marginal TV, TSTR with the majority baseline, 1-way marginals of real
   vs synthetic and the worst 2-way marginals.
5. **Schema**: the declared domains.

Sections 3 and 4, the seed and the validation counts are computed from, or expose, the
private table and are **not** differentially private. ``public_safe=True`` leaves all of
them out (and never reads ``real``), so that version can be shared.

This module assembles the page; :mod:`~dpevolve.reporting.sections` builds each section,
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
from dpevolve.reporting.html import CSS, escape
from dpevolve.reporting.sections import (
    guarantee_section,
    notes_section,
    other_fields_section,
    release_section,
    run_version,
    schema_section,
    utility_section,
)

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
        plot and the worst-15 2-way TV chart. Not read when ``public_safe``.
    schema
        Declared domains for the plots; default: the schema recorded in the ledger.
    title
        Page title and heading.
    public_safe
        Leave out everything computed from, or exposing, the private table: the
        evaluation, the plots of the real data, ledger notes, validation counts, the
        seed, and ledger fields not known to be public. The result can be shared.

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
    plot_tables = None
    if public_safe:
        # Filtered here, once, so that no section can show a private field by mistake.
        led = {k: v for k, v in led.items() if k in SHAREABLE_KEYS}
    else:
        plot_tables = _plot_inputs(led, real, synthetic, schema)

    body: list[str] = [f"<h1>{escape(title)}</h1>"]
    body.append(
        f'<p class="meta">Generated {escape(_now())} by dpevolve {escape(_own_version())}; '
        f"run made by dpevolve {escape(run_version(led))}.</p>"
    )
    if public_safe:
        body.append(
            '<div class="public"><strong>Public version.</strong> This report shows only '
            "the privacy guarantee, the released quantities and the declared schema. "
            "Everything computed from the private table (utility scores, plots of the "
            "real data, ledger notes, validation counts) and the seed are left out.</div>"
        )
    else:
        body.append(
            '<div class="warning"><strong>For the data owner only.</strong> Parts of this '
            "report are computed from the private table and are <strong>not</strong> "
            "differentially private: the utility scores and plots of the real data, the "
            "ledger notes and validation counts. The seed is shown too; anyone who knows "
            "it can regenerate the release noise. Keep this file with the private data; "
            "for a version to share, use <code>dpevolve synth --share-report FILE</code> "
            "(in Python: <code>write_report(..., public_safe=True)</code>)."
            "</div>"
        )
    body += guarantee_section(led, public_safe)
    body += release_section(led)
    body += notes_section(led, public_safe)
    if public_safe:
        body += [
            "<h2>4. Utility</h2>",
            "<p>Withheld: every utility measure compares the synthetic table with the "
            "private one, and is not differentially private.</p>",
        ]
    else:
        body += utility_section(evaluation, plot_tables)
    body += schema_section(led)
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
) -> Path:
    """Write :func:`render_report` to ``path``, atomically.

    Parameters
    ----------
    path
        The HTML file to write; its folder must exist.
    ledger, evaluation, real, synthetic, schema, title, public_safe
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


def _plot_inputs(
    led: Mapping[str, Any],
    real: pd.DataFrame | None,
    synthetic: pd.DataFrame | None,
    schema: Schema | None,
) -> tuple[pd.DataFrame, pd.DataFrame, Schema] | None:
    if real is None and synthetic is None:
        return None
    if real is None or synthetic is None:
        raise InputError("give both the real and the synthetic table for the plots, or neither")
    if schema is None:
        if not isinstance(led.get("schema"), Mapping):
            raise InputError("the plots need a schema: pass schema= (the ledger records none)")
        schema = Schema.from_dict(led["schema"])
    return real, synthetic, schema


def _own_version() -> str:
    try:
        return metadata.version("dpevolve")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
