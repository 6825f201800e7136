"""Where votes are computed. Only a backend reads private records (spec: architecture)."""

from dpevolve.backends.base import Backend
from dpevolve.backends.local import LocalBackend

__all__ = ["Backend", "LocalBackend"]
