"""What config.json states is checked in full: the headline's dataset and method as well as its guarantee, and a
shipped checkpoint's config.json against the sha256 the packaged model index records (``dpzoo model-cards``
regenerates it; ``test_the_model_index_holds_the_digest_of_every_shipped_config`` fails while it is stale)."""

import hashlib
import json
import shutil

import pytest

import zoo
from tests.zoo.test_hub import tiny_private_flow
from tests.zoo.test_list_fast import edit_config
from zoo.cli import main
from zoo.headline import HEADLINE_KEY
from zoo.release import registry
from zoo.release.hub import save_pretrained
from zoo.release.layout import CheckpointError


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return save_pretrained(tiny_private_flow(), tmp_path_factory.mktemp("saved") / "tiny-flow")


@pytest.fixture
def shipped_here(saved, tmp_path, monkeypatch):
    """A checkpoints folder (``DPZOO_CHECKPOINTS_DIR``) holding a copy of the saved model; returns the copy."""
    copy = shutil.copytree(saved, tmp_path / "checkpoints" / "tiny-flow")
    monkeypatch.setenv(registry.CHECKPOINTS_ENV, str(copy.parent))
    return copy


@pytest.mark.parametrize(
    ("field", "tampered"), [("dataset", "public-images"), ("method", "DP-MERF")], ids=["dataset", "method"]
)
def test_a_tampered_headline_field_is_flagged_by_verify_and_refused_by_load(field, tampered, shipped_here, capsys):
    stated = shipped_here.joinpath("config.json")
    given = json.loads(stated.read_text())[HEADLINE_KEY][field]
    edit_config(shipped_here, lambda config: config[HEADLINE_KEY].update({field: tampered}))
    (row,) = zoo.list_models(verify=True)
    assert row["verified"] is False and row[field] == given
    assert row["problem"] == f"{field}: stored {tampered!r}, ledger gives {given!r}"
    assert main(["list", "--verify"]) == 1
    assert f"tiny-flow: config.json states another guarantee than its ledger gives ({row['problem']})" in (
        capsys.readouterr().err
    )
    with pytest.raises(CheckpointError, match=f"disagrees with the one recomputed.*{field}: stored"):
        zoo.load("tiny-flow")


@pytest.fixture
def packaged(saved, tmp_path, monkeypatch):
    """The saved model as the one checkpoint dpzoo ships, with a model index of its own; returns its folder."""
    checkpoints = tmp_path / "checkpoints"
    folder = shutil.copytree(saved, checkpoints / "tiny-flow")
    index = tmp_path / "model_index.json"
    index.write_text(json.dumps({"published": {}, "shipped": {}}))
    monkeypatch.delenv(registry.CHECKPOINTS_ENV, raising=False)
    monkeypatch.setattr(registry, "packaged_checkpoints_dir", lambda: checkpoints)
    monkeypatch.setattr(registry, "index_file", lambda: index)
    return folder


def test_a_shipped_config_json_whose_digest_differs_is_refused(packaged, capsys):
    assert main(["model-cards"]) == 0  # records the digest of the shipped config.json
    digest = hashlib.sha256((packaged / "config.json").read_bytes()).hexdigest()
    assert registry.shipped_digests() == {"tiny-flow": digest}
    assert zoo.load("tiny-flow").privacy_ledger.entries
    edit_config(packaged, lambda config: config.update(license="cc0-1.0"))  # the headline still agrees
    with pytest.raises(registry.ShippedConfigError, match=f"{packaged / 'config.json'} is not the config.json"):
        zoo.load("tiny-flow")
    with pytest.raises(registry.ShippedConfigError, match="run `dpzoo model-cards` to record it"):
        zoo.load(packaged)
    (row,) = zoo.list_models(verify=True)
    assert row["verified"] is False and row["problem"] is None and "sha256 differs" in row["config_problem"]
    capsys.readouterr()
    assert main(["list", "--verify"]) == 1
    assert f"tiny-flow: {packaged / 'config.json'} is not the config.json dpzoo shipped" in capsys.readouterr().err


def test_model_cards_regenerates_the_digests_and_its_check_fails_while_they_are_stale(packaged, capsys):
    assert main(["model-cards"]) == 0 and main(["model-cards", "--check"]) == 0
    edit_config(packaged, lambda config: config.update(license="cc0-1.0"))
    capsys.readouterr()
    assert main(["model-cards", "--check"]) == 1
    err = capsys.readouterr().err
    assert "model_index.json (the digests of the shipped config.json files) is out of date" in err
    assert "MODEL_CARDS.md" not in err
    assert main(["model-cards"]) == 0 and main(["model-cards", "--check"]) == 0
    assert zoo.load("tiny-flow").pretrained_config["license"] == "cc0-1.0"


def test_the_model_index_holds_the_digest_of_every_shipped_config():
    shipped = registry.packaged_checkpoints_dir()
    assert registry.shipped_digests() == registry.config_digests(shipped), "run `dpzoo model-cards` to regenerate"
