"""Releases: turn a vote histogram into parents, spending privacy (one event per round)."""

from dpevolve.release.base import Release, Selection
from dpevolve.release.gaussian import GaussianRelease

__all__ = ["GaussianRelease", "Release", "Selection"]
