"""The study runner: a grid of configurations x seeds, run in parallel, resumable.

A :class:`Study` names a function that lists frozen configuration dataclasses for a
profile (``quick`` or ``full``) and a ``run_one(config) -> dict`` that computes one of
them. :func:`run_study` runs the configurations that the store does not hold yet, in
worker processes (``ProcessPoolExecutor`` with the ``spawn`` start method, one thread
each), and appends one JSON line per finished configuration to the store.

The store is append-only JSONL. A row is written with one ``write`` of one line,
flushed and fsynced, so an interrupted study leaves only whole rows (a torn last line,
if the machine itself dies mid-write, is skipped on reading). On resume, every key that
already has a row with status ``ok`` is skipped; rows with status ``error`` or
``unavailable`` are run again (an optional dependency may have appeared since).

Each row records: the key (study + configuration, the seed included), the git commit
of the tree, the dpevolve version, the configuration, the seed, the ledger totals
(epsilon, delta, rho), the metrics, the wall time of ``run_one`` and the status.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import math
import multiprocessing
import os
import platform
import shutil
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STORE = REPO_ROOT / "experiments" / "results" / "store.jsonl"
PROFILES = ("quick", "full")

# Environment of every worker process: one thread per worker (the pool provides the
# parallelism), set before numba, OpenMP or BLAS are loaded there.
WORKER_ENV = {
    "NUMBA_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


class Unavailable(Exception):
    """Raised by ``run_one`` when an optional piece (a package, an API) is missing.

    The row is stored with status ``unavailable`` and the message as its reason; a
    later run tries the configuration again.
    """


@dataclass(frozen=True)
class Study:
    """A named grid of configurations and the function that runs one of them.

    Attributes
    ----------
    name
        The study's name (``python -m experiments run NAME``).
    description
        One line for ``python -m experiments list``.
    configs
        ``profile -> list of frozen dataclass instances``; each must have a ``seed``
        field and be JSON-serialisable through :func:`dataclasses.asdict`.
    run_one
        ``config -> {"metrics": {...}, "ledger": {...}, ...}``; a module-level function
        (it is pickled by name into the worker processes).
    group
        A label used by ``list`` and ``run all`` (``bfsoft``, ``pubmix``, ``baselines``).
    """

    name: str
    description: str
    configs: Callable[[str], list[Any]]
    run_one: Callable[[Any], dict[str, Any]]
    group: str = "misc"


# ----------------------------------------------------------------------- keys
def config_dict(config: Any) -> dict[str, Any]:
    """The configuration as a plain dict (dataclass fields, in declaration order)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, dict):
        return dict(config)
    raise TypeError(f"a configuration must be a dataclass instance, got {type(config)!r}")


def config_key(study: str, config: Any) -> str:
    """The store key of one configuration: study name + canonical JSON of the config.

    The seed is a field of the configuration, so it is part of the key.
    """
    body = json.dumps(config_dict(config), sort_keys=True, separators=(",", ":"), default=str)
    return f"{study}|{type(config).__name__}|{body}"


# ---------------------------------------------------------------------- store
class Store:
    """Append-only JSONL store of finished configurations.

    Parameters
    ----------
    path
        The JSONL file (created with its folder on the first append).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def rows(self) -> list[dict[str, Any]]:
        """Every readable row, in file order (torn or invalid lines are skipped)."""
        if not self.path.exists():
            return []
        out: list[dict[str, Any]] = []
        with self.path.open("r", encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "key" in row:
                    out.append(row)
        return out

    def latest(self, study: str | None = None) -> dict[str, dict[str, Any]]:
        """The last row of every key (optionally of one study): key -> row."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.rows():
            if study is None or row.get("study") == study:
                out[row["key"]] = row
        return out

    def done_keys(self) -> set[str]:
        """Keys with a row of status ``ok`` (these are skipped on resume)."""
        return {row["key"] for row in self.rows() if row.get("status") == "ok"}

    def append(self, row: dict[str, Any]) -> None:
        """Append one row as one line: a single write, then flush and fsync."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(_jsonable(row), allow_nan=False, separators=(",", ":")) + "\n"
        if self._torn_tail():
            line = "\n" + line  # end a line cut short by a crash; it is skipped on reading
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def _torn_tail(self) -> bool:
        """Whether the file is non-empty and does not end with a newline."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell() == 0:
                    return False
                handle.seek(-1, os.SEEK_END)
                return handle.read(1) != b"\n"
        except FileNotFoundError:
            return False


def _jsonable(obj: Any) -> Any:
    """NaN and infinities become ``None``; numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# ---------------------------------------------------------------- provenance
def git_commit(root: Path = REPO_ROOT) -> str:
    """``git rev-parse HEAD`` of the tree, or ``"unknown"``."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def git_dirty(root: Path = REPO_ROOT) -> bool | None:
    """Whether tracked files differ from the commit (``None`` if git is unavailable)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return bool(out.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None


def dpevolve_version() -> str:
    """The installed dpevolve version, or ``"unknown"``."""
    try:
        from importlib.metadata import version

        return version("dpevolve")
    except Exception:
        return "unknown"


# ------------------------------------------------------------------- workers
def init_worker(extra_env: dict[str, str] | None = None) -> None:
    """Set one-thread limits and a private numba cache folder in a worker process.

    The numba on-disk cache is kept per worker process and deleted when it exits:
    loading the fused soft-vote kernels from a cache written by another process crashed
    (segfault) on this machine, while a fresh compilation never did.
    """
    for name, value in {**WORKER_ENV, **(extra_env or {})}.items():
        os.environ[name] = value
    cache = tempfile.mkdtemp(prefix="dpevolve-exp-numba-")
    os.environ["NUMBA_CACHE_DIR"] = cache
    from multiprocessing import util

    util.Finalize(
        None, shutil.rmtree, args=(cache,), kwargs={"ignore_errors": True}, exitpriority=10
    )
    extra = os.environ.get("EXPERIMENTS_EXTRA_PATH")
    if extra:
        import sys

        for entry in extra.split(os.pathsep):
            if entry and entry not in sys.path:
                sys.path.append(entry)  # after the venv: its numpy and scipy win


def execute(study: str, run_one: Callable[[Any], dict[str, Any]], config: Any) -> dict[str, Any]:
    """Run one configuration and wrap its result into a store row (never raises)."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    begin = time.perf_counter()
    status, reason, result = "ok", None, {}
    try:
        result = run_one(config) or {}
    except Unavailable as exc:
        status, reason = "unavailable", str(exc)
    except Exception as exc:
        status = "error"
        reason = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
    wall = time.perf_counter() - begin
    cfg = config_dict(config)
    return {
        "key": config_key(study, config),
        "study": study,
        "config_type": type(config).__name__,
        "config": cfg,
        "seed": cfg.get("seed"),
        "status": status,
        "reason": reason,
        "ledger": result.get("ledger", {}),
        "metrics": result.get("metrics", {}),
        "info": result.get("info", {}),
        "wall_s": wall,
        "started": started,
        "pid": os.getpid(),
    }


# -------------------------------------------------------------------- runner
@dataclass
class RunSummary:
    """What :func:`run_study` did."""

    study: str
    total: int
    skipped: int
    ran: int
    ok: int
    errors: int
    unavailable: int
    wall_s: float


def pending(study: Study, configs: Sequence[Any], store: Store, force: bool = False) -> list[Any]:
    """The configurations of ``study`` without an ``ok`` row in ``store`` (all of them
    with ``force``: their new rows then supersede the old ones in the report)."""
    done = set() if force else store.done_keys()
    seen: set[str] = set()
    out = []
    for config in configs:
        key = config_key(study.name, config)
        if key in done or key in seen:
            continue
        seen.add(key)
        out.append(config)
    return out


def run_study(
    study: Study,
    store: Store,
    profile: str = "quick",
    workers: int = 2,
    configs: Sequence[Any] | None = None,
    log: Callable[[str], None] | None = print,
    limit: int | None = None,
    executor: cf.Executor | None = None,
    force: bool = False,
    match: str | None = None,
) -> RunSummary:
    """Run the configurations of ``study`` that ``store`` lacks and append their rows.

    Parameters
    ----------
    study
        The study.
    store
        Where rows go; rows already there (status ``ok``) are skipped.
    profile
        ``quick`` or ``full`` (passed to ``study.configs``); ignored with ``configs``.
    workers
        Worker processes; ``1`` runs in this process (no pool).
    configs
        Run these instead of ``study.configs(profile)`` (tests, partial runs).
    log
        Progress lines go here (``None``: silent).
    limit
        Run at most this many pending configurations (simulates an interruption).
    executor
        A pool from :func:`worker_pool` to reuse (the workers' compiled kernels and
        loaded tables are then shared by several studies); default: a new one.
    force
        Run again configurations that already have an ``ok`` row (after a code change).
    match
        Only configurations whose key contains this text (e.g. ``"tabpe+pubmix"``).
    """
    if configs is None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r} (choose {', '.join(PROFILES)})")
        configs = study.configs(profile)
    if match is not None:
        configs = [c for c in configs if match in config_key(study.name, c)]
    todo = pending(study, configs, store, force)
    if limit is not None:
        todo = todo[:limit]
    total, skipped = len(configs), len(configs) - len(todo)
    commit, dirty, version = git_commit(), git_dirty(), dpevolve_version()
    provenance = {
        "commit": commit,
        "dirty": dirty,
        "dpevolve_version": version,
        "profile": profile,
        "python": platform.python_version(),
        "host_cpus": os.cpu_count(),
    }
    say = log or (lambda _msg: None)
    say(
        f"[{study.name}] {total} configurations, {skipped} already in the store, {len(todo)} to run"
    )
    counts = {"ok": 0, "error": 0, "unavailable": 0}
    begin = time.perf_counter()

    def record(row: dict[str, Any], index: int) -> None:
        row.update(provenance)
        store.append(row)
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        note = "" if row["status"] == "ok" else f" [{row['status']}: {_first_line(row)}]"
        say(
            f"[{study.name}] {index}/{len(todo)} {_short_config(row['config'])} "
            f"{row['wall_s']:.1f}s{note}"
        )

    if executor is None and (workers <= 1 or len(todo) <= 1):
        for i, config in enumerate(todo, 1):
            record(execute(study.name, study.run_one, config), i)
    elif executor is None:
        with worker_pool(workers) as pool:
            for i, row in enumerate(_parallel(pool, study, todo), 1):
                record(row, i)
    else:
        for i, row in enumerate(_parallel(executor, study, todo), 1):
            record(row, i)
    wall = time.perf_counter() - begin
    say(
        f"[{study.name}] done in {wall:.0f}s: {counts['ok']} ok, {counts['error']} errors, "
        f"{counts['unavailable']} unavailable"
    )
    return RunSummary(
        study.name,
        total,
        skipped,
        len(todo),
        counts["ok"],
        counts["error"],
        counts["unavailable"],
        wall,
    )


def worker_pool(workers: int) -> cf.ProcessPoolExecutor:
    """A pool of ``workers`` one-thread processes started with ``spawn``."""
    context = multiprocessing.get_context("spawn")
    return cf.ProcessPoolExecutor(
        max_workers=max(1, workers), mp_context=context, initializer=init_worker
    )


def _parallel(pool: cf.Executor, study: Study, todo: Sequence[Any]) -> Iterator[dict[str, Any]]:
    """Rows as they finish; pending work is cancelled if the caller stops early."""
    futures = [pool.submit(execute, study.name, study.run_one, c) for c in todo]
    try:
        for future in cf.as_completed(futures):
            yield future.result()
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _first_line(row: dict[str, Any]) -> str:
    return str(row.get("reason") or "").splitlines()[0][:160] if row.get("reason") else ""


def _short_config(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items() if v is not None)


def run_many(
    studies: Iterable[Study],
    store: Store,
    profile: str,
    workers: int,
    log: Callable[[str], None] | None = print,
    **options: Any,
) -> list[RunSummary]:
    """Run several studies one after the other into the same store, on one pool.

    ``options`` go to :func:`run_study` (``limit``, ``force``, ``match``).
    """
    studies = list(studies)
    if workers <= 1:
        return [run_study(s, store, profile, workers, log=log, **options) for s in studies]
    with worker_pool(workers) as pool:
        return [
            run_study(s, store, profile, workers, log=log, executor=pool, **options)
            for s in studies
        ]
