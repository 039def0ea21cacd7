"""Audit round 6, minor 4: the public/protected refusal fails closed where this machine's record index cannot tell
whether two uses share a record, unless the user states that they do not (``assume_disjoint``), which the card
then says."""

import pytest

import zoo
from tests.folders import write_image_folder
from tests.zoo.test_public_pretraining import QUIET, tiny_merf
from zoo.data import ImageFolderDataModule, PublicData
from zoo.privacy import DPBudget, PrivacyConfigError
from zoo.training import pretrain_public, train

UNKNOWN = "nothing on this machine shows that"


@pytest.fixture
def folders(tmp_path):
    public = write_image_folder(tmp_path / "public", per_class=6, size=(8, 8), mode="L", seed=1)
    private = write_image_folder(tmp_path / "private", per_class=6, size=(8, 8), mode="L", seed=2)
    return public, private


def whole(folder) -> ImageFolderDataModule:
    return ImageFolderDataModule(str(folder), validation_size=0)


def another_machine(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "another-machine"))


def test_public_data_declared_on_a_machine_that_cannot_check_the_protected_records_is_refused(
    folders, tmp_path, monkeypatch
):
    public, private = folders
    model = train(tiny_merf(), whole(private), DPBudget(target_epsilon=1.0), max_steps=1, **QUIET)
    another_machine(monkeypatch, tmp_path)
    with pytest.raises(PrivacyConfigError, match=rf"{UNKNOWN}.*PublicData\(\.\.\., assume_disjoint=True\)"):
        pretrain_public(model, PublicData(whole(public), source="a test"), max_steps=1, **QUIET)
    assert model.privacy_ledger.public_data == []
    stated = PublicData(whole(public), source="a test", assume_disjoint=True)
    pretrain_public(model, stated, max_steps=1, **QUIET)
    assert model.privacy_ledger.public_data[0].assumed_disjoint


def test_private_data_on_a_machine_that_cannot_check_the_base_public_data_is_refused(folders, tmp_path, monkeypatch):
    """The reverse order: a base pretrained elsewhere, fine-tuned here."""
    public, private = folders
    base = pretrain_public(tiny_merf(), PublicData(whole(public), source="a test"), max_steps=1, **QUIET)
    another_machine(monkeypatch, tmp_path)
    with pytest.raises(PrivacyConfigError, match=rf"{UNKNOWN}.*zoo.finetune\(\.\.\., assume_disjoint=True\)"):
        zoo.finetune(base, whole(private), target_epsilon=1.0, max_steps=1, **QUIET)
    assert base.privacy_ledger.entries == []
    tuned = zoo.finetune(base, whole(private), target_epsilon=1.0, max_steps=1, assume_disjoint=True, **QUIET)
    assert [entry.assumed_disjoint for entry in tuned.privacy_ledger.entries] == [True]
    card = (zoo.save_pretrained(tuned, tmp_path / "tuned") / "README.md").read_text()
    assert "Assumed, not checked" in card and "shares no record with the public data above" in card


def test_the_same_machine_still_tells_disjoint_folders_apart(folders):
    public, private = folders
    base = pretrain_public(tiny_merf(), PublicData(whole(public), source="a test"), max_steps=1, **QUIET)
    tuned = zoo.finetune(base, whole(private), target_epsilon=1.0, max_steps=1, **QUIET)
    assert [entry.assumed_disjoint for entry in tuned.privacy_ledger.entries] == [False]


def test_dpzoo_train_states_the_assumption_in_the_command_it_records():
    from zoo.train_request import TrainRequest

    request = TrainRequest("photos", "dp-merf", 1.0, init_from="dp-merf-cifar10-public-base", assume_disjoint=True)
    assert request.card_command().endswith("--init-from dp-merf-cifar10-public-base --assume-disjoint")


def test_dpzoo_train_from_a_downloaded_base_says_before_any_work_how_to_state_the_assumption(tmp_path, capsys):
    from zoo.cli import main

    photos = write_image_folder(tmp_path / "photos", per_class=12, size=(32, 32), classes=("a", "b", "c"))
    command = ["train", str(photos), "--method", "dp-merf", "--epsilon", "1", "--out", str(tmp_path / "never")]
    assert main([*command, "--init-from", "dp-merf-cifar10-public-base"]) == 2
    said = capsys.readouterr().err
    assert "record index does not hold" in said and "`--assume-disjoint`" in said
    assert not (tmp_path / "never").exists()
