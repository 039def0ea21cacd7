"""What ``dpzoo train`` is asked (``TrainRequest``): checked before torch is imported (``zoo.front_checks``), run by
``zoo.folder_training``, and spelled back as the command its card records. The command line and
``zoo.folder_training.train_folder`` both build one, so the options are listed once, here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zoo.front_checks import check_train
from zoo.privacy.parameters import DEFAULT_DELTA
from zoo.request_options import card_command, folder_name, option


def _folder_name(folder: str) -> str:
    """The image folder by its name, whether or not it exists yet (``folder_name`` keeps what is no folder as it
    is, for ids): a card never holds its path."""
    return Path(folder).expanduser().resolve().name


@dataclass(frozen=True)
class TrainRequest:
    """``dpzoo train FOLDER --method M --epsilon E`` and its options, as Python values (the flags' names with
    ``_`` for ``-``); each field declares its flag, help and card spelling (``zoo.request_options``)."""

    folder: str = option(
        "the images: a folder of class folders, a CSV or Parquet table of image paths and labels, or a Hugging Face "
        "datasets dataset saved to disk (save_to_disk)",
        positional=True,
        spell=_folder_name,
    )
    method: str = option(
        "an image method with recipes in configs/, e.g. dp-mepf (best measured on colour photos) or dp-merf"
    )
    epsilon: float = option("the privacy budget ε for the folder", parse=float, spell="{:g}".format)
    delta: float = option(f"δ (default: {DEFAULT_DELTA:g})", DEFAULT_DELTA, parse=float, spell="{:g}".format)
    #: the model folder to write (default: ``out/<folder>-<method>``)
    out: str | None = option("model folder to write (default: out/<folder>-<method>)", None, on_card=False)
    max_steps: int | None = option("bound the run: training steps (default: the recipe's)", None, parse=int)
    #: a duration such as ``90s``, ``10m``, ``1h30m``: each training stage's bound
    max_time: str | None = option(
        "bound each training stage's time (90s, 10m, 2h, 1h30m): as many steps as fit, said at the end", None
    )
    license: str | None = option("the licence of the release, stated on the card (default: none)", None)
    #: ``crop``, ``pad`` or ``stretch``: how images of another aspect ratio are read
    convert: str | None = option(
        "how to read images of another aspect ratio (centre crop, pad with white, or stretch); also composites "
        "transparent images on white. Stated in the summary and on the card",
        None,
        choices=("crop", "pad", "stretch"),
    )
    channels: int | None = option("read all images as grey (1) or RGB (3)", None, parse=int, choices=(1, 3))
    image_size: int | None = option("read images at this side (default: their own)", None, parse=int)
    init_from: str | None = option("start from this model's weights (a base's id or folder)", None, spell=folder_name)
    #: the folder shares no image with the base's public data, where this machine cannot check it (on the card)
    assume_disjoint: bool = option(
        "state that the folder shares no image with the public data of the --init-from base, where this machine "
        "cannot check it (the card says so)",
        False,
    )
    #: the label set, in this order (default: the sorted class folders)
    classes: Sequence[str] | None = option(
        "comma-separated class folder names: the label set, in this order, whichever folders hold images "
        "(default: the sorted class folders)",
        None,
        parse=lambda names: tuple(names.split(",")),
        spell=",".join,
    )
    #: the release's shape by name (``zoo.release_shapes``; default: sized to the folder's class counts)
    release_size: str | None = option(
        "the release's shape: dp-mepf full, grid4, grid2, projected or pooled (grey: full, grid2, pooled), from most "
        "coordinates to fewest (default: the richest whose forecast signal-to-noise reaches 5 for your class sizes; "
        "projected only when asked)",
        None,
    )
    #: the weight of a release's part shared by all classes (``lightning_modules.parts.shared_part``; default: none)
    shared_part: float | None = option(
        "dp-mepf: release a part shared by all classes beside the class parts, each image's term split between them "
        "with this weight on the shared part (above 0, below 1): the mean of all images is noised once over all of "
        "them, the class means carry 1/√(1 − w²) times the noise (default: none)",
        None,
        parse=float,
        spell="{:g}".format,
    )
    #: keep each class's released mean as released, not shrunk toward the mean of all classes
    #: (``lightning_modules.parts.shrinkage``, which ``dpzoo train`` applies to a dp-mepf or dp-merf release)
    no_shrink: bool = option(
        "dp-mepf, dp-merf: fit each class's released mean as released, instead of shrunk toward the mean of all "
        "classes by as much as the release's noise warrants (James-Stein, free in ε: nearer and less collapsed on the "
        "ladder's tuning pools, at some cost in telling the classes apart where they are few images)",
        False,
    )
    #: train from scratch where ``dpzoo train`` would start from a public base (``zoo.public_bases``)
    no_base: bool = option("train from scratch where dpzoo train would start a small folder from a public base", False)
    #: a table's or a ``datasets`` dataset's columns (``zoo.data.sources``; default: image/file_name/path…, label)
    image_column: str | None = option(
        "a table's or dataset's column of images (default: its Image feature, else image, file_name or path)", None
    )
    label_column: str | None = option(
        "a table's or dataset's column of labels (default: its ClassLabel, else label)", None
    )
    overwrite: bool = option("replace a model already in --out", False, on_card=False)

    @property
    def root(self) -> Path:
        return Path(self.folder).expanduser()

    def columns(self) -> dict[str, str | None]:
        """The columns given, as ``ImageFolderDataModule`` takes them."""
        return {"image_column": self.image_column, "label_column": self.label_column}

    def check(self) -> Path:
        """Every option that can be checked without reading an image or importing torch; returns the folder the
        model will be saved in (``zoo.front_checks.check_train``)."""
        return check_train(
            self.folder,
            self.method,
            self.epsilon,
            delta=self.delta,
            out=self.out,
            max_steps=self.max_steps,
            max_time=self.max_time,
            channels=self.channels,
            image_size=self.image_size,
            init_from=self.init_from,
            overwrite=self.overwrite,
            classes=self.classes,
            release_size=self.release_size,
            shared_part=self.shared_part,
            no_shrink=self.no_shrink,
            **self.columns(),
        )

    def card_command(self) -> str:
        """The command as a card records it: the folder and a base folder by their names, no local paths, no
        output folder."""
        return card_command(("dpzoo", "train"), self)
