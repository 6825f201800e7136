"""The report's sections, each a list of HTML fragments built from the ledger.

Sections that show anything computed from the private table are only called by
:func:`dpevolve.reporting.report.render_report` when the report is not ``public_safe``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpevolve.data.identifiers import identifier_from_dict
from dpevolve.errors import InputError
from dpevolve.privacy.ledger import SHAREABLE_KEYS
from dpevolve.reporting.html import (
    as_mapping,
    compact,
    escape,
    fmt_num,
    fmt_upper,
    html_table,
    kv_table,
    num_cell,
    pretty_sci,
)
from dpevolve.reporting.releases import MARGINAL_MECHANISM, pe_rounds

# Ledger keys that hold only public or released facts: the public version shows these and
# nothing else, so a key added to the ledger later is withheld until someone decides.
# Shown in their own sections; the rest goes to the "other ledger fields" table.
_SHOWN_KEYS = (SHAREABLE_KEYS - {"pilot", "marginals", "fits", "details"}) | {
    "notes",
    "seed",
    "validation",
}


# ------------------------------------------------------------------------ sections
def guarantee_section(led: Mapping[str, Any], public_safe: bool, number: int) -> list[str]:
    out = [f"<h2>{number}. Privacy guarantee</h2>"]
    out.append(f'<p class="guarantee">{statement(led)}</p>')

    budget = as_mapping(led.get("budget"))
    if budget.get("rho") is not None:
        out.append(
            f"<p>The run was calibrated to a zCDP budget &rho; = {escape(fmt_num(budget['rho']))}; "
            "the statement above is that guarantee expressed as (&epsilon;, &delta;).</p>"
        )

    accounting = as_mapping(led.get("accounting"))
    method = accounting.get("method")
    by_method = accounting.get("by_method") or {}
    if by_method:
        rows = [
            [
                escape(name) + (" (used)" if name == method else ""),
                f'<td class="num">{escape(fmt_upper(eps, 6))}</td>',
            ]
            for name, eps in by_method.items()
        ]
        out.append(
            "<p>Epsilon at the same &delta; under every accounting method that applies. "
            "The report uses the tightest valid one; the others cross-check it.</p>"
        )
        out.append(html_table(["method", "epsilon"], rows, "accounting"))

    out.append("<h3>Run</h3>")
    out.append(kv_table(_run_facts(led, public_safe), "run"))
    policy = led.get("policy")
    if isinstance(policy, Mapping) and policy.get("attributes"):
        out.append("<h3>Blowfish policy</h3>")
        rows = [
            [escape(name), f"<code>{escape(compact(spec))}</code>"]
            for name, spec in policy["attributes"].items()
        ]
        out.append(
            "<p>Protected attributes and their secret graphs. Attributes not listed are "
            "not protected"
            + (
                "; participation is protected too (any record may become any record)."
                if policy.get("participation")
                else "."
            )
            + "</p>"
        )
        out.append(html_table(["attribute", "secret graph"], rows, "policy"))
    return out


def statement(led: Mapping[str, Any]) -> str:
    eps = fmt_upper(led.get("epsilon"))
    delta = pretty_sci(fmt_upper(led.get("delta"), digits=3, sci=True))
    n = led.get("private_rows")
    n_text = f" n = {escape(fmt_num(n))}" if isinstance(n, int) else " n"
    policy = led.get("policy")
    participation = not isinstance(policy, Mapping) or bool(policy.get("participation"))
    if led.get("epsilon") is None:
        return (
            "<strong>No finite privacy guarantee</strong> was certified for this run "
            f"(&epsilon; is unbounded at &delta; = {escape(delta)}). Do not release this table."
        )
    pair = f"(&epsilon; = {escape(eps)}, &delta; = {escape(delta)})"
    if participation:
        return (
            f"This table is <strong>{pair}-differentially private</strong> under "
            "replace-one adjacency: replacing any one record of the private table by any "
            "other record changes the probability of any outcome by at most a factor "
            f"e<sup>&epsilon;</sup>, plus &delta;. The private row count{n_text} is "
            "treated as public (bounded DP)."
        )
    return (
        f"This table is <strong>{pair}-Blowfish private</strong> under the policy below: "
        "changing one record's protected attribute along an edge of its secret graph "
        "changes the probability of any outcome by at most a factor "
        "e<sup>&epsilon;</sup>, plus &delta;. It is <strong>not</strong> a guarantee "
        "for attributes the policy leaves unprotected, nor for whether a record is in "
        f"the table. The private row count{n_text} is treated as public."
    )


def _run_facts(led: Mapping[str, Any], public_safe: bool) -> list[tuple[str, str]]:
    """Rows of the run table as (label, already-escaped HTML)."""
    facts: list[tuple[str, str]] = [
        ("epsilon", escape(fmt_epsilon(led.get("epsilon")))),
        ("delta", escape(pretty_sci(fmt_upper(led.get("delta"), digits=3, sci=True)))),
    ]
    budget = led.get("budget")
    if isinstance(budget, Mapping):
        target = ", ".join(f"{k} = {fmt_num(v)}" for k, v in budget.items() if v is not None)
        facts.append(("budget asked for", escape(target)))
    if "adjacency" in led:
        facts.append(("adjacency", escape(led["adjacency"])))
    if "seed" in led and not public_safe:
        facts.append(("seed", _seed(led["seed"])))
    noise = led.get("noise")
    if noise is not None:
        facts.append(
            (
                "privacy noise",
                "secure: discrete Gaussian from the operating system's secure source"
                if noise == "secure"
                else "seeded: reproducible for research; whoever holds the noise seed can "
                "remove the noise",
            )
        )
    facts.append(("dpevolve version", escape(run_version(led))))
    for key, label in (("private_rows", "private rows n"), ("backend", "backend")):
        if key in led:
            facts.append((label, escape(fmt_num(led[key]))))
    facts += what_ran(led)
    if "policy" in led:
        facts.append(
            (
                "policy",
                "none: whole records are protected"
                if led["policy"] is None
                else "Blowfish policy (below)",
            )
        )
    invalid = led.get("invalid_rows")  # configuration only: no count from the data
    if isinstance(invalid, Mapping):
        how = f"on_invalid={invalid.get('on_invalid')}: {invalid.get('invalid_row_vote')}"
        facts.append(("invalid rows", escape(how)))
    if not public_safe and isinstance(led.get("validation"), Mapping):
        facts.append(
            (
                "validation counts (not DP)",
                f"<code>{escape(compact(led['validation']))}</code>",
            )
        )
    return facts


def what_ran(led: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The preset and the releases that produced the rows, read from the events (a
    ``hybrid`` run that ran no PE round has no PE schedule to describe)."""
    events = [e for e in led.get("events") or [] if isinstance(e, Mapping)]
    facts: list[tuple[str, str]] = []
    if "preset" in led:
        facts.append(("preset", escape(fmt_num(led["preset"]))))
    if isinstance(led.get("engine"), Mapping):
        facts.append(("adaptive engine", escape(engine_summary(events))))
        public = as_mapping(led["engine"].get("public"))
        if public:  # a public input: no budget, not a release
            facts.append(("public data", escape(f"{fmt_num(public.get('rows'))} rows, no budget")))
        return facts
    rounds = pe_rounds(events)
    schedule = as_mapping(led.get("schedule"))
    if rounds:
        facts.append(
            (
                "Private Evolution",
                escape(
                    f"{rounds} round{'s' if rounds != 1 else ''} over a population of "
                    f"{fmt_num(schedule.get('population'))} candidates"
                    + (f", distance {led['distance']}" if "distance" in led else "")
                ),
            )
        )
        vote = as_mapping(led.get("vote"))
        if vote:
            text = str(vote.get("name"))
            if vote.get("temperature") is not None:
                text += f" (temperature tau = {fmt_num(vote['temperature'])})"
            facts.append(("vote", escape(text)))
        for key, label in (
            ("mechanism", "mechanism"),
            ("reach", "reach r"),
            ("l2_sensitivity", "L2 sensitivity per round"),
            ("noise_multiplier", "noise multiplier z = sigma / S"),
            ("sigma", "noise sigma per cell"),
        ):
            if key in led:
                facts.append((label, escape(fmt_num(led[key], digits=4))))
    marginal = [e for e in events if e.get("mechanism") == MARGINAL_MECHANISM]
    if marginal:
        spec = as_mapping(led.get("marginals"))
        last = marginal[-1]
        text = f"{fmt_num(last.get('marginal_sets'))} noisy marginals"
        if spec.get("order") is not None:
            text += f" of up to {fmt_num(spec['order'])} columns"
        if last.get("support") is not None:
            text += f"; rows drawn from a weighted pool of {fmt_num(last['support'])} candidates"
        facts.append(("marginal release", escape(text)))
    return facts


def engine_summary(events: Sequence[Mapping[str, Any]]) -> str:
    """What the adaptive engine released, in words (from the ledger's events)."""
    measured = [e for e in events if e.get("mechanism") == "marginal"]
    coarse = sum(1 for e in measured if e.get("groups"))
    fine = sum(1 for e in events if str(e.get("mechanism", "")).startswith("fine:"))
    chosen = sum(1 for e in events if e.get("mechanism") == "select")
    text = f"{len(measured)} noisy marginals"
    if coarse:
        text += f" ({coarse} of them coarsened)"
    text += f", {chosen} chosen by the exponential mechanism where the model was most wrong"
    if fine:
        text += f"; {fine} fine numeric histograms for the values"
    text += "; fresh rows drawn from one graphical model fitted to them"
    votes = sum(1 for e in events if e.get("stage") == "pe_vote")  # engine.refine.VOTE_LABEL
    if votes:
        text += f", reweighted by {votes} rounds of PE's nearest-candidate votes"
    return text


def fmt_epsilon(value: Any) -> str:
    """Epsilon to 4 significant digits, rounded up (``1.0``, never ``0.9999999999999999``)."""
    text = fmt_upper(value)
    if text.replace("-", "").isdigit():
        text += ".0"
    return text


def _seed(seed: Any) -> str:
    """The seed, shortened: the full value is in the ledger."""
    text = str(seed)
    short = text if len(text) <= 10 else text[:8] + "…"
    return f"<code>{escape(short)}</code> (post-processing only, not the noise" + (
        "; the full value is in the ledger)" if short != text else ")"
    )


def notes_section(led: Mapping[str, Any], public_safe: bool, number: int) -> list[str]:
    out = [f"<h2>{number}. Ledger notes</h2>"]
    if public_safe:
        # Withheld whether or not there are any: even their presence can say that the
        # private table needed repairs.
        out.append(
            "<p>Withheld: notes can describe the private table (for example how many rows "
            "were repaired) and are not differentially private.</p>"
        )
        return out
    notes = [str(n) for n in led.get("notes") or []]
    if not notes:
        out.append("<p>No notes.</p>")
        return out
    out.append(
        "<p>Recorded during the run. Counts in them come from the private table and are "
        "not differentially private.</p>"
    )
    out.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    return out


def schema_section(led: Mapping[str, Any], number: int) -> list[str]:
    spec = led.get("schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
        return []
    out = [
        f"<h2>{number}. Schema</h2>",
        "<p>Declared before the private table was read: no range or category comes from "
        "the private data.</p>",
    ]
    label = spec.get("label")
    rows = []
    for name, decl in spec["columns"].items():
        decl = decl if isinstance(decl, Mapping) else {}
        kind = str(decl.get("type", ""))
        if kind == "id":
            domain = "identifier, not modelled: " + _identifier(name, decl)
        elif kind in ("numeric", "date", "datetime"):
            domain = f"[{fmt_num(decl.get('lo'))}, {fmt_num(decl.get('hi'))}]"
            if decl.get("integer"):
                domain += ", integer"
        else:
            values = [str(v) for v in decl.get("values") or []]
            domain = ", ".join(values[:30]) + (
                f", … ({len(values)} values)" if len(values) > 30 else ""
            )
            if decl.get("hierarchy") is not None:
                domain += " (with a hierarchy)"
        weight = decl.get("weight")
        rows.append(
            [
                escape(name) + (" (label)" if name == label else ""),
                escape(kind),
                escape(domain),
                "yes" if decl.get("nullable") else "no",
                num_cell(weight) if weight is not None else "default",
            ]
        )
    header = ["column", "type", "declared domain", "nullable", "weight"]
    out.append(html_table(header, rows, "schema"))
    return out


def _identifier(name: str, decl: Mapping[str, Any]) -> str:
    """What synthesis did with an id column (from its declaration: public)."""
    try:
        return identifier_from_dict(name, decl, 0).describe()
    except InputError:
        return "declared an identifier"


def other_fields_section(led: Mapping[str, Any]) -> list[str]:
    rest = {k: v for k, v in led.items() if k not in _SHOWN_KEYS}
    if not rest:
        return []
    return [
        "<h2>Other ledger fields</h2>",
        kv_table(
            [(str(k), f"<code>{escape(compact(v))}</code>") for k, v in rest.items()], "other"
        ),
    ]


def run_version(led: Mapping[str, Any]) -> str:
    """The version that made the run (from the ledger), else "unknown"."""
    version = led.get("dpevolve_version")
    return "unknown" if version is None else str(version)
