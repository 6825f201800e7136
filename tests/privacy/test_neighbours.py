"""Every command that reads private data keeps the promise on neighbouring tables.

Two tables that differ in one row (replaced by another valid row, or, under
``--on-invalid drop`` and ``clip``, by an invalid one) must give byte-identical
shareable outputs once the released values are masked: the shareable ledger, the
shareable report, the model file, and every stderr line not marked as private counts.
The noise is seeded alike on both sides so that only the data differs; the released
values themselves (samples, populations, what a round's noisy output decided) are
masked, since they may differ: that is what the noise is for. A selection's pick is such
a value too: where the neighbours' draws pick differently (their two best noisy scores
within the sensitivity of each other), every later step follows the pick, and the
example is set aside.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.cli import main
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.presets import get_method
from dpevolve.privacy import SHAREABLE_KEYS

SCHEMA = Schema(
    (
        NumericColumn("age", 17, 90, integer=True),
        CategoricalColumn("job", ("admin", "builder", "retired")),
        CategoricalColumn("income", ("<=50K", ">50K")),
    )
)
ROWS = 24
# A few examples per command, always the same ones: the suite stays deterministic.
FEW = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
#: Replacements of one row: another valid record, or cells that break the schema.
REPLACEMENTS = [
    {"age": 60, "job": "retired", "income": ">50K"},
    {"age": 200},
    {"age": 30.5},
    {"job": "pilot"},
    {"income": None},
]
#: Event and detail keys a release's noisy output decides (released values).
RELEASED_INFO = {"kept_candidates", "support", "pool", "fit_loss", "fit_iterations"}
PRIVATE_LINE = "counts from the private data"


def table() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, ROWS),
            "job": rng.choice(["admin", "builder", "retired"], ROWS),
            "income": rng.choice(["<=50K", ">50K"], ROWS),
        }
    )


def neighbour(frame: pd.DataFrame, row: int, cells: dict[str, Any]) -> pd.DataFrame:
    out = frame.astype(object).copy()
    for column, value in cells.items():
        out.loc[row, column] = value
    return out


PAIRS = st.tuples(
    st.integers(0, ROWS - 1), st.sampled_from(REPLACEMENTS), st.sampled_from(["drop", "clip"])
)


def masked_ledger(
    ledger: dict[str, Any], *released: str, shareable_only: bool = True
) -> dict[str, Any]:
    """The ledger's shareable keys (all of them when ``shareable_only`` is false: a file
    meant to be shared as a whole), each event's and the details' released values masked."""
    out = {
        k: v
        for k, v in ledger.items()
        if not shareable_only or k in SHAREABLE_KEYS or k == "withheld"
    }
    hidden = RELEASED_INFO | set(released)
    out["events"] = [
        {k: ("<released>" if k in hidden else v) for k, v in e.items()} for e in out["events"]
    ]
    if isinstance(out.get("details"), dict):
        out["details"] = {
            k: ("<released>" if k in hidden else v) for k, v in out["details"].items()
        }
    return out


def drawn(ledger: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What each exponential-mechanism draw picked (released values): with the noise
    seeded alike, two neighbours' scores differ by at most the sensitivity, and a draw
    whose two best noisy scores lie that close picks differently; every later step
    follows the pick, so only runs whose draws coincide can match byte for byte."""
    return [
        (str(e.get("clique")), str(e.get("groups")), str(e.get("grouping")))
        for e in ledger["events"]
        if e.get("kind") == "exponential"
    ]


def shareable_lines(stderr: str) -> list[str]:
    """stderr without the lines marked as private counts; the progress bar's clock masked."""
    stderr = re.sub(r"\d+:\d\d:\d\d", "<elapsed>", stderr)
    return [line for line in stderr.splitlines() if PRIVATE_LINE not in line]


def run_cli(argv: list[Any]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def both(row: int, cells: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    base = table()
    return base, neighbour(base, row, cells)


# ------------------------------------------------------------------------- pubmix
@FEW
@given(
    PAIRS,
    st.sampled_from(
        [
            ("pubmix", []),
            ("linmix", []),
            ("gaussian", []),
            ("pubmix", ["--gamma-epsilon", "0.2"]),
            ("pubmix", ["--floor-epsilon", "0.2"]),
        ]
    ),
)
def test_pubmix_outputs_of_neighbours_match(pair, option) -> None:
    row, cells, mode = pair
    noise, extra = option
    released = ("gamma", "floor", "deficit", "z1", "z2", "beta") if extra else ()
    outputs = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        (tmp / "schema.yaml").write_text(SCHEMA.to_yaml())
        table().iloc[:12].to_csv(tmp / "public.csv", index=False)
        for k, frame in enumerate(both(row, cells)):
            frame.to_csv(tmp / f"private{k}.csv", index=False)
            argv = ["pubmix", tmp / f"private{k}.csv", "-s", tmp / "schema.yaml", "-m", "20"]
            argv += ["--public", tmp / "public.csv", "-o", tmp / f"out{k}.csv", "--seed", "1"]
            argv += ["--noise", noise, "--on-invalid", mode, "--noise-seed", "2"]
            argv += ["--rho", "0.5"] if noise == "gaussian" else ["-e", "2"]
            code, stderr = run_cli(argv + extra)
            assert code == 0, stderr
            ledger = json.loads((tmp / f"out{k}.ledger.json").read_text())
            assert ledger["private_rows"] == ROWS
            text = json.dumps(masked_ledger(ledger, *released), sort_keys=True)
            text = text.replace(f"out{k}", "out")  # the output names differ, not the data
            outputs.append((text, shareable_lines(stderr.replace(f"out{k}", "out"))))
    assert outputs[0] == outputs[1]


# ---------------------------------------------------------------- synth and report
def mask_report(html: str) -> str:
    """The shareable report with the date, the released event columns and the counts of
    the released rows and the hybrid pool (functions of released values) masked."""
    html = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<date>", html)
    html = re.sub(r"<td>\d+ \(\d+(\.\d+)?%\)</td>", "<td><released></td>", html)
    html = re.sub(r"pool of \d+ candidates", "pool of <released> candidates", html)
    # The engine's rounds end where its annealing (post-processing) says: counts released.
    html = re.sub(r"\d+( of them)?(?= noisy marginals| coarsened| chosen by)", "<n>", html)
    for key in RELEASED_INFO:
        html = re.sub(rf"({key}\W+)[\d.e+-]+", r"\1<released>", html)
    return html


@FEW
@given(PAIRS, st.sampled_from(["adaptive", "tabpe", "hybrid"]))
def test_synth_share_ledger_and_share_report_of_neighbours_match(pair, preset) -> None:
    row, cells, mode = pair
    outputs, picks = [], []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        (tmp / "schema.yaml").write_text(SCHEMA.to_yaml())
        for k, frame in enumerate(both(row, cells)):
            frame.to_csv(tmp / f"private{k}.csv", index=False)
            argv = ["synth", tmp / f"private{k}.csv", "-s", tmp / "schema.yaml", "-e", "1"]
            argv += ["-o", tmp / f"out{k}.csv"]
            if preset != "adaptive":  # the engine has no PE population or rounds
                argv += ["--population", "16", "--rounds", "2"]
            argv += ["--preset", preset, "--seed", "3", "--noise-seed", "4"]
            argv += ["--on-invalid", mode, "--share-ledger", tmp / f"share{k}.json"]
            argv += ["--share-report", tmp / f"share{k}.html"]
            code, stderr = run_cli(argv)
            assert code == 0, stderr
            ledger = json.loads((tmp / f"share{k}.json").read_text())
            picks.append(drawn(ledger))
            html = mask_report((tmp / f"share{k}.html").read_text())
            # The closing line names every file written: the neighbours' names differ.
            lines = shareable_lines(stderr.replace(f"out{k}", "out").replace(f"share{k}", "share"))
            outputs.append((masked_ledger(ledger), html.replace(f"out{k}", "out"), lines))
    assume(picks[0] == picks[1])  # a pick is a released value (see drawn)
    assert outputs[0][0] == outputs[1][0]
    assert outputs[0][1] == outputs[1][1]
    assert outputs[0][2] == outputs[1][2]


# -------------------------------------------------------------------- the model file
def masked_model(path: Path) -> bytes:
    """The model file with its released values masked, as bytes."""
    payload = pickle.loads(path.read_bytes())
    released = {
        "population_", "synthetic_", "support_", "history_", "fits_", "n_private_",
        "schema_", "warnings_",
    }  # fmt: skip
    for part in ("released", "fitted", "state"):
        if part in payload:
            payload[part] = {
                k: (v if k not in released else f"<released {type(v).__name__}>")
                for k, v in payload[part].items()
            }
    ledger = payload.get("ledger", payload.get("fitted", {}).get("ledger_"))
    if ledger is not None and not isinstance(ledger, dict):
        ledger = ledger.to_dict()
    # The whole ledger the file holds: the file is shared as a whole.
    payload["ledger"] = masked_ledger(ledger, shareable_only=False) if ledger else None
    payload.get("fitted", {}).pop("ledger_", None)
    payload.pop("sample_state", None)  # seeded by the public random_state alike
    return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)


@FEW
@given(PAIRS, st.sampled_from(["tabpe", "hybrid"]))
def test_saved_models_of_neighbours_match(pair, preset) -> None:
    row, cells, mode = pair
    files = []
    with tempfile.TemporaryDirectory() as folder:
        for k, frame in enumerate(both(row, cells)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = Synthesizer(
                    SCHEMA,
                    epsilon=1.0,
                    method=get_method(preset, population=16, rounds=2),
                    random_state=3,
                    noise_seed=4,
                    on_invalid=mode,
                ).fit(frame)
            path = Path(folder) / f"model{k}.pkl"
            model.save(path)
            files.append(masked_model(path))
    assert files[0] == files[1]


# ------------------------------------------------------------------------ evaluate
@FEW
@given(PAIRS)
def test_evaluate_says_nothing_else_about_neighbours(pair) -> None:
    """``evaluate`` measures utility on the real table: its numbers are not DP (they
    are for the data steward). Everything else it writes must not depend on the row."""
    row, cells, mode = pair
    outputs = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        (tmp / "schema.yaml").write_text(SCHEMA.to_yaml())
        table().iloc[:10].to_csv(tmp / "synthetic.csv", index=False)
        for k, frame in enumerate(both(row, cells)):
            frame.to_csv(tmp / f"real{k}.csv", index=False)
            argv = ["evaluate", tmp / f"real{k}.csv", tmp / "synthetic.csv"]
            argv += ["-s", tmp / "schema.yaml", "--on-invalid", mode, "-o", tmp / f"e{k}.json"]
            argv += ["--label", "income"]
            code, stderr = run_cli(argv)
            assert code == 0, stderr
            shape = re.sub(r"-?\d+(\.\d+)?(e[+-]?\d+)?", "#", (tmp / f"e{k}.json").read_text())
            outputs.append(shape)
    assert outputs[0] == outputs[1]
