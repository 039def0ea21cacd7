"""Hub layout: save_pretrained / from_pretrained / push_to_hub.

One folder per model, identical on disk and on the Hugging Face Hub:
``config.json`` (method, architecture, recipe, privacy ledger), ``model.safetensors``
(the released modules only, weights only: nothing is ever unpickled), ``README.md``
(the model card) and ``samples.png``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torchvision.utils import save_image

import zoo
from zoo.privacy import PrivacyLedger
from zoo.registry import method_class

CONFIG_FORMAT = 1
CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, SAMPLES_NAME = "config.json", "model.safetensors", "README.md", "samples.png"
HUB_FILES = (CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, SAMPLES_NAME)
_REQUIRED_CONFIG_KEYS = ("format", "method", "architecture", "released_modules", "privacy_ledger")


class CheckpointError(ValueError):
    """A model folder that cannot be loaded as it is: missing, corrupt or inconsistent."""


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
    if not isinstance(ledger, PrivacyLedger) or not ledger.entries:
        raise CheckpointError(
            f"{model_id}: the model has no privacy ledger; only models trained under DPCallback "
            "(or released with gaussian_release) can be saved with a guarantee."
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
    from zoo.cards import model_card

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
        (staging / CONFIG_NAME).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        write_sample_grid(model, staging, sample_seed)
        model_card(config, load_as or default_load_name(model_id, directory)).save(staging / CARD_NAME)
        directory.mkdir(exist_ok=True)
        for file in staging.iterdir():
            os.replace(file, directory / file.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def default_load_name(model_id: str, directory: str | Path) -> str:
    """What ``zoo.load`` takes to find this folder: the id of a shipped checkpoint, else the folder's path."""
    from zoo.registry import checkpoints_dir

    shipped = (checkpoints_dir() / model_id).resolve()
    return model_id if Path(directory).resolve() == shipped else str(directory)


def write_sample_grid(model: Any, directory: str | Path, seed: int = 0) -> None:
    """``samples.png``: for image models 8 rows, one column per class (8 columns when unconditional);
    for table models the density and samples (2 features) or per-feature histograms of samples."""
    from zoo.plots import table_model_picture

    if model.sample_kind == "rows":
        table_model_picture(model, seed=seed).save(Path(directory) / SAMPLES_NAME)
        return
    columns = model.num_classes or 8
    save_image(
        model.sample(8 * columns, seed=seed), Path(directory) / SAMPLES_NAME, nrow=columns, padding=2, pad_value=1.0
    )


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


def record_evaluation(
    directory: str | Path, evaluation: dict[str, Any], command: str, figures: list[str] | None = None
) -> None:
    """Store an evaluation (and the names of its figures in the folder) in config.json; regenerate the card.

    Refuses local diagnostics (``zoo.metrics.publication``): a card publishes only what its guarantee covers."""
    from zoo.cards import model_card
    from zoo.metrics import card_results
    from zoo.metrics.publication import check_publishable

    check_publishable(evaluation["results"])
    directory = Path(directory)
    config = load_config(directory)
    config["evaluation"] = {
        "command": command,
        "results": card_results(evaluation, evaluation["dataset"]),
        "details": evaluation,
        "figures": figures or [],
    }
    (directory / CONFIG_NAME).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    model_card(config, default_load_name(config["model_id"], directory)).save(directory / CARD_NAME)


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
    from zoo.cards import model_card

    from_pretrained(directory)
    with tempfile.TemporaryDirectory() as folder:
        for name in _published_files(directory):
            shutil.copy2(Path(directory) / name, Path(folder) / name)
        model_card(load_config(folder), f"hf-hub:{repo_id}").save(Path(folder) / CARD_NAME)
        return _upload(folder, repo_id, token, private)


def _published_files(directory: str | Path) -> list[str]:
    """The Hub files and the figures the card shows."""
    figures = (load_config(directory).get("evaluation") or {}).get("figures", [])
    return [name for name in (*HUB_FILES, *figures) if (Path(directory) / name).is_file()]


def _upload(folder: str, repo_id: str, token: str | None, private: bool) -> str:
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        allow_patterns=_published_files(folder),
        commit_message="Upload dpzoo model",
    )
    return str(commit.commit_url)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
