"""Per numeric pair on a suite table (seeded noise, the suite's code path): real vs
synthetic Spearman, the model's bin-level Spearman against the real codes', whether the
pair is measured (stage, grouping), and the real codes decoded the engine's way.

Research only: reads the private part directly to diagnose (issue 25); never shipped.
Usage: ``python benchmarks/pair_diag.py TABLE SEED [SPEC_KEY=VALUE ...]``.
"""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
import suite_data

from dpevolve.data.schema import NumericColumn
from dpevolve.data.sources import FrameSource
from dpevolve.engine import fit_engine
from dpevolve.engine.spec import EngineSpec
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise
from dpevolve.reporting import numeric_fidelity as nf


def joint_spearman(joint: np.ndarray) -> float:
    """Spearman of a joint table over ordered codes (midranks; ties within a bin)."""
    p = np.clip(joint, 0, None)
    p = p / p.sum()
    ra = np.cumsum(p.sum(1)) - p.sum(1) / 2
    rb = np.cumsum(p.sum(0)) - p.sum(0) / 2
    pa, pb = p.sum(1), p.sum(0)
    ma, mb = (pa * ra).sum(), (pb * rb).sum()
    cov = (p * np.outer(ra - ma, rb - mb)).sum()
    va = (pa * (ra - ma) ** 2).sum()
    vb = (pb * (rb - mb) ** 2).sum()
    return float(cov / np.sqrt(va * vb)) if va > 0 and vb > 0 else 0.0


def main() -> None:
    table, seed = sys.argv[1], int(sys.argv[2])
    overrides = {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])}
    parts = suite_data.load(table)
    schema, real = parts.schema, parts.private
    num = [c.name for c in schema.columns if isinstance(c, NumericColumn)]
    source = FrameSource(real, schema)
    res = fit_engine(
        source,
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(**overrides),
        noise=make_noise(7000 + seed),
        rng=np.random.default_rng(seed),
    )
    synth = res.sample(len(real), np.random.default_rng(seed))
    disc = res.discretiser
    codes = disc.codes(source.batches())
    names = [c.name for c in schema.columns]
    released = res.released()
    own = disc.decode(codes, np.random.default_rng(seed), dict(released.fine), res.rows)
    measured = {}
    for m in res.measurements.marginals():
        q = m.query
        key = tuple(sorted(q.clique))
        if len(key) == 2 and all(c in num for c in key):
            groups = getattr(q, "groups", None) or getattr(q, "ways", None)
            sizes = "x".join(str(len(set(g))) if g else "f" for g in (groups or (None, None)))
            measured.setdefault(key, []).append(sizes)
        elif len(key) > 2:
            for pair in itertools.combinations(key, 2):
                if all(c in num for c in pair):
                    measured.setdefault(tuple(sorted(pair)), []).append(f"in{len(key)}")
    rows = []
    for a, b in itertools.combinations(num, 2):
        ja, jb = names.index(a), names.index(b)
        nb = disc.bins
        keep = (codes[:, ja] < nb) & (codes[:, jb] < nb)
        rc = np.zeros((nb, nb))
        np.add.at(rc, (codes[keep, ja], codes[keep, jb]), 1)
        mj = np.asarray(res.model.answer(tuple(sorted((a, b), key=names.index))))
        mj = mj.reshape(mj.shape)[:nb, :nb]
        if names.index(a) > names.index(b):
            mj = mj.T
        r, s, o = nf._spearman(real, a, b), nf._spearman(synth, a, b), nf._spearman(own, a, b)
        rows.append(
            dict(
                a=a,
                b=b,
                real=r,
                synth=s,
                err=abs(r - s),
                own_err=abs(r - o),
                codes=joint_spearman(rc),
                model=joint_spearman(mj),
                measured=",".join(measured.get(tuple(sorted((a, b))), [])),
            )
        )
    df = pd.DataFrame(rows).sort_values("err", ascending=False)
    pd.set_option("display.width", 200)
    print(df.round(3).to_string(index=False))
    print(
        f"{table} seed {seed} mean err {df.err.mean():.4f} own-decode err {df.own_err.mean():.4f}"
        f" model-vs-codes {np.mean(np.abs(df.codes - df.model)):.4f}"
        f" measured-pairs err {df[df.measured != ''].err.mean():.4f}"
        f" unmeasured err {df[df.measured == ''].err.mean():.4f}  bins {disc.bins} n {res.rows}"
    )


if __name__ == "__main__":
    main()
