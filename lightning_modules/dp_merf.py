"""DP-MERF (Harder et al. 2021): a class-conditional mean embedding with random Fourier features,
released once (barrier B1), then a generator fitted to it without touching the data again.

Stages: (1) Release: E = Σ_i φ(x_i) ⊗ e_{y_i} over the private training records, noised once;
(2) PublicSteps: a conditional generator G is trained to minimise ‖Ẽ/n − mean_j φ(G(z_j, y_j)) ⊗
e_{y_j}‖² over batches of codes and uniformly drawn labels; it reads only Ẽ (post-processing).

Theorem (add/remove-one neighbouring datasets, n public). Every record's term φ(x) ⊗ e_y has
L2 norm ‖φ(x)‖·‖e_y‖ = 1 (``RandomFourierFeatures``, computed in float64 for the release: within
1e-12, where float32 rounding gives up to 1 + 4e-6), so adding or removing a record
moves the sum E by at most 1: E + N(0, σ²I) is the Gaussian mechanism at noise multiplier σ
with sensitivity 1, σ calibrated so that it spends the whole target ε. Dividing by the public
count n and everything after is post-processing. (The official code releases the mean with
replace-one sensitivity 2/n; under add/remove with n public the sum's sensitivity is 1.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_modules.nets.generators import generator_from
from lightning_modules.nets.random_features import RandomFourierFeatures
from lightning_modules.parts.central_images import CentralImagesWarmStart
from lightning_modules.parts.mean_embedding import MeanEmbeddingGenerator
from lightning_modules.parts.shrinkage import card_words
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method
from zoo.privacy import DPBudget, PrivacyBarrier
from zoo.stages import PublicStatistic, PublicSteps, Release, Stage


@register_method
class DPMERF(MeanEmbeddingGenerator, CentralImagesWarmStart, DPGenerativeModel):
    method = "dp-merf"
    privacy_barrier = PrivacyBarrier.ONE_SHOT_RELEASE
    released_modules = ("generator",)

    def __init__(
        self,
        image_shape: Sequence[int] = (1, 28, 28),
        num_classes: int = 10,
        features: int = 10_000,
        kernel_width: float = math.sqrt(105),
        feature_seed: int = 0,
        code_dim: int = 5,
        hidden: int = 200,
        channels: Sequence[int] = (16, 8),
        kernel_size: int = 5,
        batch_norm: bool = True,
        generator: str = "conv",
        generator_width: int = 32,
        batch_size: int = 100,
        learning_rate: float = 0.01,
        lr_decay: float = 0.9,
        decay_every: int = 600,
        balanced_labels: bool = False,
        residual_average_lr: float | None = None,
        final_decay: float | None = None,
        warm_start: dict[str, Any] | None = None,
        stop_when_flat: int | None = None,
        shrink_to_common: bool = False,
    ) -> None:
        """Official MNIST defaults: 10,000 features, kernel width √105 (Fashion-MNIST √127; the
        official ``rff_sigma`` is width²), code 5, FC 200 → conv 16, 8 with 5×5 kernels, batch 100,
        Adam 0.01 decayed ×0.9 every 600 steps (one epoch of 60,000 at batch 100).

        ``generator="conv"`` is the official generator (``hidden``, ``channels``, ``kernel_size`` and
        ``batch_norm`` shape it); ``"dcgan"`` or ``"resnet"`` take GS-WGAN's conditional generators of
        width ``generator_width`` instead (``lightning_modules.nets.dcgan``), for larger colour images.
        ``warm_start``: release central images first and fit the generator to them before the embedding
        (``lightning_modules.parts.central_images.WarmStart``; None: start from scratch). ``balanced_labels``,
        ``residual_average_lr``, ``final_decay`` and ``stop_when_flat`` choose how the generator is fitted
        (``parts.mean_embedding``); ``shrink_to_common`` shrinks each class's released mean toward the mean of all
        classes by the release's noise first (``parts.shrinkage``: post-processing)."""
        super().__init__()
        self.save_hyperparameters()
        self.num_classes = num_classes
        self.features = RandomFourierFeatures(math.prod(image_shape), features, kernel_width, feature_seed)
        self.generator = generator_from(self.hparams)
        self.register_buffer("released_embedding", torch.zeros(features, num_classes))
        self.init_matching()
        self.init_warm_start()

    def stages(self, datamodule: Any) -> list[Stage]:
        return [
            *self.warm_start_stages(),
            Release("mean embedding", self._release_embedding, calibrated=True),
            PublicSteps("fit the generator to the released embedding"),
        ]

    def public_stages(self, public: Any) -> list[Stage]:
        """Pretraining on data the user declared public (``zoo.training.pretrain_public``): the generator fitted
        to the public data's exact embedding. A private plan then releases the private embedding and refits
        the generator from these weights."""
        return [
            PublicStatistic("public mean embedding", self._embed_public),
            PublicSteps("fit the generator to the public embedding"),
        ]

    @torch.no_grad()
    def _release_embedding(self, datamodule: Any, budget: DPBudget) -> None:
        total, count = self.embedding_sum(datamodule, self.features)
        noisy = budget.release(
            total,
            1.0,
            dataset_size=count,
            note=f"DP-MERF: Σ φ(x)⊗e_y over {self.hparams.features} random Fourier features (each term of norm 1)",
        )
        self.released_embedding.copy_(self.shrunk(noisy, budget) / count)

    @torch.no_grad()
    def _embed_public(self, public: Any) -> None:
        total, count = self.embedding_sum(public, self.features)
        self.released_embedding.copy_(total / count)

    def training_step(self, step: Tensor, batch_idx: int) -> Tensor:
        if self.in_warm_start():
            return self.warm_start_step(step)
        loss, distance = self.embedding_loss()
        self.follow_objective(distance)
        self.log("embedding_distance", distance, prog_bar=True)
        return loss

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        ledger = config["privacy_ledger"]
        embedding = (
            f"class-conditional embedding of {arch['features']:,} random Fourier features (kernel width "
            f"{arch['kernel_width']:.3g}, frequencies drawn from seed {arch['feature_seed']})"
        )
        public = f"Pretrained on the public data above: the generator fitted to the exact {embedding} of its images."
        if not ledger["entries"]:
            return [public]
        return [
            *([public + " Then, from those weights:"] if ledger.get("public_data") else []),
            f"Stages: the {embedding} of the private data released once{card_words(arch)}; then the generator "
            "fitted to it without reading the data again (post-processing). The released embedding is not part of "
            "this folder.",
            *cls.warm_start_notes(config),
        ]

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                image_shape=(1, 8, 8),
                num_classes=3,
                features=64,
                kernel_width=2.0,
                hidden=16,
                channels=(4, 2),
                kernel_size=3,
                batch_size=12,
                decay_every=2,
            ),
            privacy=dict(target_epsilon=1.0),
        )
