"""Where pretrained model ids live: the repository's checkpoints (or the wheel's copy), then the Hub.

The packaged model index (``model_index.json``) holds the published ids (``published``) and the sha256 of each
shipped checkpoint's config.json (``shipped``), which ``zoo.load`` and ``dpzoo list --verify`` check: a shipped
config.json edited after it was indexed is refused. ``dpzoo model-cards`` regenerates the digests with
MODEL_CARDS.md, and a test fails while they are stale."""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from zoo.release.layout import CONFIG_NAME, CheckpointError, publishable_path

CHECKPOINTS_ENV = "DPZOO_CHECKPOINTS_DIR"
#: the shipped checkpoints inside an installed wheel (setup.py maps the repository's checkpoints/ to it)
CHECKPOINTS_PACKAGE = "dpzoo_checkpoints"
#: the packaged model index, beside this module
INDEX_NAME = "model_index.json"
#: the command that regenerates the index's digests (with MODEL_CARDS.md)
REGENERATE = "dpzoo model-cards"


class ShippedConfigError(CheckpointError):
    """A shipped checkpoint's config.json that is not the file the packaged model index records."""


def checkpoints_dir() -> Path:
    """Shipped checkpoints: ``DPZOO_CHECKPOINTS_DIR``, else the packaged ones (``packaged_checkpoints_dir``)."""
    value = os.environ.get(CHECKPOINTS_ENV)
    return Path(value) if value else packaged_checkpoints_dir()


def packaged_checkpoints_dir() -> Path:
    """The checkpoints dpzoo ships, whose config.json digests the model index holds: ``checkpoints/`` of this
    repository's checkout, else the copy an installed wheel holds (package ``CHECKPOINTS_PACKAGE``, see setup.py)."""
    checkout = Path(__file__).resolve().parents[2] / "checkpoints"
    if checkout.is_dir():
        return checkout
    installed = importlib.util.find_spec(CHECKPOINTS_PACKAGE)
    return Path(next(iter(installed.submodule_search_locations))) if installed else checkout


def checkpoints_are_packaged() -> bool:
    """Whether ``checkpoints_dir()`` holds the packaged checkpoints (``DPZOO_CHECKPOINTS_DIR`` names no other)."""
    return checkpoints_dir().resolve() == packaged_checkpoints_dir().resolve()


def index_file() -> Path:
    """The packaged model index (``INDEX_NAME``, shipped beside this module: setup.py's package data)."""
    return Path(__file__).with_name(INDEX_NAME)


def _index() -> dict[str, Any]:
    return json.loads(index_file().read_text())


def model_index() -> dict[str, dict[str, Any]]:
    """Published model ids with their Hub repository, method, dataset and (ε, δ)."""
    return _index()["published"]


def shipped_digests() -> dict[str, str]:
    """The sha256 of each shipped checkpoint's config.json, by model id, as ``dpzoo model-cards`` recorded it."""
    return _index()["shipped"]


def config_digests(checkpoints: Path) -> dict[str, str]:
    """The sha256 of the config.json of each model folder in ``checkpoints``, by model id."""
    return {path.parent.name: _sha256(path) for path in sorted(checkpoints.glob(f"*/{CONFIG_NAME}"))}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def indexed_digests_current() -> bool:
    """Whether the index records the config.json of every packaged checkpoint as it is now."""
    return shipped_digests() == config_digests(packaged_checkpoints_dir())


def write_shipped_digests() -> Path:
    """Record the digests of the packaged checkpoints' config.json in the model index (``dpzoo model-cards``);
    returns the index file."""
    content = {**_index(), "shipped": config_digests(packaged_checkpoints_dir())}
    index_file().write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    return index_file()


def shipped_config_problem(folder: Path) -> str | None:
    """Why ``folder``, a packaged checkpoint, holds another config.json than the one indexed; None when it holds
    that one, or is no packaged checkpoint the index records (a folder elsewhere, a model not yet indexed)."""
    if folder.resolve().parent != packaged_checkpoints_dir().resolve():
        return None
    recorded = shipped_digests().get(folder.name)
    config = folder / CONFIG_NAME
    if recorded is None or not config.is_file() or _sha256(config) == recorded:
        return None
    return (
        f"{config} is not the config.json dpzoo shipped (its sha256 differs from the one the model index "
        f"records): it was edited since; if you changed it yourself, run `{REGENERATE}` to record it"
    )


def check_shipped_config(folder: Path) -> None:
    """Refuse a packaged checkpoint whose config.json is not the one the model index records."""
    problem = shipped_config_problem(folder)
    if problem:
        raise ShippedConfigError(problem)


def shipped_ids() -> list[str]:
    """Ids of the checkpoints in ``checkpoints_dir()``: the folders holding a config.json."""
    return sorted(path.parent.name for path in checkpoints_dir().glob(f"*/{CONFIG_NAME}"))


def model_ids() -> list[str]:
    """Every id ``zoo.load`` knows, shipped first, then published. Names only: no config is read, no
    guarantee computed, so an unknown id is answered at once."""
    shipped = shipped_ids()
    return shipped + [model_id for model_id in model_index() if model_id not in shipped]


def similar_ids(name: str) -> list[str]:
    """The known ids closest to ``name`` (a typo's likely meaning), the closest first; none when nothing is near."""
    return difflib.get_close_matches(name, model_ids(), n=3, cutoff=0.6)


def default_load_name(model_id: str, directory: str | Path) -> str:
    """What ``zoo.load`` takes to find this folder: the id of a shipped checkpoint, else the folder as given if
    relative, or by its name (``publishable_path``): a card says nothing of this machine's folders."""
    shipped = (checkpoints_dir() / model_id).resolve()
    return model_id if Path(directory).resolve() == shipped else publishable_path(str(directory))
