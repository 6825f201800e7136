"""Estimators: one model of the table from the measurement list, and fresh rows from it.

:class:`MarkovRandomField` is the graphical-model estimator of private-pgm (McKenna,
Sheldon & Miklau 2019): potentials on the measured cliques, belief propagation on their
junction tree, a mirror-descent fit, forward sampling. :func:`model_size_mb` is the
memory of the model a set of cliques would give (AIM's limit, McKenna et al. 2022).
"""

from dpevolve.estimate.junction import JunctionTree, junction_tree, model_size_mb
from dpevolve.estimate.mrf import FitStats, MarkovRandomField

__all__ = ["FitStats", "JunctionTree", "MarkovRandomField", "junction_tree", "model_size_mb"]
