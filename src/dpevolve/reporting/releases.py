"""The report's release section: one summary row per mechanism, the rounds collapsed.

Built from the ledger's events alone (released facts), so the public version shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpevolve.reporting.figures import running_epsilon_figure
from dpevolve.reporting.html import compact, escape, figure_html, fmt_num, html_table, num_cell

__all__ = ["MARGINAL_MECHANISM", "pe_rounds", "release_section"]

#: The ledger's mechanism name of the marginal release (the ``hybrid`` preset's).
MARGINAL_MECHANISM = "marginals"

_EVENT_COLUMNS = frozenset(
    {"round", "mechanism", "kind", "sensitivity", "sigma", "noise_multiplier", "rho"}
    | {"running_epsilon", "claimed_epsilon", "claimed_delta", "symmetric", "orientation"}
)


def pe_rounds(events: Sequence[Mapping[str, Any]]) -> int:
    """Releases that were Private Evolution rounds (everything but marginal releases)."""
    return sum(1 for e in events if e.get("mechanism") != MARGINAL_MECHANISM)


def release_section(led: Mapping[str, Any], number: int) -> list[str]:
    events = [e for e in led.get("events") or [] if isinstance(e, Mapping)]
    out = [f"<h2>{number}. Releases</h2>"]
    if not events:
        out.append("<p>No releases were recorded: no private data was used.</p>")
        return out
    out.append(
        f"<p>{len(events)} release{'s' if len(events) != 1 else ''} of private "
        "information, each recorded in the ledger, summarised by mechanism. Running "
        "&epsilon; is the guarantee of the releases so far; the last one is the run's.</p>"
    )
    out.append(html_table(_SUMMARY_HEADER, _summary_rows(events), "releases"))
    detail = _detail(led, events)
    out.append(
        f"<details><summary>Every release, round by round ({len(events)})</summary>"
        + "".join(detail)
        + "</details>"
    )
    return out


_SUMMARY_HEADER = [
    "mechanism",
    "releases",
    "rounds",
    "sensitivity S",
    "noise",
    "rho in total",
    "running epsilon after the last",
]


def _summary_rows(events: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for event in events:
        groups.setdefault(str(event.get("mechanism", "")), []).append(event)
    rows = []
    for mechanism, group in groups.items():
        rounds = [int(e["round"]) for e in group if isinstance(e.get("round"), int)]
        span = (
            ""
            if not rounds
            else str(rounds[0])
            if len(rounds) == 1
            else f"{min(rounds)}–{max(rounds)}"
        )
        rhos = [float(e["rho"]) for e in group if isinstance(e.get("rho"), (int, float))]
        rows.append(
            [
                escape(mechanism),
                num_cell(len(group)),
                f'<td class="num">{escape(span)}</td>',
                f'<td class="num">{escape(_spread([e.get("sensitivity") for e in group]))}</td>',
                escape(_spread([_noise(e) for e in group])),
                num_cell(sum(rhos) if rhos else None, 4),
                num_cell(group[-1].get("running_epsilon"), 4),
            ]
        )
    return rows


def _spread(values: Sequence[Any]) -> str:
    """One value when all agree, else the first and last."""
    shown = [fmt_num(v, 4) if isinstance(v, float) else str(v) for v in values if v is not None]
    if not shown:
        return ""
    unique = list(dict.fromkeys(shown))
    return unique[0] if len(unique) == 1 else f"{unique[0]} … {unique[-1]}"


def _detail(led: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    points = [
        (e.get("round"), e["running_epsilon"])
        for e in events
        if isinstance(e.get("running_epsilon"), (int, float))
    ]
    if len(points) > 1:
        budget = led.get("budget")
        target = budget.get("epsilon") if isinstance(budget, Mapping) else None
        out.append(
            figure_html(
                running_epsilon_figure(points, target),
                "Running epsilon after each round",
                "Running &epsilon; after each release (at the run's &delta;).",
            )
        )
    rows = [
        [
            num_cell(e.get("round")),
            escape(e.get("mechanism", "")),
            num_cell(e.get("sensitivity"), 4),
            escape(_noise(e)),
            num_cell(e.get("noise_multiplier"), 4),
            num_cell(e.get("rho"), 4),
            num_cell(e.get("running_epsilon"), 4),
            escape(_details(e)),
        ]
        for e in events
    ]
    header = ["round", "mechanism", "sensitivity S", "noise (sigma / beta)", "z = sigma / S"]
    header += ["rho", "running epsilon", "released facts"]
    out.append(html_table(header, rows, table_id="events"))
    return out


def _noise(event: Mapping[str, Any]) -> str:
    kind = event.get("kind")
    if kind == "gaussian" or "sigma" in event:
        return f"sigma = {fmt_num(event.get('sigma'), 4)}"
    params = event.get("params")
    if kind == "privacy_loss_pair" and isinstance(params, Mapping) and "beta" in params:
        return f"beta = {fmt_num(params['beta'], 4)}"
    if kind == "approx_dp":
        return f"(eps, delta) = ({fmt_num(event.get('epsilon'))}, {fmt_num(event.get('delta'))})"
    if kind == "zero_cost":
        return "none (reads no private data)"
    return ""


def _details(event: Mapping[str, Any]) -> str:
    parts = []
    for key, value in event.items():
        if key in _EVENT_COLUMNS:
            continue
        if key == "params" and isinstance(value, Mapping):
            parts += [f"{k} = {compact(v)}" for k, v in value.items() if k != "beta"]
        elif not (event.get("kind") == "approx_dp" and key in ("epsilon", "delta")):
            parts.append(f"{key} = {compact(value)}")
    return ", ".join(parts)
