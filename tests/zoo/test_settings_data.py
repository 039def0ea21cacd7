"""The images that chose a shipped model's settings, the held-out validation split of each named
dataset (seed 0, 10,000 images), are none of the records the model protects or was pretrained on:
tuning on them costs no privacy only because of that."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.scripts import load_script
from tests.zoo.test_cifar10 import REAL_DATA
from zoo.data import ImageFolderDataModule
from zoo.data.folders import folder_parts, named_below
from zoo.data.partition import train_validation_split
from zoo.release.registry import checkpoints_dir

FOLDERS_SCRIPT = load_script("benchmarks/cifar10_class_folders.py")
VALIDATION = FOLDERS_SCRIPT.VALIDATION
NAMED_SPLIT = re.compile(r"^(mnist|fashion_mnist|cifar10)/train\[seed=(\d+),minus-validation=(\d+)\]")
HELD_FOR_VALIDATION = re.compile(r"minus-validation=(\d+)\]")
HASHED_VALIDATION = re.compile(r"validation=([\d.]+),seed=(\d+)\]")
PIXEL_VALIDATION = re.compile(r"\[(?:test=([\d.]+),)?validation=([\d.]+),seed=(\d+),by-pixels\]")
ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(checkpoints_dir().glob("*/config.json"))


def data_used(config: dict) -> list[str]:
    """The dataset ids of everything the model was trained on: protected (ledger entries) or public."""
    ledger = config.get("privacy_ledger", {})
    return [entry["dataset_id"] for entry in ledger.get("entries", []) + ledger.get("public_data", [])]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.parent.name)
def test_a_shipped_model_on_a_named_dataset_leaves_out_the_validation_split(config):
    for dataset_id in data_used(json.loads(config.read_text())):
        named = NAMED_SPLIT.match(dataset_id)
        if named:
            seed, held_out = int(named[2]), int(named[3])
            assert (seed, held_out) == (VALIDATION["seed"], VALIDATION["validation_size"]), dataset_id


@pytest.mark.skipif(
    not (REAL_DATA / "cifar10-images").is_dir(),
    reason=f"the CIFAR-10 image-folder tree is not in {REAL_DATA}; set DPZOO_DATA_DIR",
)
@pytest.mark.heavy
def test_the_cifar10_class_folders_of_shipped_models_hold_no_validation_image(tmp_path):
    """Rebuilt by ``benchmarks/cifar10_class_folders.py``: no training image of either folder has the bytes
    of a validation image, and every shipped model whose recipe reads a folder used as many of its images as
    the folder holds (minus its own validation share): the ledger names folders by no digest of their files."""
    tree = (REAL_DATA / "cifar10-images").resolve()
    train = folder_parts(tree)[0]
    _, validation = train_validation_split(len(train.files), VALIDATION["validation_size"], VALIDATION["seed"])
    validation_bytes = {hashlib.sha256(train.files[i].read_bytes()).digest() for i in validation.tolist()}
    training_files = FOLDERS_SCRIPT.training_files_outside_validation(tree)
    configs = [json.loads(config.read_text()) for config in CONFIGS]
    for name, labels in FOLDERS_SCRIPT.FOLDERS.items():
        FOLDERS_SCRIPT.write_folder(tmp_path / name, tree, labels, training_files)
        part = folder_parts(tmp_path / name)[0]
        assert not any(hashlib.sha256(file.read_bytes()).digest() in validation_bytes for file in part.files)
        readers = [c for c in configs if f"root: data/{name}\n" in (ROOT / c["recipe"]["config"]).read_text()]
        assert readers, f"no shipped model's recipe reads {name}"
        for config in readers:
            ledger = config["privacy_ledger"]
            for use in ledger["entries"] or ledger["public_data"]:  # a private folder's uses, or a public base's
                if not use["dataset_id"].startswith("local:"):
                    continue  # a public feature network, named by its own training set (DP-MEPF's ImageNet network)
                size = use.get("dataset_size", use.get("records"))
                assert size == _training_images(tmp_path / name, len(part.files), use["dataset_id"]), use["dataset_id"]


def _training_images(folder: Path, files: int, dataset_id: str) -> int:
    """How many of ``folder``'s ``files`` training images a use named ``dataset_id`` trained on: those less the
    count it held out (``minus-validation=N``), or less the images its fraction's hash split keeps out, which no
    other image's presence moves: each distinct image by its pixels (``validation=F,seed=S,by-pixels``) or, in ids
    written before that rule, each file by its name (``validation=F,seed=S``)."""
    held = HELD_FOR_VALIDATION.search(dataset_id)
    if held:
        return files - int(held[1])
    by_pixels = PIXEL_VALIDATION.search(dataset_id)
    if by_pixels:
        test, validation, seed = float(by_pixels[1] or 0), float(by_pixels[2]), int(by_pixels[3])
        module = ImageFolderDataModule(str(folder), test_fraction=test, validation_size=validation, split_seed=seed)
        return len(module.folder_split().train)
    by_name = HASHED_VALIDATION.search(dataset_id)
    assert by_name, f"{dataset_id} names no validation split"
    fraction, seed = float(by_name[1]), int(by_name[2])
    return files - len(named_below(folder_parts(folder)[0], range(files), fraction, seed, "validation"))
