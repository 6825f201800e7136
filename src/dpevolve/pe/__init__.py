"""The Private Evolution family, one method in one folder (docs/architecture.md).

The core: the loop (``evolution``, ``evolve``), record distances, votes and their one
arithmetic, variation, schedules, debiasing and invalid rows' empty votes. Around it:
``release/`` (PE's selection steps), ``policy/`` (Blowfish policies), ``pubmix/``
(public/private mixtures), ``pilot/`` (the public vote chooser) and ``hybrid/`` (the
hybrid preset's marginal release and weighted pool). Nothing outside the facade, the
configuration and the command line needs this folder, except the engine's refinement
stage, which reuses PE's distances, votes and Gaussian release.
"""
