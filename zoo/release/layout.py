"""The Hub layout of a model folder: its file names and its validated ``config.json``.

One folder per model, identical on disk and on the Hugging Face Hub: ``config.json`` (method,
architecture, recipe, privacy ledger, evaluation), ``model.safetensors`` (the released
modules only), ``README.md`` (the model card) and ``samples.png``, plus any figures the
evaluation recorded.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from zoo.errors import UserError

CONFIG_FORMAT = 1
CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, SAMPLES_NAME = "config.json", "model.safetensors", "README.md", "samples.png"
HUB_FILES = (CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, SAMPLES_NAME)
_REQUIRED_CONFIG_KEYS = ("format", "method", "architecture", "released_modules", "privacy_ledger")


class CheckpointError(UserError):
    """A model folder that cannot be loaded as it is (missing, corrupt or inconsistent), or written or
    published where asked."""


def holds_model(directory: str | Path) -> bool:
    """Whether ``directory`` already holds a model (its config or its weights)."""
    return any((Path(directory) / name).is_file() for name in (CONFIG_NAME, WEIGHTS_NAME))


def load_config(directory: str | Path) -> dict[str, Any]:
    """Read and validate ``config.json`` of a model folder."""
    path = Path(directory) / CONFIG_NAME
    if not path.is_file():
        raise CheckpointError(f"{path} is missing; a dpzoo model folder holds {', '.join(HUB_FILES)}")
    try:
        config = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is not valid JSON: {error}") from None
    missing = [k for k in _REQUIRED_CONFIG_KEYS if k not in config] if isinstance(config, dict) else ["all"]
    if missing:
        raise CheckpointError(f"{path} lacks {missing}; was it written by dpzoo's save_pretrained?")
    if config["format"] != CONFIG_FORMAT:
        raise CheckpointError(f"{path} has format {config['format']!r}; this dpzoo reads format {CONFIG_FORMAT}")
    return config


def write_config(directory: str | Path, config: dict[str, Any]) -> None:
    (Path(directory) / CONFIG_NAME).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def published_files(directory: str | Path) -> list[str]:
    """The Hub files of a folder and the figures its card shows."""
    figures = (load_config(directory).get("evaluation") or {}).get("figures", [])
    return [name for name in (*HUB_FILES, *figures) if (Path(directory) / name).is_file()]


def publishable_path(path: str) -> str:
    """``path`` as a card may publish it: an absolute (or ``~``) path by its name alone, which says nothing of
    this machine's folders; a relative path as it is."""
    absolute = Path(path).expanduser()
    return (absolute.name or path) if absolute.is_absolute() else path


def command_line(words: Sequence[str], options: Mapping[str, Any]) -> str:
    """A command as a card records it, spelled from what a run was given: ``words``, then each option with its
    value, quoted for the shell; an option whose value is None or False is left out, one whose value is True
    is the flag alone."""
    spelled = list(words)
    for flag, value in options.items():
        if value is True:
            spelled.append(flag)
        elif value is not None and value is not False:
            spelled += [flag, str(value)]
    return shlex.join(spelled)


def publishable_command(command: str) -> str:
    """A shell command with each absolute path among its arguments (also ``--option=/path``) made publishable
    (``publishable_path``): ``--images '/home/me/my photos'`` becomes ``--images 'my photos'``."""
    try:
        arguments = shlex.split(command)
    except ValueError as error:
        raise UserError(f"cannot read {command!r} as a shell command ({error}), so cannot publish it") from None
    return shlex.join(path_argument(argument, publishable_path) for argument in arguments)


def path_argument(argument: str, rule: Callable[[str], str]) -> str:
    """A command-line argument with its path (the argument itself, or the value of ``--option=value``) through
    ``rule``; options pass through a rule that leaves non-paths as they are."""
    option, equals, value = argument.partition("=")
    if argument.startswith("-") and equals:
        return f"{option}={rule(value)}"
    return rule(argument)
