"""DP-Kernel (Jiang, Sun & Yu 2023, "Functional Rényi differential privacy for generative
modeling"): a conditional generator trained on the MMD between its samples and each step's
Poisson minibatch of private images, under a label-aware multi-bandwidth Gaussian kernel whose
mean embedding is released with Gaussian-process noise (barrier B1′).

One step: fresh public random Fourier features φ_t of the mixture kernel (1/L)·Σ_l
exp(−‖x − x'‖² / (2·width_l²)) (frequencies seeded from ``feature_seed`` and the step index); the
private batch's embedding Σ φ_t(x_i) ⊗ e_{y_i} released through ``self.embedding_release`` (clipped
rows, N(0, σ²C²) per coordinate, divided by q·N: ``zoo.privacy.mechanisms.kernel_embedding``, which
states the theorem); then one generator step on ‖Ẽ_t − mean_j φ_t(G(z_j, c_j)) ⊗ e_{c_j}‖², the
squared MMD between the released function and the generated batch (labels drawn uniformly).
The generator reads the data only through the released embeddings.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lightning_modules.nets.generators import generate_conditional, generated_embedding, generator_from
from lightning_modules.nets.random_features import fourier_features, mixture_frequencies
from lightning_modules.parts.central_images import CentralImagesWarmStart
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method
from zoo.privacy import PrivacyBarrier, PrivacyConfigError
from zoo.privacy.mechanisms import NoisedEmbedding
from zoo.stages import PrivateSteps, Stage


@register_method
class DPKernel(CentralImagesWarmStart, DPGenerativeModel):
    method = "dp-kernel"
    privacy_barrier = PrivacyBarrier.SUBSAMPLED_RELEASE
    released_modules = ("generator",)
    #: set by the B1′ mechanism when private training starts (DPCallback)
    embedding_release: NoisedEmbedding | None = None

    def __init__(
        self,
        image_shape: Sequence[int] = (1, 28, 28),
        num_classes: int = 10,
        features: int = 2000,
        kernel_widths: Sequence[float] = (4.0, 8.0, 16.0),
        feature_seed: int = 0,
        code_dim: int = 20,
        generator: str = "dcgan",
        generator_width: int = 32,
        hidden: int = 200,
        channels: Sequence[int] = (16, 8),
        kernel_size: int = 5,
        batch_norm: bool = False,
        generated_per_step: int = 200,
        learning_rate: float = 1e-3,
        betas: tuple[float, float] = (0.5, 0.999),
        warm_start: dict[str, Any] | None = None,
    ) -> None:
        """``features`` random features (half cosines, half sines) drawn afresh every step for the kernel
        widths ``kernel_widths`` (pixels in [0, 1]; the default was chosen on MNIST validation images;
        DPImageBench's 1…16 on [−1, 1] are 0.5…8 here); ``generator`` is ``"dcgan"``/``"resnet"`` (GS-WGAN's,
        of ``generator_width``) or ``"conv"`` (DP-MERF's, shaped by ``hidden``, ``channels``, ``kernel_size``,
        ``batch_norm``); ``generated_per_step`` samples per step, Adam at ``learning_rate`` and ``betas``. The
        private batch size is the datamodule's sample rate times N. ``warm_start``: release central images
        first and fit the generator to them (``lightning_modules.parts.central_images.WarmStart``; None: start from
        scratch)."""
        super().__init__()
        if features < 2 or features % 2:
            raise UserError(f"features must be an even number >= 2, got {features}")
        if not kernel_widths or min(kernel_widths) <= 0:
            raise UserError(f"kernel_widths must be positive numbers, got {kernel_widths}")
        if generated_per_step < 1:
            raise UserError(f"generated_per_step must be a positive integer, got {generated_per_step}")
        self.save_hyperparameters()
        self.num_classes = num_classes
        self.generator = generator_from(self.hparams)
        self.init_warm_start()

    def stages(self, datamodule: Any) -> list[Stage]:
        return [*self.warm_start_stages(), PrivateSteps("generator steps on the noised minibatch embeddings")]

    def step_frequencies(self, step: int) -> Tensor:
        """The public frequencies of step ``step``: a function of ``feature_seed`` and the step index only."""
        arch = self.hparams
        seeded = torch.Generator().manual_seed(hash((arch.feature_seed, step)) % 2**63)
        widths = tuple(float(w) for w in arch.kernel_widths)
        return mixture_frequencies(math.prod(arch.image_shape), arch.features // 2, widths, seeded, self.device)

    def training_step(self, batch: tuple[Tensor, Tensor] | Tensor, batch_idx: int) -> Tensor:
        if self.in_warm_start():
            return self.warm_start_step(batch)
        if self.embedding_release is None:
            raise PrivacyConfigError(
                "DP-Kernel trains only under a DPCallback (zoo.train with a DPBudget), which provides its embedding "
                "release."
            )
        images, labels = batch
        self.check_images(images)
        frequencies = self.step_frequencies(self.global_step)
        released = self.embedding_release(fourier_features(images.double(), frequencies), labels, self.num_classes)
        fitted = generated_embedding(
            self.generator,
            self.hparams.code_dim,
            self.num_classes,
            self.hparams.generated_per_step,
            functools.partial(fourier_features, frequencies=frequencies),
            self.device,
        )
        loss = (released.to(fitted.dtype) - fitted).square().sum()
        self.log("noised_mmd", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.generator.parameters(), lr=self.hparams.learning_rate, betas=self.hparams.betas)

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        assert labels is not None
        return generate_conditional(self.generator, self.hparams.code_dim, labels, generator)

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        widths = ", ".join(f"{w:g}" for w in arch["kernel_widths"])
        return [
            f"Each step released the labelled mean embedding of its Poisson batch under {arch['features']:,} random "
            f"Fourier features of a mixture of Gaussian kernels (widths {widths}, pixels in [0, 1]), drawn afresh "
            "every step from a public seed, with Gaussian-process noise: the whole noised function is the release, "
            "so the generator's gradients are post-processing (zoo.privacy.mechanisms.kernel_embedding). Only the "
            "generator is in this folder.",
            *cls.warm_start_notes(config),
        ]

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                image_shape=(1, 8, 8),
                num_classes=3,
                features=32,
                kernel_widths=(1.0, 2.0),
                generator="conv",
                hidden=16,
                channels=(4, 2),
                kernel_size=3,
                generated_per_step=12,
            ),
            privacy=dict(target_epsilon=1.0),
        )
