"""Sampling, fine-tuning, the CLI commands around checkpoints, and the real Hub round trip."""

import importlib
import os
import pkgutil
import shutil
import socket
import types
import uuid

import pytest
import torch
from torch import Tensor, nn
from torch.utils.data import TensorDataset

import zoo
from tests.toys import ToyData
from tests.zoo.test_hub import tiny_private_flow
from zoo.cli import main
from zoo.methods import DPGenerativeModel
from zoo.privacy import PrivacyConfigError
from zoo.release.hub import HubUnavailableError, from_pretrained, push_folder, save_pretrained
from zoo.release.registry import checkpoints_dir


class ToyConditional(DPGenerativeModel):
    method, privacy_barrier, released_modules, num_classes = "toy-conditional", "B4", ("net",), 3

    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 2)

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        return torch.cat([torch.rand(n, 1, generator=generator), labels[:, None].float()], dim=1)


def test_sample_checks_n_and_labels():
    model = ToyConditional()
    assert model.sample(7, seed=0)[:, 1].tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert model.sample(3, labels=[2, 2, 1], seed=0)[:, 1].tolist() == [2, 2, 1]
    assert torch.equal(model.sample(2500, seed=4, batch_size=1000), model.sample(2500, seed=4, batch_size=1000))
    for bad, message in [
        ([0, 1], "labels must be 3 integers"),
        ([0, 1, 3], "labels must lie in 0..2"),
        ([0.5, 1, 1], "labels must be 3 integers"),
        ([-1, 0, 0], "labels must lie in 0..2"),
    ]:
        with pytest.raises(ValueError, match=message):
            model.sample(3, labels=bad)
    for n in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="n must be a positive integer"):
            model.sample(n)


def test_unconditional_models_refuse_labels():
    with pytest.raises(ValueError, match="unconditional"):
        tiny_private_flow().sample(2, labels=[0, 1])


def test_finetune_appends_an_entry_for_the_new_data_and_the_card_states_both(tmp_path):
    model = tiny_private_flow("original-data")
    original = model.privacy_ledger.entries[0].to_dict()
    new_data = ToyData(TensorDataset(torch.rand(80, 1, 8, 8), torch.zeros(80)), 0.25, dataset_id="new-data")
    target = model.privacy_ledger.epsilon("original-data") + 2.0  # nothing shows the two apart: the card composes
    tuned = zoo.finetune(
        model, new_data, target, max_steps=3, accountant="rdp", accelerator="cpu", enable_progress_bar=False
    )
    assert [e.dataset_id for e in tuned.privacy_ledger.entries] == ["original-data", "new-data"]
    assert tuned.privacy_ledger.entries[0].to_dict() == original
    assert tuned.privacy_ledger.guarantees()["new-data"]["epsilon"] <= target and not tuned.training
    card = (save_pretrained(tuned, tmp_path / "tuned") / "README.md").read_text()
    assert "dataset: original-data" in card and "dataset: new-data" in card


class ToyB3(DPGenerativeModel):
    method, privacy_barrier, released_modules, never_released = "toy-b3", "B3", ("generator",), ("critic",)

    def __init__(self):
        super().__init__()
        self.generator, self.critic = nn.Linear(2, 2), nn.Linear(2, 1)


def test_finetune_refuses_a_barrier_it_cannot_provide():
    with pytest.raises(PrivacyConfigError, match="B3.*critic.*cannot be fine-tuned"):
        zoo.finetune(ToyB3(), None, target_epsilon=1.0)


def test_release_holds_only_what_the_guarantee_covers(tmp_path):
    from safetensors.torch import load_file

    from zoo.privacy import PrivacyLedger
    from zoo.release.hub import released_state_dict

    model = ToyB3()
    assert set(released_state_dict(model)) == {"generator.weight", "generator.bias"}

    class Leaky(ToyB3):
        released_modules = ("generator", "critic")

    with pytest.raises(Exception, match="both released and never released"):
        released_state_dict(Leaky())

    class SharedWithCritic(ToyB3):
        def __init__(self):
            super().__init__()
            self.generator = nn.Sequential(self.critic)

    with pytest.raises(Exception, match="shares parameters with a never-released module"):
        released_state_dict(SharedWithCritic())

    model.privacy_ledger = tiny_private_flow().privacy_ledger
    model.sample = lambda n, seed=0: torch.rand(n, 2)  # tabular-shaped: no grid is drawn
    saved = save_pretrained(model, tmp_path / "b3")
    assert set(load_file(str(saved / "model.safetensors"))) == {"generator.weight", "generator.bias"}
    assert isinstance(PrivacyLedger.from_dict(zoo.release.hub.load_config(saved)["privacy_ledger"]), PrivacyLedger)


FIT_RECIPE = """
privacy:
  class_path: zoo.privacy.DPBudget
  init_args: {target_epsilon: 5.0, max_grad_norm: 0.1, accountant: rdp}
model:
  class_path: lightning_modules.DPLFlow
  init_args: {channels: [4, 8], latent_dim: 4, flow_blocks: 2, flow_hidden: 16}
data:
  class_path: zoo.data.ImageDataModule
  init_args: {dataset: mnist, label: 0, sample_rate: 0.05, validation_size: 1000}
trainer:
  max_steps: 2
  accelerator: cpu
  logger: false
  enable_checkpointing: false
  enable_progress_bar: false
  limit_val_batches: 0
"""


def test_fit_from_a_recipe_writes_a_loadable_hub_folder(data_dir, tmp_path, capsys):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(FIT_RECIPE)
    out = tmp_path / "tiny-mnist-0"
    assert main(["fit", "--config", str(recipe), "--save_pretrained", str(out), "--selection", "defaults"]) == 0
    model = from_pretrained(out)
    config = model.pretrained_config
    assert config["recipe"] == {
        "config": "recipe.yaml",
        "command": "dpzoo fit --config recipe.yaml --save_pretrained tiny-mnist-0 --selection defaults",
        "selection": "defaults",
    }
    assert model.privacy_ledger.epsilon(model.privacy_ledger.entries[0].dataset_id) <= 5.0

    assert main(["sample", str(out), "--n", "4", "--out", str(tmp_path / "grid.png")]) == 0
    assert (tmp_path / "grid.png").stat().st_size > 0
    (out / "README.md").unlink()
    assert main(["card", str(out)]) == 0 and (out / "README.md").exists()

    without_budget = tmp_path / "without-budget.yaml"
    without_budget.write_text(FIT_RECIPE.split("model:")[1].join(["model:", ""]))
    assert main(["fit", "--config", str(without_budget)]) == 2
    assert "needs a top-level `privacy:` block" in capsys.readouterr().err


def test_a_recipe_with_its_budget_among_the_trainer_callbacks_is_refused_saying_how_to_move_it(tmp_path, capsys):
    old_style = tmp_path / "old-style.yaml"
    budget = "  callbacks:\n    - class_path: zoo.privacy.DPCallback\n      init_args: {target_epsilon: 5.0}\n"
    old_style.write_text("model:" + FIT_RECIPE.split("model:")[1] + budget)
    assert main(["fit", "--config", str(old_style), "--save_pretrained", str(tmp_path / "never")]) == 2
    assert "move the callback's init_args under `privacy:`" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
    old_pac = tmp_path / "old-pac.yaml"
    old_pac.write_text(old_style.read_text().replace("zoo.privacy.DPCallback", "zoo.privacy.pac.PACPrivacy"))
    assert main(["fit", "--config", str(old_pac)]) == 2
    assert "zoo.privacy.PACBudget for a PACPrivacy" in capsys.readouterr().err
    no_budget = tmp_path / "no-budget.yaml"
    no_budget.write_text("model:" + FIT_RECIPE.split("model:")[1])
    budget_on_the_command_line = ["--trainer.callbacks+=zoo.privacy.DPCallback", "--trainer.callbacks.target_epsilon=1"]
    assert main(["fit", "--config", str(no_budget), *budget_on_the_command_line]) == 2
    assert "move the callback's init_args under `privacy:`" in capsys.readouterr().err


def test_cli_list_and_model_cards_check(tmp_path, monkeypatch, capsys):
    shipped = checkpoints_dir()
    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(tmp_path / "checkpoints"))
    (tmp_path / "checkpoints").mkdir()
    assert main(["list"]) == 0 and "no models yet" in capsys.readouterr().out
    assert main(["model-cards", "--check"]) == 1  # tmp_path has no MODEL_CARDS.md
    shutil.copytree(shipped / "dp-merf-mnist-eps1", tmp_path / "checkpoints" / "dp-merf-mnist-eps1")
    assert main(["model-cards"]) == 0 and main(["model-cards", "--check"]) == 0
    assert "dp-merf-mnist-eps1" in (tmp_path / "MODEL_CARDS.md").read_text()
    assert main(["sample", "missing-model"]) == 2 and "unknown model 'missing-model'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def saved_folder(tmp_path_factory):
    return save_pretrained(tiny_private_flow(), tmp_path_factory.mktemp("push") / "tiny-flow")


@pytest.fixture
def no_saved_token(tmp_path, monkeypatch):
    """No token anywhere huggingface_hub looks: environment, saved login (its path is read at import)."""
    from huggingface_hub import constants

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def test_push_without_a_token_fails_at_once_in_one_line(saved_folder, no_saved_token, monkeypatch, capsys):
    monkeypatch.setattr("zoo.release.hub.HfApi", lambda **kwargs: pytest.fail("the Hub was called"))
    with pytest.raises(HubUnavailableError, match="no Hugging Face token: pass token=.*HF_TOKEN.*login"):
        zoo.push_to_hub(object(), "me/tiny-flow")  # refused before the model is touched
    assert main(["push", str(saved_folder), "me/tiny-flow"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("dpzoo push: error: no Hugging Face token: pass --token TOKEN") and error.count("\n") == 1


def test_push_offline_says_publishing_needs_the_network(saved_folder, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubUnavailableError, match="needs the network, but HF_HUB_OFFLINE is set"):
        push_folder(saved_folder, "me/tiny-flow", token="hf_not_used")


def test_push_to_an_unreachable_hub_names_the_repository(saved_folder, no_saved_token, monkeypatch):
    from huggingface_hub import constants

    with socket.socket() as closed:  # bound, never listening: connecting is refused at once
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}")
        with pytest.raises(HubUnavailableError, match="cannot reach the Hugging Face Hub to publish me/tiny-flow: "):
            push_folder(saved_folder, "me/tiny-flow", token="hf_not_used")


@pytest.mark.skipif(not os.environ.get("HF_TOKEN"), reason="pushing to the real Hub needs HF_TOKEN")
def test_push_and_pull_through_the_real_hub(tmp_path):
    from huggingface_hub import HfApi

    api = HfApi()
    repo_id = f"{api.whoami()['name']}/dpzoo-test-{uuid.uuid4().hex[:8]}"
    model = tiny_private_flow()
    try:
        zoo.push_to_hub(model, repo_id, private=True)
        pulled = zoo.load(f"hf-hub:{repo_id}")
        assert torch.equal(pulled.sample(4, seed=0), model.sample(4, seed=0))
    finally:
        api.delete_repo(repo_id)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_the_api_functions_stay_functions_after_dpzoo_train_has_run():
    """A submodule named like an API function (the folder command once lived in zoo/train.py) is bound over the
    function when imported: ``zoo.train(model, data, budget)`` then raised "'module' object is not callable"."""
    submodules = {module.name for module in pkgutil.iter_modules(zoo.__path__)}
    assert not submodules & set(zoo.__all__)
    importlib.import_module("zoo.folder_training")  # what dpzoo train imports
    for name in zoo.__all__:
        assert callable(getattr(zoo, name)) and not isinstance(getattr(zoo, name), types.ModuleType), name
