"""The backend ``dpevolve synth --backend`` names, and the line that says which and why."""

from __future__ import annotations

import importlib.util
from typing import Any

from dpevolve.backends import make_backend
from dpevolve.errors import InputError
from dpevolve.extras import require

__all__ = ["choose_backend"]


def choose_backend(
    name: str, engine_on_disk: bool = False, in_server: bool = False
) -> tuple[Any, str]:
    """The backend, and one line saying which and why. ``engine_on_disk``: the adaptive
    engine reads PRIVATE from disk each pass (``--stream``, a DuckDB table), so ``auto``
    counts in DuckDB when it is installed (:func:`~dpevolve.backends.duckdb.counts_in_duckdb`);
    ``in_server``: PRIVATE is a PostgreSQL table, whose server ``auto`` counts in
    (:func:`~dpevolve.backends.postgres.counts_where_stored`)."""
    if name == "auto" and in_server:
        chosen, line = choose_backend("auto")
        return chosen, f"{line}; counts in the PostgreSQL server (--backend auto)"
    if name == "auto" and engine_on_disk and importlib.util.find_spec("duckdb") is not None:
        chosen, line = choose_backend("auto")
        return chosen, f"{line}; counts in DuckDB (--backend auto: PRIVATE is read from disk)"
    if name == "dask":
        import os

        try:
            from dask.distributed import Client
        except ImportError:
            raise InputError("--backend dask needs dask: pip install 'dpevolve[dask]'") from None

        from dpevolve.backends.dask import DaskBackend

        address = os.environ.get("DASK_SCHEDULER_ADDRESS")
        dask = DaskBackend(Client(address) if address else Client(processes=False))
        return dask, f"backend: dask ({address or 'local in-process cluster'}; {dask.describe()})"
    if name == "gpu":
        from dpevolve.backends.gpu import GpuBackend

        try:
            return GpuBackend(), "backend: gpu"
        except InputError:
            raise InputError(
                "--backend gpu found no usable GPU (needs torch with CUDA: "
                "pip install 'dpevolve[gpu]', or CuPy); use --backend auto instead"
            ) from None
    if name == "duckdb":
        require("duckdb", "--backend duckdb")
        return make_backend(name), "backend: duckdb (the engine's counts as GROUP BY queries)"
    chosen = make_backend(name)
    if name != "auto":
        return chosen, f"backend: {name}"
    why = (
        "fused numba kernels (--backend auto: numba is installed)"
        if type(chosen).__name__ == "FusedBackend"
        else "local numpy reference (--backend auto: numba is not installed; "
        "pip install 'dpevolve[fast]' is faster)"
    )
    return chosen, f"backend: {why}"
