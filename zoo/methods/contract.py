"""The method contract: what every zoo method file fills in.

A method is a LightningModule that declares

- its barrier (``privacy_barrier``), what it releases (``released_modules``) and the helpers it
  never releases (``never_released``);
- the constructor arguments its data decides (``data_arguments``: ``image_shape``, ``num_classes``);
- its stages (``stages``; by default DP-SGD) and, for compositions, its parts (``training_parts``);
- how it generates (``generate``; ``sample`` adds the checks, seeding and batching) and,
  optionally, a density (``log_prob``, then ``has_density``) or a released set (``released_set``,
  then ``releases_a_set``);
- a tiny recipe for the registry's contract test (``tiny_recipe``);
- what it adds to its card (``display_name``, ``card_tags``, ``card_sample_kind``, ``card_usage``, ``card_notes``),
  its picture (``sample_picture``) and, when not its own name's, its docs page (``docs_page``).

Shared code (cards, hub, CLI, evaluation) asks these and names no method.
"""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytorch_lightning as pl
import torch
from PIL import Image
from torch import Tensor
from torchvision.utils import make_grid
from tqdm.auto import tqdm

from zoo.data import TensorDataModule
from zoo.errors import UserError
from zoo.privacy import DPBudget, PrivacyBarrier, PrivacyConfigError
from zoo.stages import PrivacyLedgerMixin, PrivateSteps, Stage

#: the constructor arguments a method's data decides (``zoo.shapes`` builds a model for its data by them)
DATA_ARGUMENTS = ("image_shape", "num_classes")


def as_data_argument(value: Any) -> Any:
    """An image shape as a tuple of ints (config.json stores a list), a class count as an int."""
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else int(value)


def check_data_arguments(method: str, values: dict[str, Any]) -> None:
    """Refuse, before a model is built, an image shape that is not three positive sizes or a class count below
    2 (None: unconditional), which a net would otherwise meet deep inside torch."""
    shape, classes = values.get("image_shape"), values.get("num_classes")
    if shape is not None and (
        not isinstance(shape, (list, tuple)) or len(shape) != 3 or not all(isinstance(v, int) and v > 0 for v in shape)
    ):
        raise UserError(f"{method}: image_shape must be three positive sizes (channels, height, width), got {shape!r}")
    if classes is not None and (isinstance(classes, bool) or not isinstance(classes, int) or classes < 2):
        raise UserError(f"{method}: num_classes must be an integer of at least 2, got {classes!r}")


def toy_images(classes: int = 3, size: int = 8, records: int = 120) -> TensorDataModule:
    """Labelled random images for a tiny recipe (the data of the contract test)."""
    generator = torch.Generator().manual_seed(0)
    images = torch.rand(records, 1, size, size, generator=generator)
    return TensorDataModule(images, torch.arange(records) % classes, "toy-images", sample_rate=0.25)


@dataclass(frozen=True)
class TinyRecipe:
    """A run of a few seconds that exercises a method end to end (the registry's contract test):
    constructor arguments, the budget's settings, the data, and the steps of every step stage."""

    architecture: dict[str, Any]
    privacy: dict[str, Any]
    data: Callable[[], Any] = field(default=toy_images)
    max_steps: int = 3
    #: the plan's budget, built from ``privacy``: DPBudget, or PACBudget for a PAC-private method
    budget: Callable[..., Any] = field(default=DPBudget)


class DPGenerativeModel(PrivacyLedgerMixin, pl.LightningModule):
    #: registry name of the method, e.g. "dp-lflow"
    method: ClassVar[str]
    #: the page of docs/methods/ that documents the method when it is not the page of its own name (a variant
    #: documented with its family); read through ``zoo.methods.docs_page``
    docs_page: ClassVar[str | None] = None
    privacy_barrier: ClassVar[PrivacyBarrier]
    #: submodules written to model.safetensors: exactly what the guarantee covers
    released_modules: ClassVar[tuple[str, ...]]
    #: submodules that saw private data without DP; never written anywhere
    never_released: ClassVar[tuple[str, ...]] = ()
    #: submodules outside ``private_modules()`` that may change during a DP-SGD step, each with the reason it
    #: learns nothing from the private data beyond what the private steps release (``zoo.privacy.private_state``)
    public_modules: ClassVar[dict[str, str]] = {}
    #: number of classes of a class-conditional model, None for an unconditional one
    num_classes: int | None = None
    #: what ``sample`` returns: "images" (n, C, H, W) in [0, 1] or table "rows" (n, features)
    sample_kind: ClassVar[str] = "images"
    #: config.json of the folder a released model was loaded from (``zoo.release.hub.from_pretrained``), else None
    pretrained_config: dict[str, Any] | None = None
    #: whether the release is a set of samples (``released_set()``) rather than a generator
    releases_a_set: ClassVar[bool] = False

    @property
    def has_density(self) -> bool:
        """Whether the method defines ``log_prob`` (exact log-density in nats; conditional models take labels):
        the density metrics and the likelihood attack need one."""
        return callable(getattr(self, "log_prob", None))

    def architecture(self) -> dict[str, Any]:
        """Constructor arguments that rebuild this model (stored in config.json)."""
        accepted = inspect.signature(type(self).__init__).parameters
        return {k: v for k, v in self.hparams.items() if k in accepted}

    def data_arguments(self) -> dict[str, Any]:
        """The constructor arguments that follow the data (``zoo.shapes``), as this model has them."""
        return {k: as_data_argument(v) for k, v in self.architecture().items() if k in DATA_ARGUMENTS}

    def with_data_arguments(self, values: dict[str, Any]) -> dict[str, Any]:
        """This model's constructor arguments with ``values`` (from ``data_arguments``) replaced."""
        return {**self.architecture(), **values}

    def stages(self, datamodule: pl.LightningDataModule) -> list[Stage]:
        """The plan ``zoo.train`` runs (``zoo.stages``): by default DP-SGD on the private modules."""
        return [PrivateSteps()]

    def public_stages(self, public: Any) -> list[Stage]:
        """The plan ``zoo.pretrain_public`` runs on data the user declared public (``zoo.data.PublicData``):
        public stages only. None by default."""
        raise PrivacyConfigError(
            f"{type(self).__name__} has no public pretraining; DP-MERF has (zoo.pretrain_public), or pretrain "
            "without a ledger and load the weights yourself"
        )

    def on_fit_start(self) -> None:
        """A method with stages beyond DP-SGD must be trained through its plan, or it would skip them."""
        if self.training_stage is not None:
            return
        stages = self.stages(self.trainer.datamodule)  # type: ignore[attr-defined]
        if any(not isinstance(stage, PrivateSteps) for stage in stages):
            raise PrivacyConfigError(
                f"{type(self).__name__} trains in stages ({', '.join(s.name for s in stages)}): run them with "
                "zoo.train(model, datamodule, DPBudget(...)) or `dpzoo fit`, not Trainer.fit alone."
            )

    def training_parts(self, datamodule: pl.LightningDataModule) -> list[tuple[DPGenerativeModel, Any]]:
        """The (module, datamodule) pairs whose stages training runs: this model on its data, or
        one part per disjoint share of the data (one model per class)."""
        return [(self, datamodule)]

    def check_images(self, images: Tensor) -> None:
        """Refuse a batch whose images do not have the ``image_shape`` hyperparameter's shape, with a
        clear error before torch's (image methods that take their shape as a hyperparameter)."""
        expected = tuple(self.hparams["image_shape"])
        if tuple(images.shape[1:]) != expected:
            raise UserError(f"{self.method} was built for {expected} images, got {tuple(images.shape[1:])}")

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        """``n`` samples (labels given for class-conditional models), drawing all randomness from ``generator``."""
        raise NotImplementedError

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        """A few-second run for the contract test (``tests/test_contract.py``)."""
        raise NotImplementedError(f"{cls.__name__} must define tiny_recipe() for the registry's contract test")

    # ------------------------------------------------------- what the card shows
    @classmethod
    def display_name(cls, config: dict[str, Any]) -> str:
        """The method as a card and ``zoo.list_models`` name it."""
        return str(config["method"])

    @classmethod
    def card_tags(cls, config: dict[str, Any]) -> list[str]:
        """The card's method tags."""
        return [str(config["method"])]

    @classmethod
    def card_sample_kind(cls, config: dict[str, Any]) -> str:
        """What one record of the model's data is, as ``sample_kind`` says ("images" or table "rows"), read from
        the class and its config without building the model: the card's privacy unit follows it."""
        return cls.sample_kind

    @classmethod
    def card_usage(cls, config: dict[str, Any]) -> list[str]:
        """Lines of the card's usage snippet after ``model = zoo.load(...)``."""
        if cls.sample_kind == "rows":
            lines = ["rows = model.sample(1000, seed=0)  # (1000, features), in the table's units"]
            return [*lines, "log_density = model.log_prob(rows)  # exact, nats per row"]
        return ["images = model.sample(64, seed=0)  # float tensor in [0, 1]"]

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        """Method-specific sentences for the card's privacy section."""
        return []

    def sample_picture(self, seed: int = 0) -> Image.Image:
        """``samples.png``: 8 rows of samples, one column per class (8 columns when unconditional)."""
        columns = self.num_classes or 8
        grid = make_grid(self.sample(8 * columns, seed=seed), nrow=columns, padding=2, pad_value=1.0)
        return Image.fromarray(grid.mul(255).round().clamp(0, 255).byte().permute(1, 2, 0).numpy())

    @torch.no_grad()
    def sample(
        self,
        n: int,
        labels: Tensor | list[int] | None = None,
        seed: int | None = None,
        batch_size: int = 1000,
        progress: bool | None = None,
    ) -> Tensor:
        """``n`` samples as a float tensor: images in [0, 1], shape (n, C, H, W), or table rows (n, features).

        Class-conditional models take ``labels`` (one per sample); by default the labels
        cycle through the classes (0, 1, ..., K-1, 0, ...), so every class is equally
        represented and the caller knows which is which. Deterministic for a given seed;
        generated in batches of ``batch_size`` (a progress bar shows when n > batch_size).
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UserError(f"n must be a positive integer, got {n!r}")
        label_tensor = self._checked_labels(n, labels)
        generator = torch.Generator().manual_seed(seed if seed is not None else secrets.randbits(63))
        was_training = self.training
        self.eval()
        chunks = []
        show = n > batch_size if progress is None else progress
        with tqdm(total=n, desc=f"sampling {self.method}", unit="sample", disable=not show) as bar:
            for start in range(0, n, batch_size):
                count = min(batch_size, n - start)
                batch_labels = None if label_tensor is None else label_tensor[start : start + count]
                chunks.append(self.generate(count, batch_labels, generator).cpu())
                bar.update(count)
        self.train(was_training)
        return torch.cat(chunks)

    def _checked_labels(self, n: int, labels: Tensor | list[int] | None) -> Tensor | None:
        if self.num_classes is None:
            if labels is not None:
                raise UserError(f"{self.method} is unconditional; it takes no labels")
            return None
        if labels is None:
            return torch.arange(n) % self.num_classes
        labels = torch.as_tensor(labels)
        if labels.dtype.is_floating_point or labels.dim() != 1 or len(labels) != n:
            raise UserError(f"labels must be {n} integers (one per sample), got shape {tuple(labels.shape)}")
        if labels.numel() and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise UserError(f"labels must lie in 0..{self.num_classes - 1}, got {labels.min()}..{labels.max()}")
        return labels.long()
