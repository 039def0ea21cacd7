"""ImageFolderDataModule: both layouts, options, Poisson batches, ledger ids from the local record index,
the decoded cache, and a clear error before any work for each bad input."""

import shutil

import pytest
import torch
from PIL import Image

from tests.folders import CLASSES, write_image_folder
from zoo.data import DataNotFoundError, ImageFolderDataModule, ImageFolderError
from zoo.data import folders as folders_module
from zoo.errors import UserError
from zoo.privacy.sampling import poisson_batches_of


@pytest.fixture
def flat(tmp_path):
    return write_image_folder(tmp_path / "flat")


@pytest.fixture
def split(tmp_path):
    return write_image_folder(tmp_path / "split", test_per_class=3)


def test_flat_layout_reads_sorted_classes_and_carves_validation(flat):
    data = ImageFolderDataModule(str(flat), validation_size=0.25)
    data.setup()
    assert data.classes == CLASSES and data.num_classes == 3
    assert data.image_shape == (3, 20, 24)
    assert len(data.train_set) + len(data.validation_set) == 24 and data.test_set is None
    assert 0 < len(data.validation_set) < 12
    images, labels = data.train_set.tensors
    assert images.dtype == torch.float32 and 0 <= images.min() and images.max() <= 1
    assert sorted(labels.unique().tolist()) == [0, 1, 2]
    assert data.train_set.images.dtype == torch.uint8  # held compactly


def test_split_layout_has_a_test_part_read_at_the_training_shape(split):
    data = ImageFolderDataModule(str(split), image_size=16, channels=1, validation_size=0.25, convert="crop")
    data.setup()
    assert data.image_shape == (1, 16, 16)
    assert len(data.train_set) + len(data.validation_set) == 24 and 0 < len(data.validation_set) < 12
    assert tuple(data.test_set.tensors[0].shape) == (9, 1, 16, 16)


def test_train_loader_draws_poisson_batches_of_floats(flat):
    data = ImageFolderDataModule(str(flat), sample_rate=0.5, validation_size=0, sampling_seed=1)
    loader = data.train_dataloader()
    assert poisson_batches_of(loader) is not None
    sizes = []
    for images, labels in loader:
        assert images.dtype == torch.float32 and images.shape[1:] == (3, 20, 24) and len(images) == len(labels)
        sizes.append(len(labels))
    assert len(set(sizes)) > 1  # Poisson: the batch size varies


def test_for_class_is_a_disjoint_partition_of_the_same_data(flat):
    data = ImageFolderDataModule(str(flat), validation_size=0)
    parts = [data.for_class(k) for k in range(3)]
    for k, part in enumerate(parts):
        part.setup()
        assert set(part.train_set.labels.tolist()) == {k}
        assert part.partition_of == data.dataset_id and part.dataset_id == f"{data.dataset_id}/class={k}"
    assert sum(len(p.train_set) for p in parts) == 24


def test_ledger_id_follows_the_contents_not_the_path(flat, tmp_path):
    copy = shutil.copytree(flat, tmp_path / "elsewhere" / "flat")
    assert ImageFolderDataModule(str(copy)).dataset_id == ImageFolderDataModule(str(flat)).dataset_id
    other = write_image_folder(tmp_path / "other" / "flat", seed=1)
    assert ImageFolderDataModule(str(other)).records_id != ImageFolderDataModule(str(flat)).records_id
    resized = ImageFolderDataModule(str(flat), image_size=8, convert="stretch", cache=False)
    assert resized.records_id == ImageFolderDataModule(str(flat)).records_id  # same records at another size


def test_the_records_identity_names_the_images_kept_by_the_local_index_alone(flat):
    """Another validation size keeps other images of the same folder: other records, under names that are
    HMACs of the local index, not digests anyone could recompute from the files."""
    data = ImageFolderDataModule(str(flat), validation_size=0.25)
    assert data.records_id.startswith("local:") and data.records_identity.startswith("local:")
    assert data.dataset_id.startswith(f"{data.records_id}/train[") and "flat" not in data.dataset_id
    assert ImageFolderDataModule(str(flat), validation_size=0.25).records_identity == data.records_identity
    all_images = ImageFolderDataModule(str(flat), validation_size=0).records_identity
    assert all_images.startswith("local:") and all_images != data.records_identity
    assert len({data.for_class(k).records_identity for k in range(3)} | {data.records_identity}) == 4


def test_a_folder_count_for_validation_is_refused_saying_why(flat):
    with pytest.raises(UserError, match="fraction in .0, 1.*moves no other"):
        ImageFolderDataModule(str(flat), validation_size=6)


def test_second_load_comes_from_the_cache_until_a_file_changes(flat, monkeypatch):
    first = ImageFolderDataModule(str(flat))
    first.setup()

    def no_decoding(*args):
        raise AssertionError("decoded again although the cache holds the folder")

    with monkeypatch.context() as patch:
        patch.setattr(folders_module, "decode_part", no_decoding)
        again = ImageFolderDataModule(str(flat))
        again.setup()
    assert torch.equal(again.train_set.images, first.train_set.images)
    write_image_folder(flat, per_class=1, seed=5)  # rewrites 0.png of each class
    changed = ImageFolderDataModule(str(flat))
    assert changed.records_id != first.records_id


@pytest.mark.parametrize(
    "breakage, error, words",
    [
        ("missing", DataNotFoundError, "no image folder"),
        ("empty", DataNotFoundError, "no class folders"),
        ("empty class", ImageFolderError, "holds no images"),
        ("corrupt", ImageFolderError, "broken.png"),
        ("mixed sizes", ImageFolderError, "differ in size.*image_size=20"),
        ("grey and colour", ImageFolderError, "channels=1"),
    ],
)
def test_bad_folders_fail_clearly_before_any_work(tmp_path, breakage, error, words):
    root = tmp_path / "data"
    if breakage != "missing":
        root.mkdir()
    if breakage not in ("missing", "empty"):
        write_image_folder(root, per_class=2)
    if breakage == "empty class":
        (root / "zebras").mkdir()
    elif breakage == "corrupt":
        (root / "cats" / "broken.png").write_bytes(b"\x89PNG not really")
    elif breakage == "mixed sizes":
        Image.new("RGB", (30, 30)).save(root / "dogs" / "big.png")
    elif breakage == "grey and colour":
        Image.new("L", (24, 20)).save(root / "dogs" / "grey.png")
    with pytest.raises(error, match=words):
        ImageFolderDataModule(str(root), cache=False).setup()
    assert not (tmp_path / "dpzoo-cache").exists()


def test_options_resolve_sizes_and_channels_and_non_images_are_counted(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2)
    Image.new("RGB", (30, 30)).save(root / "dogs" / "big.png")
    Image.new("L", (24, 20)).save(root / "cats" / "grey.png")
    (root / "cats" / "notes.txt").write_text("not an image")
    with pytest.warns(UserWarning, match="ignored 1 file that is not an image: cats/notes.txt"):
        data = ImageFolderDataModule(str(root), image_size=(12, 16), channels=3, validation_size=0, convert="pad")
    data.setup()
    assert data.image_shape == (3, 12, 16) and len(data.train_set) == 8


def test_bad_options_are_refused_at_construction(flat):
    for options, words in (
        ({"channels": 2}, "channels must be 1"),
        ({"image_size": 0}, "image_size must be"),
        ({"validation_size": 1.5}, "validation_size of an image folder is a fraction"),
        ({"label": 3}, "label must be a class in 0..2"),
        ({"sample_rate": 0}, "sample"),
    ):
        with pytest.raises(ValueError, match=words):
            ImageFolderDataModule(str(flat), **options)
    with pytest.raises(ValueError, match="leave no training images"):
        ImageFolderDataModule(str(flat), validation_size=0.999, test_fraction=0.999).setup()


def test_sixteen_bit_grey_images_are_scaled_not_clipped(tmp_path):
    import numpy as np

    for name, value in (("a-dark", 1000), ("b-bright", 60000)):
        (tmp_path / "scans" / name).mkdir(parents=True)
        Image.fromarray(np.full((8, 8), value, dtype=np.uint16)).save(tmp_path / "scans" / name / "a.png")
    data = ImageFolderDataModule(str(tmp_path / "scans"), validation_size=0, cache=False)
    data.setup()
    images, labels = data.train_set.tensors
    assert data.image_shape == (1, 8, 8)
    assert images[labels == 0].max() < 0.9 < images[labels == 1].min()  # 60000/65535 ≈ 0.92, 1000/65535 ≈ 0.02
