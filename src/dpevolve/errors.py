"""Errors a user can act on.

Every problem with the user's input (a table, a schema, a policy, a budget, an
argument) raises :class:`InputError` with a one-line message naming the problem.
The command line prints that line and exits with status 2; anything else is an
internal error (status 1).
"""

from __future__ import annotations


class DPEvolveError(Exception):
    """Base class of dpevolve's own errors."""


class InputError(DPEvolveError, ValueError):
    """Bad input from the user: the message is one line that names the problem."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class PrivacyError(DPEvolveError):
    """A request that would break or could not certify the privacy guarantee."""
