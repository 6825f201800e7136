"""Where votes are computed. Only a backend reads private records (docs/architecture.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpevolve.errors import InputError

if TYPE_CHECKING:
    from dpevolve.backends.base import Backend
    from dpevolve.backends.local import LocalBackend

__all__ = ["BACKENDS", "Backend", "LocalBackend", "make_backend"]

#: The names :func:`make_backend` knows (the command line's choices).
BACKENDS = ("auto", "local", "fused", "gpu", "dask", "duckdb")


def make_backend(name: str = "auto") -> Backend:
    """``local`` (numpy reference), ``fused`` (numba kernels), ``gpu``, ``dask`` (the
    default Dask client), ``duckdb`` (the engine's counts as GROUP BY queries in
    DuckDB), or ``auto``: fused when numba is installed, else local."""
    from dpevolve.backends.local import LocalBackend

    if name == "local":
        return LocalBackend()
    if name in ("fused", "auto"):
        from dpevolve.backends.fused import FusedBackend, fused_available

        if fused_available():
            return FusedBackend()
        if name == "fused":
            raise InputError("the fused backend needs numba: pip install 'dpevolve[fast]'")
        return LocalBackend()
    if name == "gpu":
        from dpevolve.backends.gpu import GpuBackend

        return GpuBackend()
    if name == "dask":
        from dpevolve.backends.dask import DaskBackend

        return DaskBackend()
    if name == "duckdb":
        from dpevolve.backends.duckdb import DuckDBBackend

        return DuckDBBackend()
    raise InputError(f"unknown backend '{name}' (choose {', '.join(BACKENDS)})")


def __getattr__(name: str) -> Any:
    # The classes load on first use: the command line's help names the backends only.
    if name == "Backend":
        from dpevolve.backends.base import Backend

        return Backend
    if name == "LocalBackend":
        from dpevolve.backends.local import LocalBackend

        return LocalBackend
    raise AttributeError(f"module 'dpevolve.backends' has no attribute {name!r}")
