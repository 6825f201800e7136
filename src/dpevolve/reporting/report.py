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
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpevolve.data.io import atomic_write, check_writable
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.extras import require
from dpevolve.privacy.ledger import SHAREABLE_KEYS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from dpevolve.privacy import Ledger

__all__ = ["render_report", "write_report"]

# Ledger keys that hold only public or released facts: the public version shows these and
# nothing else, so a key added to the ledger later is withheld until someone decides.
# Shown in their own sections; the rest goes to the "other ledger fields" table.
_SHOWN_KEYS = (SHAREABLE_KEYS - {"pilot", "marginals", "fits", "details"}) | {
    "notes",
    "seed",
    "validation",
}
_EVENT_COLUMNS = frozenset(
    {"round", "mechanism", "kind", "sensitivity", "sigma", "noise_multiplier", "rho"}
    | {"running_epsilon", "claimed_epsilon", "claimed_delta", "symmetric", "orientation"}
)
_WORST_PAIRS = 15
_DPI = 100
_PNG_PREFIX = "data:image/png;base64,"

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       max-width: 62rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f;
       line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ccc; padding-bottom: 0.2rem;
     margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
.meta { color: #555; font-size: 0.9rem; }
.guarantee { font-size: 1.1rem; background: #eef6ee; border-left: 5px solid #2e7d32;
             padding: 0.8rem 1rem; margin: 1rem 0; }
.warning { background: #fff4e5; border-left: 5px solid #e65100; padding: 0.6rem 1rem;
           margin: 1rem 0; }
.public { background: #e8f0fe; border-left: 5px solid #1a56db; padding: 0.6rem 1rem;
          margin: 1rem 0; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.25rem 0.55rem; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 14rem; }
code { font-size: 0.85rem; word-break: break-word; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e0e0e0; }
figcaption { color: #555; font-size: 0.85rem; }
ul.notes li { margin: 0.3rem 0; }
@media print { body { max-width: none; } h2 { page-break-after: avoid; } }
"""


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

    body: list[str] = [f"<h1>{_e(title)}</h1>"]
    body.append(
        f'<p class="meta">Generated {_e(_now())} by dpevolve {_e(_own_version())}; '
        f"run made by dpevolve {_e(_version(led))}.</p>"
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
    body += _guarantee_section(led, public_safe)
    body += _release_section(led)
    body += _notes_section(led, public_safe)
    if public_safe:
        body += [
            "<h2>4. Utility</h2>",
            "<p>Withheld: every utility measure compares the synthetic table with the "
            "private one, and is not differentially private.</p>",
        ]
    else:
        body += _utility_section(evaluation, plot_tables)
    body += _schema_section(led)
    if not public_safe:
        body += _other_fields_section(led)

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
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


# ------------------------------------------------------------------------ sections
def _guarantee_section(led: Mapping[str, Any], public_safe: bool) -> list[str]:
    out = ["<h2>1. Privacy guarantee</h2>"]
    out.append(f'<p class="guarantee">{_statement(led)}</p>')

    budget = _mapping(led.get("budget"))
    if budget.get("rho") is not None:
        out.append(
            f"<p>The run was calibrated to a zCDP budget &rho; = {_e(_num(budget['rho']))}; "
            "the statement above is that guarantee expressed as (&epsilon;, &delta;).</p>"
        )

    accounting = _mapping(led.get("accounting"))
    method = accounting.get("method")
    by_method = accounting.get("by_method") or {}
    if by_method:
        rows = [
            [
                _e(name) + (" (used)" if name == method else ""),
                _num_cell(eps, digits=10),
            ]
            for name, eps in by_method.items()
        ]
        out.append(
            "<p>Epsilon at the same &delta; under every accounting method that applies. "
            "The report uses the tightest valid one; the others cross-check it.</p>"
        )
        out.append(_table(["method", "epsilon"], rows, "accounting"))

    out.append("<h3>Run</h3>")
    out.append(_kv_table(_run_facts(led, public_safe), "run"))
    policy = led.get("policy")
    if isinstance(policy, Mapping) and policy.get("attributes"):
        out.append("<h3>Blowfish policy</h3>")
        rows = [
            [_e(name), f"<code>{_e(_compact(spec))}</code>"]
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
        out.append(_table(["attribute", "secret graph"], rows, "policy"))
    return out


def _statement(led: Mapping[str, Any]) -> str:
    eps = _upper(led.get("epsilon"))
    delta = _pretty_sci(_upper(led.get("delta"), digits=3, sci=True))
    n = led.get("private_rows")
    n_text = f" n = {_e(_num(n))}" if isinstance(n, int) else " n"
    policy = led.get("policy")
    participation = not isinstance(policy, Mapping) or bool(policy.get("participation"))
    if led.get("epsilon") is None:
        return (
            "<strong>No finite privacy guarantee</strong> was certified for this run "
            f"(&epsilon; is unbounded at &delta; = {_e(delta)}). Do not release this table."
        )
    pair = f"(&epsilon; = {_e(eps)}, &delta; = {_e(delta)})"
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
    facts: list[tuple[str, str]] = []
    facts.append(("epsilon (exact)", _e(_exact(led.get("epsilon")))))
    facts.append(("delta", _e(_exact(led.get("delta")))))
    budget = led.get("budget")
    if isinstance(budget, Mapping):
        target = ", ".join(f"{k} = {_num(v)}" for k, v in budget.items() if v is not None)
        facts.append(("budget asked for", _e(target)))
    if "adjacency" in led:
        facts.append(("adjacency", _e(led["adjacency"])))
    if "seed" in led and not public_safe:
        facts.append(
            ("seed", f"<code>{_e(led['seed'])}</code> (post-processing only: not the noise)")
        )
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
    facts.append(("dpevolve version", _e(_version(led))))
    for key, label in (
        ("preset", "preset"),
        ("distance", "distance"),
        ("backend", "backend"),
        ("mechanism", "mechanism"),
        ("private_rows", "private rows n"),
    ):
        if key in led:
            facts.append((label, _e(_num(led[key]))))
    schedule = led.get("schedule")
    if isinstance(schedule, Mapping):
        facts.append(
            (
                "schedule",
                _e(f"population {schedule.get('population')}, rounds {schedule.get('rounds')}"),
            )
        )
    vote = led.get("vote")
    if isinstance(vote, Mapping):
        text = str(vote.get("name"))
        if vote.get("temperature") is not None:
            text += f" (temperature tau = {_num(vote['temperature'])})"
        facts.append(("vote", _e(text)))
    if "policy" in led:
        policy = led["policy"]
        facts.append(
            (
                "policy",
                "none: whole records are protected"
                if policy is None
                else "Blowfish policy (below)",
            )
        )
    for key, label in (
        ("reach", "reach r"),
        ("l2_sensitivity", "L2 sensitivity per release"),
        ("noise_multiplier", "noise multiplier z = sigma / S"),
        ("sigma", "noise sigma per cell"),
    ):
        if key in led:
            facts.append((label, _e(_num(led[key], digits=6))))
    invalid = led.get("invalid_rows")  # configuration only: no count from the data
    if isinstance(invalid, Mapping):
        how = f"on_invalid={invalid.get('on_invalid')}: {invalid.get('invalid_row_vote')}"
        facts.append(("invalid rows", _e(how)))
    if not public_safe and isinstance(led.get("validation"), Mapping):
        facts.append(
            (
                "validation counts (not DP)",
                f"<code>{_e(_compact(led['validation']))}</code>",
            )
        )
    return facts


def _release_section(led: Mapping[str, Any]) -> list[str]:
    events = [e for e in led.get("events") or [] if isinstance(e, Mapping)]
    out = ["<h2>2. Releases</h2>"]
    if not events:
        out.append("<p>No releases were recorded: no private data was used.</p>")
        return out
    out.append(
        f"<p>{len(events)} release{'s' if len(events) != 1 else ''} of private "
        "information, each recorded in the ledger. Running &epsilon; is the guarantee of "
        "the releases so far; the last one is the run's.</p>"
    )
    points = [
        (e.get("round"), e["running_epsilon"])
        for e in events
        if isinstance(e.get("running_epsilon"), (int, float))
    ]
    if points:
        budget = led.get("budget")
        target = budget.get("epsilon") if isinstance(budget, Mapping) else None
        out.append(
            _figure(
                _running_epsilon_figure(points, target),
                "Running epsilon after each round",
                "Running &epsilon; after each release (at the run's &delta;).",
            )
        )
    rows = []
    for e in events:
        rows.append(
            [
                _num_cell(e.get("round")),
                _e(e.get("mechanism", "")),
                _num_cell(e.get("sensitivity"), digits=6),
                _e(_noise(e)),
                _num_cell(e.get("noise_multiplier"), digits=6),
                _num_cell(e.get("rho"), digits=6),
                _num_cell(e.get("running_epsilon"), digits=6),
                _e(_details(e)),
            ]
        )
    out.append(
        _table(
            [
                "round",
                "mechanism",
                "sensitivity S",
                "noise (sigma / beta)",
                "z = sigma / S",
                "rho",
                "running epsilon",
                "released facts",
            ],
            rows,
            table_id="events",
        )
    )
    return out


def _notes_section(led: Mapping[str, Any], public_safe: bool) -> list[str]:
    out = ["<h2>3. Ledger notes</h2>"]
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
    out.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    return out


def _utility_section(
    evaluation: Mapping[str, Any] | None,
    tables: tuple[pd.DataFrame, pd.DataFrame, Schema] | None,
) -> list[str]:
    out = [
        "<h2>4. Utility</h2>",
        '<p class="warning">Everything in this section is computed from the private table '
        "and is <strong>not</strong> differentially private. It is for the data owner's own "
        "judgement of the synthetic table; leave it out of anything shared.</p>",
    ]
    if evaluation is None and tables is None:
        out.append("<p>No evaluation was given.</p>")
        return out
    if evaluation is not None:
        out += _evaluation_tables(evaluation)
    if tables is not None:
        out += _utility_plots(*tables)
    return out


def _evaluation_tables(evaluation: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    rows = evaluation.get("rows")
    if isinstance(rows, Mapping):
        out.append(
            f"<p>Real rows: {_e(_num(rows.get('real')))}; synthetic rows: "
            f"{_e(_num(rows.get('synthetic')))}.</p>"
        )
    marginals = evaluation.get("marginals")
    if isinstance(marginals, Mapping) and marginals:
        out.append("<h3>k-way marginal total variation</h3>")
        out.append(
            "<p>For every set S of k columns, TV<sub>S</sub> = &frac12; &sum; |p<sub>S</sub> "
            "&minus; q<sub>S</sub>| between the real and synthetic k-way tables (numeric "
            "columns in 20 bins over the declared range): 0 means identical, 1 disjoint.</p>"
        )
        table_rows = [
            [
                _num_cell(k),
                _num_cell(entry.get("sets")),
                _num_cell(entry.get("mean")),
                _num_cell(entry.get("max")),
                _e(", ".join(str(c) for c in entry.get("worst") or [])),
            ]
            for k, entry in sorted(marginals.items(), key=lambda kv: int(kv[0]))
            if isinstance(entry, Mapping)
        ]
        out.append(_table(["k", "sets", "mean TV", "max TV", "worst set"], table_rows, "marginals"))
    tstr = evaluation.get("tstr")
    if isinstance(tstr, Mapping):
        out.append("<h3>Train on synthetic, test on real (TSTR)</h3>")
        test = "the real table itself" if tstr.get("test") == "real" else "held-out real rows"
        out.append(
            f"<p>A classifier ({_e(tstr.get('model', 'hgb'))}) trained on "
            f"{_e(_num(tstr.get('n_train')))} synthetic rows predicts "
            f"<code>{_e(tstr.get('label'))}</code> on {_e(_num(tstr.get('n_test')))} rows of "
            f"{_e(test)}. An accuracy near the majority-class baseline means the synthetic "
            "table taught the model nothing.</p>"
        )
        out.append(
            _table(
                ["measure", "score"],
                [
                    ["accuracy", _num_cell(tstr.get("accuracy"))],
                    ["majority-class baseline", _num_cell(tstr.get("baseline_accuracy"))],
                    ["macro-F1", _num_cell(tstr.get("macro_f1"))],
                    ["AUC", _num_cell(tstr.get("auc"))],
                ],
                "tstr",
            )
        )
        if tstr.get("note"):
            out.append(f"<p>Note: {_e(tstr['note'])}</p>")
    return out


def _utility_plots(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> list[str]:
    from dpevolve.reporting.evaluation import marginal_tv, plot_marginals

    out = ["<h3>1-way marginals</h3>"]
    # plot_marginals only writes files; a private temporary folder keeps the PNG of the
    # real data from lingering anywhere but inside this report.
    with tempfile.TemporaryDirectory(prefix="dpevolve-report-") as folder:
        png = plot_marginals(real, synthetic, schema, Path(folder) / "marginals.png")
        data = png.read_bytes()
    out.append(
        _img(
            data,
            "1-way marginals, real versus synthetic",
            "Share of rows per value or bin: real (blue, computed from the private "
            "table) and synthetic (orange). Panel titles give each column's TV.",
        )
    )
    if len(schema) >= 2:
        pairs = marginal_tv(real, synthetic, schema, 2).per_set
        worst = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:_WORST_PAIRS]
        out.append("<h3>Worst 2-way marginals</h3>")
        out.append(
            _figure(
                _pairs_figure(worst),
                "2-way marginal TV of the worst column pairs",
                f"TV of the {len(worst)} column pair{'s' if len(worst) != 1 else ''} whose "
                f"joint distribution the synthetic table matches worst (of {len(pairs)}).",
            )
        )
    return out


def _schema_section(led: Mapping[str, Any]) -> list[str]:
    spec = led.get("schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
        return []
    out = [
        "<h2>5. Schema</h2>",
        "<p>Declared before the private table was read: no range or category comes from "
        "the private data.</p>",
    ]
    label = spec.get("label")
    rows = []
    for name, decl in spec["columns"].items():
        decl = decl if isinstance(decl, Mapping) else {}
        kind = str(decl.get("type", ""))
        if kind == "numeric":
            domain = f"[{_num(decl.get('lo'))}, {_num(decl.get('hi'))}]"
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
                _e(name) + (" (label)" if name == label else ""),
                _e(kind),
                _e(domain),
                _num_cell(weight) if weight is not None else "default",
            ]
        )
    out.append(_table(["column", "type", "declared domain", "weight"], rows, "schema"))
    return out


def _other_fields_section(led: Mapping[str, Any]) -> list[str]:
    rest = {k: v for k, v in led.items() if k not in _SHOWN_KEYS}
    if not rest:
        return []
    return [
        "<h2>Other ledger fields</h2>",
        _kv_table([(str(k), f"<code>{_e(_compact(v))}</code>") for k, v in rest.items()], "other"),
    ]


# ------------------------------------------------------------------------ figures
def _running_epsilon_figure(points: Sequence[tuple[Any, float]], target: Any) -> Figure:
    fig, ax = _new_figure(6.4, 3.0)
    xs = [p[0] if isinstance(p[0], (int, float)) else i + 1 for i, p in enumerate(points)]
    ys = [p[1] for p in points]
    ax.step(xs, ys, where="post", color="C0", linewidth=1.5)
    ax.plot(xs, ys, "o", color="C0", markersize=4, label="running ε")
    if isinstance(target, (int, float)):
        ax.axhline(target, color="C3", linestyle="--", linewidth=1, label=f"budget ε = {target:g}")
    ax.set_xlabel("round")
    ax.set_ylabel("ε spent")
    ax.set_ylim(bottom=0)
    from matplotlib.ticker import MaxNLocator

    # At most ~10 whole-round ticks: one per round overlaps beyond a dozen rounds.
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _pairs_figure(worst: Sequence[tuple[tuple[str, ...], float]]) -> Figure:
    fig, ax = _new_figure(6.4, 0.8 + 0.28 * len(worst))
    labels = [" × ".join(pair) for pair, _ in worst][::-1]
    values = [tv for _, tv in worst][::-1]
    ax.barh(range(len(values)), values, color="C1")
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("2-way marginal TV (0 = identical, 1 = disjoint)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _new_figure(width: float, height: float) -> tuple[Figure, Any]:
    # A Figure with its own Agg canvas, not pyplot: no global state, no GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _figure(fig: Figure, alt: str, caption_html: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI)
    return _img(buffer.getvalue(), alt, caption_html, caption_is_html=True)


def _img(data: bytes, alt: str, caption: str, caption_is_html: bool = False) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    text = caption if caption_is_html else _e(caption)
    return (
        f'<figure><img alt="{_e(alt)}" src="{_PNG_PREFIX}{encoded}">'
        f"<figcaption>{text}</figcaption></figure>"
    )


# ------------------------------------------------------------------------ HTML bits
def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(
    header: Sequence[str], rows: Iterable[Sequence[str]], table_id: str | None = None
) -> str:
    """A table; ``rows`` hold already-escaped cells (``<td>`` or ``<td class=num>``)."""
    ident = f' id="{_e(table_id)}"' if table_id else ""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _kv_table(rows: Sequence[tuple[str, str]], table_id: str) -> str:
    """Label/value rows; values are already-escaped HTML."""
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv" id="{_e(table_id)}"><tbody>{body}</tbody></table>'


def _num_cell(value: Any, digits: int = 4) -> str:
    return f'<td class="num">{_e(_num(value, digits))}</td>'


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        return f"{value:.{digits}g}"
    return str(value)


def _exact(value: Any) -> str:
    """Shortest text that reads back as the same float: the ledger's value, unrounded."""
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return _num(value)


def _upper(value: Any, digits: int = 4, sci: bool = False) -> str:
    """``value`` to ``digits`` significant digits, rounded *up*: a stated guarantee must
    never be smaller than the computed one. Excess below 1e-9 (relative) is float noise
    from calibration, which lands a few ulps above the target, and is dropped. ``sci``
    writes values below 0.01 in e-notation (``4.18e-04``, ``1e-05``)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "∞" if value is None else str(value)
    x = float(value)
    if x <= 0 or not math.isfinite(x):
        return _num(x, digits)
    exponent = math.floor(math.log10(x))
    scale = 10.0 ** (digits - 1 - exponent)
    rounded = math.ceil(x * scale * (1 - 1e-9)) / scale
    if sci and rounded < 0.01:
        mantissa, power = f"{rounded:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{power}"
    return f"{rounded:.{digits}g}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pretty_sci(text: str) -> str:
    """``'1e-05'`` -> ``'1×10⁻⁵'``: a data steward reads powers of ten, not e-notation."""
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa}×{power}"


def _noise(event: Mapping[str, Any]) -> str:
    kind = event.get("kind")
    if kind == "gaussian" or "sigma" in event:
        return f"sigma = {_num(event.get('sigma'), 6)}"
    params = event.get("params")
    if kind == "privacy_loss_pair" and isinstance(params, Mapping) and "beta" in params:
        return f"beta = {_num(params['beta'], 6)}"
    if kind == "approx_dp":
        return f"(eps, delta) = ({_num(event.get('epsilon'))}, {_num(event.get('delta'))})"
    if kind == "zero_cost":
        return "none (reads no private data)"
    return ""


def _details(event: Mapping[str, Any]) -> str:
    parts = []
    for key, value in event.items():
        if key in _EVENT_COLUMNS:
            continue
        if key == "params" and isinstance(value, Mapping):
            parts += [f"{k} = {_compact(v)}" for k, v in value.items() if k != "beta"]
        elif not (event.get("kind") == "approx_dp" and key in ("epsilon", "delta")):
            parts.append(f"{key} = {_compact(value)}")
    return ", ".join(parts)


def _compact(value: Any) -> str:
    if isinstance(value, float):
        return _num(value, 6)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _version(led: Mapping[str, Any]) -> str:
    """The version that made the run (from the ledger), else "unknown"."""
    version = led.get("dpevolve_version")
    return "unknown" if version is None else str(version)


def _own_version() -> str:
    try:
        return metadata.version("dpevolve")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
