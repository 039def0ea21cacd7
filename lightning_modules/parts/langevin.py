"""The score model of DPGEN / P3DM: denoising score matching on randomized-response targets
(P3DM Algorithm 2) and annealed Langevin sampling with classifier guidance (P3DM Algorithm 3).

Everything here is deterministic given its data and its CPU ``torch.Generator`` (random numbers are
drawn on the CPU and moved to the data's device): P3DM's PAC calibration reruns it on many data subsets
with the same public seeds (``zoo.privacy.pac``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn import functional as F

from lightning_modules.nets.score import NoisyClassifier, ScoreUNet
from zoo.errors import UserError

#: DPGEN's rule: a target further than this many σ (ℓ∞, per pixel) moves the pair to a larger σ
FAR_IN_SIGMAS = 5.0


def geometric_sigmas(sigma_max: float, sigma_min: float, levels: int) -> Tensor:
    """NCSN's noise levels, from ``sigma_max`` down to ``sigma_min``."""
    return torch.logspace(math.log10(sigma_max), math.log10(sigma_min), levels)


def randomized_response_pairs(
    images: Tensor, levels: Tensor, sigmas: Tensor, rr_epsilon: float, generator: torch.Generator
) -> tuple[Tensor, Tensor, Tensor]:
    """(x̃, target, level) for DSM under DPGEN's randomized response (P3DM eq. 12-13).

    Each image is perturbed, x̃ = x + σ·z; its target is the image itself with probability
    e^ε / (e^ε + k − 1), else one of the k − 1 other images of the batch (the official code's
    candidates). A target further than 5σ from x̃ (ℓ∞) moves the pair to the smallest noise level
    under which it is within 5σ (the largest level when none is). ε here is the paper's
    randomized-response parameter, not a differential-privacy guarantee."""
    count, device = len(images), images.device
    sigma = sigmas[levels].view(-1, 1, 1, 1)
    perturbed = images + sigma * torch.randn(images.shape, generator=generator).to(device)
    own = math.exp(rr_epsilon) / (math.exp(rr_epsilon) + count - 1)
    keep = torch.rand(count, generator=generator) < own
    others = (torch.arange(count) + torch.randint(1, max(count, 2), (count,), generator=generator)) % count
    targets = images[torch.where(keep, torch.arange(count), others).to(device)]
    distance = (perturbed - targets).abs().flatten(1).amax(dim=1)
    needed = distance / FAR_IN_SIGMAS
    larger_enough = (sigmas[None, :] >= needed[:, None]).sum(dim=1) - 1  # sigmas descend
    moved = torch.where(distance > FAR_IN_SIGMAS * sigma.flatten(), larger_enough.clamp(min=0), levels)
    return perturbed, targets, moved


def _indices(count: int, batch_size: int, generator: torch.Generator, device: torch.device) -> Tensor:
    return torch.randint(count, (min(batch_size, count),), generator=generator).to(device)


@dataclass(frozen=True)
class ScoreTraining:
    """How one score model and its guidance classifier are trained (Adam, uniform noise levels)."""

    steps: int
    classifier_steps: int
    batch_size: int
    learning_rate: float
    rr_epsilon: float


def train_score_model(
    images: Tensor,
    labels: Tensor,
    score: ScoreUNet,
    classifier: NoisyClassifier,
    sigmas: Tensor,
    recipe: ScoreTraining,
    generator: torch.Generator,
) -> None:
    """Denoising score matching on randomized-response targets, then the noise-conditional classifier."""
    if len(images) < 2:
        raise UserError(f"the score model needs at least 2 training images, got {len(images)}")
    optimizer = torch.optim.Adam(score.parameters(), lr=recipe.learning_rate)
    for _ in range(recipe.steps):
        batch = _indices(len(images), recipe.batch_size, generator, images.device)
        levels = torch.randint(len(sigmas), (len(batch),), generator=generator).to(images.device)
        perturbed, targets, levels = randomized_response_pairs(
            images[batch], levels, sigmas, recipe.rr_epsilon, generator
        )
        sigma = sigmas[levels]
        # λ(σ) = σ² weighting: ‖σ·s(x̃, σ) + (x̃ − target)/σ‖²
        residual = sigma.view(-1, 1, 1, 1) * score(perturbed, sigma) + (perturbed - targets) / sigma.view(-1, 1, 1, 1)
        loss = 0.5 * residual.square().flatten(1).sum(dim=1).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    optimizer = torch.optim.Adam(classifier.parameters(), lr=recipe.learning_rate)
    for _ in range(recipe.classifier_steps):
        batch = _indices(len(images), recipe.batch_size, generator, images.device)
        clean = images[batch]
        sigma = sigmas[torch.randint(len(sigmas), (len(clean),), generator=generator).to(images.device)]
        noisy = clean + sigma.view(-1, 1, 1, 1) * torch.randn(clean.shape, generator=generator).to(images.device)
        loss = F.cross_entropy(classifier(noisy, sigma), labels[batch])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


@dataclass(frozen=True)
class LangevinSampler:
    """Annealed Langevin dynamics (NCSN): ``steps_per_level`` steps of size ε·σᵢ²/σ_L² at each level,
    the score plus ``guidance_scale`` × ∇ₓ log p(y | x, σ), then one denoising step (Tweedie)."""

    steps_per_level: int
    step_size: float
    guidance_scale: float

    def sample(
        self,
        score: ScoreUNet,
        classifier: NoisyClassifier,
        sigmas: Tensor,
        labels: Tensor,
        shape: tuple[int, ...],
        generator: torch.Generator,
    ) -> Tensor:
        x = torch.rand(len(labels), *shape, generator=generator).to(sigmas.device)
        for sigma in sigmas:
            level = sigma.expand(len(labels))
            alpha = self.step_size * (sigma / sigmas[-1]) ** 2
            for _ in range(self.steps_per_level):
                drift = self._guided_score(score, classifier, x, level, labels)
                noise = torch.randn(x.shape, generator=generator).to(x.device)
                x = x + 0.5 * alpha * drift + alpha.sqrt() * noise
        with torch.no_grad():
            x = x + sigmas[-1] ** 2 * score(x, sigmas[-1].expand(len(labels)))
        return x.clamp(0, 1)

    def _guided_score(
        self, score: ScoreUNet, classifier: NoisyClassifier, x: Tensor, level: Tensor, labels: Tensor
    ) -> Tensor:
        with torch.no_grad():
            drift = score(x, level)
        if self.guidance_scale == 0:
            return drift
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            log_p = F.log_softmax(classifier(x, level), dim=1).gather(1, labels[:, None]).sum()
            (guidance,) = torch.autograd.grad(log_p, x)
        return drift + self.guidance_scale * guidance
