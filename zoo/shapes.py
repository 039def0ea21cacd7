"""A model's image shape and class count against its data's: ``dpzoo fit`` builds the model for the
data, fine-tuning and evaluation refuse a mismatch before any work, each saying what would fit.

A datamodule declares ``image_shape`` (C, H, W) and ``num_classes`` when it knows them
(``zoo.privacy.private_data.PrivateData``); a method takes them as constructor arguments of those names
(``DPGenerativeModel.data_arguments``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pytorch_lightning import LightningDataModule

from zoo.errors import UserError
from zoo.methods import DATA_ARGUMENTS, DPGenerativeModel, as_data_argument
from zoo.privacy.private_data import DeclaredPrivateData


class DataShapeError(UserError):
    """The model cannot take the data as it is (the message says what would)."""


def data_arguments_of(datamodule: LightningDataModule) -> dict[str, Any]:
    """What the data decides, for the arguments it declares: image shape (a tuple) and class count."""
    declared = DeclaredPrivateData(datamodule)
    values = {"image_shape": declared.image_shape, "num_classes": declared.num_classes}
    return {name: as_data_argument(value) for name, value in values.items() if value is not None}


def model_for_data(
    model: DPGenerativeModel, datamodule: LightningDataModule, pinned: Collection[str] = ()
) -> DPGenerativeModel:
    """``model`` rebuilt with the data's image shape and class count where they differ (the same
    model when they agree). A ``pinned`` argument (set by the user) that disagrees is refused."""
    wanted, current = data_arguments_of(datamodule), model.data_arguments()
    _check_classes(model, wanted, current)
    changes = {name: value for name, value in wanted.items() if name in current and current[name] != value}
    for name in changes.keys() & set(pinned):
        raise DataShapeError(
            f"{name} = {_show(current[name])} was set for {model.method}, but the data has {_show(changes[name])}: "
            f"drop the setting to follow the data{_resize_hint(name, current[name])}"
        )
    if not changes:
        return model
    try:
        return type(model)(**model.with_data_arguments(changes))
    except ValueError as error:
        raise DataShapeError(
            f"{model.method} cannot be built for the data's {_describe(wanted)}: {error}"
            f"{_resize_hint('image_shape', current.get('image_shape'))}"
        ) from None


def check_model_fits_data(
    model: DPGenerativeModel,
    datamodule: LightningDataModule,
    purpose: str,
    what_would_work: str,
    arguments: Collection[str] = DATA_ARGUMENTS,
) -> None:
    """Refuse, before any work, data whose image shape or class count (of ``arguments``) is not the model's."""
    wanted, current = data_arguments_of(datamodule), model.data_arguments()
    for name in arguments:
        if name in wanted and name in current and wanted[name] != current[name]:
            raise DataShapeError(
                f"cannot {purpose}: {model.method} takes {_describe(current)}, the data has {_describe(wanted)}. "
                f"{what_would_work}{_resize_hint(name, current[name])}"
            )


def _check_classes(model: DPGenerativeModel, wanted: dict[str, Any], current: dict[str, Any]) -> None:
    if "num_classes" in current and wanted.get("num_classes", 2) < 2:
        raise DataShapeError(
            f"{model.method} is class-conditional and needs at least 2 classes; the data has one. Add class "
            "folders, or train an unconditional method (dp-lflow) on it"
        )


def _resize_hint(name: str, shape: Any) -> str:
    if name != "image_shape" or shape is None:
        return ""
    channels, height, width = shape
    flags = f"; dpzoo train: --image-size {height} --channels {channels}" if height == width else ""
    return f" (or resize the data to the model's: image_size=({height}, {width}), channels={channels}{flags})"


def _describe(arguments: dict[str, Any]) -> str:
    parts = []
    if "image_shape" in arguments:
        parts.append(f"{_show(arguments['image_shape'])} images")
    if "num_classes" in arguments:
        parts.append(f"{arguments['num_classes']} classes")
    return " in ".join(parts) or "no declared shape"


def _show(value: Any) -> str:
    return "×".join(map(str, value)) if isinstance(value, tuple) else str(value)
