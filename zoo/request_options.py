"""A command's options declared once, on the fields of its request dataclass (issue 68): each field's metadata
gives its flag, help, type, choices and how a card spells it, and this module builds the argparse arguments and
the card's command line from them. An option added to a request is then one field, and it reaches the parser and
the card command alike (torch-fidelity's one ``DEFAULTS`` table, applied to dataclasses).

Torch-free: the parser is built before any heavy import.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.release.layout import command_line

#: where a field keeps its ``Option``
KEY = "option"


@dataclass(frozen=True)
class Option:
    """How one request field appears on the command line and on a card."""

    help: str
    #: a positional argument (the field's name is its metavar) rather than ``--name``
    positional: bool = False
    #: argparse's ``type`` (a field of bool is a store_true flag)
    parse: Callable[[str], Any] | None = None
    choices: Sequence[Any] | None = None
    #: how a card spells the value (None: ``str``); a field with ``on_card=False`` is never on a card
    spell: Callable[[Any], Any] | None = None
    on_card: bool = True

    def flag(self, name: str) -> str:
        return name if self.positional else f"--{name.replace('_', '-')}"

    def help_text(self, fills: dict[str, str]) -> str:
        """The help with ``fills`` completing what it names only after a registry read (``{metric_names}``)."""
        return self.help.format(**fills) if fills else self.help


def folder_name(argument: str) -> str:
    """A folder argument as a card records it: by its name alone, so that the card holds no path of this machine;
    anything else (a model id, a named dataset, ``hf-hub:org/name``) as it is."""
    path = Path(argument).expanduser()
    return path.resolve().name if path.is_dir() else argument


def option(help: str, default: Any = dataclasses.MISSING, **how: Any) -> Any:
    """A request field with its command-line declaration (``Option``'s fields as keywords)."""
    return dataclasses.field(default=default, metadata={KEY: Option(help, **how)})


def options_of(request_type: type) -> list[tuple[dataclasses.Field[Any], Option]]:
    return [(f, f.metadata[KEY]) for f in dataclasses.fields(request_type) if KEY in f.metadata]


def add_arguments(parser: argparse.ArgumentParser, request_type: type, **fills: str) -> None:
    """One argparse argument per declared field of ``request_type``, in field order; ``fills`` complete help texts
    that name what the request cannot know without heavier imports (``{metric_names}``)."""
    for field, declared in options_of(request_type):
        required = field.default is dataclasses.MISSING
        help = declared.help_text(fills)
        if declared.positional:
            parser.add_argument(field.name, help=help, type=declared.parse)
        elif field.type in (bool, "bool"):
            parser.add_argument(declared.flag(field.name), action="store_true", help=help)
        else:
            default = None if required else field.default
            parser.add_argument(
                declared.flag(field.name),
                required=required,
                default=default,
                type=declared.parse,
                choices=declared.choices,
                help=help,
            )


def request_from(args: argparse.Namespace, request_type: type) -> Any:
    """The request the parsed ``args`` give."""
    return request_type(**{field.name: getattr(args, field.name) for field, _ in options_of(request_type)})


def card_command(words: Sequence[str], request: Any) -> str:
    """``words`` then each option a card records whose value is not its default, spelled as the card spells it
    (positional arguments follow ``words``)."""
    positional, flags = list(words), {}
    for field, declared in options_of(type(request)):
        value = getattr(request, field.name)
        if not declared.on_card or (field.default is not dataclasses.MISSING and value == field.default):
            continue
        spelled = declared.spell(value) if declared.spell else value
        if declared.positional:
            positional.append(str(spelled))
        else:
            flags[declared.flag(field.name)] = spelled
    return command_line(positional, flags)
