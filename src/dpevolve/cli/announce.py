"""What ``synth`` says: before it spends (a run repeated from its ledger, a tiny
table), and after (the choices made inside the run, every file written).

``dpevolve synth --config LEDGER`` repeats the ledger's run as it ran: its settings
(the ``config`` block), the rows it wrote and its seed (post-processing only: the
privacy noise is drawn afresh), and says, as the Python API does on a second ``fit()``,
that the budget is spent again. A private table too small for its budget gets one line
with the figure before anything is spent.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpevolve.cli.common import say
from dpevolve.data.io import read_yaml
from dpevolve.errors import InputError
from dpevolve.privacy.budget import Budget

__all__ = [
    "ROWS_PER_SIGMA",
    "Rerun",
    "closing_line",
    "read_run_file",
    "rerun_of",
    "rerun_warning",
    "say_choices",
    "small_table_warning",
]

#: Fewest private rows per unit of noise (the standard deviation of one count released
#: with the whole budget) for a release to say much: the synthesizers split the budget
#: over tens of counts, each noisier than that.
ROWS_PER_SIGMA = 25


def read_run_file(config: Path) -> Any:
    """A YAML run file, or a JSON ledger read as JSON (YAML 1.1 takes ``1e-06``, as
    JSON writes a small delta, for text)."""
    if config.suffix.lower() == ".json" and config.is_file():
        try:
            return json.loads(config.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise InputError(f"run file {config} is not valid JSON") from None
    return read_yaml(config, "run file")


@dataclass(frozen=True)
class Rerun:
    """What a ledger's run drew: its rows, its seed, and its guarantee (to say)."""

    rows: int | None
    seed: int | None
    epsilon: Any
    delta: Any

    def keep(self, rows: int | None, seed: int | None) -> tuple[int | None, int | None]:
        """``rows`` and ``seed`` where given, else the ledger's."""
        return (self.rows if rows is None else rows, self.seed if seed is None else seed)


def rerun_of(config: Path | None) -> Rerun | None:
    """The rows and seed of the ledger ``config`` (``None``: not a ledger, or no config).

    A run file (a method's words alone) is a recipe, not a run: it gives no rows or seed.
    """
    if config is None:
        return None
    data = read_run_file(config)
    if not (isinstance(data, dict) and isinstance(data.get("config"), dict) and "events" in data):
        return None
    rows, seed = data.get("rows_written"), data.get("seed")
    return Rerun(
        rows if isinstance(rows, int) and not isinstance(rows, bool) else None,
        seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        data.get("epsilon"),
        data.get("delta"),
    )


def rerun_warning(config: Path | None, rerun: Rerun) -> str:
    """One line: the run repeated, and its budget spent again."""
    what = f"{rerun.rows} rows" if rerun.rows is not None else "as many rows as PRIVATE has"
    epsilon, delta = rerun.epsilon, rerun.delta
    spent = (
        f"its budget (epsilon={epsilon:.4g}, delta={delta:.3g}) is spent again"
        if isinstance(epsilon, (int, float)) and isinstance(delta, (int, float))
        else "its budget is spent again"
    )
    return (
        f"warning: --config {config} repeats that ledger's run ({what}, its seed and every "
        f"setting of its config; the privacy noise is new): {spent}, and on the same table "
        "the two runs' guarantees add up"
    )


def small_table_warning(n: int, budget: Budget) -> str | None:
    """One line when ``n`` private rows are too few for ``budget`` (see
    :data:`ROWS_PER_SIGMA`), else ``None``."""
    from dpevolve.privacy import default_delta, gaussian_sigma
    from dpevolve.privacy.conversions import rho_for_epsilon

    if n < 1:
        return None
    if budget.rho is not None:
        rho = budget.rho
    else:
        assert budget.epsilon is not None
        delta = budget.delta if budget.delta is not None else default_delta(max(n, 2))
        rho = rho_for_epsilon(budget.epsilon, delta)
    # One replace-one count (L2 sensitivity sqrt 2) with all of rho.
    sigma = gaussian_sigma(math.sqrt(2.0), rho)
    needed = math.ceil(ROWS_PER_SIGMA * sigma)
    if n >= needed:
        return None
    return (
        f"warning: the private table has {n} rows; at this budget one count released with "
        f"the whole budget has noise of standard deviation {sigma:.3g}, and a synthesizer "
        f"splits the budget over many counts: below about {needed} rows the synthetic "
        "table is mostly noise"
    )


def closing_line(
    result: Any,
    output: Path,
    rows: int,
    ledger: Path,
    report: Path | None,
    share_report: Path | None,
    share_ledger: Path | None,
) -> str:
    """The last line of a run: every file written, and the guarantee."""
    extras = [
        f"{path} ({what})"
        for path, what in (
            (report, "owner's report: not DP, keep it with the data"),
            (share_report, "report safe to publish"),
            (share_ledger, "ledger safe to publish"),
        )
        if path is not None
    ]
    return (
        f"wrote {output} ({rows} rows), {ledger} "
        f"(epsilon={result.epsilon:.4g}, delta={result.delta:.3g})"
        + "".join(f", {extra}" for extra in extras)
    )


def say_choices(model: Any, quiet: bool) -> None:
    """What the run decided from facts it learnt (the private row count, the invalid
    rows), one line each, from the fitted model, never from its ledger."""
    validation = getattr(model, "validation_", None)
    if validation is not None and validation.rows_in != validation.rows_out:
        say(
            quiet,
            f"private table: --on-invalid {validation.mode} kept {validation.rows_out} of "
            f"{validation.rows_in} rows (counts from the private data: in the ledger, not "
            "in --share-ledger)",
        )
    given = model.budget()
    if given.delta is None and given.epsilon is not None:
        delta = given.for_rows(model.n_private_).delta
        say(quiet, f"delta: {delta:.3g} = min(1e-5, 1/(n ln n)) (--delta not given)")
