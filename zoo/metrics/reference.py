"""The real images a generator is evaluated against, by protocol (``reference``):

- ``"test"`` (the default): a named dataset's official test split, an image folder's ``test/`` part, or
  the held-out part its model recorded for a folder without one (``ImageFolderDataModule.card_data``);
- a path: a folder of held-out images the user names;
- ``"train"``, for the named datasets only: the whole official training split, the reference of the
  field's FID protocol (clean-fid, torch-fidelity's ``cifar10-train``, DPImageBench). Those images are
  the records the zoo's models of that dataset protect, so a number computed against them is a local
  diagnostic (``zoo.metrics.publication``): printed, never published on a card. A folder's training
  images are refused: they are the user's protected records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor

from zoo.data.byte_images import ByteImages
from zoo.data.folders import FolderPart, content_digest, folder_parts, held_out_indices, read_part, subset
from zoo.data.images import IMAGE_DATASETS, load_images
from zoo.errors import UserError

TEST, TRAIN = "test", "train"


@dataclass(frozen=True)
class ReferenceImages:
    """Float images in [0, 1] (N, C, H, W) with labels, and what they are (for every protocol)."""

    images: Tensor
    labels: Tensor
    description: str
    #: class names of a folder, None for a named dataset (labels 0..9)
    classes: tuple[str, ...] | None = None
    #: why numbers computed against these images may not be published (None: they may)
    protected: str | None = None

    @property
    def num_classes(self) -> int:
        return len(self.classes) if self.classes is not None else int(self.labels.max()) + 1

    def of_class(self, label: int | None) -> ReferenceImages:
        if label is None:
            return self
        keep = self.labels == label
        description = f"{self.description}, class {label}"
        return ReferenceImages(self.images[keep], self.labels[keep], description, self.classes, self.protected)


def is_image_folder(dataset: str) -> bool:
    """A dataset argument that names a folder rather than a named dataset."""
    return dataset not in IMAGE_DATASETS and Path(dataset).expanduser().is_dir()


def reference_images(
    dataset: str,
    image_shape: tuple[int, ...] | None = None,
    reference: str | None = None,
    recorded: dict[str, Any] | None = None,
) -> ReferenceImages:
    """The evaluation images of ``dataset`` under the protocol ``reference`` (module docstring): for a
    folder without ``test/``, the held-out part the model ``recorded`` (``card_data()["held_out"]``), read
    at the model's ``image_shape`` and as its training images were read (the recorded ``convert``)."""
    if dataset in IMAGE_DATASETS:
        return _named_split(dataset, reference or TEST)
    if reference == TRAIN:
        raise UserError(
            f"the training images of {dataset} are the records a model trained on it protects: an FID against "
            "them would publish a statistic of those records and reward memorisation. Evaluate against its test/ "
            "part, the held-out part its model recorded, or --reference PATH of held-out images"
        )
    train, test = folder_parts(dataset)
    description = None
    if reference is not None and reference != TEST:
        held_out, _ = folder_parts(reference)
        if held_out.classes != train.classes:
            raise UserError(
                f"the reference {reference} has classes {list(held_out.classes)}, the data {dataset} has "
                f"{list(train.classes)}: the labels would not mean the same"
            )
        test = held_out
    elif test is None and recorded is not None and "fraction" in recorded:
        test = _recorded_part(dataset, train, recorded)
        description = f"the {len(test.files)} images of {train.root.name} held out of training ({recorded['digest']})"
    elif test is None:
        raise UserError(
            f"{dataset} has no test/ folder, so all its images are training data that a model trained on it "
            "protects: evaluating against them would measure memorisation and publish numbers read from the "
            f"protected records. Move held-out images to {dataset}/test/<class>/ (and the rest to "
            f"{dataset}/train/<class>/), or pass reference=PATH (--reference PATH) of held-out images"
        )
    size, channels = (None, None) if image_shape is None else (tuple(image_shape[1:]), image_shape[0])
    decoded = read_part(test, size, channels, convert=(recorded or {}).get("convert"))  # type: ignore[arg-type]
    images, labels = ByteImages(decoded.images, decoded.labels).tensors
    description = description or f"{test.root} ({len(labels)} held-out images)"
    return ReferenceImages(images, labels, description, decoded.classes)


def _named_split(dataset: str, split: str) -> ReferenceImages:
    if split not in (TEST, TRAIN):
        raise UserError(
            f"{dataset} is evaluated against its official '{TEST}' split (the default) or its '{TRAIN}' split (the "
            f"field's FID protocol, a local diagnostic), not {split!r}: a folder reference is for image folders"
        )
    images, labels = load_images(dataset, train=split == TRAIN)
    if split == TEST:
        return ReferenceImages(images, labels, f"{dataset} official test split")
    description = f"{dataset} official training split ({len(labels)} images)"
    return ReferenceImages(images, labels, description, protected=training_split_reason(dataset))


def training_split_reason(dataset: str) -> str:
    """Why a number computed against a named dataset's training split is a local diagnostic."""
    return (
        f"the {dataset} training split holds the records that the zoo's {dataset} models protect, so a number "
        "computed against it is a statistic of those records"
    )


def _recorded_part(dataset: str, train: FolderPart, held_out: dict[str, Any]) -> FolderPart:
    """The held-out part a model recorded for a folder without ``test/``, refused unless its files are the same."""
    part = subset(train, held_out_indices(train, held_out["fraction"], held_out["seed"]))
    if f"sha256:{content_digest(part)}" != held_out["digest"] or len(part.files) != held_out["images"]:
        raise UserError(
            f"the model kept {held_out['images']} images of its training folder out of training "
            f"({held_out['digest']}), but the same split of {dataset} ({len(part.files)} images) has other contents: "
            "this is another folder, "
            "or its files changed since training, so its images may be ones the model was trained on. Evaluate on "
            "the folder as it was, or pass --reference PATH (reference=) of images the model never saw"
        )
    if not part.files:
        raise UserError(
            f"the model kept no images of {dataset} out of training: pass --reference PATH of held-out images"
        )
    return part
