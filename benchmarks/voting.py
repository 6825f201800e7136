"""Throughput of the vote (spec §3): FusedBackend against numpy (LocalBackend) and GEMM.

The vote is nearly all of a run's cost: every private record against every candidate.
This measures record x candidate pairs per second for hard and soft votes (tau = 0.03)
with Gower and with the Tab-PE embedding distance, on a generated table with an
Adult-like schema, for n private records and m candidates:

* ``fused``: FusedBackend (exact, the default);
* ``fused-blas``: FusedBackend(exact=False), the embedding's hard vote from one GEMM;
* ``numpy``: LocalBackend (distance block, then the vote), measured on at most
  ``--local-pairs`` pairs per configuration (its cost per pair does not depend on n);
* the machine's float64 GEMM rate, measured in the same run, and the pair rate it
  implies for the embedding: ``GFLOP/s / (2 D)`` with D the embedding width.

It also fits the slope of log(time) against log(n) and log(m) (1 means linear) and
records the peak resident memory of each call above what the process held before it.

Usage::

    python benchmarks/voting.py --quick      # n in {1e4, 1e5}
    python benchmarks/voting.py              # n in {1e4, 1e5, 1e6}

Writes benchmarks/results/voting.json, voting_throughput.png and voting_scaling.png.
The machine may be shared: the load average before and after is in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.backends.fused import FusedBackend, fused_available
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.pe.distance import Gower, TabPEEmbedding
from dpevolve.pe.variation import Variation
from dpevolve.pe.votes import HardVote, SoftVote

RESULTS = Path(__file__).resolve().parent / "results"
# One encoded record: 2 numeric float64 + 7 categorical int32 codes.
_RECORD_BYTES = 2 * 8 + 7 * 4
TAU = 0.03
CARDINALITIES = {
    "workclass": 8,
    "education": 16,
    "marital-status": 7,
    "occupation": 14,
    "race": 5,
    "sex": 2,
}


# ------------------------------------------------------------------ the table


def adult_like_schema() -> Schema:
    """age, workclass(8), education(16), marital(7), occupation(14), race(5), sex(2),
    hours-per-week, income(2): Adult's shape, declared domains, default weights."""
    columns: list[NumericColumn | CategoricalColumn] = [NumericColumn("age", 17, 90, True)]
    columns += [
        CategoricalColumn(name, tuple(f"{name}-{v}" for v in range(size)))
        for name, size in CARDINALITIES.items()
    ]
    columns.append(NumericColumn("hours-per-week", 1, 99, True))
    columns.append(CategoricalColumn("income", ("<=50K", ">50K")))
    return Schema(tuple(columns), label="income")


def adult_like_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A generated table with skewed marginals and some dependence (not real data)."""
    columns: dict[str, Any] = {}
    age = np.clip(np.round(rng.gamma(6.0, 6.5, n) + 17), 17, 90).astype(np.int64)
    columns["age"] = age
    for name, size in CARDINALITIES.items():
        p = 1.0 / np.arange(1, size + 1) ** 1.2  # Zipf-like, as Adult's categories are
        columns[name] = rng.choice([f"{name}-{v}" for v in range(size)], n, p=p / p.sum())
    hours = np.clip(np.round(rng.normal(40, 12, n)), 1, 99).astype(np.int64)
    columns["hours-per-week"] = hours
    rich = rng.random(n) < 0.1 + 0.3 * ((age > 35) & (hours > 40))
    columns["income"] = np.where(rich, ">50K", "<=50K")
    return pd.DataFrame(columns)


# ------------------------------------------------------------------ measuring


def peak_rss_reset() -> bool:
    """Reset the kernel's peak-RSS mark for this process (Linux); False if unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def rss_kib(field: str) -> int:
    """VmRSS or VmHWM (peak) of this process in KiB, from /proc (0 if unavailable)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float, float, float]:
    """Best wall time and best CPU time (all threads) over ``repeats`` calls, and two
    views of the memory they needed (MiB).

    On a shared machine the CPU time is the steadier measure of work per pair; the wall
    time is what a user waits.

    * traced: peak of the allocations made during the calls (tracemalloc: numpy's and
      numba's, whose runtime allocates through PyMem_RawMalloc);
    * rss: peak resident memory above what the process held before (sees everything,
      but under-counts when freed memory already resident is reused).
    """
    best = best_cpu = float("inf")
    resettable = peak_rss_reset()
    before = rss_kib("VmRSS")
    tracemalloc.start()
    try:
        for _ in range(repeats):
            start, cpu = time.perf_counter(), time.process_time()
            fn()
            best = min(best, time.perf_counter() - start)
            best_cpu = min(best_cpu, time.process_time() - cpu)
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    peak = rss_kib("VmHWM") if resettable else 0
    return best, best_cpu, traced / 2**20, max(0, peak - before) / 1024


def gemm_gflops(size: int = 2048, repeats: int = 3) -> tuple[float, float]:
    """numpy float64 square GEMM rate: GFLOP per wall second and per CPU second."""
    rng = np.random.default_rng(0)
    a, b = rng.random((size, size)), rng.random((size, size))
    a @ b
    wall = cpu = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        a @ b
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    flops = 2.0 * size**3 / 1e9
    return flops / wall, flops / cpu


def vote_shaped_gemm_gflops(rows: int, width: int, m: int, repeats: int = 3) -> float:
    """GEMM rate for the embedding vote's shape: (rows x D) @ (D x m)."""
    rng = np.random.default_rng(1)
    a, b = rng.random((rows, width)), rng.random((width, m))
    a @ b
    best = min(_time(lambda: a @ b) for _ in range(repeats))
    return 2.0 * rows * width * m / best / 1e9


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def loglog_slope(x: list[float], y: list[float]) -> float | None:
    if len(x) < 2:
        return None
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


# ------------------------------------------------------------------ the run


def run(args: argparse.Namespace) -> dict[str, Any]:
    ns = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    ms = [512, 1000, 5000]
    schema = adult_like_schema()
    rng = np.random.default_rng(args.seed)
    private_all = encode(adult_like_table(max(ns), rng), schema)
    variation = Variation(Layout.of(schema))
    populations = {m: variation.random(m, np.random.default_rng(m)) for m in ms}
    distances = {"gower": Gower(schema), "tabpe": TabPEEmbedding(schema)}
    votes = {"hard": HardVote(), "soft": SoftVote(TAU)}
    width = int(distances["tabpe"].embed(private_all.take(slice(0, 1))).shape[1])

    load_before = os.getloadavg()
    gflops, gflops_cpu = gemm_gflops()
    shaped = {m: vote_shaped_gemm_gflops(8192, width, m) for m in ms}
    fused = FusedBackend(threads=args.threads)
    blas = FusedBackend(exact=False, threads=args.threads)
    local = LocalBackend()
    start = time.perf_counter()
    fused.warmup()
    jit_s = time.perf_counter() - start
    print(
        f"GEMM {gflops:.1f} GFLOP/s ({gflops_cpu:.1f} per CPU-s; vote-shaped: "
        f"{ {m: round(v, 1) for m, v in shaped.items()} }); D = {width}; JIT {jit_s:.1f}s"
    )

    rows: list[dict[str, Any]] = []
    local_cache: dict[tuple[int, int, str, str], tuple[float, float, float, float]] = {}
    for n in ns:
        private = private_all.take(slice(0, n))
        for m in ms:
            population = populations[m]
            pairs = n * m
            repeats = 3 if pairs <= 2e8 else 1
            for dname, distance in distances.items():
                for vname, vote in votes.items():
                    backends: list[tuple[str, Any]] = [("fused", fused)]
                    if dname == "tabpe" and vname == "hard":
                        backends.append(("fused-blas", blas))
                    for label, backend in backends:
                        call = _caller(backend, private, population, distance, vote)
                        measured = timed(call, repeats)
                        rows.append(_row(label, dname, vname, n, m, n, *measured))
                    n_local = min(n, max(1, int(args.local_pairs) // m))
                    key = (n_local, m, dname, vname)
                    if key not in local_cache:
                        sub = private.take(slice(0, n_local))
                        local_cache[key] = timed(_caller(local, sub, population, distance, vote), 1)
                    rows.append(_row("numpy", dname, vname, n, m, n_local, *local_cache[key]))
                    _print(rows, n, m, dname, vname)
    load_after = os.getloadavg()
    return _summarise(
        rows, ns, ms, (gflops, gflops_cpu), shaped, width, jit_s, (load_before, load_after), args
    )


def _caller(
    backend: Any, private: Records, population: Records, distance: Any, vote: Any
) -> Callable[[], Any]:
    return lambda: backend.vote(private, population, distance, vote)


def _row(
    backend: str,
    dname: str,
    vname: str,
    n: int,
    m: int,
    measured_n: int,
    s: float,
    cpu_s: float,
    traced_mib: float,
    rss_mib: float,
) -> dict[str, Any]:
    return {
        "backend": backend,
        "distance": dname,
        "vote": vname,
        "n": n,
        "m": m,
        "measured_n": measured_n,
        "seconds": s,
        # Cost per round at this n: measured directly, or scaled from measured_n (numpy).
        "seconds_per_round": s * n / measured_n,
        "pairs_per_s": measured_n * m / s,
        "cpu_seconds": cpu_s,
        "pairs_per_cpu_s": measured_n * m / cpu_s,
        "peak_traced_mib": traced_mib,
        "peak_rss_above_start_mib": rss_mib,
        # The private records themselves (already in memory before the call).
        "private_mib": measured_n * _RECORD_BYTES / 2**20,
    }


def _print(rows: list[dict[str, Any]], n: int, m: int, dname: str, vname: str) -> None:
    here = [r for r in rows if (r["n"], r["m"], r["distance"], r["vote"]) == (n, m, dname, vname)]
    text = "  ".join(
        f"{r['backend']} {r['pairs_per_s'] / 1e6:7.1f} Mp/s "
        f"[{r['pairs_per_cpu_s'] / 1e6:.0f}/cpu-s] "
        f"({r['peak_traced_mib']:.1f}/{r['peak_rss_above_start_mib']:.1f} MiB)"
        for r in here
    )
    print(f"n={n:>8} m={m:>5} {dname:>5} {vname:>4}: {text}", flush=True)


def _summarise(
    rows: list[dict[str, Any]],
    ns: list[int],
    ms: list[int],
    gemm: tuple[float, float],
    shaped: dict[int, float],
    width: int,
    jit_s: float,
    load: tuple[tuple[float, ...], tuple[float, ...]],
    args: argparse.Namespace,
) -> dict[str, Any]:
    gflops, gflops_cpu = gemm
    peak_pairs = gflops * 1e9 / (2 * width)
    peak_pairs_cpu = gflops_cpu * 1e9 / (2 * width)
    for r in rows:
        if r["distance"] == "tabpe":
            r["fraction_of_gemm_peak"] = r["pairs_per_s"] / peak_pairs
            r["fraction_of_gemm_peak_cpu"] = r["pairs_per_cpu_s"] / peak_pairs_cpu
        numpy_row = next(
            q
            for q in rows
            if q["backend"] == "numpy"
            and (q["n"], q["m"], q["distance"], q["vote"])
            == (r["n"], r["m"], r["distance"], r["vote"])
        )
        r["speedup_over_numpy"] = r["pairs_per_s"] / numpy_row["pairs_per_s"]
    slopes: dict[str, Any] = {}
    for backend in ("fused", "fused-blas"):
        for dname in ("gower", "tabpe"):
            for vname in ("hard", "soft"):
                mine = [
                    r
                    for r in rows
                    if (r["backend"], r["distance"], r["vote"]) == (backend, dname, vname)
                ]
                if not mine:
                    continue
                vs_n = {
                    m: loglog_slope(
                        [r["n"] for r in mine if r["m"] == m],
                        [r["seconds"] for r in mine if r["m"] == m],
                    )
                    for m in ms
                }
                vs_m = {
                    n: loglog_slope(
                        [r["m"] for r in mine if r["n"] == n],
                        [r["seconds"] for r in mine if r["n"] == n],
                    )
                    for n in ns
                }
                slopes[f"{backend}/{dname}/{vname}"] = {"vs_n": vs_n, "vs_m": vs_m}
    try:
        import numba

        threads = int(numba.get_num_threads())
        numba_version = numba.__version__
    except ImportError:
        threads, numba_version = 0, None
    return {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpus": os.cpu_count(),
            "numba_threads": threads,
            "numpy": np.__version__,
            "numba": numba_version,
            "load_average_before": load[0],
            "load_average_after": load[1],
        },
        "settings": {"quick": args.quick, "tau": TAU, "seed": args.seed, "ns": ns, "ms": ms},
        "gemm_gflops": gflops,
        "gemm_gflops_per_cpu_s": gflops_cpu,
        "vote_shaped_gemm_gflops": {str(m): v for m, v in shaped.items()},
        "embedding_width": width,
        "gemm_implied_peak_pairs_per_s": peak_pairs,
        "gemm_implied_peak_pairs_per_cpu_s": peak_pairs_cpu,
        "jit_or_cache_load_s": jit_s,
        "memory_note": (
            "peak_traced_mib: peak of the allocations made during the call (tracemalloc "
            "sees numpy's and numba's); for FusedBackend that is mostly the per-block soft "
            "histograms, ceil(chunk_rows / 256) x m float64. peak_rss_above_start_mib: "
            "resident high-water mark above the start of the call (Linux), which misses "
            "memory reused from earlier calls. Neither counts the private records "
            "(private_mib), which are in memory before the call"
        ),
        "rows": rows,
        "loglog_slopes": slopes,
    }


# ------------------------------------------------------------------ plots


def plot(result: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    n_top = max(result["settings"]["ns"])
    ms = result["settings"]["ms"]
    combos = [(d, v) for d in ("gower", "tabpe") for v in ("hard", "soft")]
    styles = {"fused": "o-", "fused-blas": "s--", "numpy": "^:"}

    fig, axes = plt.subplots(1, 4, figsize=(16, 4), sharey=True)
    for ax, (dname, vname) in zip(axes, combos, strict=True):
        for backend, style in styles.items():
            pts = [
                r
                for r in rows
                if (r["backend"], r["distance"], r["vote"], r["n"])
                == (backend, dname, vname, n_top)
            ]
            if pts:
                ax.plot(
                    [r["m"] for r in pts], [r["pairs_per_s"] for r in pts], style, label=backend
                )
        if dname == "tabpe":
            ax.axhline(
                result["gemm_implied_peak_pairs_per_s"], color="grey", lw=1, label="GEMM peak"
            )
        ax.set(xscale="log", yscale="log", title=f"{dname} / {vname} (n={n_top:,})")
        _ticks(ax, ms)
        ax.set_xlabel("population m")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("record x candidate pairs / s")
    fig.tight_layout()
    fig.savefig(out / "voting_throughput.png", dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for col, (dname, vname) in enumerate(combos):
        mine = [
            r for r in rows if (r["backend"], r["distance"], r["vote"]) == ("fused", dname, vname)
        ]
        for m in ms:
            pts = [r for r in mine if r["m"] == m]
            axes[0, col].plot(
                [r["n"] for r in pts], [r["seconds"] for r in pts], "o-", label=f"m={m}"
            )
        for n in result["settings"]["ns"]:
            pts = [r for r in mine if r["n"] == n]
            axes[1, col].plot(
                [r["m"] for r in pts], [r["seconds"] for r in pts], "o-", label=f"n={n:,}"
            )
        key = f"fused/{dname}/{vname}"
        sn = result["loglog_slopes"][key]["vs_n"]
        sm = result["loglog_slopes"][key]["vs_m"]
        axes[0, col].set(
            xscale="log",
            yscale="log",
            xlabel="private records n",
            ylabel="seconds per round",
            title=f"{dname}/{vname}: slope vs n " + ", ".join(f"{v:.2f}" for v in sn.values() if v),
        )
        axes[1, col].set(
            xscale="log",
            yscale="log",
            xlabel="population m",
            ylabel="seconds per round",
            title="slope vs m " + ", ".join(f"{v:.2f}" for v in sm.values() if v),
        )
        _ticks(axes[0, col], result["settings"]["ns"])
        _ticks(axes[1, col], ms)
        axes[0, col].legend(fontsize=8)
        axes[1, col].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "voting_scaling.png", dpi=120)
    plt.close(fig)


def _ticks(ax: Any, values: list[int]) -> None:
    """Label a log x axis at the measured values only (minor labels overlap)."""
    ax.set_xticks(values, [f"{v:,}" for v in values])
    ax.minorticks_off()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n in {1e4, 1e5} only")
    parser.add_argument("--threads", type=int, default=None, help="numba threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--local-pairs", type=float, default=5e7, help="pairs measured for LocalBackend"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--plot-only", action="store_true", help="redraw the plots from an existing voting.json"
    )
    args = parser.parse_args()
    if args.plot_only:
        plot(json.loads((args.out / "voting.json").read_text()), args.out)
        return
    if not fused_available():
        raise SystemExit("numba is not installed (pip install dpevolve[fast])")
    args.out.mkdir(parents=True, exist_ok=True)
    result = run(args)
    (args.out / "voting.json").write_text(json.dumps(result, indent=2))
    plot(result, args.out)
    print(f"wrote {args.out / 'voting.json'} and plots")


if __name__ == "__main__":
    main()
