"""What ``dpzoo train`` is asked (``TrainRequest``): checked before torch is imported (``zoo.front_checks``), run by
``zoo.folder_training``, and spelled back as the command its card records. The command line and
``zoo.folder_training.train_folder`` both build one, so the options are listed once, here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zoo.front_checks import DEFAULT_DELTA, check_train
from zoo.release.layout import command_line


@dataclass(frozen=True)
class TrainRequest:
    """``dpzoo train FOLDER --method M --epsilon E`` and its options, as Python values (the flags' names with
    ``_`` for ``-``)."""

    folder: str
    method: str
    epsilon: float
    delta: float = DEFAULT_DELTA
    #: the model folder to write (default: ``out/<folder>-<method>``)
    out: str | None = None
    max_steps: int | None = None
    #: a duration such as ``90s``, ``10m``, ``1h30m``: each training stage's bound
    max_time: str | None = None
    license: str | None = None
    #: ``crop``, ``pad`` or ``stretch``: how images of another aspect ratio are read
    convert: str | None = None
    channels: int | None = None
    image_size: int | None = None
    init_from: str | None = None
    #: the folder shares no image with the base's public data, where this machine cannot check it (on the card)
    assume_disjoint: bool = False
    overwrite: bool = False
    #: the label set, in this order (default: the sorted class folders)
    classes: Sequence[str] | None = None

    @property
    def root(self) -> Path:
        return Path(self.folder).expanduser()

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
        )

    def card_command(self) -> str:
        """The command as a card records it: the folder and a base folder by their names, no local paths, no
        output folder."""
        init_from = self.init_from
        words = ("dpzoo", "train", self.root.resolve().name)
        options = {
            "--method": self.method,
            "--epsilon": f"{self.epsilon:g}",
            "--delta": None if self.delta == DEFAULT_DELTA else f"{self.delta:g}",
            "--max-steps": self.max_steps,
            "--convert": self.convert,
            "--channels": self.channels,
            "--image-size": self.image_size,
            "--init-from": Path(init_from).name if init_from and Path(init_from).exists() else init_from,
            "--assume-disjoint": self.assume_disjoint,
            "--license": self.license,
            "--classes": ",".join(self.classes) if self.classes else None,
            "--max-time": self.max_time,
        }
        return command_line(words, options)
