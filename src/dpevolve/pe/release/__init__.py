"""Releases: turn a vote histogram into parents, spending privacy (one event per round)."""

from dpevolve.pe.release.base import Release, Selection
from dpevolve.pe.release.gaussian import GaussianRelease

__all__ = ["GaussianRelease", "Release", "Selection"]
