"""PubMix as PE's selection step (docs/math.md §5, §6).

Each round the private hard votes over the ``d`` candidates give ``Pbar_prv = H / n``;
public records vote over the same candidates to give ``A``; ``P_nse`` is ``A`` raised to
a floor ``t``; the ``m`` parents are i.i.d. samples of
``P_syn = (1 - beta) Pbar_prv + beta P_nse``. Only the parents are released.

Accounting (docs/math.md §5):

* ``basic``: every round gets ``(eps / T, delta / T)``; the floor and ``beta`` are chosen
  per round for that target. Each round is then ``(eps_r, delta_r)``-DP whatever the
  earlier rounds released, so the ledger composes these claims (basic composition, and
  dp-accounting's PLD of ``(eps_r, delta_r)`` pairs, which is the optimal composition
  of such mechanisms and valid under adaptivity).
* ``tight``: one floor ``z`` (chosen on the first round's public votes) and one ``beta``
  for every round, with ``beta`` the smallest weight whose worst-case pair
  ``Mult(m; a, b, rest)`` vs ``Mult(m; c, d, rest)`` at ``z1 = z2 = z``, composed over
  the ``T`` rounds by dp-accounting's PLD, meets ``(eps, delta)``. Each round raises its
  public histogram to the floor ``z``, so its two smallest noise masses are at least
  ``z`` and its own pair is dominated by the reference pair: raising ``z1`` by ``x``
  adds ``beta x`` to both ``a`` and ``c`` and takes it from ``rest``, which is what the
  data-independent kernel "move each sample from the rest to bin 1 with probability
  ``beta x / rest``" does to both distributions, a post-processing. The ledger composes
  the reference pair. This is the default: with the budget split evenly, ``beta`` is
  close to 1 in every round and the parents come almost only from the public votes.

``n``, the private row count, is public (replace-one adjacency).

The parents are drawn by ``noise.mixture_sample`` (:mod:`dpevolve.privacy.noise`): exact,
and from the operating system's secure generator unless a reproduction seed was given.
The run's numpy generator only splits the public records into folds.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.data.encoding import Records
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance
from dpevolve.pe.invalid_rows import fill_empty_votes
from dpevolve.pe.pubmix import (
    beta_min,
    choose_floor,
    fold_spread,
    linmix,
    max_invariance_fill,
    meets_over_rounds,
    pubmix_sample,
    water_fill,
    worst_case_pair,
)
from dpevolve.pe.release.base import Selection, SelectionMode
from dpevolve.pe.votes import HardVote
from dpevolve.privacy import ApproxDPEvent, Budget, PrivacyLossPairEvent
from dpevolve.privacy.noise import NoiseSource

Accounting = Literal["basic", "tight"]
Fill = Literal["wf", "mifr", "linmix"]


class PubMixRelease:
    """Parents sampled from the public/private mixture; ``mode`` is ignored (always samples).

    Parameters
    ----------
    public
        Encoded public records from the same domain.
    distance, backend
        As for the private vote: public records vote over the same candidates.
    n
        Private row count.
    rounds, budget
        The run's rounds and its (epsilon, delta) budget.
    accounting
        ``basic`` or ``tight`` (see the module docstring).
    fill
        ``wf`` or ``mifr`` floor raising, or ``linmix`` (uniform noise).
    noise
        Draws the parents (:mod:`dpevolve.privacy.noise`); never a seeded numpy
        generator, which anyone holding the seed could replay.
    gamma
        Bound on ``TV(P_pub, P_prv)``; ``None`` estimates it each round from 5 public
        folds (95% quantile of their pairwise TVs).
    """

    name = "pubmix"

    def __init__(
        self,
        public: Records,
        distance: Distance,
        backend: Backend,
        n: int,
        rounds: int,
        budget: Budget,
        *,
        accounting: Accounting = "tight",
        fill: Fill = "wf",
        noise: NoiseSource,
        gamma: float | None = None,
        folds: int = 5,
        max_candidates: int | None = None,
    ) -> None:
        if budget.epsilon is None or budget.delta is None:
            raise InputError("PubMix needs an (epsilon, delta) budget, not rho")
        if accounting not in ("basic", "tight"):
            raise InputError(f"PubMix accounting must be basic or tight, got '{accounting}'")
        if fill not in ("wf", "mifr", "linmix"):
            raise InputError(f"PubMix noise must be wf, mifr or linmix, got '{fill}'")
        if accounting == "tight" and fill == "linmix":
            raise InputError("tight accounting raises a floor; use it with wf or mifr")
        if len(public) < folds:
            raise InputError(f"PubMix needs at least {folds} public records")
        self.public = public
        self.distance = distance
        self.backend = backend
        self.n = int(n)
        self.rounds = int(rounds)
        self.epsilon, self.delta = float(budget.epsilon), float(budget.delta)
        self.accounting: Accounting = accounting
        self.fill: Fill = fill
        self.noise_source = noise
        self.gamma = gamma
        self.folds = int(folds)
        self._folds: list[Records] | None = None  # split on the first round (public data)
        self._reference: tuple[float, float] | None = None  # tight: (z, beta)
        # The tight floor must be reachable in every round: z <= 1 / (largest population).
        self.max_candidates = max_candidates

    @property
    def per_round(self) -> tuple[float, float]:
        """``(eps / T, delta / T)``: the basic split."""
        return self.epsilon / self.rounds, self.delta / self.rounds

    def _public_counts(self, population: Records, rng: np.random.Generator) -> np.ndarray:
        if self._folds is None:
            # A split of the public records: public randomness, the run's generator will do.
            split = np.array_split(rng.permutation(len(self.public)), self.folds)
            self._folds = [self.public.take(np.sort(index)) for index in split]
        vote = HardVote()
        return np.stack(
            [self.backend.vote(f, population, self.distance, vote) for f in self._folds]
        )

    def select(
        self,
        histogram: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        population: Records,
        mode: SelectionMode,
    ) -> Selection:
        del mode  # PubMix always samples
        d = len(population)
        if d < 3:
            raise InputError(f"PubMix needs at least 3 candidates, got {d}")
        fold_counts = self._public_counts(population, rng)
        counts = fold_counts.sum(axis=0)
        public_hist = counts / counts.sum()
        # Invalid rows cast no vote; this analysis needs all n, so they vote as one record.
        private_counts = fill_empty_votes(histogram, self.n, population, self.distance)
        eps_r, delta_r = self.per_round
        info: dict[str, Any] = {"d": d, "m": k, "noise": self.fill}
        if self.fill == "linmix":
            mix = linmix(d, self.n, k, eps_r, delta_r)
            beta, p_noise = mix.beta, np.asarray(mix.p_noise)
            info.update(beta=beta, floor=1.0 / d)
        else:
            gamma = self.gamma if self.gamma is not None else fold_spread(fold_counts)
            info["gamma"] = gamma
            if self.accounting == "basic":
                choice = choose_floor(
                    public_hist,
                    self.n,
                    k,
                    eps_r,
                    delta_r,
                    gamma,
                    self.fill,
                    counts=counts.astype(np.int64),
                )
                beta, p_noise = choice.beta, np.asarray(choice.p_noise)
                info.update(
                    beta=beta, floor=choice.t, z1=choice.z1, z2=choice.z2, deficit=choice.deficit
                )
            else:
                if self._reference is None:
                    self._reference = self._calibrate(public_hist, k, gamma)
                z, beta = self._reference
                p_noise = (
                    water_fill(public_hist, z)
                    if self.fill == "wf"
                    else max_invariance_fill(public_hist, z, counts=counts.astype(np.int64))
                )
                info.update(beta=beta, floor=z)
        parents = pubmix_sample(private_counts, p_noise, beta, k, self.noise_source)
        votes = np.bincount(np.asarray(parents, dtype=np.int64), minlength=d).astype(np.float64)
        return Selection(parents=parents, event=self._event(beta, k, info), info=info, noisy=votes)

    def _event(self, beta: float, m: int, info: dict[str, Any]) -> Any:
        if self.accounting == "basic":
            eps_r, delta_r = self.per_round
            return ApproxDPEvent(eps_r, delta_r, label="pubmix")
        assert self._reference is not None
        z, beta = self._reference
        pair = worst_case_pair(self.n, m, beta, z, z)
        return PrivacyLossPairEvent(
            pair.log_p,
            pair.log_q,
            symmetric=True,
            label="pubmix",
            params={"n": self.n, "m": m, "beta": beta, "z1": z, "z2": z},
        )

    def _calibrate(self, public_hist: np.ndarray, m: int, gamma: float) -> tuple[float, float]:
        """Tight mode: the floor from the first round's public votes, then the smallest
        beta whose reference pair composed over all rounds meets (epsilon, delta)."""
        eps_r, delta_r = self.per_round
        z = choose_floor(public_hist, self.n, m, eps_r, delta_r, gamma, "wf").t
        if self.max_candidates is not None:
            z = min(z, 1.0 / self.max_candidates)

        def meets(beta: float) -> bool:
            return meets_over_rounds(self.n, m, beta, z, self.rounds, self.epsilon, self.delta)

        hi = beta_min(self.n, m, eps_r, delta_r, z, z)  # basic composition meets it
        if not meets(hi):
            hi = 1.0
        lo = 0.0
        while hi - lo > 1e-4 * max(hi, 1e-6):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if meets(mid) else (mid, hi)
        return z, hi


__all__ = ["PubMixRelease"]
