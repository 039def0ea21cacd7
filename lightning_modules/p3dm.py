"""P3DM, PAC Privacy Preserving Diffusion Models (Xu et al.): a DPGEN-style score model whose training
targets are privatised by randomized response (Algorithm 2), sampled by annealed Langevin dynamics with
classifier guidance toward randomly drawn attribute labels (Algorithm 3). The attribute here is the
class label (digit / item), the only balanced attribute MNIST and Fashion-MNIST carry.

What is released, and why. The score network sees every training image x directly (x̃ = x + σz at
small σ is x itself), so its weights carry no guarantee, and randomized response over the training
images is data-dependent (the reason DPGEN's DP claim fails). P3DM's paper proves PAC privacy for the
randomized-response targets plus Gaussian noise only, and says the samples of Algorithm 3 become PAC
private once their final x is noised. So the release is exactly that: M(X) = a set of
``images_per_class`` × classes samples from the model trained on X (fixed public seeds, balanced
labels), plus Gaussian noise calibrated by PAC privacy over Monte-Carlo runs on random subsets X
(``zoo.privacy.pac``, whose docstring states the theorem). The score network and the guidance
classifier exist only inside M, are retrained in every run and are never released. The guarantee is
a mutual-information bound, not (ε, δ)-DP; the paper's ε (``rr_epsilon``) is a randomized-response
parameter.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from lightning_modules.nets.score import NoisyClassifier, ScoreUNet
from lightning_modules.parts.langevin import LangevinSampler, ScoreTraining, geometric_sigmas, train_score_model
from lightning_modules.parts.released_sets import balanced_labels, images_of_classes
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method, toy_images
from zoo.privacy import PACBudget, PrivacyBarrier
from zoo.stages import PACRelease, Stage

#: per-pixel noise std above which a card says plainly that the release is noise: each image then
#: carries noise of more than ten times the norm of the largest image in [0, 1]
NOISE_ONLY_STD = 10.0


class NoisedSet(nn.Module):
    """The release: PAC-noised images (unclipped, as released) with their public, balanced labels."""

    def __init__(self, image_shape: Sequence[int], num_classes: int, per_class: int) -> None:
        super().__init__()
        self.register_buffer("images", torch.zeros(num_classes * per_class, *image_shape))
        self.register_buffer("labels", balanced_labels(num_classes, per_class))


@register_method
class P3DM(DPGenerativeModel):
    method = "p3dm"
    privacy_barrier = PrivacyBarrier.PAC_NOISED_OUTPUT
    released_modules = ("released_set",)

    def __init__(
        self,
        num_classes: int = 10,
        image_shape: Sequence[int] = (1, 28, 28),
        images_per_class: int = 10,
        width: int = 16,
        classifier_width: int = 16,
        sigma_max: float = 1.0,
        sigma_min: float = 0.01,
        noise_levels: int = 10,
        train_steps: int = 1000,
        classifier_steps: int = 300,
        batch_size: int = 64,
        learning_rate: float = 1e-3,
        rr_epsilon: float = 10.0,
        steps_per_level: int = 20,
        step_size: float = 2e-5,
        guidance_scale: float = 1.0,
        mechanism_seed: int = 0,
    ) -> None:
        """The CPU recipe's settings; the paper's scale (an NCSN of width 128, 300k steps of batch 128 whose
        images are the randomized-response candidates, Langevin with 5 steps per level over 232 levels) is
        ``configs/p3dm_mnist_paper.yaml``."""
        super().__init__()
        if len(image_shape) != 3:
            raise UserError(f"image_shape must be (channels, height, width), got {tuple(image_shape)}")
        counts = (num_classes, images_per_class, width, classifier_width, noise_levels, batch_size, steps_per_level)
        if min(counts) < 1 or min(train_steps, classifier_steps) < 0:
            raise UserError("class, image, width, level, batch and Langevin step counts must be positive")
        if not 0 < sigma_min < sigma_max:
            raise UserError(f"need 0 < sigma_min < sigma_max, got {sigma_min} and {sigma_max}")
        if min(learning_rate, step_size) <= 0 or guidance_scale < 0 or rr_epsilon < 0:
            raise UserError("learning_rate and step_size must be positive, guidance_scale and rr_epsilon ≥ 0")
        self.save_hyperparameters()
        self.num_classes = num_classes
        self.released_set = NoisedSet(image_shape, num_classes, images_per_class)

    def stages(self, datamodule: Any) -> list[Stage]:
        return [PACRelease("PAC-noised sample set", self._release_set)]

    def _release_set(self, datamodule: Any, budget: PACBudget) -> None:
        datamodule.setup("fit")
        images, labels = datamodule.train_set.tensors
        self.check_images(images)
        released = self.released_set.images
        noisy = budget.release(
            lambda keep: self.mechanism(images[keep], labels[keep]),
            pool_size=len(images),
            squared_diameter=float(released[0].numel() * len(released)),  # pixels in [0, 1]
            note=f"P3DM samples ({len(released)} images, classes balanced) of a score model trained on the subset",
        )
        released.copy_(noisy.view_as(released))

    def mechanism(self, images: Tensor, labels: Tensor) -> Tensor:
        """M(X): train the score model and the guidance classifier on X, then sample the set (fixed seeds).
        Runs where the module is (``self.device``): the stage runs outside a Lightning Trainer, and ``zoo.train``
        puts the module on the device its Trainer options name (accelerator, devices) for it."""
        arch = self.hparams
        device = self.device
        channels = arch.image_shape[0]
        with torch.random.fork_rng():
            torch.manual_seed(arch.mechanism_seed)
            score = ScoreUNet(channels, arch.width).to(device)
            classifier = NoisyClassifier(channels, arch.num_classes, arch.classifier_width).to(device)
        generator = torch.Generator().manual_seed(arch.mechanism_seed)
        sigmas = geometric_sigmas(arch.sigma_max, arch.sigma_min, arch.noise_levels).to(device)
        recipe = ScoreTraining(
            arch.train_steps, arch.classifier_steps, arch.batch_size, arch.learning_rate, arch.rr_epsilon
        )
        images, labels = images.float().to(device), labels.long().to(device)
        train_score_model(images, labels, score, classifier, sigmas, recipe, generator)
        sampler = LangevinSampler(arch.steps_per_level, arch.step_size, arch.guidance_scale)
        set_labels = self.released_set.labels.to(device)
        samples = sampler.sample(
            score.eval(), classifier.eval(), sigmas, set_labels, tuple(arch.image_shape), generator
        )
        return samples.cpu()

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        """The released images of the asked classes, clipped to [0, 1] (post-processing), no randomness."""
        assert labels is not None
        images = self.released_set.images.clamp(0, 1)
        return images_of_classes(images, self.hparams.images_per_class, self.num_classes, labels)

    @torch.no_grad()
    def released_set_tensors(self) -> tuple[Tensor, Tensor]:
        """(images, labels) exactly as released: PAC-noised, not clipped."""
        return self.released_set.images.clone(), self.released_set.labels.clone()

    # ---------------------------------------------------------------- card
    @classmethod
    def display_name(cls, config: dict[str, Any]) -> str:
        return "P3DM (PAC-private diffusion)"

    @classmethod
    def card_tags(cls, config: dict[str, Any]) -> list[str]:
        return ["p3dm", "score-based", "langevin"]

    @classmethod
    def card_usage(cls, config: dict[str, Any]) -> list[str]:
        return [
            "images, labels = model.released_set_tensors()  # the whole release, as noised",
            "more = model.sample(64, seed=0)  # released images of the classes in turn, clipped to [0, 1]",
        ]

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        releases = config["privacy_ledger"].get("pac_releases", [])
        lines = [
            f"The release is a set of {arch['images_per_class']} images per class: samples of a score model "
            "(denoising score matching on randomized-response targets, then annealed Langevin sampling guided by a "
            "noise-conditional classifier toward each image's class) trained on a random subset of the data, plus "
            "Gaussian noise calibrated by PAC privacy. The score network and the classifier saw the data without "
            "any guarantee: they are retrained in every Monte-Carlo run and never released.",
            f"rr_epsilon = {arch['rr_epsilon']:g} is the paper's randomized-response parameter (its tables' "
            '"ε"), not a guarantee of differential privacy.',
        ]
        image_norm = math.sqrt(math.prod(arch["image_shape"]))  # the largest norm of an image in [0, 1]
        noise = [
            f"Per pixel the released noise has σ = {r['noise_std']:.3g} on images in [0, 1]: its norm per image is "
            f"about {r['noise_std'] * image_norm:.3g}, against at most {image_norm:.3g} for an image."
            + (
                " At this bound the release is noise: the noise is more than ten times the largest image."
                if r["noise_std"] > NOISE_ONLY_STD
                else ""
            )
            for r in releases
        ]
        return [*lines, *noise]

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                num_classes=3,
                image_shape=(1, 8, 8),
                images_per_class=2,
                width=4,
                classifier_width=4,
                noise_levels=3,
                train_steps=2,
                classifier_steps=2,
                batch_size=8,
                steps_per_level=2,
            ),
            privacy=dict(mi_bound=1000.0, mc_runs=2, seed=0),
            data=functools.partial(toy_images, size=8),
            budget=PACBudget,
        )
