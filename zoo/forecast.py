"""What the release will look like, said before any training: the noise a method adds against a typical signal.

A one-shot mean-embedding release (DP-MERF, DP-MEPF) adds N(0, σ²) to each of the d coordinates of the sum
Σ φ(x) ⊗ e_y (each record's term of norm ≤ 1), with σ the one Gaussian that spends (ε, δ). Class c's mean then
carries noise of norm σ·√d / n_c, against a class mean whose norm is typically its release shape's signal (measured
on public images: ``zoo.release_shapes``). Their ratio is the forecast's signal-to-noise: below 1 the generator is
fitted mostly to noise, whatever the training length.

The forecast reads nothing of the private images but the counts per class the data owner already sees in the
summary; it is printed for them and never published.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zoo.release_shapes import TARGET, class_sigma, forecast_ratio, shape_of, shapes_for

#: below this signal-to-noise the release is mostly noise; from CLEAR, noise is a small part of it. Read from the
#: small-data ladder (``python benchmarks/small_data_ladder.py forecasts``, each cell's forecast beside its closeness):
#: every cell below 1 was far (closeness 0.74-1.07, with a base or without); between 1 and 5, none without a base
#: was near (0.40-0.61) and those from a base 0.29-0.47; every cell above 5 was near (0.17-0.34). CLEAR is the
#: release-size rule's own target, the forecast it sizes the release to reach
MOSTLY_NOISE = 1.0
CLEAR = TARGET


@dataclass(frozen=True)
class Forecast:
    """The smallest class's signal-to-noise, and the sentences that say what it means and what would change it."""

    signal_to_noise: float
    lines: tuple[str, ...]

    @property
    def mostly_noise(self) -> bool:
        return self.signal_to_noise < MOSTLY_NOISE


def mean_embedding_forecast(
    method: str,
    channels: int,
    epsilon: float,
    delta: float,
    images_per_class: Sequence[int],
    features: int,
    from_base: bool = False,
    settings: Mapping[str, Any] | None = None,
) -> Forecast | None:
    """The forecast of a one-shot release of ``features`` coordinates at (``epsilon``, ``delta``) over classes of
    ``images_per_class`` training images (``from_base``: the generator starts from a public base), with the signal of
    the release shape the model's ``settings`` carry (the recipe's where they match none); None for a method
    without a measured typical signal."""
    from zoo.privacy.accounting import epsilon_spent

    shapes = shapes_for(method, channels)
    if not shapes or not images_per_class:
        return None
    shape = shape_of(method, channels, dict(settings or {})) or shapes[0]
    signal = shape.signal
    released = release_sigma(epsilon, delta)
    shared = (settings or {}).get("shared_weight", 0.0)
    sigma = class_sigma(released, shared)  # the class parts' own, decoded beside a shared part
    noise = f"σ = {released:.3g}, {sigma:.3g} beside the shared part" if shared else f"σ = {sigma:.3g}"
    smallest = min(images_per_class)
    ratio = forecast_ratio(signal, features, sigma, smallest)
    verdict = _verdict(ratio)
    lines = [
        f"forecast: at ε = {epsilon:g} each class's mean carries noise of norm {sigma * features**0.5 / smallest:.3g} "
        f"({noise} on {features:,} features, {smallest:,} images in the smallest class) against a typical "
        f"class mean of norm {signal:.2g}: signal-to-noise {ratio:.2g}, {verdict}",
    ]
    if ratio < CLEAR:
        needed_images = int(CLEAR * sigma * features**0.5 / signal) + 1
        clear_sigma = signal * smallest / (CLEAR * features**0.5) * released / sigma  # the release's own σ
        needed_epsilon = epsilon_spent([(clear_sigma, 1.0, 1)], delta, "pld")  # PRV gives out at large ε
        changes = [f"{needed_images:,} images per class at this ε", f"ε ≈ {needed_epsilon:.3g} with these images"]
        if shape != shapes[-1]:
            changes.append(f"a smaller release (--release-size {shapes[-1].name})")
        if not from_base:
            changes.append("a public base to fine-tune from (--init-from)")
        lines.append(f"  to reach signal-to-noise {CLEAR:g}: {'; or '.join(changes)}; or fewer, larger classes")
    return Forecast(ratio, tuple(lines))


@functools.cache
def release_sigma(epsilon: float, delta: float) -> float:
    """The noise multiplier of the one Gaussian release (sensitivity 1) that spends (ε, δ), by PRV (computed once per
    (ε, δ): the plan's shape choice and the forecast before training ask for the same)."""
    from zoo.privacy.accounting import calibrate_noise_multiplier

    return calibrate_noise_multiplier(epsilon, delta, 1.0, 1, "prv", [])


def forecast_for(model: Any, datamodule: Any, budget: Any) -> Forecast | None:
    """The forecast of ``model``'s release on ``datamodule``'s training images under ``budget``; None for a
    method that releases no mean embedding, or a budget with no target ε."""
    import torch

    embedding = getattr(model, "released_embedding", None)
    if embedding is None or getattr(budget, "target_epsilon", None) is None:
        return None
    datamodule.setup("fit")
    counts = torch.bincount(datamodule.train_set.tensors[1].long(), minlength=model.num_classes).tolist()
    from_base = bool(model.privacy_ledger is not None and model.privacy_ledger.public_data)
    channels = int(model.hparams.image_shape[0])
    epsilon, delta, features = budget.target_epsilon, budget.delta, int(embedding.shape[0])
    return mean_embedding_forecast(model.method, channels, epsilon, delta, counts, features, from_base, model.hparams)


def _verdict(ratio: float) -> str:
    if ratio < MOSTLY_NOISE:
        return "the release will be mostly noise: expect samples that do not look like your images"
    if ratio < CLEAR:
        return "noisy: expect blurred class averages more than varied images"
    return "the noise is a small part of the release"
