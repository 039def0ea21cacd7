"""Central images (DP-FETA: Li et al. 2025, "From easy to hard"): noisy means of the private
images, per class and optionally per random subset of a class, released once at a small share of
the budget, and a warm start that fits a generator to them before its private stage.

Theorem (add/remove-one neighbouring datasets, N public). Each record is clipped to L2 norm R
(x̂ = x·min(1, R/‖x‖)) and contributes the row (x̂, R/4) to exactly one group: its class and, with
``subsets`` > 1, the subset a keyed hash of its own bytes picks (``zoo.privacy.partition``: no other
record moves). Adding or removing one record moves the stacked group sums by at most
R·√(1 + 1/16); the sums plus N(0, σ²·17R²/16) are the Gaussian mechanism (B1,
``zoo.privacy.mechanisms.gaussian_release``) at the stage's fixed σ, entered in the plan's
ledger, so the private stage after it is calibrated to what is left of the budget. The last
column carries the counts; each group's mean (clamped to the pixel range) and every step that
fits a generator to the means are post-processing.

A method opts in with a ``warm_start`` setting (:class:`WarmStart`) and lists
``warm_start_stages()`` first in its plan; during the warm start its ``training_step`` hands over
to ``warm_start_step``, which fits ``self.generator(code, labels)`` to the central images by a
kernel MMD under fresh random features (the same loss for any conditional image generator); a
model of another kind (DP-LFlow's autoencoder and flow) overrides ``warm_start_step`` with its own
loss on ``self.central_images``. An unconditional model (one class, or one model per class) has
one group of central images per subset.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from lightning_modules.nets.generators import generated_embedding
from lightning_modules.nets.random_features import fourier_features, labelled_embedding, mixture_frequencies
from zoo.errors import UserError
from zoo.privacy import DPBudget
from zoo.privacy.mechanisms import clip_rows
from zoo.privacy.partition import assign_parts
from zoo.stages import PublicSteps, Release, Stage

WARM_START = "warm start on the central images"
#: weight of the count column, as a fraction of the clipping norm R
COUNT_WEIGHT = 0.25


@dataclass(frozen=True)
class WarmStart:
    """``noise_multiplier``: σ of the central-image release (fixed: its ε is a share of the budget);
    ``clip_norm``: R, the L2 bound on each image; ``subsets``: groups per class; ``steps``: warm-start
    steps (the method's optimizer), each on ``batch_size`` generated images matched under ``features``
    random features of kernel widths ``kernel_widths`` (pixels in [0, 1])."""

    noise_multiplier: float = 20.0
    clip_norm: float = 10.0
    subsets: int = 1
    steps: int = 500
    batch_size: int = 200
    features: int = 2000
    kernel_widths: tuple[float, ...] = (2.0, 4.0, 8.0)

    def __post_init__(self) -> None:
        if min(self.noise_multiplier, self.clip_norm, *self.kernel_widths) <= 0:
            raise UserError("warm_start: noise_multiplier, clip_norm and kernel_widths must be > 0")
        if min(self.subsets, self.steps, self.batch_size, self.features) < 1 or self.features % 2:
            raise UserError(
                "warm_start: subsets, steps and batch_size must be positive, features a positive even number"
            )

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> WarmStart | None:
        if config is None:
            return None
        unknown = set(config) - set(cls.__dataclass_fields__)
        if unknown:
            raise UserError(
                f"warm_start: unknown settings {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}"
            )
        settings = {**config}
        if "kernel_widths" in settings:
            settings["kernel_widths"] = tuple(float(w) for w in settings["kernel_widths"])
        return cls(**settings)


@torch.no_grad()
def release_central_images(
    images: Tensor,
    labels: Tensor,
    num_classes: int,
    settings: WarmStart,
    budget: DPBudget,
    partition_key: bytes | None = None,
) -> Tensor:
    """The noisy mean image of every (class, subset) group, shape (classes·subsets, C, H, W), in [0, 1];
    subsets are drawn by a hash keyed with ``partition_key`` (a fresh secret key when None)."""
    flat = clip_rows(images.flatten(1).double(), settings.clip_norm)
    weight = COUNT_WEIGHT * settings.clip_norm
    rows = torch.cat([flat, torch.full((len(flat), 1), weight, dtype=flat.dtype)], 1)
    parts = (
        assign_parts(images, settings.subsets, partition_key)
        if settings.subsets > 1
        else torch.zeros(len(images), dtype=torch.long)
    )
    groups = labels.long() * settings.subsets + parts
    sums = torch.zeros(num_classes * settings.subsets, rows.shape[1], dtype=flat.dtype).index_add_(0, groups, rows)
    noisy = budget.release(
        sums,
        settings.clip_norm * math.sqrt(1 + COUNT_WEIGHT**2),
        dataset_size=len(images),
        noise_multiplier=settings.noise_multiplier,
        note=f"central images: sums of images clipped to norm {settings.clip_norm:g} and their counts, per class"
        + (f" and per one of {settings.subsets} hashed subsets" if settings.subsets > 1 else ""),
    )
    counts = (noisy[:, -1] / weight).clamp(min=1.0)
    return (noisy[:, :-1] / counts[:, None]).clamp(0, 1).float().view(-1, *images.shape[1:])


class CentralImagesWarmStart:
    """Mixin for an image model with hyperparameters ``image_shape`` and ``warm_start`` (and, for the
    default ``warm_start_step``, a conditional ``self.generator(code, labels)`` with ``code_dim``): the
    release and warm-start stages. Call ``init_warm_start()`` in ``__init__`` after ``num_classes`` is set."""

    def init_warm_start(self) -> None:
        self.warm_start = WarmStart.from_config(self.hparams.warm_start)
        groups = 0 if self.warm_start is None else self._release_classes() * self.warm_start.subsets
        # kept in Lightning checkpoints (resuming mid-plan skips the release); a model without a warm start
        # has none, so its state dict is that of the model before warm starts existed
        shape = (groups, *self.hparams.image_shape)
        self.register_buffer("central_images", torch.zeros(shape), persistent=self.warm_start is not None)

    def _release_classes(self) -> int:
        """Groups of central images per subset: one per class, or one for an unconditional model."""
        return self.num_classes or 1

    @staticmethod
    def warm_start_notes(config: dict[str, Any]) -> list[str]:
        """The card's sentence on the warm start, when the model had one."""
        settings = WarmStart.from_config(config["architecture"].get("warm_start"))
        if settings is None:
            return []
        groups = "class" if settings.subsets == 1 else f"class and each of {settings.subsets} hashed subsets of it"
        return [
            f"Warm start (DP-FETA's central images): the mean image of each {groups}, released first with the "
            f"Gaussian mechanism (images clipped to L2 norm {settings.clip_norm:g}, σ = {settings.noise_multiplier:g}: "
            f"the ledger's first entry), then the model fitted to them for {settings.steps:,} steps "
            "(post-processing) before its private stage. The central images are themselves a release of the "
            "ledger, so keeping them with the weights costs no further privacy."
        ]

    def warm_start_stages(self) -> list[Stage]:
        if self.warm_start is None:
            return []
        return [
            Release("central images", self._release_central_images),
            PublicSteps(WARM_START, max_steps=self.warm_start.steps),
        ]

    def in_warm_start(self) -> bool:
        return self.training_stage is not None and self.training_stage["name"] == WARM_START

    def _release_central_images(self, datamodule: Any, budget: DPBudget) -> None:
        datamodule.setup("fit")
        images, labels = datamodule.train_set.tensors
        if self.num_classes is None:  # one group per subset, whatever the data's labels
            labels = torch.zeros_like(labels)
        released = release_central_images(images, labels, self._release_classes(), self.warm_start, budget)
        self.central_images.copy_(released)

    def warm_start_step(self, step: int) -> Tensor:
        """One generator step on the kernel MMD to the central images (fresh public features each step)."""
        settings = self.warm_start
        seeded = torch.Generator().manual_seed(int(step) + 1)
        frequencies = mixture_frequencies(
            self.central_images[0].numel(), settings.features // 2, settings.kernel_widths, seeded, self.device
        )
        group_labels = torch.arange(len(self.central_images), device=self.device) // settings.subsets
        features = functools.partial(fourier_features, frequencies=frequencies)
        target = labelled_embedding(features(self.central_images), group_labels, self.num_classes)
        fitted = generated_embedding(
            self.generator, self.hparams.code_dim, self.num_classes, settings.batch_size, features, self.device
        )
        loss = (target / len(self.central_images) - fitted).square().sum()
        self.log("central_images_mmd", loss, prog_bar=True)
        return loss
