"""The verdict's closeness (issue 55): KID's estimator as torch-fidelity computes it; 0 for fresh draws of the
held-out distribution, about 1 for each class's average image, far for swapped classes; fresh randomness."""

import pytest
import torch
from torch_fidelity.metric_kid import kernel_mmd

from zoo.metrics.closeness import FAR, NEAR, Closeness, closeness, cubic_kernel_mmd2

CLASSES = ["a", "b", "c"]


def _draw(per_class: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (per_class * 3, 1, 4, 4) of two modes per class, so that a class's average image is none of them."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(len(CLASSES)).repeat_interleave(per_class)
    centres = torch.linspace(-2, 2, len(CLASSES))[labels].view(-1, 1, 1, 1)
    modes = 3 * (2 * torch.randint(0, 2, centres.shape, generator=generator) - 1)
    return centres + modes + 0.3 * torch.randn(len(labels), 1, 4, 4, generator=generator), labels


def _flat(images: torch.Tensor) -> torch.Tensor:
    return images.flatten(1).double()


def test_the_estimator_is_kids_unbiased_mmd2() -> None:
    x, y = torch.randn(30, 8, dtype=torch.float64), torch.randn(30, 8, dtype=torch.float64) + 0.3
    theirs = kernel_mmd(
        x.numpy(),
        y.numpy(),
        kid_kernel="poly",
        kid_kernel_poly_degree=3,
        kid_kernel_poly_gamma=None,
        kid_kernel_poly_coef0=1,
    )
    assert cubic_kernel_mmd2(x, y) == pytest.approx(float(theirs), rel=1e-9)


def test_fresh_draws_are_near_averages_at_one_and_swapped_classes_far() -> None:
    held_out, held_labels = _draw(200, seed=0)
    fresh, fresh_labels = _draw(100, seed=1)
    generator = torch.Generator().manual_seed(2)

    def score(samples: torch.Tensor, labels: torch.Tensor) -> Closeness:
        return closeness(samples, labels, held_out, held_labels, CLASSES, _flat, generator)

    assert abs(score(fresh, fresh_labels).value) < 0.15
    averages = torch.stack([held_out[held_labels == c].mean(0) for c in range(3)])[fresh_labels]
    assert score(averages, fresh_labels).value == pytest.approx(1, abs=0.1)
    swapped = score(fresh, (fresh_labels + 1) % 3)
    assert swapped.value > FAR and set(swapped.per_class) == set(CLASSES)
    assert "far from your held-out images" in swapped.sentence() and "train for" not in swapped.sentence()
    assert "train for the recipe's full steps" in swapped.sentence(trained_fully=False)
    assert "public base" in swapped.sentence() and "public base" not in swapped.sentence(from_base=True)
    assert Closeness(NEAR / 2, {}, 1, 1).sentence() == "near your held-out images"


def test_a_class_without_enough_held_out_images_is_left_out() -> None:
    held_out, held_labels = _draw(10, seed=0)
    keep = (held_labels != 2) | (torch.arange(len(held_labels)) % 10 < 3)  # class c keeps 3 images
    samples, labels = _draw(5, seed=1)
    result = closeness(samples, labels, held_out[keep], held_labels[keep], CLASSES, _flat, torch.Generator())
    assert set(result.per_class) == {"a", "b"}
