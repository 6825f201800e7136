"""What ``synth`` says before it spends: a run repeated from its ledger, a tiny table.

``dpevolve synth --config LEDGER`` repeats the ledger's run as it ran: its settings
(the ``config`` block), the rows it wrote and its seed (post-processing only: the
privacy noise is drawn afresh), and says, as the Python API does on a second ``fit()``,
that the budget is spent again. A private table too small for its budget gets one line
with the figure before anything is spent.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dpevolve.config import BudgetSpec
from dpevolve.data.io import read_yaml
from dpevolve.errors import InputError

__all__ = [
    "ROWS_PER_SIGMA",
    "read_run_file",
    "rerun_of",
    "rerun_warning",
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


def rerun_of(config: Path | None) -> dict[str, Any] | None:
    """The rows and seed of the ledger ``config`` (``None``: not a ledger, or no config).

    A run file (``RunSpec`` words alone) is a recipe, not a run: it gives no rows or seed.
    """
    if config is None:
        return None
    data = read_run_file(config)
    if not (isinstance(data, dict) and isinstance(data.get("config"), dict) and "events" in data):
        return None
    rows, seed = data.get("rows_written"), data.get("seed")
    return {
        "rows": rows if isinstance(rows, int) and not isinstance(rows, bool) else None,
        "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        "epsilon": data.get("epsilon"),
        "delta": data.get("delta"),
    }


def rerun_warning(config: Path | None, rerun: dict[str, Any]) -> str:
    """One line: the run repeated, and its budget spent again."""
    rows = rerun.get("rows")
    what = f"{rows} rows" if rows is not None else "as many rows as PRIVATE has"
    epsilon = rerun.get("epsilon")
    spent = (
        f"its budget (epsilon={epsilon:.4g}, delta={rerun.get('delta'):.3g}) is spent again"
        if isinstance(epsilon, (int, float)) and isinstance(rerun.get("delta"), (int, float))
        else "its budget is spent again"
    )
    return (
        f"warning: --config {config} repeats that ledger's run ({what}, its seed and every "
        f"setting of its config; the privacy noise is new): {spent}, and on the same table "
        "the two runs' guarantees add up"
    )


def small_table_warning(n: int, budget: BudgetSpec) -> str | None:
    """One line when ``n`` private rows are too few for ``budget`` (see
    :data:`ROWS_PER_SIGMA`), else ``None``."""
    from dpevolve.privacy import default_delta
    from dpevolve.privacy.conversions import rho_for_epsilon

    if n < 1:
        return None
    if budget.rho is not None:
        rho = budget.rho
    else:
        assert budget.epsilon is not None
        delta = budget.delta if budget.delta is not None else default_delta(max(n, 2))
        rho = rho_for_epsilon(budget.epsilon, delta)
    # One replace-one count (L2 sensitivity sqrt 2) with all of rho: sigma = 1 / sqrt(rho).
    sigma = 1.0 / math.sqrt(rho)
    needed = math.ceil(ROWS_PER_SIGMA * sigma)
    if n >= needed:
        return None
    return (
        f"warning: the private table has {n} rows; at this budget one count released with "
        f"the whole budget has noise of standard deviation {sigma:.3g}, and a synthesizer "
        f"splits the budget over many counts: below about {needed} rows the synthetic "
        "table is mostly noise"
    )
