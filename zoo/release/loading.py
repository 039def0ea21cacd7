"""Find a model by id, folder or Hub repository, and list what can be loaded.

Torch, the accountants and the card code are imported by the functions that need them, so that an
unknown id is answered without them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub import constants, snapshot_download
from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError

import zoo
from zoo.errors import UnknownModelError, UserError
from zoo.headline import HEADLINE_KEY, headline_disagreement, stated_guarantee
from zoo.release.layout import CONFIG_NAME, HUB_FILES, load_config
from zoo.release.registry import (
    check_shipped_config,
    checkpoints_dir,
    model_index,
    shipped_config_problem,
    similar_ids,
)

if TYPE_CHECKING:  # listing and unknown ids stay free of torch
    import torch

    from zoo.methods import DPGenerativeModel

HUB_PREFIX = "hf-hub:"


def list_models(verify: bool = False) -> list[dict[str, Any]]:
    """Model ids with method, dataset, guarantee and headline metrics: shipped checkpoints first, then published.

    A shipped model's guarantee is the one its config.json states (``zoo.release.cards.headline``, stored on saving), so
    listing runs no accountant; ``zoo.load`` checks it against the ledger. ``verify`` recomputes each from its
    ledger here: a row then shows the ledger's guarantee, with ``verified`` False and the difference in ``problem``
    where config.json states another (None for a published model: it is checked when downloaded and loaded), and
    ``config_problem`` where a packaged checkpoint's config.json is not the one the model index records
    (``zoo.release.registry.shipped_config_problem``).
    ``guarantee`` states each model's guarantee in its own notion; ``epsilon`` and ``delta`` are None for a
    PAC-private model (it has no (ε, δ)), whose ``pac`` holds its bounds instead. ``metrics``: the evaluation's
    value of each metric on its card."""
    models: dict[str, dict[str, Any]] = {}
    for config_path in sorted(checkpoints_dir().glob(f"*/{CONFIG_NAME}")):
        folder = config_path.parent
        config = load_config(folder)
        models[folder.name] = {
            "model_id": folder.name,
            **(_verified(folder, config) if verify else _stated_headline(config)),
            "metrics": _metrics(config),
            "source": str(folder),
        }
    for model_id, entry in model_index().items():
        published = {"guarantee": f"(ε = {entry.get('epsilon')}, δ = {entry.get('delta')})-DP", **entry}
        checked = {"verified": None, "problem": None, "config_problem": None} if verify else {}
        source = f"{HUB_PREFIX}{entry['hub_repo']}"
        models.setdefault(model_id, {"model_id": model_id, **published, "metrics": {}, **checked, "source": source})
    return list(models.values())


def _stated_headline(config: dict[str, Any]) -> dict[str, Any]:
    """The headline config.json stores, its guarantee in words; computed from the ledger for a folder saved
    before headlines were stored."""
    if HEADLINE_KEY in config:
        stored = config[HEADLINE_KEY]
    else:
        from zoo.release.cards import headline

        stored = headline(config)
    return {**stored, "guarantee": stated_guarantee(stored)}


def _verified(folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The headline recomputed from the ledger, and whether config.json states it and is the file shipped."""
    headline = _verified_headline(config)
    config_problem = shipped_config_problem(folder)
    return {**headline, "verified": headline["verified"] and config_problem is None, "config_problem": config_problem}


def _verified_headline(config: dict[str, Any]) -> dict[str, Any]:
    """The headline recomputed from the ledger, and whether the guarantee config.json states is the same."""
    from zoo.release.cards import headline

    recomputed = headline(config)
    stored = config.get(HEADLINE_KEY)
    problem = None if stored is None else headline_disagreement(stored, recomputed)
    return {**recomputed, "guarantee": stated_guarantee(recomputed), "verified": problem is None, "problem": problem}


def _metrics(config: dict[str, Any]) -> dict[str, float]:
    results = (config.get("evaluation") or {}).get("results", [])
    return {result["metric_type"]: result["metric_value"] for result in results}


def resolve(name: str | Path) -> Path:
    """The local folder of a model: a folder path, ``hf-hub:org/name``, or a model id
    (``checkpoints/`` first, then the Hugging Face cache, then the Hub). A shipped checkpoint whose config.json
    is not the one the model index records is refused (``zoo.release.registry.check_shipped_config``)."""
    folder = _local_folder(name)
    check_shipped_config(folder)
    return folder


def _local_folder(name: str | Path) -> Path:
    """Where ``name`` is found (``resolve``), its config.json unchecked."""
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
    similar = similar_ids(name)
    meant = f" (did you mean {' or '.join(similar)}?)" if similar else ""
    raise UnknownModelError(
        f"unknown model {name!r}{meant}: not a folder, a shipped id or a published id; {{list_models}} shows the "
        "ids, and a Hub repository is loaded with 'hf-hub:org/name'",
        list_models="zoo.list_models()",
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
        raise UnknownModelError(
            f"no Hub repository {repo_id!r} (or it is private: set HF_TOKEN or run `hf auth login`)"
        ) from None


def load(name: str | Path, device: str | torch.device | None = None) -> DPGenerativeModel:
    """The pretrained model, in eval mode, with its privacy ledger (``model.privacy_ledger``), on ``device``
    (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``; None: the CPU). A device this machine
    lacks is refused before the weights are read (``checked_device``)."""
    folder = resolve(name)  # before torch is imported: an unknown id fails at once
    target = None if device is None else checked_device(device)
    from zoo.release.hub import from_pretrained

    model = from_pretrained(folder)
    return model if target is None else model.to(target)


def checked_device(device: str | torch.device) -> torch.device:
    """``device`` as a ``torch.device`` this machine has, or a one-line ``UserError`` that says what it has
    instead: torch's own errors come late (the first tensor moved) and name no remedy."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise UserError(f"unknown device {device!r}: use cpu, cuda, cuda:N or mps") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(
                f"device {str(device)!r} needs CUDA, but this machine has none (torch.cuda.is_available() is "
                "False): use --device cpu (device='cpu' in Python)"
            )
        count = torch.cuda.device_count()
        if parsed.index is not None and parsed.index >= count:
            raise UserError(f"no device {parsed}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"device {str(device)!r} is not available on this machine: use --device cpu")
    elif parsed.type not in ("cpu", "cuda", "mps"):
        raise UserError(f"dpzoo runs models on cpu, cuda or mps, not {parsed.type}")
    return parsed
