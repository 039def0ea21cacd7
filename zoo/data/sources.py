"""The image data dpzoo reads, declared once: the named sets (``NamedImages``: MNIST, Fashion-MNIST, CIFAR-10) and
the kinds of data a user holds (``LocalImages``: a folder of class folders, a Hugging Face ``datasets`` dataset saved
to disk, a CSV or Parquet table of image paths). Recipes, evaluation, the LeNet's metrics, the CAS references and the
privacy ledger's named sources ask this registry and spell no dataset.

Torch-free, so that the command line recognises its data before torch is imported; each source loads lazily (its
``loader`` or ``parts`` is a ``module:function`` imported when used, with torchvision, ``datasets`` or pyarrow).

Records identity. A named set's records are described by a fixed public description (``<name>/<split>#<indices>``,
``zoo.privacy.records``): its universe of records is public, so the description publishes nothing about any one. Every
local source is read into a ``zoo.data.folder_part.FolderPart`` (files and labels), decoded by the folder machinery,
and named by this machine's record index from each image's pixels (``zoo.privacy.record_index``): the same images
through a folder, a table naming the same files or a ``datasets`` copy get the same ``local:`` name, and their uses
compose in the ledger. In-memory tensors (``zoo.data.tensors.TensorDataModule``, Python only) are named by their
content the same way. Only a ``NamedImages`` is ever taken for a named dataset
(``zoo.privacy.records.named_sources``)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.data.folder_part import FolderPart
from zoo.data.settings import DataNotFoundError
from zoo.errors import UserError

#: the modules whose import registers the shipped sources (imported on the first lookup)
SOURCES_MODULE = "zoo.data.registrations"
SPLITS = ("train", "test")
#: the kind of local data that is a folder of class folders, tried last (any other folder is one)
FOLDER = "folder"


class MissingExtraError(UserError):
    """A source whose reader is an optional extra that is not installed."""


@dataclass(frozen=True)
class RealDataReference:
    """What a classifier trained on real images that no shipped model protects, as many as a card's synthetic set,
    reaches on a named set's test split under the same protocol: a card's CAS reads against it (``zoo.metrics.cas``).
    ``accuracy`` in %."""

    accuracy: float
    epochs: int
    augment: bool
    train: str
    runs: int
    command: str

    def description(self) -> str:
        """How the accuracy was measured, for a protocol (the accuracy itself is ``real_data_accuracy``)."""
        runs = "1 run" if self.runs == 1 else f"mean of {self.runs} runs"
        return f"trained on {self.train}, {runs}: {self.command}"


@dataclass(frozen=True, kw_only=True)
class NamedImages:
    """A named image dataset: fixed shape, classes and splits, and a public universe of records. Registration order
    is the recipes' preference among sets of one channel count (``zoo.recipes``: grey folders take MNIST's recipe,
    else Fashion-MNIST's)."""

    name: str
    title: str
    image_shape: tuple[int, int, int]
    #: the class names in label order
    classes: tuple[str, ...]
    #: ``module:function`` ``(source, train) -> (images float (N, C, H, W) in [0, 1], labels int64)``
    loader: str
    #: how to have it offline, for the refusal when it is neither under ``DPZOO_DATA_DIR`` nor downloadable
    offline_help: str
    #: dpzoo's LeNet was trained on it, so that LeNet FID and P3DM's privacy score apply
    lenet: bool = False
    #: CAS with real images of its validation split, by classifier, tested on its test split (``zoo.metrics.cas``)
    cas_references: Mapping[str, RealDataReference] = field(default_factory=dict)
    #: the loader's own settings (the torchvision class, the folder tree under ``DPZOO_DATA_DIR``)
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def channels(self) -> int:
        return self.image_shape[0]

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def test_description(self) -> str:
        """How evaluation names its test split (``zoo.metrics.reference``)."""
        return f"{self.name} official test split"

    def records_source(self, split: str) -> str:
        """The public name of one split's records in the ledger (``zoo.privacy.records``)."""
        return f"{self.name}/{split}"

    def load(self, train: bool) -> Any:
        """Its images and labels of the training or test split (imports the loader)."""
        return _imported(self.loader)(self, train)


@dataclass(frozen=True, kw_only=True)
class LocalImages:
    """A kind of data a user holds, given by path: recognised without reading an image, read into folder parts
    (``parts``), and named by the record index from the images' pixels (module docstring)."""

    name: str
    #: what the summary says it recognised ("a CSV table of image paths")
    title: str
    #: whether a path is of this kind (torch-free, reads no image)
    recognises: Callable[[Path], bool]
    #: ``module:function`` ``(path, classes, image_column, label_column) -> (train FolderPart, test FolderPart | None)``
    parts: str
    #: ``(path, image_column, label_column)``: refuses a wrong column before any work, naming those that exist
    check_columns: Callable[[Path, str | None, str | None], object] | None = None
    #: the modules it needs beyond the core, and the extra that installs them
    needs: tuple[str, ...] = ()
    extra: str = ""

    def check_available(self) -> None:
        """One line, before any work, when its reader is not installed."""
        missing = [module for module in self.needs if importlib.util.find_spec(module) is None]
        if missing:
            raise MissingExtraError(
                f"reading {self.title} needs {', '.join(missing)}: pip install 'dpzoo[{self.extra}]'"
            )


_NAMED: dict[str, NamedImages] = {}
_LOCAL: dict[str, LocalImages] = {}
_PUBLIC_RECORDS: set[str] = set()


def register_named(source: NamedImages) -> NamedImages:
    """Declare a named set; a name taken already is refused."""
    if source.name in _NAMED:
        raise ValueError(f"a named image source {source.name!r} is registered already")
    _NAMED[source.name] = source
    return source


def register_local(source: LocalImages) -> LocalImages:
    """Declare a kind of local data; kinds are tried in registration order."""
    if source.name in _LOCAL:
        raise ValueError(f"a local image source {source.name!r} is registered already")
    _LOCAL[source.name] = source
    return source


def register_public_records(*sources: str) -> None:
    """Declare record universes that are public and fixed beyond the named image sets (the named tables' training
    rows, the public networks' training data), as the ledger names them (``lifesci/train``)."""
    _PUBLIC_RECORDS.update(sources)


def named_record_sources() -> frozenset[str]:
    """Every source whose universe of records is public and fixed, as the ledger names it: each split of a named
    set and the public records declared (``zoo.privacy.records.named_sources``, the only uses a public fact can
    show apart)."""
    images = {source.records_source(split) for source in named_sources().values() for split in SPLITS}
    return frozenset(images | _PUBLIC_RECORDS)


def named_sources() -> dict[str, NamedImages]:
    """Every named set, in registration order."""
    _registered()
    return dict(_NAMED)


def local_sources() -> dict[str, LocalImages]:
    """Every kind of local data, in the order they are tried."""
    _registered()
    return dict(_LOCAL)


def named(name: str) -> NamedImages | None:
    """The named set called ``name`` (None: no named set is)."""
    return named_sources().get(name)


def named_or_refused(name: str) -> NamedImages:
    source = named(name)
    if source is None:
        raise UserError(f"unknown image dataset {name!r}; known: {sorted(named_sources())}")
    return source


def by_channels() -> dict[int, tuple[str, ...]]:
    """The named sets of each channel count, preferred first (registration order)."""
    grouped: dict[int, tuple[str, ...]] = {}
    for source in named_sources().values():
        grouped[source.channels] = (*grouped.get(source.channels, ()), source.name)
    return grouped


def local_kind(data: str | Path) -> LocalImages | None:
    """The kind of local data at ``data`` (None: no file or folder there, or none that any kind reads)."""
    path = Path(data).expanduser()
    if not path.exists():
        return None
    return next((kind for kind in local_sources().values() if kind.recognises(path)), None)


def recognise(data: str | Path) -> LocalImages:
    """The kind of local data at ``data``, refused in one line where there is none, or its reader is missing."""
    path = Path(data).expanduser()
    if not path.exists():
        raise DataNotFoundError(f"no image folder at {path}")
    kind = local_kind(path)
    if kind is None:
        kinds = "; ".join(kind.title for kind in local_sources().values())
        raise UserError(f"{path} is a file of none of the kinds dpzoo reads: {kinds}")
    kind.check_available()
    return kind


def check_local(data: str | Path, image_column: str | None = None, label_column: str | None = None) -> LocalImages:
    """``recognise``, then its columns against the ones given (before any work); columns are refused for a kind
    that has none."""
    kind = recognise(data)
    if kind.check_columns is not None:
        kind.check_columns(Path(data).expanduser(), image_column, label_column)
    elif image_column or label_column:
        raise UserError(f"image and label columns are for tables and datasets; {data} is {kind.title}")
    return kind


def local_parts(
    data: str | Path,
    classes: Sequence[str] | None = None,
    image_column: str | None = None,
    label_column: str | None = None,
) -> tuple[LocalImages, FolderPart, FolderPart | None]:
    """The kind of the local data at ``data`` (``check_local``) and its (train, test) ``FolderPart``s (test None: it
    keeps no test split)."""
    kind = check_local(data, image_column, label_column)
    return kind, *_imported(kind.parts)(Path(data).expanduser(), classes, image_column, label_column)


def _imported(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _registered() -> None:
    importlib.import_module(SOURCES_MODULE)
