"""Reading files a user hands over: separators, broken files, careless inputs (one line,
exit 2, no private value), and dates that come back out of a run as they went in."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.cli import main
from dpevolve.data.io import check_writable, csv_separator, read_table
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.streaming import StreamedTable
from dpevolve.data.types import DateColumn
from dpevolve.errors import InputError
from dpevolve.presets import get_method

SCHEMA = Schema((NumericColumn("a", 0, 10), CategoricalColumn("b", ("x", "y"))))


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_the_separator_is_read_from_the_header_line(tmp_path: Path, sep: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"a{sep}b\n1{sep}x\n2{sep}y\n")
    assert csv_separator(path) == sep
    frame = read_table(path)
    assert list(frame.columns) == ["a", "b"] and frame["a"].tolist() == ["1", "2"]
    streamed = StreamedTable(path, SCHEMA, batch_rows=1)
    assert streamed.n == 2


def test_a_header_with_two_separators_as_often_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a;b,c\n1;2,3\n")
    with pytest.raises(InputError, match="comma and semicolon separators as often"):
        read_table(path)
    quoted = tmp_path / "q.csv"  # a separator inside a quoted name does not count
    quoted.write_text('"a;b",c\n1,2\n')
    assert list(read_table(quoted).columns) == ["a;b", "c"]


@pytest.mark.parametrize(
    "content",
    [b"not gzip at all\n", gzip.compress(b"a,b\n1,x\n" * 500, mtime=0)[:40]],
    ids=["not-gzip", "truncated"],
)
def test_a_corrupt_gzip_file_is_one_line_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.csv.gz"
    path.write_bytes(content)
    for read in (read_table, lambda p: StreamedTable(p, SCHEMA)):
        with pytest.raises(InputError, match=r"broken\.csv\.gz is not a readable gzip file"):
            read(path)


def test_ragged_rows_and_duplicate_names_are_refused(tmp_path: Path) -> None:
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,x,SECRET\n2,y\n")
    with pytest.raises(InputError, match="a row has more fields than the header") as info:
        read_table(ragged)
    assert "SECRET" not in str(info.value)
    twice = tmp_path / "twice.csv"
    twice.write_text("a,a\n1,2\n")
    with pytest.raises(InputError, match="has column 'a' twice"):
        read_table(twice)


def test_an_input_is_never_an_output(tmp_path: Path) -> None:
    public = tmp_path / "public.csv"
    public.write_text("a\n1\n")
    with pytest.raises(InputError, match="is the input"):
        check_writable(tmp_path / "." / "public.csv", force=True, inputs=[public])
    assert check_writable(tmp_path / "other.yaml", force=False, inputs=[public])


def _cli(argv: list[object], capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err.strip()


def test_careless_inputs_give_one_clean_line(tmp_path: Path, capsys) -> None:
    public = tmp_path / "public.csv"
    public.write_text("a,b\n1,x\n2,SECRET-CELL\n")
    schema = tmp_path / "s.yaml"
    schema.write_text(
        "columns:\n  a: {type: numeric, lo: 0, hi: 10}\n  b: {type: categorical, values: [x]}\n"
    )
    files = {
        "semi.csv": "a;b;c\n1;2;x\n",
        "empty.csv": "",
        "header.csv": "a,b\n",
        "inf.csv": "a,b\n1,x\ninf,y\n",
        "allnan.csv": "a,b\n1,\n2,\n",
        "bad.yaml": "columns: [1, 2\n",
        "dec.yaml": "columns:\n  a: {type: numeric, lo: 0, hi: 1, decimals: 1.5}\n",
        "oth.yaml": "columns:\n  a: {type: numeric, lo: 0, hi: 1, other: true}\n",
        "date.csv": "d\n01/02/2020\n03/04/2020\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "o.yaml"
    cases: list[list[object]] = [
        ["schema", "infer", tmp_path / "nope.csv", "-o", out],
        ["schema", "infer", tmp_path / "empty.csv", "-o", out],
        ["schema", "infer", tmp_path / "header.csv", "-o", out],
        ["schema", "infer", tmp_path / "inf.csv", "-o", out],
        ["schema", "infer", tmp_path / "allnan.csv", "-o", out],
        ["schema", "infer", tmp_path / "date.csv", "-o", out],
        ["schema", "infer", public, "-o", public, "--force"],
        ["schema", "infer", public, "--label", "zz", "-o", out],
        ["schema", "infer", public, "-o", tmp_path / "no" / "o.yaml"],
        ["schema", "check", public, "-s", tmp_path / "bad.yaml"],
        ["schema", "check", public, "-s", tmp_path / "dec.yaml"],
        ["schema", "check", public, "-s", tmp_path / "oth.yaml"],
        ["schema", "check", public, "-s", schema],
        ["schema", "check", tmp_path / "semi.csv", "-s", schema],
    ]
    for argv in cases:
        code, err = _cli(argv, capsys)
        assert code == 2, (argv, err)
        # one error line (`schema check` lists each problem above it, by design)
        last = err.splitlines()[-1]
        assert last.startswith("dpevolve: error: ") and "Traceback" not in err, (argv, err)
        assert "SECRET-CELL" not in err
        assert len([line for line in err.splitlines() if line.startswith("dpevolve")]) == 1
    assert public.read_text().startswith("a,b")  # never overwritten


@pytest.mark.parametrize(
    ("texts", "fmt"),
    [
        (["2020-01-31", "2021-12-01", "2019-06-15"], "%Y-%m-%d"),
        (["31/01/2020", "01/12/2021", "15/06/2019"], "%d/%m/%Y"),
        (["2020/01/31 10:00", "2021/12/01 23:59", "2019/06/15 00:30"], "%Y/%m/%d %H:%M"),
    ],
)
def test_dates_round_trip_through_a_run(texts, fmt) -> None:
    rng = np.random.default_rng(0)
    public = pd.DataFrame({"when": texts * 20, "y": rng.choice(["a", "b"], 60)})
    schema = Schema.infer(public, label="y")
    when = schema["when"]
    assert isinstance(when, DateColumn) and when.pattern == fmt
    model = Synthesizer(
        schema,
        epsilon=1.0,
        method=get_method("tabpe", population=30, rounds=2),
        random_state=0,
        noise_seed=1,
        progress=False,
    ).fit(public)
    out = model.sample(40)
    parsed = pd.to_datetime(out["when"], format=fmt, errors="coerce")
    assert parsed.notna().all()  # written in the input's own format
    assert schema.validate(out)[1].rows_out == 40  # and the output fits the schema


def test_missing_words_and_comma_numbers_are_named_never_silently_missing(
    tmp_path: Path, capsys
) -> None:
    schema = tmp_path / "s.yaml"
    schema.write_text(
        "columns:\n  a: {type: numeric, lo: 0, hi: 100, nullable: true}\n"
        "  b: {type: categorical, values: [x, y]}\n"
    )
    for cell, cause in [("NA", "na_values do not list"), ("n/a", "na_values do not list"),
                        ("null", "na_values do not list"), ("-", "na_values do not list"),
                        ("12,5", "written with a comma")]:  # fmt: skip
        private = tmp_path / "p.csv"
        private.write_text(f"a;b\n3;x\n{cell};y\n")
        out = tmp_path / "o.csv"
        code, err = _cli(["synth", private, "-s", schema, "-o", out, "-e", "1", "-q"], capsys)
        assert code == 2 and not out.exists()
        line = err.strip().splitlines()[-1]
        assert "column 'a': 1 of 2 rows" in line and cause in line, line
        assert "(first at line 3)" in line  # the file line; the cell itself is not quoted
    # Listed in na_values, the word is a missing cell.
    schema.write_text("na_values: [NA]\n" + schema.read_text())
    private.write_text("a;b\n3;x\nNA;y\n")
    frame, report = Schema.load(schema).validate(read_table(private))
    assert report.rows_out == 2 and np.isnan(frame["a"].iloc[1])


def test_census_n_for_not_applicable_reads_as_missing_unless_a_column_means_no(
    tmp_path: Path, capsys
) -> None:
    """The ACS microdata write "N" for not applicable: an income column of numbers and
    N is a nullable number, not 900 categories; where another column holds N among other
    texts (Y/N), N is a value there and no missing word anywhere."""
    rows = [f"{'N' if k % 7 == 0 else 1000 * k},{k % 4}" for k in range(60)]
    public = tmp_path / "acs.csv"
    public.write_text("income,kids\n" + "\n".join(rows) + "\n")
    out = tmp_path / "s.yaml"
    code, err = _cli(["schema", "infer", public, "-o", out], capsys)
    assert code == 0, err
    schema = Schema.load(out)
    assert schema.na_values == ("N",)
    income = schema["income"]
    assert isinstance(income, NumericColumn) and income.nullable and income.integer
    yes_no = tmp_path / "yn.csv"
    yes_no.write_text(
        "income,owns\n"
        + "\n".join(f"{r.split(',')[0]},{'Y' if k % 2 else 'N'}" for k, r in enumerate(rows))
        + "\n"
    )
    out2 = tmp_path / "s2.yaml"
    code, err = _cli(["schema", "infer", yes_no, "-o", out2], capsys)
    assert code == 0, err
    assert Schema.load(out2).na_values == ()
    # the label is never missing: its N (no decile) is one of its classes
    labelled = tmp_path / "decile.csv"
    labelled.write_text(
        "income,decile\n"
        + "\n".join(
            f"{r.split(',')[0]},{'N' if k % 7 == 0 else k % 10}" for k, r in enumerate(rows)
        )
        + "\n"
    )
    out3 = tmp_path / "s3.yaml"
    code, err = _cli(["schema", "infer", labelled, "-o", out3, "--label", "decile"], capsys)
    assert code == 0, err
    inferred = Schema.load(out3)
    assert inferred.na_values == () and "N" in inferred["decile"].values
    _, report = inferred.validate(read_table(labelled))
    assert report.rows_out == 60


def test_schema_infer_declares_what_reads_back(tmp_path: Path, capsys) -> None:
    public = tmp_path / "public.csv"
    rows = [f"{k % 3 + 1},0{k % 3 + 1},{'NA' if k == 4 else k},x" for k in range(30)]
    public.write_text("code,zero,amount,w\n" + "\n".join(rows) + "\n")
    out = tmp_path / "s.yaml"
    code, err = _cli(["schema", "infer", public, "-o", out], capsys)
    assert code == 0, err
    schema = Schema.load(out)
    assert schema.na_values == ("NA",) and "'NA' as missing" in err
    assert schema["code"].values == (1, 2, 3)  # integer codes
    assert schema["zero"].values == ("01", "02", "03")  # leading zeros kept as texts
    _, report = schema.validate(read_table(public))
    assert report.rows_out == 30
    commas = tmp_path / "commas.csv"
    commas.write_text("a;b\n12,5;x\n3;y\n")
    code, err = _cli(["schema", "infer", commas, "-o", tmp_path / "c.yaml"], capsys)
    assert code == 2 and "column 'a' writes numbers with a comma" in err
