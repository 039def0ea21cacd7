"""A dataset's identity in the ledger is the identity of its records: another split of the same images composes
with the first, whatever its dataset id, and a budget may not rename records the ledger already holds."""

import dp_accounting
import pytest
import torch
from dp_accounting import pld

import zoo
from lightning_modules import DPMERF
from zoo.data import ImageDataModule
from zoo.privacy import DPBudget, PrivacyConfigError
from zoo.privacy.summary import privacy_metadata
from zoo.shapes import model_for_data
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


@pytest.fixture
def tiny_mnist(monkeypatch):
    """120 random 28×28 images in 10 classes stand in for MNIST's training split (no files read)."""
    generator = torch.Generator().manual_seed(0)
    images, labels = torch.rand(120, 1, 28, 28, generator=generator), torch.arange(120) % 10
    monkeypatch.setattr("zoo.data.datamodule.load_images", lambda name, train: (images, labels))


def trained_merf(data) -> DPMERF:
    torch.manual_seed(0)
    model = model_for_data(DPMERF(**DPMERF.tiny_recipe().architecture), data)
    return train(model, data, DPBudget(target_epsilon=1.0), max_steps=2, **QUIET)


def pld_epsilon(entries, delta=1e-5):
    """dp-accounting's PLD over the entries' Gaussian releases: an accountant independent of Opacus."""
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    for entry in entries:
        accountant.compose(dp_accounting.GaussianDpEvent(entry.noise_multiplier), entry.steps)
    return accountant.get_epsilon(delta)


def test_the_records_identity_names_the_source_and_the_images_kept(tiny_mnist):
    data = ImageDataModule("mnist", validation_size=20)
    source, _, digest = data.records_identity.partition("#")
    assert source == "mnist/train" == data.dataset_id.split("[")[0] and len(digest) == 16
    assert ImageDataModule("mnist", validation_size=20).records_identity == data.records_identity
    other_split = ImageDataModule("mnist", validation_size=10).records_identity
    assert other_split != data.records_identity and other_split.startswith("mnist/train#")
    parts = {data.for_class(k).records_identity for k in range(10)}
    assert len(parts) == 10 and data.records_identity not in parts
    assert ImageDataModule("fashion_mnist", validation_size=20).records_identity.startswith("fashion_mnist/train#")


def test_a_finetune_on_another_split_of_the_same_images_composes_with_the_first_training(tiny_mnist):
    """The audit's reproduction: ε = 1 on MNIST minus 20 validation images, then a fine-tune on MNIST minus 10.
    The 100 shared images are at the composition of both releases, on the card too, not at each release's own
    ε; and the fine-tune is calibrated on that composition (audit round 6, minor 5): asked ε = 1 or 2, the card
    says 1 or 2."""
    first, second = ImageDataModule("mnist", validation_size=20), ImageDataModule("mnist", validation_size=10)
    base = trained_merf(first)
    within = zoo.finetune(base, second, target_epsilon=1.0, max_steps=2, **QUIET)  # what the first left of ε = 1
    assert pld_epsilon(within.privacy_ledger.entries) <= 1.01
    tuned = zoo.finetune(trained_merf(first), second, target_epsilon=2.0, max_steps=2, **QUIET)
    ledger = tuned.privacy_ledger
    assert [e.records_identity for e in ledger.entries] == [first.records_identity, second.records_identity]
    composed = pld_epsilon(ledger.entries)
    assert 1.9 < composed <= 2.02 and 0.98 < ledger.epsilon(first.dataset_id) <= 1.0
    assert ledger.epsilon(second.dataset_id) < 1.9
    guarantees = ledger.guarantees()
    assert guarantees[first.dataset_id]["epsilon"] == pytest.approx(composed, rel=0.02)
    assert guarantees[second.dataset_id]["epsilon"] == guarantees[first.dataset_id]["epsilon"]
    assert guarantees[second.dataset_id]["composed_with"] == [first.dataset_id]

    card = privacy_metadata({"privacy_ledger": ledger.to_dict(), "released_modules": list(tuned.released_modules)})
    assert card["epsilon"] == pytest.approx(composed, rel=0.02)
    assert [g["epsilon"] for g in card["guarantees"]] == [card["epsilon"]] * 2


def test_a_budget_that_renames_records_in_the_ledger_is_refused_before_any_work(tiny_mnist):
    data = ImageDataModule("mnist", validation_size=20)
    model = trained_merf(data)
    renamed = DPBudget(target_epsilon=1.0, dataset_id="my-digits")
    with pytest.raises(
        PrivacyConfigError, match=r"holds these records .* as mnist/train\[seed=0,minus-validation=20\]"
    ):
        train(model, ImageDataModule("mnist", validation_size=20), renamed, max_steps=2, **QUIET)
    assert len(model.privacy_ledger.entries) == 1
