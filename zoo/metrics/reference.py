"""The real images a generator is evaluated against, by protocol (``reference``):

- ``"test"`` (the default): a named dataset's official test split, an image folder's ``test/`` part, or
  the held-out part its model recorded for a folder without one (``ImageFolderDataModule.card_data``);
- a path: a folder of images the user names, for image folders: always a local diagnostic, never on a card
  (``check_held_out`` refuses it before any work). Nothing can show that such a folder holds no protected record:
  the record index links exact copies, and a re-encoded or resized copy of a training photo has other pixels;

the test or held-out images are compared, by this machine's record index (``zoo.privacy.record_index``), with
the records the model's ledger protects: images that are among them, or that nothing shows are not (a model
trained elsewhere, a cleared index), make every number computed against them a local diagnostic
(``protected``), and a card refuses them before any work (``check_held_out``);
- ``"train"``, for the named datasets only: the whole official training split, the reference of the
  field's FID protocol (clean-fid, torch-fidelity's ``cifar10-train``, DPImageBench). Those images are
  the records the zoo's models of that dataset protect, so a number computed against them is a local
  diagnostic (``zoo.metrics.publication``): printed, never published on a card. A folder's training
  images are refused: they are the user's protected records.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from torch import Tensor

from zoo.data.byte_images import ByteImages
from zoo.data.folders import FolderPart, held_out_indices, read_part, subset
from zoo.data.images import load_images
from zoo.data.sources import local_kind, local_parts, named, named_or_refused
from zoo.errors import UserError
from zoo.metrics.publication import UnpublishableMetricError
from zoo.privacy import PrivacyLedger, record_index
from zoo.privacy.records import disjoint_by_name, tensor_keys

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

    def guessing_baseline(self) -> dict[str, Any]:
        """The accuracy (%) of always guessing the largest class of these labels (a folder's class by its name, a
        named dataset's as ``class N``), and of chance (100 / classes): what a classifier's accuracy here is read
        against, since a CAS of 29.8 where always guessing "Birds" scores 47 says the classifier learnt nothing.
        Reads only the labels."""
        counts = np.bincount(self.labels.cpu().numpy(), minlength=self.num_classes)
        largest = int(counts.argmax())
        return {
            "largest_class": self.classes[largest] if self.classes is not None else f"class {largest}",
            "largest_class_accuracy": 100 * float(counts[largest]) / int(counts.sum()),
            "chance": 100 / self.num_classes,
        }

    def of_class(self, label: int | None) -> ReferenceImages:
        if label is None:
            return self
        keep = self.labels == label
        description = f"{self.description}, class {label}"
        return ReferenceImages(self.images[keep], self.labels[keep], description, self.classes, self.protected)


def is_local_images(dataset: str) -> bool:
    """A dataset argument that names local data (a folder, a table, a saved ``datasets`` dataset: ``zoo.data.sources``)
    rather than a named set."""
    return named(dataset) is None and local_kind(dataset) is not None


def dataset_name(dataset: str) -> str:
    """``dataset`` as a card records it: a named dataset as it is, local data by its name (no local path)."""
    return dataset if named(dataset) is not None else Path(dataset).expanduser().resolve().name


def reference_images(
    dataset: str,
    image_shape: tuple[int, ...] | None = None,
    reference: str | None = None,
    recorded: dict[str, Any] | None = None,
    ledger: PrivacyLedger | None = None,
) -> ReferenceImages:
    """The evaluation images of ``dataset`` under the protocol ``reference`` (module docstring): for a folder,
    read with the classes the model ``recorded`` (its config's ``data``: ``ImageFolderDataModule.card_data``);
    without ``test/``, the held-out part it recorded, read at the model's ``image_shape`` and as its training
    images were read (the recorded ``convert``). Checked against the records ``ledger`` protects (the module
    docstring); without a ledger nothing is protected."""
    if named(dataset) is not None:
        return _named_split(dataset, reference or TEST, ledger)
    held_out = (recorded or {}).get("held_out") or {}
    test, name = _folder_reference(dataset, reference, recorded or {}, held_out)
    size, channels = (None, None) if image_shape is None else (tuple(image_shape[1:]), image_shape[0])
    decoded = read_part(test, size, channels, convert=held_out.get("convert"))  # type: ignore[arg-type]
    images, labels = ByteImages(decoded.images, decoded.labels).tensors
    protected = _given_folder_reason(reference) or _protected_reason(lambda: decoded.record_keys.numpy(), ledger)
    description = f"{name} ({len(labels)} {'images' if protected else 'held-out images'})"
    return ReferenceImages(images, labels, description, decoded.classes, protected)


def check_held_out(
    dataset: str,
    image_shape: tuple[int, ...] | None,
    reference: str | None,
    recorded: dict[str, Any] | None,
    ledger: PrivacyLedger | None,
) -> None:
    """Before any work, for a card: refuse a folder given by path (``--reference PATH``) before reading an image,
    and evaluation images that share a record with those ``ledger`` protects, or that this machine cannot show
    do not (``reference_images``)."""
    if named(dataset) is None and _given_folder_reason(reference):
        raise UnpublishableMetricError(
            f"a model card publishes only numbers computed against images the model never saw, and a folder given "
            f"as --reference ({dataset_name(str(reference))}) cannot be shown to be such: "
            f"{_given_folder_reason(reference)}. For the card, evaluate against the folder's own test/ part or the "
            "part its model recorded as held out (drop --reference); with --reference PATH, evaluate without "
            "--write-card, as a local diagnostic"
        )
    protected = reference_images(dataset, image_shape, reference, recorded, ledger).protected
    if protected:
        raise UnpublishableMetricError(
            f"a model card publishes only what its (ε, δ) covers, and numbers computed against these images are "
            f"not covered ({protected}). Evaluate against images the model never saw, or without --write-card as "
            "a local diagnostic"
        )


def _given_folder_reason(reference: str | None) -> str | None:
    """Why numbers computed against a folder the user names (``reference`` a path) are a local diagnostic."""
    if reference is None or reference in (TEST, TRAIN):
        return None
    return (
        "the record index links exact copies only, and a re-encoded, resized or edited copy of a training image "
        "has other pixels, so any folder but the model's own held-out part may hold protected records"
    )


def _protected_reason(
    keys: Callable[[], np.ndarray], ledger: PrivacyLedger | None, named_split: str | None = None
) -> str | None:
    """Why numbers computed against images (their record ``keys``, computed only when needed) may not be
    published: some are records ``ledger`` protects, or this machine cannot show none are. ``named_split``: the
    images' public identity when they are a named dataset's split (``mnist/test``), whose records a public fact
    may show apart from the protected ones (``zoo.privacy.records.disjoint_by_name``)."""
    keys = functools.cache(keys)
    uses = [entry.use for entry in ledger.entries] if ledger else []
    uses += [(None, release.dataset_id) for release in (ledger.pac_releases if ledger else [])]
    for records, dataset_id in uses:
        if named_split is not None and disjoint_by_name((named_split, named_split), (records, dataset_id)):
            continue
        shared = None if records is None else record_index.shared_keys(records, keys())
        if shared is None:
            return (
                f"this machine's record index does not hold the records the model protects ({dataset_id}): it was "
                "trained elsewhere, or the index was cleared, so nothing shows these images are not among them"
            )
        if shared:
            are = "is a record" if shared == 1 else "are records"
            return f"{shared} of these images {are} the model protects ({dataset_id})"
    return None


def _folder_reference(
    dataset: str, reference: str | None, recorded: dict[str, Any], held_out: dict[str, Any]
) -> tuple[FolderPart, str]:
    """The part that holds the evaluation images of the local data ``dataset`` (read with the model's classes and
    columns, where it ``recorded`` them: ``ImageFolderDataModule.card_data``), and its name for a card."""
    classes = recorded.get("classes")
    columns = recorded.get("columns") or {}
    if reference == TRAIN:
        raise UserError(
            f"the training images of {dataset} are the records a model trained on it protects: an FID against "
            "them would publish a statistic of those records and reward memorisation. Evaluate against its test/ "
            "part, the held-out part its model recorded, or --reference PATH of held-out images"
        )
    _, train, test = local_parts(dataset, classes, columns.get("image"), columns.get("label"))
    if reference is not None and reference != TEST:
        _, given, _ = local_parts(reference, classes)
        if given.classes != train.classes:
            raise UserError(
                f"the reference {reference} has classes {list(given.classes)}, the data {dataset} has "
                f"{list(train.classes)}: the labels would not mean the same"
            )
        return given, dataset_name(reference)
    if test is None and "fraction" in held_out:
        part = _recorded_part(dataset, train, held_out)
        return part, f"the images of {dataset_name(dataset)} held out of training"
    if test is None:
        raise UserError(
            f"{dataset} has no test/ folder, so all its images are training data that a model trained on it "
            "protects: evaluating against them would measure memorisation and publish numbers read from the "
            f"protected records. Move held-out images to {dataset}/test/<class>/ (and the rest to "
            f"{dataset}/train/<class>/), or pass reference=PATH (--reference PATH) of held-out images"
        )
    return test, f"{dataset_name(dataset)}/test"


def _named_split(dataset: str, split: str, ledger: PrivacyLedger | None) -> ReferenceImages:
    if split not in (TEST, TRAIN):
        raise UserError(
            f"{dataset} is evaluated against its official '{TEST}' split (the default) or its '{TRAIN}' split (the "
            f"field's FID protocol, a local diagnostic), not {split!r}: a folder reference is for image folders"
        )
    source = named_or_refused(dataset)
    images, labels = load_images(dataset, train=split == TRAIN)
    if split == TEST:
        keys = lambda: tensor_keys(images)  # noqa: E731
        protected = _protected_reason(keys, ledger, named_split=source.records_source(TEST))
        return ReferenceImages(images, labels, source.test_description, protected=protected)
    description = f"{dataset} official training split ({len(labels)} images)"
    return ReferenceImages(images, labels, description, protected=training_split_reason(dataset))


def training_split_reason(dataset: str) -> str:
    """Why a number computed against a named dataset's training split is a local diagnostic."""
    return (
        f"the {dataset} training split holds the records that the zoo's {dataset} models protect, so a number "
        "computed against it is a statistic of those records"
    )


def _recorded_part(dataset: str, train: FolderPart, held_out: dict[str, Any]) -> FolderPart:
    """The held-out part a model recorded for a folder without ``test/``, rebuilt by the rule it recorded (``split``:
    each distinct image by a hash of its pixels), or, for a model recorded before that rule, by the rule it was
    split by (each file directly in a class folder by a hash of its own name), so that it is evaluated against
    exactly the part it held out; whether its images are among the protected records is the record index's to say."""
    indices = held_out_indices(train, held_out["fraction"], held_out["seed"], held_out.get("split"))
    part = subset(train, indices)
    if not part.files:
        raise UserError(
            f"the model kept no images of {dataset} out of training: pass --reference PATH of held-out images"
        )
    return part
