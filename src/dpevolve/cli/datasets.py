"""``dpevolve datasets list|fetch|schema``: the built-in datasets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpevolve.cli.common import Force, datasets_app
from dpevolve.data.io import check_writable


@datasets_app.command(
    "list",
    help="Dataset names, their splits and column presets.\n\nExample: dpevolve datasets list",
)
def datasets_list() -> None:
    from dpevolve import datasets

    for name in datasets.names():
        presets = ", ".join(datasets.presets(name)) or "-"
        typer.echo(f"{name:24s} splits: {', '.join(datasets.splits(name)):16s} presets: {presets}")


@datasets_app.command(
    "fetch",
    help="Download a dataset from its original source into the cache and check its sha256.\n\n"
    "Nothing is downloaded when $DPEVOLVE_DATA (or the cache) already holds the data set; "
    "files already in the cache with the right checksum are kept. Offline, copy the "
    "files into a folder laid out as the error says and set $DPEVOLVE_DATA to it.\n\n"
    "Example: dpevolve datasets fetch adult",
)
def datasets_fetch(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Dataset name (see `dpevolve datasets list`).")
    ],
    force: Force = False,
) -> None:
    from dpevolve import datasets

    cache = datasets.cache_dir()
    for path in datasets.fetch(name, force=force):
        found = f" (found via ${datasets.DATA_ENV}; not downloaded)"
        where = "" if path.is_relative_to(cache) else found
        typer.echo(f"ok {path}{where}")


@datasets_app.command(
    "schema",
    help="Write a dataset's shipped schema (documented domains) to a YAML file.\n\n"
    "Example: dpevolve datasets schema adult --columns adult-tabpe -o adult.yaml",
)
def datasets_schema(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Dataset name.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Schema YAML to write.")],
    columns: Annotated[
        str | None, typer.Option("--columns", help="Column preset (see `dpevolve datasets list`).")
    ] = None,
    force: Force = False,
) -> None:
    from dpevolve import datasets
    from dpevolve.data.io import atomic_write

    check_writable(output, force)
    text = datasets.schema(name, columns=columns).to_yaml()
    atomic_write(output, lambda tmp: tmp.write_text(text))
    typer.echo(f"wrote {output}", err=True)


@datasets_app.command(
    "export",
    help="Write a dataset split as a table (for trying the commands on real data).\n\n"
    "Example: dpevolve datasets export adult --columns adult-tabpe -o adult.csv",
)
def datasets_export(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Dataset name.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Table to write.")],
    split: Annotated[
        str | None,
        typer.Option("--split", help="A split (see `dpevolve datasets list`); default its first."),
    ] = None,
    columns: Annotated[str | None, typer.Option("--columns", help="Column preset.")] = None,
    force: Force = False,
) -> None:
    from dpevolve import datasets
    from dpevolve.data.io import write_table

    check_writable(output, force)
    data = datasets.load(name, split=split, columns=columns)
    write_table(data.frame, output)
    typer.echo(f"wrote {output} ({len(data.frame)} rows)", err=True)
