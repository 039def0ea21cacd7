"""Issue 51: a user's own folder gets the guarantee a named dataset gets.

- A second use of the same images composes with the first whatever the folder is called or holds beside them
  (a copy, symlinked or renamed class folders, a superset, the named dataset's own images as files).
- Nothing published names the records by a digest anyone could recompute from the files.
- Each file's side of every split depends on that file alone.
"""

import hashlib
import json
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

import zoo
from tests.folders import write_image_folder
from tests.zoo.test_shared_records import QUIET, pld_epsilon, trained_merf
from zoo.data import ImageDataModule, ImageFolderDataModule
from zoo.privacy.summary import privacy_metadata


def variant(photos, kind, tmp_path):
    """Another folder holding the images of ``photos``, as the audit made them."""
    other = tmp_path / "photos_v2"
    if kind == "copy":
        shutil.copytree(photos, other)
    elif kind == "symlinked classes":
        other.mkdir()
        for class_folder in photos.iterdir():
            (other / class_folder.name).symlink_to(class_folder, target_is_directory=True)
    elif kind == "renamed classes":
        shutil.copytree(photos, other)
        for index, class_folder in enumerate(sorted(other.iterdir())):
            class_folder.rename(other / f"class-{index}")
    elif kind == "superset":
        shutil.copytree(photos, other)
        write_image_folder(tmp_path / "one-more", per_class=1, size=(8, 8), mode="L", seed=9)
        shutil.copy(tmp_path / "one-more" / "cats" / "0.png", other / "cats" / "extra.png")
    return other


@pytest.mark.parametrize("kind", ["copy", "symlinked classes", "renamed classes", "superset"])
def test_a_second_use_of_the_same_images_composes_whatever_the_folder(tmp_path, kind):
    """dpzoo train photos at ε = 1, then photos_v2 (the same images) from that model at ε = 2: the card states at
    least the PLD composition of both releases. The same images under another folder name are the same dataset
    id, and a superset another dataset that shares records: either way the second release is calibrated to what
    the first left of ε = 2 (audit round 6, minor 5), and the card's ε is 2."""
    photos = write_image_folder(tmp_path / "photos", per_class=8, size=(8, 8), mode="L", seed=2)
    first = ImageFolderDataModule(str(photos), validation_size=0)
    second = ImageFolderDataModule(str(variant(photos, kind, tmp_path)), validation_size=0)
    tuned = zoo.finetune(trained_merf(first), second, target_epsilon=2.0, max_steps=2, **QUIET)
    ledger = tuned.privacy_ledger
    composed = pld_epsilon(ledger.entries)
    assert len(ledger.entries) == 2 and 1.9 < composed <= 2.02
    card = privacy_metadata({"privacy_ledger": ledger.to_dict(), "released_modules": list(tuned.released_modules)})
    assert card["epsilon"] >= composed * 0.99
    assert all(g["epsilon"] == card["epsilon"] for g in card["guarantees"])


def test_a_folder_of_a_named_datasets_images_composes_with_the_named_dataset(tmp_path, monkeypatch):
    """MNIST's images saved as PNG files, trained on after MNIST itself: the same records, composed; the local
    index also finds them shared (what the public/protected and evaluation checks ask)."""
    from zoo.privacy.records import shared_records

    generator = torch.Generator().manual_seed(0)
    images = (torch.rand(60, 1, 28, 28, generator=generator) * 255).round() / 255
    labels = torch.arange(60) % 10
    monkeypatch.setattr("zoo.data.datamodule.load_images", lambda name, train: (images, labels))
    for index, (image, label) in enumerate(zip(images, labels, strict=True)):
        folder = tmp_path / "digits" / str(int(label))
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray((image[0] * 255).round().byte().numpy()).save(folder / f"{index}.png")
    named = ImageDataModule("mnist", validation_size=0)
    files = ImageFolderDataModule(str(tmp_path / "digits"), validation_size=0)
    assert shared_records((named.records_identity, named.dataset_id), (files.records_identity, files.dataset_id))
    tuned = zoo.finetune(trained_merf(named), files, target_epsilon=1.0, max_steps=2, **QUIET)
    guarantees = tuned.privacy_ledger.guarantees()
    assert guarantees[files.dataset_id]["composed_with"] == [named.dataset_id]
    assert guarantees[files.dataset_id]["epsilon"] >= pld_epsilon(tuned.privacy_ledger.entries) * 0.99


def file_digests(folder):
    """What the DP adversary, who holds the folder, can compute from its files: each file's sha256, the digest
    of all of them dpzoo published before (each file's bytes with its class, sorted), and each image's pixels."""
    lines, digests = [], []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        digests.append(hashlib.sha256(data).hexdigest())
        digests.append(hashlib.sha256(np.asarray(Image.open(path).convert("RGB")).tobytes()).hexdigest())
        lines.append(f"{path.parent.name}\0{hashlib.sha256(data).hexdigest()}")
    digests.append(hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest())
    return digests


def test_nothing_published_names_the_records_by_a_digest_of_the_files(tmp_path, monkeypatch):
    photos = write_image_folder(tmp_path / "photos", per_class=8, size=(8, 8), mode="L", seed=2)
    data = ImageFolderDataModule(str(photos), test_fraction=0.2, validation_size=0)
    folder = zoo.save_pretrained(trained_merf(data), tmp_path / "model", data=data.card_data())
    published = (folder / "config.json").read_text() + (folder / "README.md").read_text()
    for digest in file_digests(photos):
        assert digest[:12] not in published
    assert "sha256" not in json.dumps(json.loads((folder / "config.json").read_text())["privacy_ledger"])
    assert data.records_identity in published and data.records_identity.startswith("local:")
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "another-machine"))  # another machine's secret key
    assert ImageFolderDataModule(str(photos), test_fraction=0.2, validation_size=0).records_identity not in published


def test_removing_one_file_changes_that_files_side_of_every_split_and_no_other(tmp_path):
    """A seeded permutation of positions moved ~18% of the records when one image went; a hash of each file's own
    name moves none but that file."""
    photos = write_image_folder(tmp_path / "photos", per_class=40, size=(4, 4), mode="L")
    sides = ImageFolderDataModule(str(photos), test_fraction=0.1, validation_size=0.1).file_sides()
    assert set(sides.values()) == {"train", "validation", "test"}
    for removed in ("cats/3.jpg", "dogs/0.png", "owls/17.jpg"):
        (photos / removed).rename(tmp_path / "aside")
        fewer = ImageFolderDataModule(str(photos), test_fraction=0.1, validation_size=0.1).file_sides()
        assert fewer == {name: side for name, side in sides.items() if name != removed}
        (tmp_path / "aside").rename(photos / removed)


@pytest.fixture
def folder_model(tmp_path):
    """A model trained on a flat folder of 8×8 grey photos, a fifth of each class's files held out."""
    photos = write_image_folder(tmp_path / "photos", per_class=10, size=(8, 8), mode="L", seed=2)
    data = ImageFolderDataModule(str(photos), test_fraction=0.2, validation_size=0)
    return photos, zoo.save_pretrained(trained_merf(data), tmp_path / "model", data=data.card_data())


def test_write_card_refuses_a_reference_that_holds_protected_images_before_any_work(folder_model, monkeypatch, capsys):
    """The audit's reproductions: --reference naming the training folder itself, a copy of some of its images beside
    new ones, or the same images re-encoded as JPEG at quality 100 (every pixel within a grey level or so, so the
    exact record keys differ): each refused before any sample is drawn, as is any folder given by path. The
    held-out part the model recorded passes."""
    from zoo.cli import main
    from zoo.metrics.publication import UnpublishableMetricError
    from zoo.metrics.records import check_model_held_out

    photos, model = folder_model
    monkeypatch.setattr("zoo.metrics.records.evaluate", lambda *a, **k: pytest.fail("evaluated before refusing"))
    card = (model / "README.md").read_text()
    mixed = write_image_folder(photos.parent / "mixed", per_class=2, size=(8, 8), mode="L", seed=7)
    shutil.copy(next((photos / "dogs").glob("*.png")), mixed / "dogs" / "copied.png")
    jpeg = photos.parent / "photos_jpg"
    for image in photos.rglob("*.*"):
        (jpeg / image.parent.name).mkdir(parents=True, exist_ok=True)
        Image.open(image).save(jpeg / image.parent.name / f"{image.stem}.jpg", quality=100)
    command = ["evaluate", str(model), "--dataset", str(photos), "--metrics", "cas_lr", "--write-card"]
    for reference in (photos, mixed, jpeg, write_image_folder(photos.parent / "new", size=(8, 8), mode="L")):
        assert main([*command, "--reference", str(reference)]) == 2
        assert f"a folder given as --reference ({reference.name}) cannot be shown" in capsys.readouterr().err
        with pytest.raises(UnpublishableMetricError, match="drop --reference"):
            check_model_held_out(model, str(photos), str(reference))
    assert (model / "README.md").read_text() == card
    check_model_held_out(model, str(photos), None)  # the recorded held-out part: none of it trained
    report = zoo.evaluate(model, str(photos), metrics=("cas_lr",), num_samples=30, runs=1, reference=str(jpeg))
    assert report["not_publishable"]  # a local diagnostic, never "held-out images"


def test_write_card_refuses_what_this_machine_cannot_check(folder_model, monkeypatch):
    """A model trained on another machine (another record index): nothing shows its reference is held out."""
    from zoo.metrics.publication import UnpublishableMetricError
    from zoo.metrics.records import check_model_held_out

    photos, model = folder_model
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(photos.parent / "another-machine"))
    with pytest.raises(UnpublishableMetricError, match="record index does not hold the records the model protects"):
        check_model_held_out(model, str(photos), None)
    assert zoo.evaluate(model, str(photos), metrics=("cas_lr",), num_samples=30, runs=1)["not_publishable"]


def test_the_class_list_can_be_given_so_that_it_depends_on_no_image(tmp_path, capsys):
    """--classes: the label set a card shows is the user's list, whichever folders hold images; a class folder
    outside it is refused before any work."""
    from zoo.cli import main
    from zoo.data import ImageFolderError

    photos = write_image_folder(tmp_path / "photos", per_class=4, size=(8, 8), mode="L", classes=("cats", "dogs"))
    data = ImageFolderDataModule(str(photos), classes=["dogs", "owls", "cats"], validation_size=0)
    data.setup()
    assert data.classes == ("dogs", "owls", "cats") and data.card_data()["classes"] == ["dogs", "owls", "cats"]
    assert sorted(data.train_set.labels.unique().tolist()) == [0, 2]
    with pytest.raises(ImageFolderError, match=r"class folders dogs that are not among the classes given \(cats"):
        ImageFolderDataModule(str(photos), classes=["cats"])
    out = ["--out", str(tmp_path / "never")]
    assert main(["train", str(photos), "--method", "dp-merf", "--epsilon", "1", "--classes", "cats", *out]) == 2
    assert "not among the classes given" in capsys.readouterr().err and not (tmp_path / "never").exists()


def test_write_card_records_folders_by_name_never_by_path(folder_model):
    """The audit's reproduction of an absolute path in a card: the dataset and the command name the folder
    alone, as dpzoo train does."""
    from zoo.cli import main

    photos, model = folder_model
    evaluate = ["evaluate", str(model), "--dataset", str(photos), "--metrics", "cas_lr"]
    assert main([*evaluate, "--num-samples", "30", "--runs", "1", "--write-card"]) == 0
    config, card = (model / "config.json").read_text(), (model / "README.md").read_text()
    assert str(photos.parent) not in config + card
    evaluation = json.loads(config)["evaluation"]
    assert evaluation["details"]["dataset"] == "photos"
    assert "--dataset photos --metrics" in evaluation["command"]
