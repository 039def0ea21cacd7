"""One unconditional model per class, released together as a class-conditional model.

The classes partition the data, so if each part's model is (ε, δ)-DP for its part, the
collection is (ε, δ)-DP for the whole dataset (parallel composition; DP-LFlow Theorem 3.1).
The ledger keeps one entry per part, each marked ``partition_of`` the whole dataset.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, method_class, register_method
from zoo.privacy import PrivacyBarrier, PrivacyConfigError, PrivacyLedger
from zoo.privacy.private_data import ClassPartitionedData


@register_method
class PerClassModel(DPGenerativeModel):
    method = "per-class"
    #: DP-LFlow's composition (its Theorem 3.1), documented on its page; a per-class model's row in the model table
    #: links its base method's page
    docs_page = "dp-lflow"
    privacy_barrier = PrivacyBarrier.PRIVATE_MODEL
    released_modules = ("parts",)

    def __init__(self, base_method: str, base_architecture: dict[str, Any], num_classes: int) -> None:
        super().__init__()
        if num_classes < 2:
            raise UserError(f"a per-class model needs at least 2 classes, got {num_classes}")
        self.save_hyperparameters()
        base = method_class(base_method)
        self.parts = nn.ModuleList(base(**base_architecture) for _ in range(num_classes))
        self.num_classes = num_classes

    @classmethod
    def from_parts(cls, parts: list[DPGenerativeModel]) -> PerClassModel:
        """Assemble trained parts (part k modelled class k); their ledgers are merged."""
        model = cls(parts[0].method, parts[0].architecture(), len(parts))
        for target, part in zip(model.parts, parts, strict=True):
            target.load_state_dict(part.state_dict())
        model.privacy_ledger = PrivacyLedger([e for part in parts for e in part.privacy_ledger.entries])
        return model

    def data_arguments(self) -> dict[str, Any]:
        """The class count is the number of parts; the image shape is each part's."""
        shape = self.parts[0].data_arguments()
        return {**{k: v for k, v in shape.items() if k == "image_shape"}, "num_classes": self.num_classes}

    def with_data_arguments(self, values: dict[str, Any]) -> dict[str, Any]:
        base = {k: v for k, v in values.items() if k != "num_classes"}
        return {
            **self.architecture(),
            "base_architecture": self.parts[0].with_data_arguments(base),
            "num_classes": values.get("num_classes", self.num_classes),
        }

    def private_modules(self) -> list[nn.Module]:
        return list(self.parts)

    def training_parts(self, datamodule: Any) -> list[tuple[DPGenerativeModel, Any]]:
        """Part k learns from class k of the data: the classes are disjoint, so the parts compose
        in parallel, each at the target."""
        if not isinstance(datamodule, ClassPartitionedData):
            raise PrivacyConfigError(
                f"a per-class model trains each of its {self.num_classes} class models on that class of the "
                f"data, so the datamodule must offer for_class(label) (zoo.data.ImageDataModule does); "
                f"{type(datamodule).__name__} does not."
            )
        return [(part, datamodule.for_class(label)) for label, part in enumerate(self.parts)]

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        assert labels is not None
        out: Tensor | None = None
        for label in labels.unique().tolist():
            rows = torch.nonzero(labels == label).flatten()
            part = self.parts[label].generate(len(rows), None, generator)
            if out is None:
                out = part.new_empty((n, *part.shape[1:]))
            out[rows.to(out.device)] = part
        assert out is not None
        return out

    @property
    def sample_kind(self) -> str:
        return self.parts[0].sample_kind

    @classmethod
    def display_name(cls, config: dict[str, Any]) -> str:
        return f"{config['architecture']['base_method']} (one model per class)"

    @classmethod
    def card_tags(cls, config: dict[str, Any]) -> list[str]:
        return [str(config["method"]), str(config["architecture"]["base_method"])]

    @classmethod
    def card_sample_kind(cls, config: dict[str, Any]) -> str:
        return cls._base(config).card_sample_kind(cls._as_base(config))

    @classmethod
    def card_usage(cls, config: dict[str, Any]) -> list[str]:
        return cls._base(config).card_usage(cls._as_base(config))

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        return cls._base(config).card_notes(cls._as_base(config))

    @staticmethod
    def _base(config: dict[str, Any]) -> type[DPGenerativeModel]:
        return method_class(config["architecture"]["base_method"])

    @staticmethod
    def _as_base(config: dict[str, Any]) -> dict[str, Any]:
        """The config as one part's model sees it (its own architecture)."""
        return {**config, "architecture": config["architecture"]["base_architecture"]}

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        tiny = method_class("dp-lflow").tiny_recipe()
        return TinyRecipe(
            architecture=dict(base_method="dp-lflow", base_architecture=tiny.architecture, num_classes=3),
            privacy=tiny.privacy,
        )

    @property
    def log_prob_space(self) -> str:
        return self.parts[0].log_prob_space

    @property
    def log_prob_dims(self) -> int:
        return self.parts[0].log_prob_dims

    def log_prob(self, x: Tensor, labels: Tensor) -> Tensor:
        """Log-likelihood of each row under its own class's model."""
        out = torch.empty(len(x), device=x.device)
        for label in labels.unique().tolist():
            rows = labels == label
            out[rows] = self.parts[label].log_prob(x[rows])
        return out
