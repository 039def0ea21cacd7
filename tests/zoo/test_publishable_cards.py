"""Cards a user can publish as they are: no local path, the data described, a licence only when given, no claim
of an earlier stage read as one about the protected data, and every file readable like the others."""

import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from tests.folders import write_image_folder
from tests.zoo.test_hub import tiny_private_flow
from tests.zoo.test_own_images import TINY_MERF
from zoo.cli import main
from zoo.privacy.ledger import PrivacyLedger, PublicDataUse
from zoo.release.cards import PUBLIC_DATA, PUBLIC_DATA_OF_EARLIER_STAGES
from zoo.release.hub import save_pretrained
from zoo.release.layout import HUB_FILES, publishable_command

DATA = {
    "name": "my-photos",
    "records": "local:fedcba9876543210",
    "classes": ["Boats", "kitties", "planes and jets", "trucks_2024"],
    "images": 2700,
    "image_shape": [3, 32, 32],
    "preprocessing": "resize to 32×32 with center crop; RGBA composited on white; grey converted to RGB",
    # a digest as configs held it before round 5: never shown
    "held_out": {"images": 300, "fraction": 0.1, "seed": 0, "digest": "sha256:5e1f00d"},
}


@pytest.fixture(scope="module")
def model():
    return tiny_private_flow()


def published_text(folder: Path) -> str:
    return (folder / "config.json").read_text() + (folder / "README.md").read_text()


def test_local_paths_in_the_recipe_are_published_by_name_only(model, tmp_path):
    """The folder's absolute path, the recipe's and the save target's become their names; the card's usage loads
    the folder by name."""
    photos, home = tmp_path / "my photos", Path.home()
    recipe = {
        "config": str(home / "recipes" / "mine.yaml"),
        "command": f"dpzoo fit --config {home}/recipes/mine.yaml --images '{photos}' --save_pretrained={tmp_path}/out",
    }
    folder = save_pretrained(model, tmp_path / "out", recipe=recipe, data=DATA)
    text = published_text(folder)
    assert str(tmp_path) not in text and "/tmp" not in text and str(home) not in text
    config = json.loads((folder / "config.json").read_text())
    assert config["recipe"]["command"] == "dpzoo fit --config mine.yaml --images 'my photos' --save_pretrained=out"
    assert config["recipe"]["config"] == "mine.yaml"
    assert 'zoo.load("out")' in (folder / "README.md").read_text()


def test_a_command_keeps_relative_paths_and_every_other_argument():
    command = "dpzoo evaluate m --dataset data/cifar --json=/srv/r.json --reference ~/held --metrics fid,cas"
    assert publishable_command(command) == (
        "dpzoo evaluate m --dataset data/cifar --json=r.json --reference held --metrics fid,cas"
    )
    with pytest.raises(ValueError, match="cannot read .* as a shell command"):
        publishable_command("dpzoo fit --images '/unclosed")


def test_a_folder_trained_by_dpzoo_fit_publishes_no_local_path(tmp_path):
    """The whole path a user takes: a folder under /tmp, trained and saved by absolute paths."""
    photos = write_image_folder(tmp_path / "my photos", per_class=4, size=(16, 16))
    out = tmp_path / "out" / "mine"
    fit = ["fit", "--config", str(Path("configs/dp_merf_mnist_eps1.yaml").resolve()), "--images", str(photos)]
    fit += [*TINY_MERF, "--trainer.max_steps", "1", "--trainer.enable_progress_bar", "false"]
    assert main([*fit, "--save_pretrained", str(out)]) == 0
    text = published_text(out)
    assert str(tmp_path) not in text and "/tmp" not in text and str(Path.home()) not in text
    assert str(Path.cwd()) not in text
    card = ModelCard.load(out / "README.md")
    assert "| classes | 3: cats, dogs, owls |" in card.text and "| name | my photos |" in card.text
    assert "license" not in card.data.to_dict() and "Unspecified: no licence was given" in card.text


def test_the_data_section_shows_what_the_user_gave(model, tmp_path):
    folder = save_pretrained(model, tmp_path / "described", data=DATA)
    assert json.loads((folder / "config.json").read_text())["data"] == DATA
    card = (folder / "README.md").read_text()
    data_section = card.split("## Data")[1].split("## Privacy")[0]
    for row in (
        "| name | my-photos |",
        "| records: this folder in the trainer's record index | `local:fedcba9876543210` (the privacy ledger below "
        "names its training part `local:fedcba9876543210/train[…]`) |",
        "| classes | 4: Boats, kitties, planes and jets, trucks_2024 |",
        "| training images | 2,700 |",
        "| image shape | 3×32×32 |",
        "| preprocessing | resize to 32×32 with center crop; RGBA composited on white; grey converted to RGB |",
        "| held out of training | 300 images; fraction 0.1; seed 0 |",
    ):
        assert row in data_section
    partial = save_pretrained(model, tmp_path / "partial", data={"name": "just a name"})
    assert "| name | just a name |" in (partial / "README.md").read_text()
    assert "## Data" not in (save_pretrained(model, tmp_path / "none") / "README.md").read_text()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x", "path": "/data/x"}, r"data has keys \['path'\] that no card shows"),
        ({"name": "/home/me/photos"}, "must name the data in words, not as a local path"),
        (["my-photos"], "data must be a dict"),
    ],
)
def test_a_data_description_the_card_cannot_show_is_refused_before_writing(model, tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        save_pretrained(model, tmp_path / "refused", data=data)
    assert not (tmp_path / "refused").exists()


def test_a_licence_only_when_one_is_given(model, tmp_path):
    unlicensed = save_pretrained(model, tmp_path / "unlicensed")
    card = ModelCard.load(unlicensed / "README.md")
    assert "license" not in card.data.to_dict() and "apache" not in card.content
    assert "Unspecified: no licence was given" in card.text
    assert json.loads((unlicensed / "config.json").read_text())["license"] is None

    licensed = save_pretrained(model, tmp_path / "licensed", license="cc-by-4.0")
    card = ModelCard.load(licensed / "README.md")
    assert card.data.license == "cc-by-4.0" and "`cc-by-4.0`, the licence given" in card.text
    with pytest.raises(ValueError, match="license must be a licence identifier"):
        save_pretrained(model, tmp_path / "blank", license=" ")


def test_a_public_stages_words_are_attributed_to_it_and_only_the_ledger_relates_the_data(model, tmp_path):
    """The words a base's pretraining gave for its public data ("disjoint from the private folder") stay that
    stage's; the card's own statement about the two data is what the ledger shows: different named datasets.
    Folders (a local record index's names) are compared on the machine that trained, and the card says nothing."""
    claim = "CIFAR-10 classes 0-4: a published dataset, disjoint from the private folder (classes 5-9)"
    base = "fashion_mnist/train"
    public = PublicDataUse(f"{base}[seed=0]", 24, claim, "public pretraining", f"{base}#ab")
    (entry,) = model.privacy_ledger.entries
    unnamed = PrivacyLedger([entry], public_data=[public])  # the toy entry names no records: no source to compare
    named = PrivacyLedger([replace(entry, records_identity="mnist/train#cd")], public_data=[public])
    local = PrivacyLedger([replace(entry, records_identity="local:11ee")], public_data=[public])
    cards = {}
    original = model.privacy_ledger
    try:
        for name, ledger in {"unnamed": unnamed, "named": named, "local": local}.items():
            model.privacy_ledger = ledger
            cards[name] = (save_pretrained(model, tmp_path / name) / "README.md").read_text()
    finally:
        model.privacy_ledger = original
    for card in cards.values():
        assert f"Public data, {PUBLIC_DATA_OF_EARLIER_STAGES}:" in card and PUBLIC_DATA not in card
        assert f"| {claim} | public pretraining |" in card  # the stage's words, in the public data's own row
    relation = (
        "The protected records come from mnist/train, the public records from fashion_mnist/train: "
        "different named datasets"
    )
    assert relation in cards["named"] and all("different named" not in cards[k] for k in ("unnamed", "local"))


def test_every_file_gets_the_mode_of_a_normally_created_file(model, tmp_path):
    """model.safetensors was 0600 (safetensors' writer) beside 0644 files; all follow the umask."""
    for umask in (0o022, 0o077):
        previous = os.umask(umask)
        try:
            folder = save_pretrained(model, tmp_path / f"umask-{umask:o}")
        finally:
            os.umask(previous)
        modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in folder.iterdir()}
        assert sorted(modes) == sorted(HUB_FILES) and set(modes.values()) == {0o666 & ~umask}
