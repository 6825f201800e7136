"""Exact checks shared by the privacy tests: recorded noise, replays, and the audit of
every noise call against the ledger event that pays for it.

A run on ``D`` draws through :class:`RecordingNoise`, which keeps what each release
handed the noise source (the private vector, the scale) and what came back. The run on
a neighbour ``D'`` draws through :class:`ReplayNoise`, which hands back exactly the
outputs of ``D``'s run. Two facts then follow for a correct mechanism, and both are
checked exactly, with no sampling:

* **Post-processing.** Everything after a release reads released values and public
  inputs only, so with the same released values (and the same public seed) ``D'``'s
  run makes the same calls and ends in the same model, bins, decoding and rows
  (:func:`first_difference`). A leak of an exact count anywhere downstream shows as a
  difference; a control flow that reads private data shows as a diverging call.
* **Every call is paid for.** Each call is matched with its ledger event
  (:func:`call_violations`): a Gaussian release needs the event's ``sigma`` and the two
  private vectors within its sensitivity; an exponential-mechanism draw needs the
  scores within its sensitivity, the scale it claims (``2 S / epsilon``), the charge
  ``rho >= epsilon^2 / 8`` of a bounded-range mechanism, and the exact loss of the two
  draw distributions (:func:`dpevolve.privacy.audit.exact_loss`) within the claim.

:func:`draw_log_pmf` gives the exact distribution of one recorded draw, used on its own
by the exhaustive enumeration of the selection over every neighbour of a tiny domain
(``test_selection_exact.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
from scipy import special

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine, loop, select
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals, marginal_event
from dpevolve.measurements import MarginalQuery
from dpevolve.privacy import Budget, ExponentialEvent, GaussianEvent
from dpevolve.privacy.audit import ExactLoss, eps_lower_bound, exact_loss
from dpevolve.privacy.events import Event, ZeroCostEvent
from dpevolve.privacy.noise import SeededNoise

TOL = 1e-9


@dataclass
class Call:
    """One call into the noise source: what went in (private) and what came out."""

    kind: str  # "gaussian", "laplace" or "argmax"
    values: np.ndarray
    scale: float
    output: Any


class RecordingNoise(SeededNoise):
    """The seeded source, keeping every call (:class:`Call`) in order."""

    def __init__(self, noise_seed: int = 0) -> None:
        super().__init__(noise_seed)
        self.calls: list[Call] = []

    def gaussian(self, values: Any, sigma: float) -> np.ndarray:
        out = super().gaussian(values, sigma)
        self.calls.append(Call("gaussian", np.array(values, dtype=np.float64), sigma, out.copy()))
        return out

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        out = super().laplace(values, scale)
        self.calls.append(Call("laplace", np.array(values, dtype=np.float64), scale, out.copy()))
        return out

    def noisy_argmax(self, scores: Any, scale: float) -> int:
        out = super().noisy_argmax(scores, scale)
        self.calls.append(Call("argmax", np.array(scores, dtype=np.float64), scale, out))
        return out

    def mixture_sample(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise NotImplementedError("the exact audit covers Gaussian, Laplace and argmax calls")


class Diverged(AssertionError):
    """The replayed run asked for other noise than the recorded one: its control flow
    read something other than released values and public inputs."""


class ReplayNoise(RecordingNoise):
    """Hands back the outputs of ``recorded``, call by call, and records its own inputs."""

    def __init__(self, recorded: Sequence[Call]) -> None:
        super().__init__(0)
        self.recorded = list(recorded)

    def _replay(self, kind: str, values: Any, scale: float) -> Any:
        k = len(self.calls)
        given = np.array(values, dtype=np.float64)
        if k >= len(self.recorded):
            raise Diverged(f"call {k} ({kind}) was not made on D")
        want = self.recorded[k]
        if (want.kind, want.values.shape, want.scale) != (kind, given.shape, scale):
            raise Diverged(
                f"call {k}: D made {want.kind} {want.values.shape} at {want.scale}, "
                f"D' asks for {kind} {given.shape} at {scale}"
            )
        out = want.output.copy() if isinstance(want.output, np.ndarray) else want.output
        self.calls.append(Call(kind, given, scale, out))
        return out

    def gaussian(self, values: Any, sigma: float) -> np.ndarray:
        return np.asarray(self._replay("gaussian", values, sigma))

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        return np.asarray(self._replay("laplace", values, scale))

    def noisy_argmax(self, scores: Any, scale: float) -> int:
        return int(self._replay("argmax", scores, scale))


def draw_log_pmf(call: Call) -> np.ndarray:
    """Exact log-probabilities of a recorded draw: the Gumbel noisy max at ``scale``
    picks ``i`` with probability ``softmax(scores / scale)_i``."""
    logits = call.values / call.scale
    return logits - special.logsumexp(logits)


def drawn_call(scores: np.ndarray, event: ExponentialEvent) -> Call:
    """The engine's :func:`~dpevolve.engine.select.draw` of ``scores`` as a recorded call
    (so its exact distribution is :func:`draw_log_pmf` of it)."""
    noise = RecordingNoise(0)
    select.draw(scores, event, noise)
    return noise.calls[-1]


def _paid(events: Sequence[Event]) -> list[Event]:
    """The events that stand for a noise call (a zero-cost step draws nothing)."""
    return [e for e in events if not isinstance(e, ZeroCostEvent)]


def _gaussian_violations(k: int, d: Call, n: Call, event: Event) -> list[str]:
    if not isinstance(event, GaussianEvent):
        return [f"call {k}: a Gaussian release paid for by {type(event).__name__}"]
    out = []
    if d.scale < event.sigma * (1 - TOL):
        out.append(f"call {k}: noise at sigma {d.scale:.6g}, the ledger says {event.sigma:.6g}")
    shift = float(np.linalg.norm(d.values - n.values))
    # counts lie on the noise grid; real values are rounded to it (privacy/noise.py)
    on_grid = np.array_equal(d.values, np.round(d.values))
    slack = 0.0 if on_grid else SeededNoise(0).rounding_slack(d.values.size)
    allowed = event.sensitivity + slack
    if shift > allowed + TOL:
        out.append(
            f"call {k} ({event.label}): the neighbours' vectors differ by {shift:.6g} in L2, "
            f"the ledger's sensitivity is {event.sensitivity:.6g}"
        )
    return out


def draw_violations(
    k: int, d: Call, n: Call, event: Event, loss: ExactLoss | None = None
) -> list[str]:
    """Draw ``k`` on ``D`` and on ``D'`` against the selection event that pays for it
    (``loss``: their :func:`~dpevolve.privacy.audit.exact_loss`, if already known)."""
    if not isinstance(event, ExponentialEvent):
        return [f"call {k}: a draw paid for by {type(event).__name__}"]
    out = []
    shift = float(np.max(np.abs(d.values - n.values)))
    if shift > event.sensitivity + TOL:
        out.append(f"call {k}: scores move by {shift:.6g} > sensitivity {event.sensitivity:.6g}")
    drawn = 2.0 * event.sensitivity / d.scale  # the draw's own epsilon for such scores
    if drawn > event.epsilon * (1 + TOL):
        out.append(f"call {k}: drawn at epsilon {drawn:.6g}, the ledger says {event.epsilon:.6g}")
    if event.rho < drawn**2 / 8 * (1 - TOL):  # bounded range: rho = epsilon^2 / 8
        out.append(f"call {k}: rho {event.rho:.6g} below epsilon^2 / 8 of the draw")
    loss = loss if loss is not None else exact_loss(draw_log_pmf(d), draw_log_pmf(n))
    if loss.loss_range > event.epsilon + TOL or loss.rho > event.rho + TOL:
        out.append(f"call {k}: exact loss {loss} above the claim {event}")
    return out


def call_violations(d: Sequence[Call], n: Sequence[Call], events: Sequence[Event]) -> list[str]:
    """Every noise call of the runs on ``D`` (``d``) and ``D'`` (``n``, replayed) against
    the ledger event that pays for it, in order: one event per Gaussian or Laplace call,
    one per run of consecutive draws (a selection redraws until its pick is allowed).
    An empty list when every call is paid for."""
    paid = _paid(events)
    out: list[str] = []
    if len(d) != len(n):
        return [f"D made {len(d)} noise calls, D' {len(n)}"]
    k = i = 0
    while k < len(d):
        if i >= len(paid):
            return [*out, f"call {k} ({d[k].kind}) has no ledger event"]
        end = k + 1
        if d[k].kind == "argmax":
            while end < len(d) and d[end].kind == "argmax":
                end += 1
            for j in range(k, end):
                out += draw_violations(j, d[j], n[j], paid[i])
        elif d[k].kind == "gaussian":
            out += _gaussian_violations(k, d[k], n[k], paid[i])
        else:
            out.append(f"call {k}: {d[k].kind} is not a release this audit knows")
        k, i = end, i + 1
    if i < len(paid):
        out.append(f"{len(paid) - i} ledger events without a noise call")
    return out


def first_difference(a: Any, b: Any, path: str = "", seen: set[int] | None = None) -> str | None:
    """Where two results first differ (a path), or ``None``: arrays, frames, mappings,
    sequences, dataclasses and plain objects are compared member by member."""
    seen = set() if seen is None else seen
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, str | bytes | int | float | complex | bool | type(None)):
        equal = a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
        return None if equal else f"{path}: {a!r} vs {b!r}"
    if id(a) in seen:  # a container met before (shared, or a cycle)
        return None
    seen.add(id(a))
    if isinstance(a, np.ndarray):
        same = a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return None if same else f"{path}: arrays differ"
    if isinstance(a, pd.DataFrame | pd.Series):
        return None if a.equals(b) else f"{path}: frames differ"
    if isinstance(a, np.random.Generator):
        return first_difference(a.bit_generator.state, b.bit_generator.state, path, seen)
    if isinstance(a, np.random.SeedSequence):  # no __eq__: compared by what it seeds
        return first_difference(a.state, b.state, path, seen)
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
        pairs: Iterator[tuple[str, Any, Any]] = ((f"{path}[{k!r}]", a[k], b[k]) for k in a)
    elif isinstance(a, list | tuple):
        if len(a) != len(b):
            return f"{path}: lengths {len(a)} vs {len(b)}"
        pairs = ((f"{path}[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)))
    elif dataclasses.is_dataclass(a) or hasattr(a, "__dict__"):
        fields = vars(a) if hasattr(a, "__dict__") else {}
        if dataclasses.is_dataclass(a):
            fields = {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
        pairs = ((f"{path}.{k}", v, getattr(b, k, None)) for k, v in fields.items())
    else:
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    for where, x, y in pairs:
        found = first_difference(x, y, where, seen)
        if found is not None:
            return found
    return None


# ------------------------------------------------------------- a tiny domain
#: Three columns, every kind of cell: an integer numeric (four bins of one value
#: each), a nullable categorical, the binary label.
TINY = Schema(
    (
        NumericColumn("x", 0, 3, integer=True),
        CategoricalColumn("c", ("p", "q", "r"), nullable=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
TINY_CELLS = list(itertools.product([0, 1, 2, 3], ["p", "q", None], ["0", "1"]))


def neighbour_tables(
    schema: Schema, rows: Sequence[tuple[Any, ...]], here: tuple[Any, ...], there: tuple[Any, ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two tables that share ``rows`` and differ in their last record (``here`` in D,
    ``there`` in D'): a replace-one pair."""
    cols = list(schema.names)
    return pd.DataFrame([*rows, here], columns=cols), pd.DataFrame([*rows, there], columns=cols)


def spread_rows(
    value: Callable[[np.random.Generator], Any], last: tuple[Any, ...], count: int = 38
) -> list[tuple[Any, ...]]:
    """``count`` rows ``(value(rng), z, "0")``, ``z`` uniform on 0..15, from the seeded
    generator 4, then ``last``: the rows the atom tables share around a value the moving
    record makes an atom or not."""
    rng = np.random.default_rng(4)
    return [(value(rng), int(rng.integers(0, 16)), "0") for _ in range(count)] + [last]


@dataclass(frozen=True)
class Case:
    """Coupled whole runs (:func:`engine_violations`) on the neighbours of ``rows``:
    ``pairs`` holds (record of D, record of D', on_invalid of D')."""

    schema: Schema
    spec: EngineSpec
    budget: Budget
    rows: Sequence[tuple[Any, ...]]
    pairs: Sequence[tuple[tuple[Any, ...], tuple[Any, ...], str]]

    def tables(self, here: tuple[Any, ...], there: tuple[Any, ...]) -> tuple[pd.DataFrame, ...]:
        return neighbour_tables(self.schema, self.rows, here, there)

    def violations(self, *pairs: tuple[tuple[Any, ...], tuple[Any, ...], str]) -> list[str]:
        """:func:`engine_violations` of ``pairs`` (none given: of every pair)."""
        out = []
        for here, there, on_invalid in pairs or self.pairs:
            tables = self.tables(here, there)
            out += engine_violations(self.schema, *tables, on_invalid, self.spec, self.budget)
        return out


@dataclass(frozen=True)
class ThresholdAudit:
    """One Gaussian release audited on a pair: the (epsilon, delta) lower bound, the
    claim (the release's zCDP converted at ``delta``) and each side's hits."""

    bound: float
    claim: float
    hits: tuple[int, int]


def threshold_audit(
    counts: tuple[np.ndarray, np.ndarray],
    at: int,
    label: str,
    seeds: tuple[int, int],
    sigma: float = 1.0,
    trials: int = 4000,
    delta: float = 1e-5,
) -> ThresholdAudit:
    """The event ``noisy count at cell at >= 2`` (between the neighbours' counts) over
    ``trials`` seeded releases of each side's ``counts`` at ``sigma``; a Clopper-Pearson
    lower bound on epsilon against the claim of the release's ledger event."""
    event = marginal_event(sigma, label)
    claim = event.rho + 2.0 * math.sqrt(event.rho * math.log(1.0 / delta))  # zCDP -> DP
    hits = []
    for side, seed in zip(counts, seeds, strict=True):
        noise = SeededNoise(seed)
        hits.append(int(sum(noise.gaussian(side, sigma)[at] >= 2 for _ in range(trials))))
    bound = max(
        eps_lower_bound(hits[0], trials, hits[1], trials, delta),
        eps_lower_bound(hits[1], trials, hits[0], trials, delta),
    )
    return ThresholdAudit(bound, claim, (hits[0], hits[1]))


def pair_audit(
    count: Callable[[pd.DataFrame], np.ndarray],
    tables: tuple[pd.DataFrame, pd.DataFrame],
    at: int,
    label: str,
    seeds: tuple[int, int],
) -> tuple[float, ThresholdAudit]:
    """One release on a pair of neighbours: how far apart (L2) ``count`` puts their
    vectors, and :func:`threshold_audit` of those vectors at cell ``at``."""
    counts = (count(tables[0]), count(tables[1]))
    shift = float(np.linalg.norm(counts[0] - counts[1]))
    return shift, threshold_audit(counts, at, label, seeds)


def tiny_neighbours() -> Iterator[tuple[pd.DataFrame, pd.DataFrame, str]]:
    """Every neighbouring pair of :data:`TINY` tables of four rows around three fixed
    ones: the fourth record replaced by every other cell (boundary values of ``x``, the
    missing category), and a valid record against an invalid one under ``drop``."""
    rest = [TINY_CELLS[0], TINY_CELLS[5], TINY_CELLS[11]]
    cols = list(TINY.names)
    for i, j in itertools.combinations(range(len(TINY_CELLS)), 2):
        yield (
            pd.DataFrame([*rest, TINY_CELLS[i]], columns=cols),
            pd.DataFrame([*rest, TINY_CELLS[j]], columns=cols),
            "error",
        )
    for i in range(0, len(TINY_CELLS), 5):
        invalid = pd.DataFrame([*rest, (9, "p", "0")], columns=cols)  # x outside [0, 3]
        yield pd.DataFrame([*rest, TINY_CELLS[i]], columns=cols), invalid, "drop"


# ---------------------------------------------------- the selection, exhaustively
@dataclass
class SelectionAudit:
    """The selection's worst case over every pair of :func:`tiny_neighbours`."""

    event: ExponentialEvent
    worst_score: float = 0.0
    worst: ExactLoss = dataclasses.field(default_factory=lambda: ExactLoss(0.0, 0.0, 0.0))
    violations: list[str] = dataclasses.field(default_factory=list)


def selection_pool(kind: str) -> tuple[list[MarginalQuery], list[float]]:
    """Public candidates over :data:`TINY` and their weights: ``fine`` (1-, 2-way and
    triples grown from a selected pair, the label weighted 2) or ``coarse`` (those, the
    coarse pairs and the coarse label cliques, halves and off-centre splits)."""
    domain = Discretiser(TINY, bins=4, fine_cells=8).domain
    fine = [MarginalQuery(c) for c in select.candidates(domain, [("x", "c")], 3)]
    pool = fine
    if kind == "coarse":
        coarse = select.coarse_candidates(
            domain, [("x", "c")], "y", {"x": 4}, (2, 3), 4, 1, (0.25, 0.75)
        )
        pool = fine + select.coarse_pairs(domain, {"x": 4}, (2,)) + coarse
    return pool, [select.weight(q.clique, "y", 2.0) for q in pool]


def selection_audit(kind: str, epsilon: float = 2.0, sigma: float = 0.3) -> SelectionAudit:
    """The engine's own counting, scoring and :func:`~dpevolve.engine.select.draw` on
    every pair of neighbouring :data:`TINY` tables: the exact distribution of each draw
    (:func:`draw_log_pmf`) against the event :func:`~dpevolve.engine.select.selection_event`
    charges (:func:`draw_violations`).

    The model's answers are fixed by earlier releases, so any public array will do:
    cells at 0 and 2 let one replacement move a score by the full ``2 w_c``.
    """
    disc = Discretiser(TINY, bins=4, fine_cells=8)
    pool, weights = selection_pool(kind)
    rng = np.random.default_rng(0 if kind == "fine" else 1)
    model = {q: rng.choice([0.0, 2.0], size=q.shape(disc.domain)) for q in pool}
    cliques = list(dict.fromkeys(q.clique for q in pool))
    audit = SelectionAudit(select.selection_event(epsilon, weights))

    cache: dict[tuple[Any, ...], Call] = {}

    def drawn(frame: pd.DataFrame, on_invalid: str) -> Call:
        key = (on_invalid, *frame.itertuples(index=False, name=None))
        if key not in cache:
            cache[key] = count_and_draw(frame, on_invalid)
        return cache[key]

    def count_and_draw(frame: pd.DataFrame, on_invalid: str) -> Call:
        counted, _ = count_marginals(FrameSource(frame, TINY, on_invalid=on_invalid), disc, cliques)
        exact = {q: q.project(counted[q.clique]) for q in pool}
        values = select.scores(pool, exact.__getitem__, model.__getitem__, weights, sigma)
        return drawn_call(values, audit.event)

    for k, (a, b, on_invalid) in enumerate(tiny_neighbours()):
        d, n = drawn(a, "error"), drawn(b, on_invalid)
        loss = exact_loss(draw_log_pmf(d), draw_log_pmf(n))
        audit.violations += draw_violations(k, d, n, audit.event, loss)
        audit.worst_score = max(audit.worst_score, float(np.max(np.abs(d.values - n.values))))
        worst = np.maximum(dataclasses.astuple(audit.worst), dataclasses.astuple(loss))
        audit.worst = ExactLoss(*(float(v) for v in worst))
    return audit


# ------------------------------------------------------ whole runs, coupled
def coupled_fit(
    fit: Callable[[pd.DataFrame, str, RecordingNoise], Any],
    here: pd.DataFrame,
    there: pd.DataFrame,
    on_invalid: str,
) -> tuple[Any, Any, RecordingNoise, ReplayNoise | None, list[str]]:
    """``fit(table, on_invalid, noise)`` on ``D`` with recorded noise, then on ``D'``
    replaying ``D``'s outputs: both results, both noise sources, and the violations
    found so far (a diverging replay). ``D`` reads under ``error``."""
    recorded = RecordingNoise(17)
    first = fit(here, "error", recorded)
    replay = ReplayNoise(recorded.calls)
    try:
        second = fit(there, on_invalid, replay)
    except Diverged as err:
        return first, None, recorded, None, [f"the replay diverged: {err}"]
    if len(replay.calls) != len(recorded.calls):
        return first, second, recorded, replay, ["D' made fewer noise calls than D"]
    return first, second, recorded, replay, []


@contextlib.contextmanager
def read_queries() -> Iterator[list[list[MarginalQuery]]]:
    """Every list of queries a run reads exact counts of, in order (the run's one way
    into the private counts after the 1-ways: scores, candidates, releases). They must
    be public: a function of the schema, the spec and released values."""
    seen: list[list[MarginalQuery]] = []
    prefetch = loop._Run.prefetch

    def spied(run: Any, queries: Sequence[MarginalQuery]) -> None:
        seen.append(list(queries))
        prefetch(run, queries)

    with mock.patch.object(loop._Run, "prefetch", spied):
        yield seen


def engine_violations(
    schema: Schema,
    here: pd.DataFrame,
    there: pd.DataFrame,
    on_invalid: str,
    spec: EngineSpec,
    budget: Budget,
) -> list[str]:
    """One pair of neighbours through :func:`~dpevolve.engine.fit_engine`, coupled
    (:func:`coupled_fit`): every noise call against its ledger event
    (:func:`call_violations`), and the shareable ledger, the released model (bins,
    decoding weights, estimator, PE stage), the history and rows drawn from it
    identical on both sides (post-processing of the same released values), and so
    the queries whose exact counts the run read (:func:`read_queries`: the
    candidates of every selection, cut where released values say)."""
    read: list[list[list[MarginalQuery]]] = []

    def fit(table: pd.DataFrame, mode: str, noise: RecordingNoise) -> Any:
        source = FrameSource(table, schema, on_invalid=mode)
        rng = np.random.default_rng(5)
        with read_queries() as queries:
            result = fit_engine(source, schema, budget, spec, noise=noise, rng=rng)
        read.append(queries)
        return result

    d, n, recorded, replay, out = coupled_fit(fit, here, there, on_invalid)
    if replay is None:
        return out
    out += call_violations(recorded.calls, replay.calls, d.events)
    where = first_difference(read[0], read[1], "read")
    if where is not None:
        out.append(f"the queries read from the private data differ: {where}")
    sides = [
        (
            r.ledger.shareable_dict(),
            r.history,
            r.released(),
            r.sample(40, np.random.default_rng(8)),
        )
        for r in (d, n)
    ]
    where = first_difference(*sides, "result")
    if where is not None:
        out.append(f"not a function of the released values alone: {where}")
    return out
