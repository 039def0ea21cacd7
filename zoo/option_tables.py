"""The option tables of docs/commands.md, one per ``dpzoo`` command, generated from its request's fields
(``zoo.request_options``, through ``zoo.cli.COMMANDS``), never copied by hand: an option added to a request is one
field, and it reaches the parser, the card's command and this table alike.

    python -m zoo.option_tables            # rewrite the tables of docs/commands.md
    python -m zoo.option_tables --check    # exit 1 if they are out of date
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zoo.cli import COMMANDS, Command
from zoo.request_options import options_of

PAGE = Path(__file__).resolve().parents[1] / "docs" / "commands.md"


def markers(command: str) -> tuple[str, str]:
    return f"<!-- options:{command}:start -->", f"<!-- options:{command}:end -->"


def option_table(command: Command) -> str:
    """``command``'s options as a markdown table: how each is given, its default, and its help (as ``--help``
    prints it)."""
    rows = ["| option | default | what it does |", "|---|---|---|"]
    fills = command.fill()
    for field, declared in options_of(command.request):
        given = field.name.upper() if declared.positional else declared.flag(field.name)
        if not declared.positional and field.type not in (bool, "bool"):
            given += f" {field.name.upper()}"
        help = declared.help_text(fills)
        if declared.choices:
            help += f" (one of: {', '.join(map(str, declared.choices))})"
        rows.append(f"| `{given}` | {_default(field)} | {_cell(help)} |")
    return "\n".join(rows)


def _default(field: dataclasses.Field[Any]) -> str:
    if field.default is dataclasses.MISSING:
        return "required"
    if field.default is None or field.default is False:
        return "—"
    return f"`{field.default}`"


def _cell(text: str) -> str:
    """Help text as a table cell: ``|`` escaped, and ``<folder>`` shown rather than read as an HTML tag."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def page_text(page: str) -> str:
    """``page`` with the table between each command's markers written anew; a command without markers is refused,
    so that the page lists every command."""
    for command in COMMANDS:
        start, end = markers(command.name)
        pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
        if not pattern.search(page):
            raise ValueError(f"{PAGE.name} has no {start} … {end} block for `dpzoo {command.name}`")
        page = pattern.sub(_literally(f"{start}\n{option_table(command)}\n{end}"), page)
    return page


def _literally(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement ``re.sub`` inserts as it is (a string would have its backslashes read as escapes)."""
    return lambda _: text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zoo.option_tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/commands.md is out of date")
    args = parser.parse_args(argv)
    current = PAGE.read_text()
    wanted = page_text(current)
    if current == wanted:
        return 0
    if args.check:
        print(f"out of date: {PAGE}; run `python -m zoo.option_tables`", file=sys.stderr)
        return 1
    PAGE.write_text(wanted)
    print(f"rewrote the option tables of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
