"""Tests of the HTML report (report.py): content, escaping, public version, writing."""

from __future__ import annotations

import base64
import copy
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.presets import get_method
from dpevolve.reporting.evaluation import evaluate
from dpevolve.reporting.report import render_report, write_report

PNG = "data:image/png;base64,"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EVIL = "<script>alert('x')</script> & \"quotes\""
VOID = {"meta", "img", "br", "hr", "link", "input", "col", "source", "wbr"}


# --------------------------------------------------------------- fixtures
def _table(n: int = 400, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n)
    job = rng.choice(["admin", "manager", "builder", "driver", "retired"], n)
    hours = np.where(job == "retired", rng.integers(1, 10, n), rng.integers(30, 60, n))
    income = np.where((age > 40) & (hours > 40), ">50K", "<=50K")
    return pd.DataFrame({"age": age, "job": job, "hours": hours, "income": income})


@pytest.fixture(scope="module")
def run(small_schema: Schema) -> dict[str, Any]:
    real = _table()
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        delta=1e-5,
        method=get_method("bfsoft", population=30, rounds=2),
        random_state=0,
    ).fit(real)
    return {
        "model": model,
        "real": real,
        "synthetic": model.synthetic_,
        "schema": small_schema,
        "ledger": model.ledger_.to_dict(),
        "evaluation": evaluate(real, model.synthetic_, small_schema, label="income"),
    }


@pytest.fixture(scope="module")
def full(run: dict[str, Any]) -> str:
    return render_report(
        ledger=run["ledger"],
        evaluation=run["evaluation"],
        real=run["real"],
        synthetic=run["synthetic"],
        schema=run["schema"],
    )


class _Checker(HTMLParser):
    """Tag balance, table cells by table id, and every src/href attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "background"):
                self.urls.append(value or "")
        if tag == "table":
            self._table = dict(attrs).get("id") or f"table{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parse(page: str) -> _Checker:
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.errors == []
    assert checker.stack == []
    return checker


def _pngs(page: str) -> list[bytes]:
    return [
        base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    ]


# ------------------------------------------------------------------ content
def test_full_report_is_self_contained_html(full: str) -> None:
    assert full.startswith("<!DOCTYPE html>")
    assert full.rstrip().endswith("</html>")
    checker = _parse(full)
    assert "script" not in checker.tags
    # No external resources: every URL is an embedded image.
    assert checker.urls and all(u.startswith(PNG) for u in checker.urls)
    assert "http://" not in full and "https://" not in full
    assert "<link" not in full
    # Running epsilon, 1-way marginals, worst 2-way pairs.
    images = _pngs(full)
    assert full.count(PNG) == len(images) == 3
    assert all(png.startswith(PNG_MAGIC) for png in images)


def test_guarantee_is_stated_up_front(full: str, run: dict[str, Any]) -> None:
    ledger = run["ledger"]
    # The verdict opens the page: utility in one sentence, then the guarantee.
    box = full.index('class="verdict"')
    assert box < full.index("<h2>1.")
    assert "A model trained on the synthetic table predicts &#x27;income&#x27;" in full[box:]
    assert "the majority class" in full[box : full.index("</div>", box)]
    guarantee = full.index('class="guarantee"')
    statement = full[guarantee : full.index("</p>", guarantee)]
    assert "&epsilon; = 1," in statement and "&delta; = 10⁻⁵" in statement
    assert "differentially private" in statement and "replace-one" in statement
    assert "n = 400" in statement
    for method, eps in ledger["accounting"]["by_method"].items():
        assert method in full
        # Rounded up to 6 digits: never below the computed value (but for calibration's
        # float noise, below 1e-9 relative, which fmt_upper drops), never 0.9999999999.
        shown = {r[0].replace(" (used)", ""): r[1] for r in _parse(full).tables["accounting"][1:]}
        assert eps * (1 - 1e-9) <= float(shown[method]) <= eps * (1 + 1e-5)
    assert f"{ledger['accounting']['method']} (used)" in full
    run_table = {row[0]: row[1] for row in _parse(full).tables["run"]}
    assert run_table["epsilon"] == "1.0"
    assert run_table["seed"].startswith("0")
    assert run_table["privacy noise"].startswith("secure")
    assert run_table["dpevolve version"] == ledger["dpevolve_version"]
    assert run_table["reach r"] == "1"
    assert run_table["L2 sensitivity per round"] == f"{ledger['l2_sensitivity']:.4g}"
    assert run_table["noise sigma per cell"] == f"{ledger['sigma']:.4g}"
    assert run_table["Private Evolution"].startswith("2 rounds over a population of 30")
    assert run_table["policy"].startswith("none")


def test_every_release_event_is_listed(full: str, run: dict[str, Any]) -> None:
    rows = _parse(full).tables["events"]
    header, body = rows[0], rows[1:]
    assert header[:3] == ["round", "mechanism", "sensitivity S"]
    events = run["ledger"]["events"]
    assert [int(r[0]) for r in body] == [e["round"] for e in events] == [1, 2]
    for row, event in zip(body, events, strict=True):
        assert row[1] == "gaussian_histogram"
        assert row[3] == f"sigma = {event['sigma']:.4g}"
        assert row[6] == f"{event['running_epsilon']:.4g}"
        assert f"kept_candidates = {event['kept_candidates']}" in row[7]


def test_evaluation_tables(full: str, run: dict[str, Any]) -> None:
    tables = _parse(full).tables
    marginals = tables["marginals"][1:]
    assert [r[0] for r in marginals] == ["1", "2", "3"]
    two = run["evaluation"]["marginals"]["2"]
    assert marginals[1][2] == f"{two['mean']:.3g}"
    assert marginals[1][4] == ", ".join(two["worst"])
    tstr = {r[0]: r[1:] for r in tables["tstr"][1:]}
    result = run["evaluation"]["tstr"]
    assert tstr["accuracy"] == [f"{result['accuracy']:.3g}", f"{result['real']['accuracy']:.3g}"]
    majority = tstr["majority class (always guess the most common)"]
    assert majority[0] == f"{result['baseline_accuracy']:.3g}"
    # One summary row per mechanism; the rounds are collapsed.
    releases = tables["releases"][1:]
    assert [r[:3] for r in releases] == [["gaussian_histogram", "2", "1–2"]]
    assert "<details><summary>Every release, round by round (2)" in full
    assert "not</strong> differentially private" in full


def test_epsilon_is_rounded_up_never_down(run: dict[str, Any]) -> None:
    ledger = dict(run["ledger"], epsilon=0.684149, delta=4.17261e-4)
    page = render_report(ledger=ledger)
    assert "&epsilon; = 0.6842," in page  # 0.6841 would understate the guarantee
    assert "&delta; = 4.18×10⁻⁴" in page


# ------------------------------------------------------------------ escaping
def test_text_from_the_ledger_is_escaped(run: dict[str, Any]) -> None:
    ledger = copy.deepcopy(run["ledger"])
    ledger["notes"] = [*ledger["notes"], EVIL, "repaired 3 rows"]
    ledger["preset"] = EVIL
    ledger["events"][0]["mechanism"] = EVIL
    ledger["custom_field"] = {"x": EVIL}
    page = render_report(ledger=ledger, title=EVIL)
    checker = _parse(page)
    assert "script" not in checker.tags
    assert "<script" not in page
    escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quotes&quot;"
    assert page.count(escaped) >= 4  # title (twice), note, preset, mechanism
    assert "<li>repaired 3 rows</li>" in page
    assert any("custom_field" in row[0] for row in _parse(page).tables["other"])


# ----------------------------------------------------------------- public
def test_public_safe_omits_everything_private(run: dict[str, Any], full: str) -> None:
    ledger = copy.deepcopy(run["ledger"])
    ledger["notes"] = ["on_invalid=drop removed 17 rows"]
    ledger["custom_field"] = "private-ish"
    # The real table is never read: a table that fits no schema must not matter.
    page = render_report(
        ledger=ledger,
        evaluation=run["evaluation"],
        real=pd.DataFrame({"nope": [1]}),
        synthetic=run["synthetic"],
        public_safe=True,
    )
    _parse(page)
    assert page.count(PNG) == 1  # the running-epsilon plot only (released quantities)
    assert "Public version" in page
    assert "1-way marginals" not in page and "TSTR" not in page
    assert 'id="marginals"' not in page and 'id="tstr"' not in page
    assert "removed 17 rows" not in page
    assert "custom_field" not in page and "rows_in" not in page
    run_table = {row[0]: row[1] for row in _parse(page).tables["run"]}
    assert "seed" not in run_table  # the public report shows only shareable keys
    # The guarantee and the release ledger stay.
    assert "differentially private</strong>" in page
    assert _parse(page).tables["events"][1:] == _parse(full).tables["events"][1:]


def test_blowfish_policy_is_stated(run: dict[str, Any]) -> None:
    ledger = dict(
        run["ledger"],
        policy={"participation": False, "attributes": {"age": {"threshold": 7}}},
    )
    page = render_report(ledger=ledger)
    statement = page[page.index('class="guarantee"') :]
    statement = statement[: statement.index("</p>")]
    assert "Blowfish private" in statement and "not</strong>" in statement
    assert "differentially private" not in statement
    assert "age" in _parse(page).tables["policy"][1][0]
    assert "threshold" in page


def test_other_mechanisms_and_missing_values(run: dict[str, Any]) -> None:
    ledger = copy.deepcopy(run["ledger"])
    ledger["epsilon"] = None
    ledger["events"] = [
        {
            "round": 0,
            "mechanism": "pilot",
            "kind": "zero_cost",
            "note": "public",
            "running_epsilon": 0.0,
        },
        {
            "round": 1,
            "mechanism": "pubmix",
            "kind": "privacy_loss_pair",
            "symmetric": True,
            "orientation": "any",
            "params": {"beta": 0.25, "m": 30},
            "running_epsilon": None,
        },
    ]
    page = render_report(ledger=ledger)
    rows = _parse(page).tables["events"][1:]
    assert rows[0][3] == "none (reads no private data)"
    assert rows[1][3] == "beta = 0.25" and "m = 30" in rows[1][7]
    assert rows[1][6] == "n/a"
    assert "No finite privacy guarantee" in page


def test_accepts_a_ledger_object_and_the_ledger_schema(run: dict[str, Any]) -> None:
    page = render_report(ledger=run["model"].ledger_, real=run["real"], synthetic=run["synthetic"])
    assert page.count(PNG) == 3


def test_bad_inputs(run: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="epsilon"):
        render_report(ledger={"events": []})
    with pytest.raises(InputError, match="both"):
        render_report(ledger=run["ledger"], real=run["real"])


# ------------------------------------------------------------------ writing
def test_write_report_is_atomic_and_never_overwrites(run: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    out = write_report(path, ledger=run["ledger"], evaluation=run["evaluation"])
    assert out == path
    first = path.read_text(encoding="utf-8")
    assert "<h2>3. Privacy guarantee</h2>" in first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temp files left

    with pytest.raises(InputError, match="already exists"):
        write_report(path, ledger=run["ledger"], public_safe=True)
    assert path.read_text(encoding="utf-8") == first

    write_report(path, ledger=run["ledger"], public_safe=True, force=True)
    assert "Public version" in path.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]

    with pytest.raises(InputError, match="folder"):
        write_report(tmp_path / "missing" / "r.html", ledger=run["ledger"])


# ------------------------------------------------------------ new content
def _masked(page: str) -> str:
    """The page with released numbers, images and the generation time masked."""
    page = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "IMG", page)
    return re.sub(r"\d+(\.\d+)?(e-?\d+)?", "#", page)


def test_shareable_reports_of_neighbouring_tables_differ_only_in_released_values(
    small_schema: Schema,
) -> None:
    real = _table(200)
    neighbour = real.copy()
    neighbour.loc[0] = [90, "retired", 99, ">50K"]  # replace one record
    pages = []
    for table in (real, neighbour):
        model = Synthesizer(
            small_schema,
            epsilon=1.0,
            delta=1e-5,
            method=get_method("tabpe", population=20, rounds=2),
            random_state=0,
        ).fit(table)
        pages.append(
            render_report(
                ledger=model.ledger_.to_dict(), synthetic=model.sample(), public_safe=True
            )
        )
    assert _masked(pages[0]) == _masked(pages[1])
    assert "closest private" not in pages[0] and "equal to a private record" not in pages[0]


def test_owner_report_has_rows_and_dcr(full: str, run: dict[str, Any]) -> None:
    tables = _parse(full).tables
    rows = {r[0]: r[1] for r in tables["rows"]}
    assert rows["synthetic rows"] == str(len(run["synthetic"]))
    assert "rows equal to a private record (not DP)" in rows
    assert tables["dcr"][1][0] == "synthetic rows"
    assert "columns-numeric" in tables and tables["columns-numeric"][1][0] == "age"


def test_hybrid_report_describes_what_ran(run: dict[str, Any]) -> None:
    ledger = copy.deepcopy(run["ledger"])
    ledger["preset"] = "hybrid"
    ledger["marginals"] = {"order": 2, "pe_rounds_run": False}
    ledger["events"] = [
        {"round": 1, "mechanism": "marginals", "kind": "gaussian", "sensitivity": 8.4,
         "sigma": 33.8, "rho": 0.03, "marginal_sets": 35, "support": 12526,
         "running_epsilon": 0.9999999994558265},
    ]  # fmt: skip
    page = render_report(ledger=ledger)
    facts = {row[0]: row[1] for row in _parse(page).tables["run"]}
    assert "Private Evolution" not in facts and "noise sigma per cell" not in facts
    assert facts["marginal release"] == (
        "35 noisy marginals of up to 2 columns; rows drawn from a weighted pool of 12526 candidates"
    )
    assert "population" not in page.split('id="run"')[1].split("</table>")[0]
    assert "0.9999999994558265" not in page.split("<details>")[0]


def test_adaptive_report_describes_the_engine(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, random_state=0, noise_seed=1)
    ledger = model.fit(small_table).ledger_.to_dict()
    facts = {row[0]: row[1] for row in _parse(render_report(ledger=ledger)).tables["run"]}
    assert facts["preset"] == "adaptive" and "Private Evolution" not in facts
    measured = sum(e["mechanism"] == "marginal" for e in ledger["events"])
    chosen = sum(e["mechanism"] == "select" for e in ledger["events"])
    assert facts["adaptive engine"].startswith(f"{measured} noisy marginals")
    assert f", {chosen} chosen by the exponential mechanism" in facts["adaptive engine"]


def test_nullable_numeric_and_date_columns_plot(tmp_path: Path) -> None:
    from dpevolve.reporting.figures import plot_marginals

    schema = Schema.from_dict(
        {
            "columns": {
                "x": {"type": "numeric", "lo": 0, "hi": 10, "nullable": True},
                "d": {"type": "date", "lo": "2020-01-01", "hi": "2020-12-31"},
            }
        }
    )
    table = pd.DataFrame({"x": [1.0, None, 9.5, None], "d": ["2020-01-02"] * 4})
    png = plot_marginals(table, table, schema, tmp_path / "m.png")
    assert png.read_bytes().startswith(PNG_MAGIC)
