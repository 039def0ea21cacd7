"""Where pretrained model ids live: the repository's checkpoints (or the wheel's copy), then the Hub."""

from __future__ import annotations

import importlib.util
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from zoo.release.layout import CONFIG_NAME, publishable_path

CHECKPOINTS_ENV = "DPZOO_CHECKPOINTS_DIR"
#: the shipped checkpoints inside an installed wheel (setup.py maps the repository's checkpoints/ to it)
CHECKPOINTS_PACKAGE = "dpzoo_checkpoints"


def checkpoints_dir() -> Path:
    """Shipped checkpoints: ``DPZOO_CHECKPOINTS_DIR``, else ``checkpoints/`` of this repository's
    checkout, else the copy an installed wheel holds (package ``CHECKPOINTS_PACKAGE``, see setup.py)."""
    value = os.environ.get(CHECKPOINTS_ENV)
    if value:
        return Path(value)
    checkout = Path(__file__).resolve().parents[1] / "checkpoints"
    if checkout.is_dir():
        return checkout
    installed = importlib.util.find_spec(CHECKPOINTS_PACKAGE)
    return Path(next(iter(installed.submodule_search_locations))) if installed else checkout


def model_index() -> dict[str, dict[str, Any]]:
    """Published model ids with their Hub repository, method, dataset and (ε, δ)."""
    return json.loads(resources.files("zoo.release").joinpath("model_index.json").read_text())


def shipped_ids() -> list[str]:
    """Ids of the checkpoints in ``checkpoints_dir()``: the folders holding a config.json."""
    return sorted(path.parent.name for path in checkpoints_dir().glob(f"*/{CONFIG_NAME}"))


def model_ids() -> list[str]:
    """Every id ``zoo.load`` knows, shipped first, then published. Names only: no config is read, no
    guarantee computed, so an unknown id is answered at once."""
    shipped = shipped_ids()
    return shipped + [model_id for model_id in model_index() if model_id not in shipped]


def default_load_name(model_id: str, directory: str | Path) -> str:
    """What ``zoo.load`` takes to find this folder: the id of a shipped checkpoint, else the folder as given if
    relative, or by its name (``publishable_path``): a card says nothing of this machine's folders."""
    shipped = (checkpoints_dir() / model_id).resolve()
    return model_id if Path(directory).resolve() == shipped else publishable_path(str(directory))
