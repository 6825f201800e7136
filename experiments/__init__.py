"""Reproducible studies of dpevolve (issue #6): BF-Soft, PubMix and baselines.

    python -m experiments list
    python -m experiments run STUDY|all [--quick|--full] [--workers 2] [--store PATH]
    python -m experiments report [--store PATH] [-o RESULTS.md]

A study is a grid of configurations x seeds (:mod:`experiments.studies`,
:mod:`experiments.pubmix_studies`, :mod:`experiments.baselines`); :mod:`experiments.runner`
runs it in parallel into an append-only JSONL store that an interrupted run resumes
from; :mod:`experiments.report` writes RESULTS.md and its figures.
"""
