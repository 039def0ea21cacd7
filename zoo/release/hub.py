"""save_pretrained / from_pretrained / push_to_hub for the Hub layout (``zoo.release.layout``).

Weights are safetensors holding the released modules only (nothing is ever unpickled); the
card comes from ``zoo.release.cards``, the picture from the model itself (``sample_picture``);
``huggingface_hub`` does the transport.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import HfApi, constants
from huggingface_hub.errors import HfHubHTTPError
from safetensors import SafetensorError
from safetensors.torch import load_file
from safetensors.torch import save as safetensors_bytes

import zoo
from zoo.errors import UserError
from zoo.headline import HEADLINE_KEY
from zoo.methods import DPGenerativeModel, method_class
from zoo.privacy import PrivacyLedger
from zoo.release.cards import check_data, check_headline, headline, model_card
from zoo.release.hub_access import HubUnavailableError, network_errors, one_line, publishing_token
from zoo.release.layout import (
    CARD_NAME,
    CONFIG_FORMAT,
    SAMPLES_NAME,
    WEIGHTS_NAME,
    CheckpointError,
    load_config,
    publishable_command,
    publishable_path,
    published_files,
    write_config,
)
from zoo.release.publication import check_evaluation_publishable
from zoo.release.registry import default_load_name
from zoo.release.save_target import SaveTargetError, check_save_target
from zoo.release.staging import staged

__all__ = [
    "CheckpointError",
    "HubUnavailableError",
    "SaveTargetError",
    "SeededModelError",
    "check_save_target",
    "from_pretrained",
    "push_folder",
    "push_to_hub",
    "save_pretrained",
]


class SeededModelError(CheckpointError):
    """A model trained with seeded randomness, which states no guarantee and is never published."""


def released_state_dict(model: DPGenerativeModel) -> dict[str, torch.Tensor]:
    """The weights of the released modules, refusing any module the guarantee does not cover."""
    released, withheld = set(model.released_modules), set(model.never_released)
    if released & withheld:
        raise CheckpointError(f"{model.method} declares {sorted(released & withheld)} both released and never released")
    withheld_params = {id(p) for name in withheld for p in model.get_submodule(name).parameters()}
    state: dict[str, torch.Tensor] = {}
    for name in model.released_modules:
        module = model.get_submodule(name)
        if any(id(p) in withheld_params for p in module.parameters()):
            raise CheckpointError(f"released module {name!r} shares parameters with a never-released module")
        for key, tensor in module.state_dict().items():
            # a copy of each: buffers that share memory (a mask reused by several layers) cannot be saved as views
            state[f"{name}.{key}"] = tensor.detach().cpu().clone().contiguous()
    return state


def build_config(
    model: DPGenerativeModel,
    model_id: str,
    recipe: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    weights_dtype: str = "float32",
    *,
    license: str | None = None,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """config.json of ``model``: what it is, how it was trained (commands without local paths), the licence and
    data description given, its ledger, and the headline ``dpzoo list`` reads (``zoo.release.cards.headline``).
    Every save and push builds its config here, so the evaluation given is refused here, before any file is
    written, when ``--write-card`` would refuse it (``zoo.release.publication``)."""
    if weights_dtype not in ("float32", "float16"):
        raise UserError(f"weights_dtype must be 'float32' or 'float16', got {weights_dtype!r}")
    ledger = model.privacy_ledger
    if not isinstance(ledger, PrivacyLedger) or not (ledger.entries or ledger.pac_releases or ledger.public_data):
        raise CheckpointError(
            f"{model_id}: the model has no privacy ledger; only models trained through their stages "
            "(zoo.train, zoo.pretrain_public, dpzoo fit) can be saved, with what they were trained on."
        )
    check_license(license)
    if data is not None:
        check_data(data)
    check_evaluation_publishable(evaluation, model_id)
    config = {
        "format": CONFIG_FORMAT,
        "library": "dpzoo",
        "dpzoo_version": zoo.__version__,
        "model_id": model_id,
        "method": model.method,
        "architecture": _jsonable(model.architecture()),
        "released_modules": list(model.released_modules),
        "weights_dtype": weights_dtype,
        "license": license,
        "data": _jsonable(data),
        "recipe": _publishable_recipe(recipe),
        "evaluation": _publishable_evaluation(evaluation),
        "privacy_ledger": ledger.to_dict(),
    }
    return {**config, HEADLINE_KEY: headline(config, type(model))}


def check_license(license: str | None) -> None:
    """A licence is the user's choice, given as an identifier (the Hub's ``license:``), or None for none."""
    if license is not None and (not isinstance(license, str) or not license or any(c.isspace() for c in license)):
        raise UserError(f"license must be a licence identifier such as 'apache-2.0' or 'cc-by-4.0', got {license!r}")


def _publishable_recipe(recipe: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recipe with its file and command free of this machine's absolute paths (``publishable_command``)."""
    if not recipe:
        return recipe
    published = dict(recipe)
    if isinstance(published.get("config"), str):
        published["config"] = publishable_path(published["config"])
    elif isinstance(published.get("config"), list):
        published["config"] = [publishable_path(path) for path in published["config"]]
    if published.get("command"):
        published["command"] = publishable_command(published["command"])
    return published


def _publishable_evaluation(evaluation: dict[str, Any] | None) -> dict[str, Any] | None:
    if not evaluation or not evaluation.get("command"):
        return evaluation
    added = [{**step, "command": publishable_command(step["command"])} for step in evaluation.get("added", [])]
    return {**evaluation, "command": publishable_command(evaluation["command"]), **({"added": added} if added else {})}


def save_pretrained(
    model: DPGenerativeModel,
    directory: str | Path,
    *,
    model_id: str | None = None,
    recipe: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    weights_dtype: str = "float32",
    sample_seed: int = 0,
    load_as: str | None = None,
    overwrite: bool = False,
    license: str | None = None,
    data: dict[str, Any] | None = None,
) -> Path:
    """Write the Hub layout of ``model`` into ``directory`` (created if needed).

    A folder that already holds a model is replaced only with ``overwrite`` (``check_save_target``).
    Every file is written to a staging folder first and moved in only when all succeeded
    (``zoo.release.staging``), so a failure never leaves a half-written model. ``load_as`` is what the card's
    usage snippet passes to ``zoo.load`` (default: the model id for a shipped checkpoint, else the folder's name).
    ``license``: the licence identifier the user chose (none by default: the card says it is unspecified).
    ``data``: the training data as the card describes it (``zoo.release.cards.DATA_LABELS``: name, records, classes,
    images, image_shape, preprocessing, held_out; all optional)."""
    directory = check_save_target(directory, overwrite)
    config = build_config(
        model, model_id or directory.name, recipe, evaluation, weights_dtype, license=license, data=data
    )
    return write_model_folder(model, directory, config, sample_seed, load_as)


def write_model_folder(
    model: DPGenerativeModel,
    directory: Path,
    config: dict[str, Any],
    sample_seed: int = 0,
    load_as: str | None = None,
) -> Path:
    """The Hub layout of ``model`` with its ``config`` (``build_config``) written into ``directory``, which
    ``check_save_target`` passed: for a caller that keeps the config it wrote (``zoo.fit.run_recipe``)."""
    state = released_state_dict(model)
    if config["weights_dtype"] == "float16":
        state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    with staged(directory) as staging:
        # as bytes through an ordinary open: the file gets the umask's mode like the others (save_file gives 0600)
        weights = safetensors_bytes(state, metadata={"format": "pt", "method": model.method})
        (staging / WEIGHTS_NAME).write_bytes(weights)
        write_config(staging, config)
        model.sample_picture(seed=sample_seed).save(staging / SAMPLES_NAME)
        load_name = load_as or default_load_name(config["model_id"], directory)
        model_card(config, load_name, type(model)).save(staging / CARD_NAME)
    return directory


def from_pretrained(directory: str | Path) -> DPGenerativeModel:
    """Rebuild the model of a local Hub-layout folder, in eval mode, with its privacy ledger; refused when the
    guarantee its config.json states is not the one its ledger gives (``zoo.release.cards.check_headline``)."""
    directory = Path(directory)
    config = load_config(directory)
    cls = method_class(config["method"])
    check_headline(config, directory, cls)
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
        advice = _corrupt_weights_advice(directory)
        raise CheckpointError(f"{weights} is corrupt or truncated ({error}); {advice}") from None
    for name in cls.released_modules:
        prefix = f"{name}."
        part = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        try:
            model.get_submodule(name).load_state_dict(part, strict=True)
        except RuntimeError as error:
            raise CheckpointError(f"{weights} does not match the architecture in config.json: {error}") from None
    unexpected = [k for k in state if k.split(".", 1)[0] not in cls.released_modules]
    if unexpected:
        raise CheckpointError(f"{weights} holds tensors of modules it should not release: {unexpected[:5]}")
    model.privacy_ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    model.pretrained_config = config
    return model.eval()


def _corrupt_weights_advice(directory: Path) -> str:
    """A download is fetched again, but only once its cache folder is gone (the cache keeps the broken
    copy); a local folder has no copy to fetch."""
    cache, folder = Path(constants.HF_HUB_CACHE).resolve(), directory.resolve()
    if folder != cache and folder.is_relative_to(cache):
        return f"download it again: delete {cache / folder.relative_to(cache).parts[0]}, then load the model again"
    return "re-save the model with save_pretrained, or check that this is a dpzoo model folder"


def push_to_hub(
    model: DPGenerativeModel, repo_id: str, token: str | None = None, private: bool = False, **save_kwargs: Any
) -> str:
    """Save ``model`` in Hub layout and upload it to ``repo_id``; returns the commit URL."""
    token = publishing_token(token)
    if isinstance(model.privacy_ledger, PrivacyLedger):
        check_unseeded(model.privacy_ledger, repo_id)
    with tempfile.TemporaryDirectory() as folder:
        model_id = save_kwargs.pop("model_id", repo_id.split("/")[-1])
        save_pretrained(model, folder, model_id=model_id, load_as=f"hf-hub:{repo_id}", **save_kwargs)
        return _upload(folder, repo_id, token, private)


def push_folder(directory: str | Path, repo_id: str, token: str | None = None, private: bool = False) -> str:
    """Upload an existing model folder (after checking that it loads and that its evaluation is publishable), its
    card's usage snippet pointing at the Hub repository."""
    token = publishing_token(token)
    config = load_config(directory)
    check_unseeded(PrivacyLedger.from_dict(config["privacy_ledger"]), repo_id)
    check_evaluation_publishable(config.get("evaluation"), repo_id)
    from_pretrained(directory)
    with tempfile.TemporaryDirectory() as folder:
        for name in published_files(directory):
            shutil.copy2(Path(directory) / name, Path(folder) / name)
        model_card(load_config(folder), f"hf-hub:{repo_id}").save(Path(folder) / CARD_NAME)
        return _upload(folder, repo_id, token, private)


def check_unseeded(ledger: PrivacyLedger, repo_id: str) -> None:
    """Refuse to publish a model trained with seeded randomness: with its seeds known, its release is a
    deterministic function of the data, so it is not differentially private (checked before any Hub call)."""
    seeds = ledger.seeded
    if seeds:
        raise SeededModelError(
            f"will not publish {repo_id}: the model was trained with seeded randomness ({', '.join(seeds)}), so it "
            "is not differentially private; seeds are for tests only: train it again without them"
        )


def _upload(folder: str, repo_id: str, token: str, private: bool) -> str:
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=folder,
            allow_patterns=published_files(folder),
            commit_message="Upload dpzoo model",
        )
    except HfHubHTTPError as error:
        raise HubUnavailableError(f"the Hugging Face Hub refused to publish {repo_id}: {one_line(error)}") from None
    except network_errors() as error:
        reason = one_line(error)
        raise HubUnavailableError(f"cannot reach the Hugging Face Hub to publish {repo_id}: {reason}") from None
    return str(commit.commit_url)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
