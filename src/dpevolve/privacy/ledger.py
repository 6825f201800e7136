"""The privacy ledger: what a run spent, release by release (docs/privacy.md, "The ledger").

A ledger holds the run's events in order, what each release reported about itself
(derived from released values only), free-form metadata and notes. Its top-level
``epsilon`` is composed from the recorded events by the accountant; because every round
is charged at the sensitivity the noise was calibrated for, it is the guarantee fixed
before the run. Rounds an exact search later found cheaper are reported apart as
``ex_post_epsilon``, which is not a guarantee (it depends on earlier noisy outputs).

:data:`SHAREABLE_KEYS` is the one list of top-level keys that are functions of public
inputs and released values; :meth:`Ledger.shareable_dict` keeps exactly those.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from dpevolve.errors import InputError
from dpevolve.pause import reached
from dpevolve.privacy.accountants import Accountant, AccountingResult, checked
from dpevolve.privacy.checks import json_checked, json_float, open_unit
from dpevolve.privacy.events import Event, GaussianEvent

_RESERVED_TOP = frozenset({"epsilon", "delta", "accounting", "events", "notes", "ex_post_epsilon"})
_RESERVED_EVENT = frozenset({"round", "running_epsilon"})
_MAX_RUNNING_PREFIXES = 64

#: Top-level ledger keys that depend only on public inputs (n under replace-one, the
#: schema, the policy, public data, the budget and settings) and released values.
SHAREABLE_KEYS = frozenset(
    {
        "epsilon",
        "delta",
        "accounting",
        "events",
        "ex_post_epsilon",
        "dpevolve_version",
        "noise",
        "adjacency",
        "private_rows",
        "fit_number",
        "budget",
        "preset",
        "schedule",
        "distance",
        "backend",
        "mechanism",
        "pubmix",
        "vote",
        "policy",
        "reach",
        "l2_sensitivity",
        "invalid_rows",
        "noise_multiplier",
        "sigma",
        "schema",
        "pilot",
        "marginals",
        "fits",
        "details",
        "config",
        "engine",
    }
)

#: An event's ``info`` key naming the exact sensitivity a public search found for it.
EXACT_SENSITIVITY = "exact_sensitivity"


class LedgerJson:
    """Writing a ledger's JSON (the full one or its shareable part), for both ledgers."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def shareable_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self, shareable: bool = False) -> str:
        data = self.shareable_dict() if shareable else self.to_dict()
        return json.dumps(data, indent=2, allow_nan=False) + "\n"

    def write(self, path: str | os.PathLike[str], shareable: bool = False) -> None:
        """Write the JSON atomically: a temporary file in the same folder, then rename."""
        from dpevolve.data.io import atomic_write

        target = Path(path)
        if not target.parent.is_dir():
            raise InputError(f"ledger folder does not exist: {target.parent}")
        text = self.to_json(shareable)
        atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))


class Ledger(LedgerJson):
    """Privacy ledger.

    ``to_dict()`` gives JSON with top-level ``"epsilon"`` and ``"delta"`` (the
    guarantee of the whole run), ``"accounting"`` (``method``, ``by_method``,
    ``target_delta``), ``"events"`` (one object per release: ``round``, ``mechanism``,
    the event's parameters, the release's own info and ``running_epsilon``),
    ``"notes"``, and free-form metadata (schema, preset, version, policy...).
    """

    def __init__(
        self,
        delta: float,
        metadata: Mapping[str, Any] | None = None,
        *,
        accountant: Accountant | None = None,
    ) -> None:
        self.delta = open_unit("delta", delta)
        self.accountant = accountant if accountant is not None else Accountant(self.delta)
        if self.accountant.delta != self.delta:
            raise InputError("the ledger's accountant must use the ledger's delta")
        # One list of (event, entry) pairs: a release is appended in one step, so an
        # interrupt never leaves an event without its entry (dpevolve.privacy.interrupt).
        self._records: list[tuple[Event, dict[str, Any]]] = []
        self._metadata: dict[str, Any] = {}
        self._notes: list[str] = []
        self._cache: tuple[int, AccountingResult, list[float | None]] | None = None
        if metadata:
            self.add_metadata(**metadata)
        reached("release:0")

    def record(self, event: Event, round: int | None = None, **info: Any) -> None:
        """Append one release. ``round`` defaults to the previous round + 1."""
        checked([event])
        if round is None:
            prev = self._records[-1][1]["round"] if self._records else 0
            round = (prev if isinstance(prev, int) else 0) + 1
        clash = (_RESERVED_EVENT | event.to_dict().keys()) & info.keys()
        if clash:
            raise InputError(f"ledger info may not override {sorted(clash)}")
        entry = {"round": int(round), **json_checked("ledger info", info)}
        self._records.append((event, entry))
        self._cache = None
        reached(f"release:{len(self._records)}")

    def add_metadata(self, **kv: Any) -> None:
        """Set free-form top-level keys (schema, preset, version, policy...)."""
        clash = _RESERVED_TOP & kv.keys()
        if clash:
            raise InputError(f"metadata may not use the reserved keys {sorted(clash)}")
        self._metadata.update(json_checked("ledger metadata", kv))

    def note(self, text: str) -> None:
        """Add a one-line note (kept out of the shareable ledger)."""
        self._notes.append(str(text))

    @property
    def events(self) -> tuple[Event, ...]:
        return tuple(event for event, _ in self._records)

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self._metadata)

    def result(self) -> AccountingResult:
        """The whole run's guarantee (tightest method)."""
        return self._compute()[1]

    def running_epsilons(self) -> list[float | None]:
        return list(self._compute()[2])

    def spent(self) -> float:
        """Epsilon of the events recorded so far (for progress displays)."""
        return self.result().epsilon if self._records else 0.0

    def ex_post_epsilon(self) -> float | None:
        """Epsilon with each round at the exact sensitivity its search found; ``None``
        when no round was searched. Not a guarantee: which rounds are cheap depends on
        earlier noisy outputs."""
        if not any(EXACT_SENSITIVITY in entry for _, entry in self._records):
            return None
        events = [
            replace(ev, sensitivity=float(entry[EXACT_SENSITIVITY]))
            if isinstance(ev, GaussianEvent) and EXACT_SENSITIVITY in entry
            else ev
            for ev, entry in self._records
        ]
        return self.accountant.epsilon(events).epsilon

    def _compute(self) -> tuple[int, AccountingResult, list[float | None]]:
        events = self.events
        n = len(events)
        if self._cache is not None and self._cache[0] == n:
            return self._cache
        result = self.accountant.epsilon(events)
        running = self.accountant.running_epsilons(
            events, closed_forms_only=n > _MAX_RUNNING_PREFIXES
        )
        self._cache = (n, result, running)
        return self._cache

    def to_dict(self) -> dict[str, Any]:
        _, result, running = self._compute()
        events = [
            {
                "round": entry["round"],
                **event.to_dict(),
                **{k: v for k, v in entry.items() if k != "round"},
                "running_epsilon": None if eps is None else json_float(eps),
            }
            for (event, entry), eps in zip(self._records, running, strict=True)
        ]
        out: dict[str, Any] = {
            "epsilon": json_float(result.epsilon),
            "delta": result.delta,
            "accounting": {
                "method": result.method,
                "by_method": {k: json_float(v) for k, v in result.by_method.items()},
                "target_delta": self.delta,
            },
            "events": events,
            "notes": list(self._notes),
        }
        ex_post = self.ex_post_epsilon()
        if ex_post is not None:
            out["ex_post_epsilon"] = {
                "epsilon": json_float(ex_post),
                "note": "not a guarantee: rounds charged at the exact sensitivity a public "
                "search found; which rounds are cheap depends on earlier noisy outputs",
            }
        out.update(self._metadata)
        return out

    def shareable_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` restricted to :data:`SHAREABLE_KEYS`; ``withheld`` lists the
        rest (notes, validation counts: computed from the private table, not privatised)."""
        full = self.to_dict()
        out = {k: v for k, v in full.items() if k in SHAREABLE_KEYS}
        out["withheld"] = sorted(set(full) - SHAREABLE_KEYS)
        return out


class SharedLedger(LedgerJson):
    """A ledger read back from its shareable form (a saved model holds only this).

    It answers like a :class:`Ledger` (``to_dict``, ``shareable_dict``, ``to_json``,
    ``write``, ``result``) and records nothing: its events have happened.
    """

    def __init__(self, shareable: Mapping[str, Any]) -> None:
        kept = {k: v for k, v in shareable.items() if k in SHAREABLE_KEYS}
        self._data = json.loads(json.dumps(kept, allow_nan=False))  # a private, plain copy
        self.delta = float(self._data["delta"])

    @classmethod
    def of(cls, ledger: Ledger | SharedLedger) -> SharedLedger:
        """The shareable part of ``ledger``: the keys of :data:`SHAREABLE_KEYS` only."""
        return cls(ledger.shareable_dict())

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._data))

    def shareable_dict(self) -> dict[str, Any]:
        out = self.to_dict()
        out["withheld"] = []
        return out

    def result(self) -> AccountingResult:
        accounting = self._data["accounting"]
        return AccountingResult(
            _unbounded(self._data["epsilon"]),
            float(self._data["delta"]),
            str(accounting["method"]),
            {k: _unbounded(v) for k, v in accounting["by_method"].items()},
        )


def _unbounded(value: float | None) -> float:
    """A JSON epsilon back to a float (null stood for an unbounded one)."""
    return math.inf if value is None else float(value)
