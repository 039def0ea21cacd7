"""save_pretrained / from_pretrained / push_to_hub for the Hub layout (``zoo.layout``).

Weights are safetensors holding the released modules only (nothing is ever unpickled); the
card comes from ``zoo.cards``, the picture from the model itself (``sample_picture``);
``huggingface_hub`` does the transport.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

import zoo
from zoo.cards import model_card
from zoo.layout import (
    CARD_NAME,
    CONFIG_FORMAT,
    SAMPLES_NAME,
    WEIGHTS_NAME,
    CheckpointError,
    default_load_name,
    load_config,
    published_files,
    write_config,
)
from zoo.privacy import PrivacyLedger
from zoo.registry import method_class

__all__ = ["CheckpointError", "from_pretrained", "push_folder", "push_to_hub", "save_pretrained"]


def released_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The weights of the released modules, refusing any module the guarantee does not cover."""
    released, withheld = set(model.released_modules), set(model.never_released)
    if released & withheld:
        raise CheckpointError(f"{model.method} declares {sorted(released & withheld)} both released and never released")
    withheld_params = {id(p) for name in withheld for p in getattr(model, name).parameters()}
    state: dict[str, torch.Tensor] = {}
    for name in model.released_modules:
        module = getattr(model, name)
        if any(id(p) in withheld_params for p in module.parameters()):
            raise CheckpointError(f"released module {name!r} shares parameters with a never-released module")
        for key, tensor in module.state_dict().items():
            # a copy of each: buffers that share memory (a mask reused by several layers) cannot be saved as views
            state[f"{name}.{key}"] = tensor.detach().cpu().clone().contiguous()
    return state


def build_config(
    model: Any,
    model_id: str,
    recipe: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    weights_dtype: str = "float32",
) -> dict[str, Any]:
    ledger = getattr(model, "privacy_ledger", None)
    if not isinstance(ledger, PrivacyLedger) or not (ledger.entries or ledger.pac_releases):
        raise CheckpointError(
            f"{model_id}: the model has no privacy ledger; only models trained through their stages "
            "(zoo.train, dpzoo fit) can be saved with a guarantee."
        )
    return {
        "format": CONFIG_FORMAT,
        "library": "dpzoo",
        "dpzoo_version": zoo.__version__,
        "model_id": model_id,
        "method": model.method,
        "architecture": _jsonable(model.architecture()),
        "released_modules": list(model.released_modules),
        "weights_dtype": weights_dtype,
        "recipe": recipe,
        "evaluation": evaluation,
        "privacy_ledger": ledger.to_dict(),
    }


def save_pretrained(
    model: Any,
    directory: str | Path,
    *,
    model_id: str | None = None,
    recipe: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    weights_dtype: str = "float32",
    sample_seed: int = 0,
    load_as: str | None = None,
) -> Path:
    """Write the Hub layout of ``model`` into ``directory`` (created if needed).

    Every file is written to a staging folder first and moved in only when all succeeded, so a
    failure never leaves a half-written model. ``load_as`` is what the card's usage snippet passes
    to ``zoo.load`` (default: the model id for a shipped checkpoint, else ``directory``)."""
    if weights_dtype not in ("float32", "float16"):
        raise ValueError(f"weights_dtype must be 'float32' or 'float16', got {weights_dtype!r}")
    directory = Path(directory)
    model_id = model_id or directory.name
    config = build_config(model, model_id, recipe, evaluation, weights_dtype)
    state = released_state_dict(model)
    if weights_dtype == "float16":
        state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.staging-", dir=directory.parent))
    try:
        save_file(state, str(staging / WEIGHTS_NAME), metadata={"format": "pt", "method": model.method})
        write_config(staging, config)
        model.sample_picture(seed=sample_seed).save(staging / SAMPLES_NAME)
        model_card(config, load_as or default_load_name(model_id, directory), type(model)).save(staging / CARD_NAME)
        directory.mkdir(exist_ok=True)
        for file in staging.iterdir():
            os.replace(file, directory / file.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def from_pretrained(directory: str | Path) -> Any:
    """Rebuild the model of a local Hub-layout folder, in eval mode, with its privacy ledger."""
    directory = Path(directory)
    config = load_config(directory)
    cls = method_class(config["method"])
    if list(config["released_modules"]) != list(cls.released_modules):
        raise CheckpointError(
            f"{directory}: config releases {config['released_modules']} but {cls.method} releases "
            f"{list(cls.released_modules)}"
        )
    try:
        model = cls(**config["architecture"])
    except TypeError as error:
        raise CheckpointError(f"{directory}: architecture in config.json does not fit {cls.method}: {error}") from None
    weights = directory / WEIGHTS_NAME
    if not weights.is_file():
        raise CheckpointError(f"{weights} is missing")
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{weights} is corrupt or truncated ({error}); download it again") from None
    for name in cls.released_modules:
        prefix = f"{name}."
        part = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        try:
            getattr(model, name).load_state_dict(part, strict=True)
        except RuntimeError as error:
            raise CheckpointError(f"{weights} does not match the architecture in config.json: {error}") from None
    unexpected = [k for k in state if k.split(".", 1)[0] not in cls.released_modules]
    if unexpected:
        raise CheckpointError(f"{weights} holds tensors of modules it should not release: {unexpected[:5]}")
    model.privacy_ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    model.pretrained_config = config
    return model.eval()


def push_to_hub(model: Any, repo_id: str, token: str | None = None, private: bool = False, **save_kwargs: Any) -> str:
    """Save ``model`` in Hub layout and upload it to ``repo_id``; returns the commit URL."""
    with tempfile.TemporaryDirectory() as folder:
        model_id = save_kwargs.pop("model_id", repo_id.split("/")[-1])
        save_pretrained(model, folder, model_id=model_id, load_as=f"hf-hub:{repo_id}", **save_kwargs)
        return _upload(folder, repo_id, token, private)


def push_folder(directory: str | Path, repo_id: str, token: str | None = None, private: bool = False) -> str:
    """Upload an existing model folder (after checking that it loads), its card's usage snippet
    pointing at the Hub repository."""
    from_pretrained(directory)
    with tempfile.TemporaryDirectory() as folder:
        for name in published_files(directory):
            shutil.copy2(Path(directory) / name, Path(folder) / name)
        model_card(load_config(folder), f"hf-hub:{repo_id}").save(Path(folder) / CARD_NAME)
        return _upload(folder, repo_id, token, private)


def _upload(folder: str, repo_id: str, token: str | None, private: bool) -> str:
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        allow_patterns=published_files(folder),
        commit_message="Upload dpzoo model",
    )
    return str(commit.commit_url)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
