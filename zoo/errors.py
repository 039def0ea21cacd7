"""The zoo's user-error class: bad input, answered by ``dpzoo`` with its one-line message.

Every check of what a user gives (an ε, a shape, a path, a model id) raises a ``UserError``, so the
command line can tell a mistake to correct from a defect to report: any other exception keeps its
traceback. A ``UserError`` is also a ``ValueError``, as most such checks were before."""

from __future__ import annotations


class UserError(ValueError):
    """Input that cannot be used as given; the message says what to change."""


class MissingFileError(UserError, FileNotFoundError):
    """A file or folder the user named (or the data or weights a setting points at) is not there."""


class TargetExistsError(UserError, FileExistsError):
    """A path that would be overwritten; the message names the option that allows it."""


class UnknownModelError(UserError, LookupError):
    """A method name or model id that the zoo does not know."""
