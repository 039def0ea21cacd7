"""DP-NF (Waites & Cummings 2021): a Masked Autoregressive Flow on a table, trained with
DP-SGD through DPCallback (barrier B4: every parameter is private and may be released).

The flow works on standardised features z = (x − mean) / std; ``log_prob`` and ``sample``
speak the table's own units (the standardisation's log-Jacobian is included). Stages: a model
without a standardisation first releases its table's (a Release at the data module's fixed σ),
optionally the ActNorm starts, then DP-SGD, calibrated for what is left of the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from PIL import Image
from torch import Tensor

from lightning_modules.nets.maf import MAF
from zoo.data.standardisation import Standardisation, private_standardisation
from zoo.data.table_rows import TableRows
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method
from zoo.privacy import DPBudget, PrivacyBarrier
from zoo.stages import PrivateSteps, Release, Stage


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
            raise UserError(f"features must be a positive integer, got {features!r}")
        if actnorm_init not in ("identity", "private"):
            raise UserError(f"actnorm_init must be 'identity' or 'private', got {actnorm_init!r}")
        self.save_hyperparameters()
        mean = torch.zeros(features) if feature_mean is None else torch.as_tensor(feature_mean, dtype=torch.float32)
        std = torch.ones(features) if feature_std is None else torch.as_tensor(feature_std, dtype=torch.float32)
        if mean.shape != (features,) or std.shape != (features,) or not bool((std > 0).all()):
            raise UserError(f"feature_mean and feature_std need {features} values each, std > 0")
        self.register_buffer("feature_mean", mean)
        self.register_buffer("feature_std", std)
        self.flow = MAF(features, blocks, hidden, actnorm, prior_components)

    def stages(self, datamodule: Any) -> list[Stage]:
        """Release the table's standardisation (and the ActNorm starts) once, then DP-SGD; a
        pretrained model keeps its own standardisation and only trains."""
        releases: list[Stage] = []
        if self.hparams.feature_mean is None:
            table = isinstance(datamodule, TableRows)
            if table:
                if datamodule.features != self.hparams.features:
                    raise UserError(f"the model has {self.hparams.features} features, the table {datamodule.features}")
                releases.append(Release("standardisation", self._adopt_standardisation))
            if self.hparams.actnorm_init == "private":
                if not table:
                    raise UserError("actnorm_init='private' releases statistics of a zoo.data.TableDataModule's rows")
                if not self.hparams.actnorm:
                    raise UserError("actnorm_init='private' needs actnorm=True")
                releases.append(Release("ActNorm initialisation", self._initialise_actnorms_privately))
        return [*releases, PrivateSteps("DP-SGD on the flow")]

    def _adopt_standardisation(self, datamodule: TableRows, budget: DPBudget) -> None:
        standardisation: Standardisation = datamodule.standardisation(budget)
        self.feature_mean.copy_(standardisation.mean)
        self.feature_std.copy_(standardisation.std)
        self.hparams.update(
            feature_mean=standardisation.mean.tolist(),
            feature_std=standardisation.std.tolist(),
            standardisation=standardisation.source,
        )

    @torch.no_grad()
    def _initialise_actnorms_privately(self, datamodule: TableRows, budget: DPBudget) -> None:
        rows = (datamodule.train_rows.to(self.feature_mean) - self.feature_mean) / self.feature_std
        bound = 2 * self.hparams.features**0.5
        for index, block in enumerate(self.flow.blocks):
            before = block.before_actnorm(rows)
            release = private_standardisation(
                before,
                bound,
                self.hparams.actnorm_init_noise_multiplier,
                budget,
                purpose=f"ActNorm {index} initialisation",
            )
            block.actnorm.initialize(release.mean, release.std)
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

    @torch.no_grad()
    def log_prob(self, x: Tensor) -> Tensor:
        """Exact log-density (nats) of each row, in the table's units; computed where the model is, returned
        where ``x`` is."""
        return self.log_density(x).to(x.device)

    def log_density(self, x: Tensor) -> Tensor:
        """:meth:`log_prob` with gradients, for training."""
        x = self._checked_rows(x)
        standardised = (x - self.feature_mean) / self.feature_std
        return self.flow.log_prob(standardised) - self.feature_std.log().sum()

    def _checked_rows(self, x: Tensor) -> Tensor:
        features = self.hparams.features
        if not isinstance(x, Tensor) or x.dim() != 2 or x.shape[1] != features:
            shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise UserError(f"expected rows of {features} features, shape (n, {features}); got {shape}")
        if not bool(torch.isfinite(x).all()):
            raise UserError("rows contain NaN or infinite values")
        return x.to(self.feature_mean)

    def training_step(self, batch: tuple[Tensor, ...], batch_idx: int) -> Tensor:
        loss = -self.log_density(batch[0]).mean()
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

    def sample_picture(self, seed: int = 0) -> Image.Image:
        """The density and samples (2 features) or per-feature histograms of samples."""
        from zoo.plots import table_model_picture

        return table_model_picture(self, seed=seed)

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        source = config["architecture"].get("standardisation")
        return [f"Standardisation of the features: {source}."] if source else []

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        from zoo.data import TableDataModule

        return TinyRecipe(
            architecture=dict(features=2, blocks=1, hidden=8),
            privacy=dict(target_epsilon=2.0, max_grad_norm=1.0),
            data=lambda: TableDataModule("gaussians", sample_rate=0.01, clip_bound=8.0),
        )
