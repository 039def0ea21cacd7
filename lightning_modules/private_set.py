"""Private Set Generation (Chen, Orekondy, Fritz 2022; thesis ch. 3): a small labelled synthetic set S
whose classifier gradients match DP-SGD-sanitised gradients on the private data. S is the release.

Each training step: a randomly initialised ConvNet θ (re-drawn every ``outer_loop · batch_loop``
steps) is copied into the gradient probe, the only module that sees private data. DPCallback clips
each record's gradient of the probe's loss on a Poisson batch to C and adds N(0, σ²C²) to the sum
(B2, ``zoo.privacy.mechanisms.dp_sgd``): that sanitised gradient g̃ is all that leaves the private
data. S then takes a step on the layer-wise cosine distance between θ's gradient on S and g̃, and
every ``batch_loop`` steps θ trains ``inner_loop`` epochs on S alone. S and θ are functions of the
g̃'s and public randomness only, so the release is post-processing of R·T·K subsampled Gaussian
steps, accounted as DP-SGD (the official code's sampling and accounting: Poisson batches of the
whole data at rate B/N, one step per real batch).

With ``prior=True`` ("training pipeline with prior"), S is the output of a freshly initialised
conditional DCGAN generator at fixed latent codes, and the generator is optimised instead of the
pixels. Either way ``sample`` returns the images of S: sampling spc·K images with the default
labels returns S exactly, and more samples repeat it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from lightning_modules.nets.convnet import ConvNet
from lightning_modules.nets.dcgan import DCGANGenerator
from lightning_modules.nets.gradient_matching import layerwise_gradient_distance
from lightning_modules.parts.released_sets import balanced_labels, images_of_classes
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel, TinyRecipe, register_method, toy_images
from zoo.privacy import PrivacyBarrier, PrivacyConfigError


class SanitisedGradients(torch.optim.Optimizer):
    """The gradient probe's "optimizer": its step moves nothing and keeps the gradients that
    DPCallback has just clipped and noised (the only view of the private batch)."""

    def __init__(self, params: Sequence[nn.Parameter]) -> None:
        super().__init__(list(params), {})
        self.gradients: list[Tensor] = []

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        if closure is not None:
            with torch.enable_grad():
                closure()
        self.gradients = [p.grad.detach().clone() for group in self.param_groups for p in group["params"]]


class PixelSet(nn.Module):
    """S as free pixels in [0, 1], ``per_class`` images of each class in class order."""

    def __init__(self, image_shape: Sequence[int], num_classes: int, per_class: int) -> None:
        super().__init__()
        start = torch.rand(num_classes * per_class, *image_shape, generator=torch.Generator().manual_seed(0))
        self.images = nn.Parameter(start)
        self.register_buffer("labels", balanced_labels(num_classes, per_class))

    def forward(self) -> Tensor:
        return self.images

    @torch.no_grad()
    def project(self) -> None:
        self.images.clamp_(0, 1)


class GeneratedSet(nn.Module):
    """S as a conditional DCGAN generator's outputs at fixed latent codes (public randomness)."""

    def __init__(self, image_shape: Sequence[int], num_classes: int, per_class: int, code_dim: int, width: int) -> None:
        super().__init__()
        self.generator = DCGANGenerator(code_dim, num_classes, width, image_shape)
        codes = torch.randn(num_classes * per_class, code_dim, generator=torch.Generator().manual_seed(0))
        self.register_buffer("codes", codes)
        self.register_buffer("labels", balanced_labels(num_classes, per_class))

    def forward(self) -> Tensor:
        return self.generator(self.codes, self.labels)

    def project(self) -> None:
        pass  # the generator's sigmoid keeps S in [0, 1]


@register_method
class PrivateSet(DPGenerativeModel):
    method = "private-set"
    privacy_barrier = PrivacyBarrier.PRIVATE_CRITIC
    released_modules = ("synthetic_set",)
    releases_a_set = True
    never_released = ("classifier", "gradient_probe")
    public_modules = {
        "synthetic_set": "S steps on its distance to the DP-SGD-sanitised gradients only (post-processing)",
        "classifier": "θ is drawn from public randomness and trains on S alone (post-processing)",
    }

    def __init__(
        self,
        num_classes: int = 10,
        image_shape: Sequence[int] = (1, 28, 28),
        images_per_class: int = 10,
        prior: bool = False,
        width: int = 128,
        depth: int = 3,
        norm_affine: bool = True,
        outer_loop: int = 10,
        batch_loop: int = 10,
        inner_loop: int = 50,
        classifier_lr: float = 0.01,
        set_lr: float = 0.1,
        generator_lr: float = 0.01,
        code_dim: int = 10,
        generator_width: int = 64,
    ) -> None:
        """Paper defaults for spc 10: ConvNet width 128, depth 3, affine instance norm; (T, J) = (10, 50);
        K = ``batch_loop`` = 10 real batches per outer loop; SGD lr_θ 0.01, lr_S 0.1 (momentum 0.5); Adam
        0.01 for the prior."""
        super().__init__()
        if len(image_shape) != 3:
            raise UserError(f"image_shape must be (channels, height, width), got {tuple(image_shape)}")
        if min(num_classes, images_per_class, width, depth, outer_loop, batch_loop, inner_loop) < 1:
            raise UserError("num_classes, images_per_class, width, depth and the loop counts must be positive")
        if min(classifier_lr, set_lr, generator_lr) <= 0:
            raise UserError("learning rates must be positive")
        self.save_hyperparameters()
        self.num_classes = num_classes
        self.automatic_optimization = False
        if prior:
            self.synthetic_set: PixelSet | GeneratedSet = GeneratedSet(
                image_shape, num_classes, images_per_class, code_dim, generator_width
            )
        else:
            self.synthetic_set = PixelSet(image_shape, num_classes, images_per_class)
        self.classifier = ConvNet(tuple(image_shape), num_classes, width, depth, norm_affine)
        self.gradient_probe = ConvNet(tuple(image_shape), num_classes, width, depth, norm_affine)

    def private_modules(self) -> list[nn.Module]:
        return [self.gradient_probe]

    # -------------------------------------------------------------- training
    def setup(self, stage: str) -> None:
        """Refused under DDP before any step: the inner loop's backward passes run inside one DDP step,
        which DDP cannot synchronise (it would crash with "Expected to mark a variable ready only once")."""
        if self.trainer.world_size > 1:
            raise PrivacyConfigError(
                f"{type(self).__name__} trains on one device: θ's inner loop on S takes backward passes of its own "
                "inside one DDP step, which DDP cannot synchronise; train it with --trainer.devices 1."
            )

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        images, labels = batch
        self.check_images(images)
        arch = self.hparams
        position = self.global_step % (arch.outer_loop * arch.batch_loop)
        if position == 0:
            _reset_parameters(self.classifier)
        real_gradients = self.sanitised_gradients(images, labels)
        distance = self.match_step(real_gradients)
        if (position + 1) % arch.batch_loop == 0 and position + 1 < arch.outer_loop * arch.batch_loop:
            self.train_classifier_on_set()
        self.log("matching_distance", distance, prog_bar=True)

    def sanitised_gradients(self, images: Tensor, labels: Tensor) -> list[Tensor]:
        """θ's gradient on the private batch, clipped per record and noised by DPCallback."""
        probe_optimizer = self.optimizers()[0]
        self.gradient_probe.load_state_dict(self.classifier.state_dict())
        probe_optimizer.zero_grad(set_to_none=True)
        self.manual_backward(F.cross_entropy(self.gradient_probe(images), labels))
        probe_optimizer.step()  # DPCallback writes Σ clip(g_i) + N(0, σ²C²), over q·N, before this step
        return probe_optimizer.optimizer.gradients

    def match_step(self, real_gradients: list[Tensor]) -> Tensor:
        """One step of S on the layer-wise distance between θ's gradients on S and the sanitised ones."""
        set_optimizer = self.optimizers()[1].optimizer  # stepped raw: one training step counts once
        weights = list(self.classifier.parameters())
        set_loss = F.cross_entropy(self.classifier(self.synthetic_set()), self.synthetic_set.labels)
        synthetic_gradients = torch.autograd.grad(set_loss, weights, create_graph=True)
        distance = layerwise_gradient_distance(synthetic_gradients, real_gradients)
        set_parameters = list(self.synthetic_set.parameters())
        for p, grad in zip(set_parameters, torch.autograd.grad(distance, set_parameters), strict=True):
            p.grad = grad
        set_optimizer.step()
        self.synthetic_set.project()
        return distance.detach()

    def train_classifier_on_set(self) -> None:
        """θ trains ``inner_loop`` epochs on S alone (one batch of at most 256 images per step, as officially)."""
        with torch.no_grad():
            images, labels = self.synthetic_set().detach(), self.synthetic_set.labels
        optimizer = torch.optim.SGD(self.classifier.parameters(), lr=self.hparams.classifier_lr)
        for _ in range(self.hparams.inner_loop):
            for batch in torch.randperm(len(labels), device=labels.device).split(256):
                optimizer.zero_grad(set_to_none=True)
                F.cross_entropy(self.classifier(images[batch]), labels[batch]).backward()
                optimizer.step()

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        arch = self.hparams
        set_parameters = self.synthetic_set.parameters()
        if arch.prior:
            set_optimizer: torch.optim.Optimizer = torch.optim.Adam(set_parameters, lr=arch.generator_lr)
        else:
            set_optimizer = torch.optim.SGD(set_parameters, lr=arch.set_lr, momentum=0.5)
        return [SanitisedGradients(self.gradient_probe.parameters()), set_optimizer]

    # -------------------------------------------------------------- sampling
    @torch.no_grad()
    def released_set(self) -> tuple[Tensor, Tensor]:
        """(images, labels) of S, the released set, in class order."""
        return self.synthetic_set().clamp(0, 1), self.synthetic_set.labels

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        """The images of S of the asked classes, each class's images in turn (no randomness)."""
        assert labels is not None
        images, _ = self.released_set()
        return images_of_classes(images, self.hparams.images_per_class, self.num_classes, labels)

    # ---------------------------------------------------------------- card
    @classmethod
    def display_name(cls, config: dict[str, Any]) -> str:
        return "Private Set Generation"

    @classmethod
    def card_tags(cls, config: dict[str, Any]) -> list[str]:
        return ["private-set", "gradient-matching"]

    @classmethod
    def card_usage(cls, config: dict[str, Any]) -> list[str]:
        return [
            "images, labels = model.released_set()  # the whole release: S, in class order",
            "more = model.sample(64, seed=0)  # images of S, the classes in turn",
        ]

    @classmethod
    def card_notes(cls, config: dict[str, Any]) -> list[str]:
        arch = config["architecture"]
        variant = (
            "a conditional DCGAN generator (trained on the matching loss) at fixed latent codes"
            if arch["prior"]
            else "free pixels"
        )
        return [
            f"The release is the synthetic set S: {arch['images_per_class']} images per class, {variant}. "
            "Sampling returns the images of S, so more samples repeat them. The ConvNet whose gradients were "
            f"matched (width {arch['width']}, depth {arch['depth']}) saw the private data only through DP-SGD-"
            "sanitised gradients and is not released.",
        ]

    @classmethod
    def tiny_recipe(cls) -> TinyRecipe:
        return TinyRecipe(
            architecture=dict(
                num_classes=3,
                image_shape=(1, 8, 8),
                images_per_class=2,
                width=4,
                depth=2,
                outer_loop=2,
                batch_loop=1,
                inner_loop=2,
            ),
            privacy=dict(target_epsilon=5.0, accountant="rdp"),
            data=functools.partial(toy_images, size=8),
        )


def _reset_parameters(network: nn.Module) -> None:
    """A freshly drawn θ (public randomness), as each outer round of the paper starts from."""
    for layer in network.modules():
        if layer is not network and hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
