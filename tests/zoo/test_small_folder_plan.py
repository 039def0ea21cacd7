"""What `dpzoo train` plans for a small folder (issue 65): it starts from a public base where the recipe's own
release would be noisy and this machine can check the folder is not among the base's public data, proposes the base
with the flags that use it where it cannot, trains from scratch with --no-base, and says what reading large images
at the recipe's size loses."""

import json

import pytest
import yaml

import zoo
from lightning_modules import DPMERF
from tests.folders import write_image_folder
from tests.zoo.test_public_pretraining import QUIET, declared
from tests.zoo.test_train import tiny_recipes  # noqa: F401 (a fixture)
from zoo import folder_training, recipes
from zoo.cli import main
from zoo.data.conversion import ImageFacts, downscale_sentence
from zoo.public_bases import PublicBase
from zoo.training import pretrain_public

TRAIN = ["--method", "dp-merf", "--epsilon", "1", "--max-steps", "2"]


@pytest.fixture
def base(tiny_recipes, tmp_path, monkeypatch):  # noqa: F811
    """A tiny DP-MERF base of the tiny colour recipe's architecture, pretrained here on a public colour folder, as
    dpzoo train's base for colour images."""
    public = write_image_folder(tmp_path / "public", per_class=8, size=(32, 32), seed=11)
    recipe = yaml.safe_load((recipes.RECIPES / "dp_merf_cifar10_eps1.yaml").read_text())["model"]["init_args"]
    model = DPMERF(**{**recipe, "image_shape": (3, 32, 32), "num_classes": 3})
    base = pretrain_public(model, declared(public), max_steps=2, **QUIET)
    folder = zoo.save_pretrained(base, tmp_path / "toy-base")
    monkeypatch.setattr(folder_training, "base_for", lambda method, channels: PublicBase(str(folder), "toy squares"))
    return folder


def test_a_small_folder_starts_from_the_base_and_no_base_trains_from_scratch(base, tmp_path, capsys):
    private = write_image_folder(tmp_path / "mine", per_class=12, size=(32, 32), seed=12)
    assert main(["train", str(private), *TRAIN, "--out", str(tmp_path / "tuned")]) == 0
    printed = capsys.readouterr().out
    assert f"base: {base}, pretrained on public data: toy squares, as the folder is small" in printed
    config = json.loads((tmp_path / "tuned" / "config.json").read_text())
    assert config["privacy_ledger"]["public_data"] and "--init-from toy-base" in config["recipe"]["command"]
    assert main(["train", str(private), *TRAIN, "--no-base", "--out", str(tmp_path / "scratch")]) == 0
    assert "base:" not in capsys.readouterr().out
    config = json.loads((tmp_path / "scratch" / "config.json").read_text())
    assert not config["privacy_ledger"].get("public_data") and "--no-base" in config["recipe"]["command"]


def test_a_base_whose_public_data_this_machine_cannot_check_is_proposed_with_its_flags(
    base, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(folder_training.record_index, "keys_of", lambda identity: None)
    private = write_image_folder(tmp_path / "mine", per_class=12, size=(32, 32), seed=12)
    assert main(["train", str(private), *TRAIN, "--out", str(tmp_path / "scratch")]) == 0
    printed = capsys.readouterr().out
    assert f"base: proposed, as the folder is small: {base}" in printed
    assert f"--init-from {base} --assume-disjoint" in printed
    assert not json.loads((tmp_path / "scratch" / "config.json").read_text())["privacy_ledger"].get("public_data")


def test_reading_large_images_small_says_what_is_lost_and_the_size_that_keeps_more():
    facts = [ImageFacts((96, 96), False, False)] * 3 + [ImageFacts((32, 32), False, False)]
    assert downscale_sentence(facts, (32, 32), 64) == (
        "3 images of 4 are at least 1.5× larger than 32×32 (typically 3.0× each side): read at 32×32, detail finer "
        "than 3.0 pixels of the original is lost; --image-size 64 keeps 2× more of each side, at about 4× the time "
        "per step"
    )
    photos_of_48 = [ImageFacts((48, 48), False, False)] * 2
    assert downscale_sentence(photos_of_48, (32, 32), 64).endswith(
        "--image-size 64 keeps all of it (the images are smaller than that), at about 4× the time per step"
    )
    assert downscale_sentence(facts[3:], (32, 32), 64) is None
    assert downscale_sentence(facts, (32, 32), None).endswith("is lost")
