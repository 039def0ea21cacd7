"""Seeded noise or sampling (tests only): with a known seed the release is a deterministic function of the data,
so the ledger records the seeds, a saved model states no guarantee, and nothing seeded is published or trained
from a recipe."""

import json

import pytest
import torch

import zoo
from lightning_modules import DPLFlow
from tests.folders import write_image_folder
from tests.toys import tiny_trainer
from tests.zoo.test_hub import TINY
from zoo.cli import main
from zoo.data.tensors import TensorDataModule
from zoo.headline import HEADLINE_KEY, stated_guarantee
from zoo.privacy import DPBudget, DPCallback, PACBudget, PrivacyLedger
from zoo.release.hub import push_folder, push_to_hub, save_pretrained

STAMP = "not differentially private (seeded randomness: noise_seed=0, sampling_seed=1; for testing)"
TINY_LFLOW = ["--model.init_args.channels", "[4, 8]", "--model.init_args.flow_blocks", "2"]
TINY_LFLOW += ["--model.init_args.flow_hidden", "16", "--model.init_args.latent_dim", "4"]


def seeded_flow() -> DPLFlow:
    """A tiny DP-LFlow whose noise (``noise_seed=0``) and Poisson sampling (``sampling_seed=1``) are seeded."""
    model = DPLFlow(**TINY)
    images = torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    data = TensorDataModule(images, torch.zeros(64, dtype=torch.long), "toy-images", 0.25, sampling_seed=1)
    callback = DPCallback(noise_multiplier=1.0, max_grad_norm=0.1, accountant="rdp", noise_seed=0)
    tiny_trainer([callback], 2).fit(model, data)
    return model.eval()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    model = seeded_flow()
    return model, save_pretrained(model, tmp_path_factory.mktemp("seeded") / "seeded-flow")


def test_the_ledger_records_seeded_noise_and_sampling(seeded):
    model, _ = seeded
    (entry,) = model.privacy_ledger.entries
    assert entry.seeded == ["noise_seed=0", "sampling_seed=1"]
    assert model.privacy_ledger.seeded == ["noise_seed=0", "sampling_seed=1"]


def test_a_release_and_a_pac_release_record_their_seeds():
    budget = DPBudget(target_epsilon=1.0, noise_seed=3)
    budget.bind(PrivacyLedger(), "toy")
    budget.release(torch.zeros(4), l2_sensitivity=1.0, dataset_size=100)
    assert budget.ledger.entries[-1].seeded == ["noise_seed=3"]
    pac = PACBudget(mi_bound=1.0, mc_runs=4, seed=5)
    pac.bind(PrivacyLedger(), "toy")
    pac.release(lambda keep: keep.float()[:3], pool_size=8, squared_diameter=3.0)
    assert pac.ledger.pac_releases[-1].seeded == ["seed=5"]
    unseeded = DPBudget(target_epsilon=1.0)
    unseeded.bind(PrivacyLedger(), "toy")
    unseeded.release(torch.zeros(4), l2_sensitivity=1.0, dataset_size=100)
    assert unseeded.ledger.entries[-1].seeded == []


def test_a_saved_seeded_model_states_no_guarantee(seeded, tmp_path, monkeypatch):
    _, folder = seeded
    headline = json.loads((folder / "config.json").read_text())[HEADLINE_KEY]
    assert headline["seeded"] == ["noise_seed=0", "sampling_seed=1"]
    assert headline["epsilon"] is None and headline["delta"] is None
    assert stated_guarantee(headline) == STAMP
    card = (folder / "README.md").read_text()
    assert STAMP in card and "ε =" not in card and "differential-privacy" not in card
    assert zoo.load(folder).privacy_ledger.seeded == ["noise_seed=0", "sampling_seed=1"]  # the headline agrees
    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(folder.parent))
    (row,) = zoo.list_models(verify=True)
    assert row["guarantee"] == STAMP and row["verified"] is True


@pytest.fixture
def no_hub(monkeypatch):
    """Any call towards the Hub fails the test; a token is at hand, so only the seed can refuse."""
    monkeypatch.setattr("zoo.release.hub._upload", lambda *a, **k: pytest.fail("the Hub was called"))
    monkeypatch.setattr("zoo.release.hub.HfApi", lambda *a, **k: pytest.fail("the Hub was called"))
    monkeypatch.setattr("zoo.release.hub.constants.HF_HUB_OFFLINE", False)


def test_publishing_a_seeded_model_is_refused_before_any_hub_call(seeded, no_hub):
    model, folder = seeded
    with pytest.raises(zoo.errors.UserError, match="seeded randomness \\(noise_seed=0, sampling_seed=1\\)"):
        push_to_hub(model, "someone/seeded-flow", token="hf_not_a_token")
    with pytest.raises(zoo.errors.UserError, match="seeded randomness \\(noise_seed=0, sampling_seed=1\\)"):
        push_folder(folder, "someone/seeded-flow", token="hf_not_a_token")


@pytest.mark.parametrize(
    "seed", [["--privacy.init_args.noise_seed", "0"], ["--data.init_args.sampling_seed", "1"]], ids=lambda s: s[0]
)
def test_dpzoo_fit_refuses_a_seed_before_any_training(seed, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("zoo.fit.train", lambda *a, **k: pytest.fail("a seeded recipe trained"))
    folder = write_image_folder(tmp_path / "images", per_class=4, size=(8, 8))
    fit = ["fit", "--config", "configs/dp_lflow_mnist_eps1.yaml", "--images", str(folder), *TINY_LFLOW, *seed]
    assert main([*fit, "--save_pretrained", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    assert "seeds are for tests only" in err and seed[0].rsplit(".", 1)[1] in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "never").exists()
