"""DP-NF (Waites & Cummings 2021): a Masked Autoregressive Flow on a table, trained with
DP-SGD through DPCallback (barrier B4: every parameter is private and may be released).

The flow works on standardised features z = (x − mean) / std; ``log_prob`` and ``sample``
speak the table's own units (the standardisation's log-Jacobian is included). A model without
a standardisation takes the one its data module releases when training starts, and adds that
release's ledger entry to its own, so DPCallback calibrates σ for what is left of the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_modules.base import DPGenerativeModel
from lightning_modules.nets.maf import MAF
from zoo.privacy import DPCallback, PrivacyBarrier
from zoo.registry import register_method


@register_method
class DPNF(DPGenerativeModel):
    method = "dp-nf"
    privacy_barrier = PrivacyBarrier.PRIVATE_MODEL
    released_modules = ("flow",)
    log_prob_space = "table rows in their own units"

    def __init__(
        self,
        features: int,
        blocks: int = 5,
        hidden: int = 100,
        actnorm: bool = True,
        prior_components: int = 0,
        learning_rate: float = 1e-3,
        feature_mean: Sequence[float] | None = None,
        feature_std: Sequence[float] | None = None,
        standardisation: str | None = None,
    ) -> None:
        """``prior_components`` ≥ 2: a learnt Gaussian-mixture base instead of the standard normal,
        trained by the same DP-SGD (so its cost is in the same ledger entry). ``feature_mean`` /
        ``feature_std``: the standardisation (None: taken from the data module at fit time, or 0
        and 1); ``standardisation`` says where it came from."""
        super().__init__()
        if isinstance(features, bool) or not isinstance(features, int) or features < 1:
            raise ValueError(f"features must be a positive integer, got {features!r}")
        self.save_hyperparameters()
        mean = torch.zeros(features) if feature_mean is None else torch.as_tensor(feature_mean, dtype=torch.float32)
        std = torch.ones(features) if feature_std is None else torch.as_tensor(feature_std, dtype=torch.float32)
        if mean.shape != (features,) or std.shape != (features,) or not bool((std > 0).all()):
            raise ValueError(f"feature_mean and feature_std need {features} values each, std > 0")
        self.register_buffer("feature_mean", mean)
        self.register_buffer("feature_std", std)
        self.flow = MAF(features, blocks, hidden, actnorm, prior_components)

    def setup(self, stage: str) -> None:
        """Adopt the data module's standardisation once; a pretrained model keeps its own."""
        release = getattr(self.trainer.datamodule, "release_standardisation", None)
        if stage != "fit" or self.hparams.feature_mean is not None or release is None:
            return
        callback = DPCallback.of(self.trainer)
        standardisation = release(delta=callback.delta, accountant=callback.accountant)
        # every rank must use the one release that the ledger accounts for
        mean, std = self.trainer.strategy.broadcast((standardisation.mean, standardisation.std), src=0)
        if mean.shape != self.feature_mean.shape:
            raise ValueError(f"the model has {self.hparams.features} features, the table {len(mean)}")
        self.feature_mean.copy_(mean)
        self.feature_std.copy_(std)
        self.hparams.update(
            feature_mean=mean.tolist(), feature_std=std.tolist(), standardisation=standardisation.source
        )
        if standardisation.entry is not None:
            self.privacy_ledger.append(standardisation.entry)

    def architecture(self) -> dict[str, Any]:
        """The standardisation comes from the buffers, which a resumed run restores."""
        return {
            **super().architecture(),
            "feature_mean": self.feature_mean.tolist(),
            "feature_std": self.feature_std.tolist(),
        }

    def private_modules(self) -> list[torch.nn.Module]:
        return [self.flow]

    @property
    def log_prob_dims(self) -> int:
        return self.hparams.features

    def log_prob(self, x: Tensor) -> Tensor:
        """Exact log-density (nats) of each row, in the table's units."""
        x = self._checked_rows(x)
        standardised = (x - self.feature_mean) / self.feature_std
        return self.flow.log_prob(standardised) - self.feature_std.log().sum()

    def _checked_rows(self, x: Tensor) -> Tensor:
        features = self.hparams.features
        if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] != features:
            shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"expected rows of {features} features, shape (n, {features}); got {shape}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError("rows contain NaN or infinite values")
        return x.to(self.feature_mean)

    def training_step(self, batch: tuple[Tensor, ...], batch_idx: int) -> Tensor:
        loss = -self.log_prob(batch[0]).mean()
        self.log("train_nll", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: tuple[Tensor, ...], batch_idx: int) -> None:
        self.log("val_nll", -self.log_prob(batch[0]).mean(), prog_bar=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        return self.flow.sample(n, generator) * self.feature_std + self.feature_mean
