"""A record is a photo, not a file (the privacy audit's three findings on image folders): files with the same
pixels are one record, trained once and named wherever the folder is described; every copy of an image falls on
its side of every split, which a model's held-out record rebuilds by the rule it was made under; and a class
folder's sub-folders are part of the class."""

import hashlib
import os
import shutil
from collections import Counter

import numpy as np
import pytest
import torch
from PIL import Image

from tests.folders import COPIES, add_copies, write_image_folder
from zoo.data import ImageFolderDataModule
from zoo.data.folder_check import check_class_folders
from zoo.data.folders import IMAGE_SUFFIXES, folder_parts, read_part, subset
from zoo.data.image_folder import RECORD_RULE
from zoo.errors import UserError
from zoo.folder_training import _summary, plan_folder
from zoo.metrics.reference import reference_images
from zoo.privacy import record_index
from zoo.release.cards import data_rows
from zoo.train_request import TrainRequest

pytestmark = pytest.mark.filterwarnings("ignore:.*appears? in more than one file")


@pytest.fixture
def copies(tmp_path):
    """A folder of tiny grey images, two of them filed twice (``tests.folders.COPIES``)."""
    return add_copies(write_image_folder(tmp_path / "photos", per_class=10, size=(6, 6), mode="L"))


def test_a_photo_in_two_files_is_named_in_the_summary_and_trained_once(tmp_path):
    """One copy beside its original, one in another class: the `dpzoo train` summary and a Python user's warning
    name both groups; the training set holds each distinct image once, the cross-class one under the first class;
    the card states the rule, not the count."""
    photos = add_copies(write_image_folder(tmp_path / "photos", per_class=20, size=(32, 32)))
    summary = _summary(plan_folder(TrainRequest(str(photos), "dp-merf", 1.0)), None)
    assert "\n  2 images appear in more than one file (4 files): each distinct image is one record" in summary
    assert "\n    cats/3 (1).jpg = cats/3.jpg\n" in summary  # the first file in class and file order trains
    assert "\n    cats/5.jpg = dogs/cat too.jpg (trained as cats)\n" in summary
    with pytest.warns(UserWarning, match=r"2 images appear in more than one file[\s\S]*dogs/cat too\.jpg"):
        data = ImageFolderDataModule(str(photos), validation_size=0)
        data.setup()
    images, labels = data.train_set.images, data.train_set.labels
    assert len(images) == 60 == len(torch.unique(images.flatten(1), dim=0))
    cat = read_part(subset(data.train_part, [data.train_part.files.index(photos / "cats/5.jpg")])).images[0]
    (trained,) = [k for k in range(len(images)) if torch.equal(images[k], cat)]
    assert data.classes[labels[trained]] == "cats"
    card = data.card_data()
    assert card["images"] == 60 and card["record"] == RECORD_RULE
    assert ("a record is", RECORD_RULE) in data_rows(card) and not any(ch.isdigit() for ch in RECORD_RULE)


def test_every_copy_of_an_image_falls_on_its_side_of_every_split(copies, tmp_path):
    """For many seeds and fractions both files of each copied image share a side, and no held-out image is a
    training record; removing one file (the trained copy, or the other one) moves no other file's side."""
    for seed in range(12):
        for fraction in (0.1, 0.3, 0.5):
            data = ImageFolderDataModule(str(copies), test_fraction=fraction, validation_size=0.3, split_seed=seed)
            sides = data.file_sides()
            assert all(sides[original] == sides[copy] for original, copy in COPIES.items()), (seed, fraction)
            data.setup()
            held = record_index.pixel_keys(data.test_set.images.numpy())
            assert record_index.shared_keys(data.records_identity, held) == 0, (seed, fraction)
    sides = ImageFolderDataModule(str(copies), test_fraction=0.3, validation_size=0.3).file_sides()
    for removed in ("cats/3 (1).jpg", "dogs/cat too.jpg"):
        (copies / removed).rename(tmp_path / "aside")
        fewer = ImageFolderDataModule(str(copies), test_fraction=0.3, validation_size=0.3).file_sides()
        assert fewer == {name: side for name, side in sides.items() if name != removed}, removed
        (tmp_path / "aside").rename(copies / removed)


def _by_file_names(folder, fraction, seed):
    """The held-out files of models recorded before the split by pixels, by that rule as it was written: each file
    directly in a class folder whose sha256 of ("test", seed, class/name) falls below ``fraction``."""
    held = []
    for name in sorted(entry.name for entry in os.scandir(folder) if entry.is_dir() and entry.name[0] != "."):
        for file in sorted(f for f in (folder / name).iterdir() if f.is_file() and f.suffix in IMAGE_SUFFIXES):
            digest = hashlib.sha256(f"test\0{seed}\0{name}/{file.name}".encode()).digest()
            if int.from_bytes(digest[:8], "big") / 2**64 < fraction:
                held.append(file)
    return held


def _keys(images):
    """Sorted record keys of float images in [0, 1] (N, C, H, W)."""
    return sorted(row.tobytes() for row in record_index.pixel_keys(images.mul(255).round().to(torch.uint8).numpy()))


def test_a_held_out_record_rebuilds_the_part_its_model_held_out_by_the_rule_it_recorded(copies):
    """A new model's record names its rule and rebuilds its held-out part; a record without one (the shipped
    models' era) rebuilds the part the file-name rule held out, sub-folders unread as they were then; an unknown
    rule is refused."""
    write_image_folder(copies / "cats", per_class=4, size=(6, 6), mode="L", classes=("2019",), seed=3)
    data = ImageFolderDataModule(str(copies), test_fraction=0.3, validation_size=0, split_seed=3)
    data.setup()
    record = data.held_out_record()
    assert record["split"] == "by pixels" and record["images"] == len(data.test_set)
    recorded = {"classes": list(data.classes), "held_out": record}
    rebuilt = reference_images(str(copies), data.image_shape, None, recorded)
    assert torch.equal(rebuilt.images, data.test_set.tensors[0])
    old = {key: value for key, value in record.items() if key != "split"}
    before = reference_images(str(copies), data.image_shape, None, {**recorded, "held_out": old})
    files = _by_file_names(copies, 0.3, 3)
    pixels = [np.asarray(Image.open(file).convert("L"))[None] for file in files]
    assert _keys(before.images) == _keys(torch.from_numpy(np.stack(pixels)).float() / 255) != _keys(rebuilt.images)
    with pytest.raises(UserError, match="split rule 'by magic', which this dpzoo does not know"):
        reference_images(str(copies), data.image_shape, None, {**recorded, "held_out": {**record, "split": "by magic"}})


def test_images_in_a_class_folders_sub_folders_are_its_images(tmp_path):
    """20 images in Birds/2019 are birds, in both layouts and in `dpzoo train`'s counts; a class of nested images
    alone is a class; hidden folders and __MACOSX are named as ignored and not read."""
    photos = write_image_folder(tmp_path / "photos", per_class=16, size=(32, 32), classes=("Birds", "Cats"))
    write_image_folder(photos / "Birds", per_class=20, size=(32, 32), classes=("2019",), seed=1)
    write_image_folder(photos / "Owls", per_class=12, size=(32, 32), classes=("2020",), seed=2)
    (photos / "Birds" / ".ipynb_checkpoints").mkdir()
    shutil.copy(photos / "Birds" / "0.png", photos / "Birds" / ".ipynb_checkpoints" / "0-checkpoint.png")
    (photos / "__MACOSX" / "Birds").mkdir(parents=True)
    (photos / "__MACOSX" / "Birds" / "._0.png").write_bytes(b"\x00\x05\x16\x07 not an image")
    (photos / "Cats" / ".DS_Store").write_text("stray")
    check_class_folders(photos, IMAGE_SUFFIXES)
    part, _ = folder_parts(photos)
    assert part.classes == ("Birds", "Cats", "Owls") and Counter(part.labels) == {0: 36, 1: 16, 2: 12}
    assert photos / "Birds" / "2019" / "3.jpg" in part.files
    assert part.ignored == ("__MACOSX/", "Birds/.ipynb_checkpoints/", "Cats/.DS_Store")
    plan = plan_folder(TrainRequest(str(photos), "dp-merf", 1.0))
    held_out = Counter(part.labels[i] for i in plan.split.held_out)
    assert plan.trained[0] + held_out[0] == 36 and plan.trained[2] + held_out[2] == 12
    summary = _summary(plan, None)
    assert "ignored 1 file that is not an image: Cats/.DS_Store; and 2 hidden folders, with what they hold: " in summary
    split = tmp_path / "split"
    shutil.copytree(photos, split / "train")
    shutil.copytree(photos, split / "test", ignore=shutil.ignore_patterns("[1-9]*.*"))  # 0.png of each folder
    with pytest.warns(UserWarning, match="2 hidden folders"):
        data = ImageFolderDataModule(str(split), validation_size=0)
    data.setup()
    assert len(data.train_set) == 64 and Counter(data.test_set.labels.tolist()) == {0: 2, 1: 1, 2: 1}
