"""Find a model by id, folder or Hub repository, and list what can be loaded.

Torch, the accountants and the card code are imported by the functions that need them, so that an
unknown id is answered without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from huggingface_hub import constants, snapshot_download
from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError

import zoo
from zoo.layout import CONFIG_NAME, HUB_FILES, load_config
from zoo.registry import UnknownModelError, checkpoints_dir, model_ids, model_index

HUB_PREFIX = "hf-hub:"


def list_models() -> list[dict[str, Any]]:
    """Model ids with method, dataset and guarantee: shipped checkpoints first, then published ones.

    ``guarantee`` states each model's guarantee in its own notion; ``epsilon`` and ``delta`` are None
    for a PAC-private model (it has no (ε, δ)), whose ``pac`` holds its bounds instead."""
    from zoo.cards import datasets_line, display_method, guarantee_summary, is_pac, privacy_metadata

    models: dict[str, dict[str, Any]] = {}
    for config_path in sorted(checkpoints_dir().glob(f"*/{CONFIG_NAME}")):
        config = load_config(config_path.parent)
        privacy = privacy_metadata(config)
        models[config_path.parent.name] = {
            "model_id": config_path.parent.name,
            "method": display_method(config),
            "dataset": datasets_line(privacy),
            "notion": privacy["notion"],
            "guarantee": guarantee_summary(privacy),
            "epsilon": privacy.get("epsilon"),
            "delta": privacy.get("delta"),
            "accountant": privacy.get("accountant"),
            "pac": privacy["guarantees"] if is_pac(privacy) else None,
            "source": str(config_path.parent),
        }
    for model_id, entry in model_index().items():
        published = {"guarantee": f"(ε = {entry.get('epsilon')}, δ = {entry.get('delta')})-DP", **entry}
        models.setdefault(model_id, {"model_id": model_id, **published, "source": f"{HUB_PREFIX}{entry['hub_repo']}"})
    return list(models.values())


def resolve(name: str | Path) -> Path:
    """The local folder of a model: a folder path, ``hf-hub:org/name``, or a model id
    (``checkpoints/`` first, then the Hugging Face cache, then the Hub)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    name = str(name)
    if name.startswith(HUB_PREFIX):
        return _snapshot(name[len(HUB_PREFIX) :], looked=[])
    local = checkpoints_dir() / name
    looked = [str(local)]
    if (local / CONFIG_NAME).is_file():
        return local
    entry = model_index().get(name)
    if entry is not None:
        return _snapshot(entry["hub_repo"], looked)
    known = model_ids()
    raise UnknownModelError(
        f"unknown model {name!r}: not a folder, not in {checkpoints_dir()} and not a published id. "
        f"Known ids: {known or 'none yet'}; a Hub repository is loaded with 'hf-hub:org/name'."
    )


def _snapshot(repo_id: str, looked: list[str]) -> Path:
    try:
        return Path(
            snapshot_download(
                repo_id, allow_patterns=list(HUB_FILES), library_name="dpzoo", library_version=zoo.__version__
            )
        )
    except LocalEntryNotFoundError:
        looked.append(f"the Hugging Face cache ({constants.HF_HUB_CACHE})")
        raise UnknownModelError(
            f"{repo_id} is not available offline: looked in {' and '.join(looked)}, and the Hub cannot be "
            "reached (HF_HUB_OFFLINE is set or there is no network). Download it once with a connection, "
            "or pass a local folder."
        ) from None
    except RepositoryNotFoundError:
        raise UnknownModelError(f"no Hub repository {repo_id!r} (or it is private: pass a token)") from None


def load(name: str | Path) -> Any:
    """The pretrained model, in eval mode, with its privacy ledger (``model.privacy_ledger``)."""
    folder = resolve(name)  # before torch is imported: an unknown id fails at once
    from zoo.hub import from_pretrained

    return from_pretrained(folder)
