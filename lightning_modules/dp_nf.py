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
from zoo.data.standardisation import Standardisation, private_standardisation
from zoo.privacy import DPCallback, PrivacyBarrier
from zoo.registry import register_method


@register_method
class DPNF(DPGenerativeModel):
    method = "dp-nf"
    privacy_barrier = PrivacyBarrier.PRIVATE_MODEL
    released_modules = ("flow",)
    log_prob_space = "table rows in their own units"
    sample_kind = "rows"

    def __init__(
        self,
        features: int,
        blocks: int = 5,
        hidden: int = 100,
        actnorm: bool = True,
        actnorm_init: str = "identity",
        actnorm_init_noise_multiplier: float = 10.0,
        prior_components: int = 0,
        learning_rate: float = 1e-3,
        cosine_decay: bool = False,
        feature_mean: Sequence[float] | None = None,
        feature_std: Sequence[float] | None = None,
        standardisation: str | None = None,
    ) -> None:
        """``actnorm_init="private"``: the paper's data-dependent ActNorm start, each block's
        activation mean and std released once on the training rows (Gaussian mechanism at
        ``actnorm_init_noise_multiplier``, rows clipped to L2 norm 2·sqrt(features); the paper uses
        Laplace noise), one ledger entry per block; ``"identity"`` costs nothing.
        ``prior_components`` ≥ 2: a learnt Gaussian-mixture base instead of the standard normal,
        trained by the same DP-SGD (so its cost is in the same ledger entry). ``feature_mean`` /
        ``feature_std``: the standardisation (None: taken from the data module at fit time, or 0
        and 1); ``standardisation`` says where it came from."""
        super().__init__()
        if isinstance(features, bool) or not isinstance(features, int) or features < 1:
            raise ValueError(f"features must be a positive integer, got {features!r}")
        if actnorm_init not in ("identity", "private"):
            raise ValueError(f"actnorm_init must be 'identity' or 'private', got {actnorm_init!r}")
        self.save_hyperparameters()
        mean = torch.zeros(features) if feature_mean is None else torch.as_tensor(feature_mean, dtype=torch.float32)
        std = torch.ones(features) if feature_std is None else torch.as_tensor(feature_std, dtype=torch.float32)
        if mean.shape != (features,) or std.shape != (features,) or not bool((std > 0).all()):
            raise ValueError(f"feature_mean and feature_std need {features} values each, std > 0")
        self.register_buffer("feature_mean", mean)
        self.register_buffer("feature_std", std)
        self.flow = MAF(features, blocks, hidden, actnorm, prior_components)

    def setup(self, stage: str) -> None:
        """Adopt the data module's standardisation once (and start the ActNorms privately if asked);
        a pretrained model keeps its own."""
        datamodule = self.trainer.datamodule
        if stage != "fit" or self.hparams.feature_mean is not None:
            return
        if not hasattr(datamodule, "release_standardisation"):
            if self.hparams.actnorm_init == "private":
                raise ValueError("actnorm_init='private' releases statistics of a zoo.data.TableDataModule's rows")
            return
        callback = DPCallback.of(self.trainer)
        if datamodule.features != self.hparams.features:
            raise ValueError(f"the model has {self.hparams.features} features, the table {datamodule.features}")
        standardisation = datamodule.release_standardisation(delta=callback.delta, accountant=callback.accountant)
        mean, std = self._adopt_release(standardisation)
        self.feature_mean.copy_(mean)
        self.feature_std.copy_(std)
        self.hparams.update(
            feature_mean=mean.tolist(), feature_std=std.tolist(), standardisation=standardisation.source
        )
        if self.hparams.actnorm_init == "private":
            self._initialise_actnorms_privately(datamodule, callback)

    def _adopt_release(self, release: Standardisation) -> tuple[Tensor, Tensor]:
        """Every rank uses rank 0's release, the one the ledger accounts for."""
        if release.entry is not None:
            self.privacy_ledger.append(release.entry)
        return self.trainer.strategy.broadcast((release.mean, release.std), src=0)

    @torch.no_grad()
    def _initialise_actnorms_privately(self, datamodule: Any, callback: DPCallback) -> None:
        if not self.hparams.actnorm:
            raise ValueError("actnorm_init='private' needs actnorm=True")
        rows = (datamodule.train_rows.to(self.feature_mean) - self.feature_mean) / self.feature_std
        bound = 2 * self.hparams.features**0.5
        for index, block in enumerate(self.flow.blocks):
            before = block.before_actnorm(rows)
            release = private_standardisation(
                before,
                bound,
                self.hparams.actnorm_init_noise_multiplier,
                delta=callback.delta,
                accountant=callback.accountant,
                dataset_id=datamodule.dataset_id,
                purpose=f"ActNorm {index} initialisation",
            )
            block.actnorm.initialize(*self._adopt_release(release))
            rows = block(rows)[0]

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

    def configure_optimizers(self) -> Any:
        """Adam; with ``cosine_decay`` the learning rate falls to 0 over the run, so the last noisy
        steps move the density little (a data-independent schedule costs no privacy)."""
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)
        if not self.hparams.cosine_decay:
            return optimizer
        steps = max(1, int(self.trainer.estimated_stepping_batches))
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        return self.flow.sample(n, generator) * self.feature_std + self.feature_mean
