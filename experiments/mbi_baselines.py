"""Marginal-based baselines on ``mbi`` (private-pgm): MST and public-data reweighting.

``mbi`` (PyPI ``mbi``, 2.x) is optional: it needs jax (CPU jaxlib), which dpevolve
itself does not. Install it next to dpevolve with ``pip install mbi``, or into a separate
folder and point ``EXPERIMENTS_EXTRA_PATH`` at it (it is appended to ``sys.path`` in the
workers, after the virtualenv, so the virtualenv's numpy and scipy stay in use). Without
it these baselines are recorded as ``unavailable``.

The mbi package ships the estimation library, not the mechanisms; :func:`mst` follows
the reference MST of McKenna et al. (private-pgm ``mechanisms/mst.py``): a third of rho
measures every 1-way marginal, a third selects a maximum spanning tree of 2-way
marginals by the exponential mechanism (score ``||x - xhat||_1``), a third measures the
tree's edges; mirror descent fits a graphical model and synthetic rows are drawn from
it. Two deliberate changes: adjacency is **replace-one**, like dpevolve's (Gaussian
noise scaled by sqrt 2, exponential-mechanism sensitivity 2 instead of 1), and the
reference's domain compression is skipped.

:func:`aim` follows the reference AIM of McKenna et al. 2022 (private-pgm
``mechanisms/aim.py``), written anew on mbi 2.0 and sharing MST's helpers: the
candidates are the workload's downward closure, weighted by their overlap with the
workload; every 1-way marginal is measured first; each round then picks a candidate by
the exponential mechanism (quality ``w_c (||x_c - xhat_c||_1 - sqrt(2/pi) sigma n_c)``)
among those whose junction tree stays under an annealed model-size limit, measures it
with Gaussian noise, refits by warm-started mirror descent and halves sigma (doubling
the selection epsilon) when the refit hardly moved the chosen marginal; the last round
spends what is left. The same replace-one changes as MST (Gaussian noise scaled by
sqrt 2, exponential-mechanism sensitivity ``2 max w_c``). A wall-clock cap ends the
rounds early (the unspent budget is simply not used).

:func:`reweight_public` is mbi's ``ReweightedDatasetEstimator`` (PMW^Pub-style): the
1- and 2-way marginals are measured with Gaussian noise at rho and weights on the public
records are fitted to them; synthetic rows are public records drawn by weight.

Numeric columns are discretised into the evaluation's 20 equal-width bins over their
declared range (spec §7); synthetic values are drawn uniformly inside their bin.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from experiments.runner import Unavailable


def import_mbi() -> Any:
    """Import mbi with 64-bit jax, or raise :class:`Unavailable` saying why."""
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import mbi
    except Exception as exc:  # ImportError, or a jax/numpy mismatch
        raise Unavailable(
            f"mbi not importable ({type(exc).__name__}: {exc}); "
            "pip install mbi (pulls jax) or set EXPERIMENTS_EXTRA_PATH"
        ) from None
    return mbi


def discretise(frame: pd.DataFrame, schema: Any) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Codes per column (evaluation bins) and domain sizes."""
    from dpevolve.reporting.evaluation import bin_codes, bin_count

    codes = {c.name: bin_codes(frame, c) for c in schema.columns}
    sizes = {c.name: bin_count(c) for c in schema.columns}
    return codes, sizes


def undiscretise(
    codes: dict[str, np.ndarray], schema: Any, rng: np.random.Generator
) -> pd.DataFrame:
    """Codes back to values: categorical by index, numeric uniform inside the bin."""
    from dpevolve.data.schema import NumericColumn
    from dpevolve.reporting.evaluation import NUMERIC_BINS

    out: dict[str, Any] = {}
    for column in schema.columns:
        c = np.asarray(codes[column.name], dtype=np.int64)
        if isinstance(column, NumericColumn) and column.integer:
            # a uniform draw among the integers that fall in the bin (never another bin)
            ints = np.arange(math.ceil(column.lo), math.floor(column.hi) + 1)
            edges = np.linspace(column.lo, column.hi, NUMERIC_BINS + 1)
            int_bins = np.searchsorted(edges[1:-1], ints, side="right")
            x = np.empty(len(c))
            for b in np.unique(c):
                rows = np.flatnonzero(c == b)
                choices = ints[int_bins == b]
                if len(choices) == 0:  # a bin without an integer: nearest integer
                    choices = ints[[int(np.argmin(np.abs(ints - edges[b])))]]
                x[rows] = rng.choice(choices, size=len(rows))
        elif isinstance(column, NumericColumn):
            width = (column.hi - column.lo) / NUMERIC_BINS
            x = np.clip(column.lo + (c + rng.random(len(c))) * width, column.lo, column.hi)
        else:
            x = np.array(column.values, dtype=object)[c]
        out[column.name] = x
    return pd.DataFrame(out)


def _measure(
    mbi: Any, data: Any, cliques: list[tuple[str, ...]], sigma: float, rng: np.random.Generator
) -> list[Any]:
    """Gaussian measurements of ``cliques``; total zCDP ``2 / (2 sigma^2)`` (replace-one)."""
    weight = 1.0 / math.sqrt(len(cliques))
    out = []
    for clique in cliques:
        x = np.asarray(data.project(clique).datavector(), dtype=np.float64)
        scale = sigma / weight
        y = x + rng.normal(0.0, scale, size=x.size)
        out.append(mbi.LinearMeasurement(y, clique, stddev=scale))
    return out


def mst(
    frame: pd.DataFrame,
    schema: Any,
    rho: float,
    seed: int,
    rows: int | None = None,
    iters: int = 1500,
) -> pd.DataFrame:
    """MST (McKenna et al. 2021) at ``rho``-zCDP under replace-one adjacency."""
    mbi = import_mbi()
    from mbi.estimation import MirrorDescent

    rng = np.random.default_rng(seed)
    codes, sizes = discretise(frame, schema)
    attrs = list(codes)
    domain = mbi.Domain(attrs, [sizes[a] for a in attrs])
    data = mbi.Dataset(codes, domain)
    # replace-one: a histogram's L2 sensitivity is sqrt 2 -> sigma * sqrt 2
    sigma = math.sqrt(2.0) * math.sqrt(3.0 / (2.0 * rho))
    log1 = _measure(mbi, data, [(a,) for a in attrs], sigma, rng)
    est = MirrorDescent().estimate(domain, log1, iters=max(200, iters // 3))
    scores = {}
    for a, b in itertools.combinations(attrs, 2):
        xhat = np.asarray(est.project((a, b)).datavector(), dtype=np.float64)
        x = np.asarray(data.project((a, b)).datavector(), dtype=np.float64)
        scores[(a, b)] = float(np.abs(x - xhat).sum())
    edges = _select_tree(attrs, scores, rho / 3.0, rng)
    log2 = _measure(mbi, data, edges, sigma, rng) if edges else []
    model = MirrorDescent().estimate(domain, log1 + log2, iters=iters)
    synth = model.synthetic_data(rows=rows or len(frame))
    return undiscretise(synth.to_dict(), schema, rng)


def _select_tree(
    attrs: list[str], scores: dict[tuple[str, str], float], rho: float, rng: np.random.Generator
) -> list[tuple[str, str]]:
    """Spanning tree by K-1 exponential-mechanism picks, each rho/(K-1)-zCDP."""
    parent = {a: a for a in attrs}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    picks = len(attrs) - 1
    if picks <= 0:
        return []
    epsilon = math.sqrt(8.0 * rho / picks)  # eps^2 / 8 zCDP per pick
    sensitivity = 2.0  # ||x - xhat||_1 moves by at most 2 under replace-one
    edges: list[tuple[str, str]] = []
    for _ in range(picks):
        candidates = [e for e in scores if find(e[0]) != find(e[1])]
        q = np.array([scores[e] for e in candidates])
        logits = 0.5 * epsilon / sensitivity * (q - q.max())
        p = np.exp(logits)
        p /= p.sum()
        edge = candidates[int(rng.choice(len(candidates), p=p))]
        edges.append(edge)
        parent[find(edge[0])] = find(edge[1])
    return edges


def _downward_closure(cliques: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Every non-empty subset of the cliques, smallest first, in a fixed order."""
    out: set[tuple[str, ...]] = set()
    for clique in cliques:
        for k in range(1, len(clique) + 1):
            out.update(itertools.combinations(clique, k))
    return sorted(out, key=lambda c: (len(c), c))


def aim(
    frame: pd.DataFrame,
    schema: Any,
    rho: float,
    seed: int,
    rows: int | None = None,
    degree: int = 3,
    max_model_size: float = 80.0,
    rounds: int | None = None,
    round_iters: int = 250,
    final_iters: int = 1000,
    time_limit: float | None = 300.0,
    info: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """AIM (McKenna et al. 2022) at ``rho``-zCDP under replace-one adjacency.

    Workload: all ``degree``-way marginals (equal weights). ``max_model_size`` (MB) caps
    the junction tree, annealed by the fraction of rho spent; ``rounds`` defaults to
    16 x the number of columns (the reference's); ``round_iters`` mirror-descent steps
    per refit (warm-started), ``final_iters`` for the last fit; ``time_limit`` seconds
    end the rounds early. ``info``, when given, receives rounds, rho spent and timings.
    """
    import time

    mbi = import_mbi()
    from mbi.estimation import MirrorDescent
    from mbi.junction_tree import hypothetical_model_size

    begin = time.perf_counter()
    rng = np.random.default_rng(seed)
    codes, sizes = discretise(frame, schema)
    attrs = list(codes)
    domain = mbi.Domain(attrs, [sizes[a] for a in attrs])
    data = mbi.Dataset(codes, domain)
    workload = list(itertools.combinations(attrs, min(degree, len(attrs))))
    candidates = {
        cl: float(sum(len(set(cl) & set(w)) for w in workload))
        for cl in _downward_closure(workload)
    }
    answers = {cl: np.asarray(data.project(cl).datavector(), dtype=np.float64) for cl in candidates}
    rounds = rounds or 16 * len(attrs)
    # per round: Gaussian zCDP 2 / (2 sigma^2) = 0.9 rho / rounds (replace-one: L2
    # sensitivity sqrt 2) and exponential mechanism eps^2 / 8 = 0.1 rho / rounds
    sigma = math.sqrt(2.0) * math.sqrt(rounds / (2.0 * 0.9 * rho))
    epsilon = math.sqrt(8.0 * 0.1 * rho / rounds)

    def gaussian(clique: tuple[str, ...], scale: float) -> Any:
        y = answers[clique] + rng.normal(0.0, scale, size=answers[clique].size)
        return mbi.LinearMeasurement(y, clique, stddev=scale)

    oneway = [cl for cl in candidates if len(cl) == 1]
    measurements = [gaussian(cl, sigma) for cl in oneway]
    rho_used = len(oneway) / sigma**2
    engine = MirrorDescent()
    model = engine.estimate(domain, measurements, iters=round_iters)
    picked: list[tuple[str, ...]] = []
    sigma_halvings = 0
    capped = False
    terminate = False
    while not terminate:
        if time_limit is not None and time.perf_counter() - begin > time_limit:
            capped = True
            break
        if rho - rho_used < 2.0 * (1.0 / sigma**2 + epsilon**2 / 8.0):
            remaining = rho - rho_used  # last round: spend the rest
            sigma = math.sqrt(2.0) * math.sqrt(1.0 / (2.0 * 0.9 * remaining))
            epsilon = math.sqrt(8.0 * 0.1 * remaining)
            terminate = True
        rho_used += 1.0 / sigma**2 + epsilon**2 / 8.0
        size_limit = max_model_size * rho_used / rho
        model_cliques = [tuple(c) for c in model.cliques]
        free = set(_downward_closure(model_cliques))
        allowed = {
            cl: w
            for cl, w in candidates.items()
            if cl in free or hypothetical_model_size(domain, [*model_cliques, cl]) <= size_limit
        }
        # exponential mechanism on the bias-corrected, weighted L1 error
        names = list(allowed)
        quality = np.empty(len(names))
        for i, cl in enumerate(names):
            xhat = np.asarray(model.project(cl).datavector(), dtype=np.float64)
            bias = math.sqrt(2.0 / math.pi) * sigma * domain.size(cl)
            quality[i] = allowed[cl] * (np.abs(answers[cl] - xhat).sum() - bias)
        sensitivity = 2.0 * max(abs(w) for w in allowed.values())  # replace-one
        logits = 0.5 * epsilon / sensitivity * (quality - quality.max())
        p = np.exp(logits)
        p /= p.sum()
        clique = names[int(rng.choice(len(names), p=p))]
        picked.append(clique)
        measurements.append(gaussian(clique, sigma))
        before = np.asarray(model.project(clique).datavector(), dtype=np.float64)
        model = engine.estimate(domain, measurements, iters=round_iters, warm_start=model)
        after = np.asarray(model.project(clique).datavector(), dtype=np.float64)
        if np.abs(after - before).sum() <= math.sqrt(2.0 / math.pi) * sigma * before.size:
            sigma /= 2.0
            epsilon *= 2.0
            sigma_halvings += 1
    rounds_s = time.perf_counter() - begin
    model = engine.estimate(domain, measurements, iters=final_iters, warm_start=model)
    synth = model.synthetic_data(rows=rows or len(frame))
    if info is not None:
        info.update(
            {
                "aim_rounds": len(picked),
                "aim_rho_used": float(rho_used),
                "aim_capped": capped,
                "aim_sigma_halvings": sigma_halvings,
                "aim_rounds_s": rounds_s,
                "aim_cliques": " ".join(sorted({"-".join(c) for c in picked if len(c) > 1})),
                "aim_model_mb": float(
                    hypothetical_model_size(domain, [tuple(c) for c in model.cliques])
                ),
            }
        )
    return undiscretise(synth.to_dict(), schema, rng)


def reweight_public(
    frame: pd.DataFrame,
    public: pd.DataFrame,
    schema: Any,
    rho: float,
    seed: int,
    rows: int = 1000,
    iters: int = 500,
) -> pd.DataFrame:
    """mbi's public-data reweighting (PMW^Pub-style) at ``rho``-zCDP, replace-one.

    All 1- and 2-way marginals are measured in one Gaussian release (each clique
    weighted equally), then weights on the public records are fitted by Adam.
    """
    mbi = import_mbi()
    import optax
    from mbi.extensions.reweighted_dataset import ReweightedDatasetEstimator

    rng = np.random.default_rng(seed)
    codes, sizes = discretise(frame, schema)
    pub_codes, _ = discretise(public, schema)
    attrs = list(codes)
    domain = mbi.Domain(attrs, [sizes[a] for a in attrs])
    data = mbi.Dataset(codes, domain)
    cliques = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))
    sigma = math.sqrt(2.0) * math.sqrt(1.0 / (2.0 * rho))
    log = _measure(mbi, data, cliques, sigma, rng)
    seed_data = mbi.Dataset(pub_codes, domain)
    estimator = ReweightedDatasetEstimator(seed_data=seed_data, optimizer=optax.adam(0.05))
    fitted = estimator.estimate(domain, log, known_total=float(len(frame)), iters=iters)
    weights = np.asarray(fitted.weights, dtype=np.float64)
    weights = np.clip(weights, 0.0, None)
    weights /= weights.sum()
    index = rng.choice(len(public), size=rows, replace=True, p=weights)
    return public.iloc[index].reset_index(drop=True)
