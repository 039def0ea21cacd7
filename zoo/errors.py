"""The zoo's user-error class: bad input, answered by ``dpzoo`` with its one-line message.

Every check of what a user gives (an ε, a shape, a path, a model id) raises a ``UserError``, so the
command line can tell a mistake to correct from a defect to report: any other exception keeps its
traceback. A ``UserError`` is also a ``ValueError``, as most such checks were before."""

from __future__ import annotations

from collections.abc import Mapping

#: how the command line spells each remedy a message may name (``UserError.for_command``)
COMMAND_WORDS = {
    "overwrite": "--overwrite",
    "token": "--token TOKEN",
    "list_models": "`dpzoo list`",
}


class UserError(ValueError):
    """Input that cannot be used as given; the message says what to change.

    A remedy the message names is written as ``{name}`` and given as ``name=`` in the Python API's words
    (``overwrite="overwrite=True"``): ``str(error)`` says it so, and the command line says it in its own words
    (``for_command``), so that neither front end tells its user to type the other's."""

    def __init__(self, message: str, **remedies: str) -> None:
        self.template, self.remedies = message, remedies
        super().__init__(_filled(message, remedies))

    def for_command(self, words: Mapping[str, str] = COMMAND_WORDS) -> str:
        """The message with each remedy in the command line's words (the Python API's where it has none)."""
        return _filled(self.template, {name: words.get(name, python) for name, python in self.remedies.items()})


def _filled(template: str, remedies: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced (by name, not ``str.format``: paths in it may hold braces)."""
    for name, words in remedies.items():
        template = template.replace("{" + name + "}", words)
    return template


class MissingFileError(UserError, FileNotFoundError):
    """A file or folder the user named (or the data or weights a setting points at) is not there."""


class TargetExistsError(UserError, FileExistsError):
    """A path that would be overwritten; the message names the option that allows it."""


class UnknownModelError(UserError, LookupError):
    """A method name or model id that the zoo does not know."""


class DPZooWarning(UserWarning):
    """A warning of dpzoo's own about the user's data or run (files ignored, images repeated, a cache not written).
    Its ``stacklevel`` points a Python user at their own call; on the command line that call is a library's
    (LightningCLI builds the data module), so ``dpzoo`` prints it as its own line, without a file and line."""
