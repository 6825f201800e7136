"""PubMix: releasing samples of a public/private mixture, and its privacy (docs/math.md §5).

``P_syn = (1-beta) Pbar_prv + beta P_nse`` over d bins; only m i.i.d. samples of P_syn
are released.

* :mod:`~dpevolve.pe.pubmix.beta` -- h1, h2 and beta_min, the smallest private-enough beta.
* :mod:`~dpevolve.pe.pubmix.floor` -- raising the public histogram to a floor t (WF, MIFR).
* :mod:`~dpevolve.pe.pubmix.noise` -- choosing t (and so P_nse), gamma, LinMix, sampling.
* :mod:`~dpevolve.pe.pubmix.loss` -- the worst-case pair of distributions, for PLD accounting.
"""

from dpevolve.pe.pubmix.beta import (
    PRUNE_MASS,
    beta_min,
    beta_min_zero_floor,
    h1,
    h1_by_sum,
    h2,
    pubmix_delta,
)
from dpevolve.pe.pubmix.floor import (
    FEASIBILITY_RTOL,
    DonorChoice,
    deficit,
    invariant_mass,
    max_invariance_donors,
    max_invariance_fill,
    water_fill,
)
from dpevolve.pe.pubmix.loss import (
    TAIL_P,
    TAIL_Q,
    WorstCasePair,
    meets_over_rounds,
    worst_case_pair,
    worst_case_pld,
)
from dpevolve.pe.pubmix.noise import (
    FloorChoice,
    LinMix,
    as_counts,
    choose_floor,
    choose_floor_privately,
    floor_objective,
    fold_spread,
    gamma_from_fold_counts,
    gamma_from_folds,
    linmix,
    pubmix_distribution,
    pubmix_sample,
    score_sensitivity,
)

__all__ = [
    "FEASIBILITY_RTOL",
    "PRUNE_MASS",
    "TAIL_P",
    "TAIL_Q",
    "DonorChoice",
    "FloorChoice",
    "LinMix",
    "WorstCasePair",
    "as_counts",
    "beta_min",
    "beta_min_zero_floor",
    "choose_floor",
    "choose_floor_privately",
    "deficit",
    "floor_objective",
    "fold_spread",
    "gamma_from_fold_counts",
    "gamma_from_folds",
    "h1",
    "h1_by_sum",
    "h2",
    "invariant_mass",
    "linmix",
    "max_invariance_donors",
    "max_invariance_fill",
    "meets_over_rounds",
    "pubmix_delta",
    "pubmix_distribution",
    "pubmix_sample",
    "score_sensitivity",
    "water_fill",
    "worst_case_pair",
    "worst_case_pld",
]
