"""B1′: a labelled kernel mean embedding of each step's Poisson minibatch, released with
Gaussian-process noise (DP-Kernel: Jiang, Sun & Yu 2023, "Functional Rényi differential privacy
for generative modeling").

Theorem (add/remove-one neighbouring datasets, N public). Let φ_t: X → R^D be random Fourier
features whose frequencies are public randomness drawn afresh at step t from a seed and t alone,
and k_t((x, c), (x', c')) = φ_t(x)·φ_t(x')·[c = c'] the label-aware kernel. Its RKHS is
H_t = {(x, c) ↦ ⟨W, φ_t(x) ⊗ e_c⟩} with ‖f‖_H = ‖W‖_F. Step t draws a Poisson sample S_t at rate q
and releases the function

    f̃_t = Σ_{i∈S_t} clip_C(φ_t(x_i)) ⊗ e_{c_i} + σC·G_t,   G_t ~ N(0, I_{D×classes}),

that is the clipped embedding plus the Gaussian process GP(0, σ²C²·k_t). Each record's term has
RKHS norm at most C, so adding or removing one record moves the embedding by at most C in H_t,
and the release is the Gaussian mechanism in an RKHS (Hall, Rinaldo & Wasserman 2013, Cor. 9;
Jiang et al. 2023, Thm. 3.3): its Rényi divergence of order α is at most α/(2σ²), exactly the
Gaussian mechanism's at noise multiplier σ. Over the Poisson sample each step is the
Poisson-subsampled Gaussian at (σ, q), and T steps compose adaptively (step t's frequencies and
generator depend only on public randomness and earlier releases): what the ledger records.
Dividing by the public expected batch size q·N, evaluating f̃_t and its gradients at generated
points, and every generator update are post-processing.

Why the whole function and not its values at points. DPImageBench's port draws the GP noise at
the real and generated points as a constant without gradient: the generator's gradient is then
the gradient of the un-noised embedding at the generated points, and the noise only shifts the
loss's value, so the direction of every update is a function of the data that no noise covers.
Releasing the function in a finite-rank RKHS makes its values and its gradients everywhere
post-processing of one noised array; with fresh frequencies each step, the kernel the generator
meets over training is, in expectation, the full multi-bandwidth Gaussian kernel. A failed noise
draw raises: an un-noised statistic is never returned (the same port falls back to it).
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor

from zoo.errors import UserError
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms.base import Sampling, TrainingMechanism
from zoo.privacy.mechanisms.gaussian_release import clip_rows
from zoo.privacy.parameters import check_positive
from zoo.privacy.sampling import required_poisson_batches


def labelled_embedding(features: Tensor, labels: Tensor, num_classes: int) -> Tensor:
    """Σ_i φ(x_i) ⊗ e_{y_i}, shape (features, classes): each record's term has L2 norm ‖φ(x_i)‖."""
    one_hot = torch.nn.functional.one_hot(labels.long(), num_classes).to(features.dtype)
    return features.T @ one_hot


class KernelEmbeddingRelease(TrainingMechanism):
    """The B1′ mechanism under DPCallback: ``start`` gives the module ``embedding_release``, a
    :class:`NoisedEmbedding` that each training step calls exactly once with its batch's features."""

    name = "subsampled_kernel_embedding"

    def __init__(
        self,
        pl_module: pl.LightningModule,
        max_grad_norm: float,
        per_example_mode: str,
        loss_reduction: str,
        noise_generator: torch.Generator,
    ) -> None:
        self.max_norm = max_grad_norm
        self.noise_generator = noise_generator
        self.release: NoisedEmbedding | None = None
        self._expected_batch_size = 1.0
        self._releases_at_last_step = 0

    def sampling(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> Sampling:
        batches = required_poisson_batches(trainer.train_dataloader)
        if batches.micro_batches != 1 or trainer.accumulate_grad_batches != 1 or trainer.world_size != 1:
            raise PrivacyConfigError(
                "the kernel embedding release noises each step's whole Poisson batch once, on one device: "
                "gradient accumulation and multi-device strategies are not supported for it."
            )
        self._expected_batch_size = batches.expected_batch_size
        return Sampling(batches.dataset_size, batches.sample_rate)

    def accounted_noise_multiplier(self, noise_multiplier: float) -> float:
        """The noise std is σ·C and the sensitivity C: the accountant's multiplier is σ itself."""
        return noise_multiplier

    def ledger_parameters(self, accounted: float) -> dict[str, Any]:
        return {
            "l2_sensitivity": self.max_norm,
            "analysis": "one Poisson-subsampled Gaussian per step: the labelled embedding of the step's batch, each "
            "record's feature vector clipped to C, plus N(0, σ²C²) on every coordinate (the GP of the step's "
            "random-feature kernel; zoo.privacy.mechanisms.kernel_embedding)",
        }

    def start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, accounted: float) -> None:
        self.release = NoisedEmbedding(accounted, self.max_norm, self._expected_batch_size, self.noise_generator)
        self._releases_at_last_step = 0
        pl_module.embedding_release = self.release  # type: ignore[assignment]

    def is_private_step(self, optimizer: torch.optim.Optimizer) -> bool:
        return self.release is not None and self.release.releases > self._releases_at_last_step

    def privatise_step(self, optimizer: torch.optim.Optimizer) -> None:
        """The embedding was noised when it was computed; check that the step released it once."""
        assert self.release is not None
        releases = self.release.releases - self._releases_at_last_step
        if releases != 1:
            raise PrivacyConfigError(
                f"a step released the batch embedding {releases} times; the accountant counts one release per step."
            )
        self._releases_at_last_step = self.release.releases


class NoisedEmbedding:
    """``(features, labels, classes) ↦ (Σ_i clip_C(φ_i) ⊗ e_{y_i} + N(0, σ²C²)) / (q·N)``, detached, float64."""

    def __init__(
        self, noise_multiplier: float, max_norm: float, expected_batch_size: float, generator: torch.Generator
    ) -> None:
        self.noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
        self.max_norm = check_positive(max_norm, "max_grad_norm")
        self.expected_batch_size = check_positive(expected_batch_size, "expected_batch_size")
        self.generator = generator
        self.releases = 0

    def __call__(self, features: Tensor, labels: Tensor, num_classes: int) -> Tensor:
        if features.dim() != 2 or labels.shape != features.shape[:1]:
            raise UserError(f"need (n, D) features and n labels, got {tuple(features.shape)} and {tuple(labels.shape)}")
        rows = features.detach().double()
        if not torch.isfinite(rows).all():
            raise UserError("the batch's features are not all finite; nothing was released")
        total = labelled_embedding(clip_rows(rows, self.max_norm), labels, num_classes)
        noise = torch.randn(total.shape, generator=self.generator, dtype=torch.float64).to(total.device)
        self.releases += 1
        return (total + self.noise_multiplier * self.max_norm * noise) / self.expected_batch_size
