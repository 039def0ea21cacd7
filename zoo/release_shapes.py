"""The shape of a mean-embedding release, sized to the data before the release (issue 65).

A class's released mean carries noise of norm σ·√d / n_c for d coordinates per class, so the richest feature map is
the wrong one for a few hundred images per class: it buries the class means in noise. Each shape below is a set of
changes to a method's recipe (fewer coordinates: each tap of the public network average-pooled to a small grid or
randomly projected, fewer random features of the pixels) with its coordinate count d and the typical norm of one
class's mean of its features, measured on public images (``experiments/forecast/shape_signals.py``). The rule
(``choose_shape``) takes the richest shape whose forecast signal-to-noise reaches ``TARGET``, else the smallest
(among the shapes it may choose); ``--release-size NAME`` overrides it.

The choice reads only what the data owner's summary already shows and what is public by convention for a release
of this kind: the training images per class, ε and δ. It changes which features are released, never their bound:
each shape's features keep norm ≤ 1 per record (``lightning_modules.nets.perceptual_features``), so the theorem of
the method's release holds for every shape. A shape is named in the config the model records, and so on its card.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zoo.errors import UserError

#: the forecast signal-to-noise the rule asks of the smallest class. Chosen on the tuning pools of
#: ``benchmarks/small_data_ladder.py`` (CIFAR-10 validation images of classes 0-4, no base, ε = 10, 800 steps, scored on
#: the other validation images of those classes): at 100 per class the pooled shape (forecast 7.1) came far nearer than
#: grid2 (3.5), closeness 0.34 against 0.61, though its CNN CAS was lower (29.9 against 36.5); 3 had chosen grid2
TARGET = 5.0
#: the methods whose release may hold a part shared by all classes (``--shared-part``)
SHARED_PART_METHODS = ("dp-mepf",)
#: the methods whose released class means ``dpzoo train`` shrinks toward their common mean (unless ``--no-shrink``)
SHRINKING_METHODS = ("dp-mepf", "dp-merf")
#: what the recipe itself releases (the shape the full-data models were chosen and shipped with)
RECIPE = "full"


@dataclass(frozen=True)
class ReleaseShape:
    """A release's shape for one method and kind of image: the recipe's model settings it changes, its
    coordinates per class and its typical class-mean norm (measured on public images, see the module)."""

    name: str
    words: str
    features: int
    signal: float
    changes: dict[str, Any] = field(default_factory=dict)
    #: the rule may choose it; False for a shape given only when asked (``--release-size``): measured on too few
    #: tuning runs, or too slow per step, to enter the rule yet
    ruled: bool = True


def _mepf(pooled: int, pixels: int, blocks: list[int], **more: Any) -> dict[str, Any]:
    """DP-MEPF's settings of a shape: ``blocks`` is the recipe's own, named so that a release of other taps is no shape
    of the recipe's, whatever its pooling."""
    return {"pool": pooled, "pixel_features": pixels, "blocks": blocks, **more}


#: the blocks of EfficientNet-Lite0 the colour (CIFAR-10) and grey (MNIST) recipes tap
COLOUR_TAPS, GREY_TAPS = [0, 1, 2, 3, 4], [1, 2, 3, 4]


#: keyed by (method, channels) of the recipe ``dpzoo train`` chooses, ordered richest first. DP-MEPF colour: the
#: CIFAR-10 recipes (EfficientNet-Lite0 blocks 0-4, 272 channels; the smaller shapes read the network at the
#: images' own 32×32, a quarter of the recipe's feature pass per step); grey: the MNIST recipes (blocks 1-4
#: at 32×32, 256 channels); signals from python experiments/forecast/shape_signals.py (2,000 CIFAR-10 validation
#: images of classes 0-4; 2,000 MNIST validation images).
SHAPES: dict[tuple[str, int], tuple[ReleaseShape, ...]] = {
    ("dp-mepf", 3): (
        ReleaseShape(
            RECIPE,
            "the taps' spatial layout kept at 64×64 input, 10,000 pixel features",
            38_160,
            0.690,
            _mepf(0, 10_000, COLOUR_TAPS, input_size=64),
        ),
        ReleaseShape(
            "grid4",
            "each tap pooled to 4×4 at 32×32 input, 2,000 pixel features",
            4_048,
            0.767,
            _mepf(4, 2_000, COLOUR_TAPS, input_size=32),
        ),
        ReleaseShape(
            "grid2",
            "each tap pooled to 2×2 at 32×32 input, 1,000 pixel features",
            2_088,
            0.789,
            _mepf(2, 1_000, COLOUR_TAPS, input_size=32),
        ),
        ReleaseShape(
            "projected",
            "each tap's layout at 64×64 input randomly projected to 54 coordinates, 250 pixel features",
            520,
            0.672,
            _mepf(0, 250, COLOUR_TAPS, input_size=64, project=54),
            ruled=False,
        ),
        ReleaseShape(
            "pooled",
            "each tap averaged over its layout at 32×32 input, 250 pixel features",
            522,
            0.812,
            _mepf(1, 250, COLOUR_TAPS, input_size=32),
        ),
    ),
    ("dp-mepf", 1): (
        ReleaseShape(
            RECIPE, "the taps' spatial layout kept, 10,000 pixel features", 12_944, 0.861, _mepf(0, 10_000, GREY_TAPS)
        ),
        ReleaseShape("grid2", "each tap pooled to 2×2, 1,000 pixel features", 2_024, 0.886, _mepf(2, 1_000, GREY_TAPS)),
        ReleaseShape(
            "pooled", "each tap averaged over its layout, 250 pixel features", 506, 0.898, _mepf(1, 250, GREY_TAPS)
        ),
    ),
    # DP-MERF's one shape (10,000 random Fourier features), measured on the named datasets' test images before
    # the shapes were (experiments/forecast/class_mean_norms.py)
    ("dp-merf", 3): (ReleaseShape(RECIPE, "10,000 random Fourier features", 10_000, 0.662, {"features": 10_000}),),
    ("dp-merf", 1): (ReleaseShape(RECIPE, "10,000 random Fourier features", 10_000, 0.376, {"features": 10_000}),),
}


def shape_of(method: str, channels: int, settings: dict[str, Any]) -> ReleaseShape | None:
    """The shape whose changes ``settings`` (a model's hyperparameters) carry; None for a release of another shape."""
    matching = [s for s in shapes_for(method, channels) if all(_same(settings.get(k), v) for k, v in s.changes.items())]
    return matching[0] if matching else None


def _same(setting: Any, value: Any) -> bool:
    """A setting as a model holds it (blocks a tuple) or as its config records it (a list) against a shape's value."""
    if isinstance(setting, (list, tuple)) and isinstance(value, (list, tuple)):
        return list(setting) == list(value)
    return setting == value


def shapes_for(method: str, channels: int) -> tuple[ReleaseShape, ...]:
    """The shapes a release of ``method`` on ``channels``-channel images may take (none: it is not sized)."""
    return SHAPES.get((method, channels), ())


def shape_names(method: str) -> list[str]:
    """Every shape name ``--release-size`` accepts for ``method``, whatever the images."""
    names = [shape.name for (owner, _), shapes in SHAPES.items() if owner == method for shape in shapes]
    return list(dict.fromkeys(names))


def forecast_ratio(signal: float, features: int, sigma: float, smallest: int) -> float:
    """The forecast signal-to-noise of the smallest class's mean: signal·n_c / (σ·√d) for d released features."""
    return signal * smallest / (sigma * features**0.5)


def signal_to_noise(shape: ReleaseShape, sigma: float, smallest: int) -> float:
    """``forecast_ratio`` of a release of ``shape``."""
    return forecast_ratio(shape.signal, shape.features, sigma, smallest)


@dataclass(frozen=True)
class ShapeChoice:
    shape: ReleaseShape
    #: why, in one line for the summary
    reason: str
    #: another shape than the recipe's own, so the recipe's settings change
    resized: bool


def choose_shape(
    method: str,
    channels: int,
    sigma: float,
    images_per_class: Sequence[int],
    asked: str | None = None,
    shared: float = 0.0,
) -> ShapeChoice | None:
    """The release's shape for classes of ``images_per_class`` training images at noise multiplier ``sigma``: the
    ``asked`` one (``--release-size``), else the richest whose forecast reaches ``TARGET``, else the smallest; None
    for a method whose release has one shape only. Beside a part shared by all classes of weight ``shared``
    (``--shared-part``) the class parts' forecasts are at the noise multiplier ``class_sigma`` gives."""
    shapes = shapes_for(method, channels)
    if len(shapes) < 2 or not images_per_class:
        return None
    smallest = min(images_per_class)
    by_class = class_sigma(sigma, shared)
    forecasts = ", ".join(f"{s.name} {signal_to_noise(s, by_class, smallest):.2g}" for s in shapes)
    if asked is not None:
        named = [s for s in shapes if s.name == asked]
        if not named:
            kind = "colour" if channels == 3 else "grey"
            have = ", ".join(s.name for s in shapes)
            raise UserError(f"--release-size {asked} is no shape of {method}'s release on {kind} images: one of {have}")
        (shape,) = named
        reason = f"as asked (--release-size); forecast signal-to-noise by shape: {forecasts}"
    else:
        reaching = [s for s in shapes if s.ruled and signal_to_noise(s, by_class, smallest) >= TARGET]
        shape = reaching[0] if reaching else shapes[-1]
        why = (
            f"the richest shape whose forecast reaches {TARGET:g}"
            if reaching
            else f"the smallest shape, as none reaches {TARGET:g}"
        )
        reason = f"{why} with {smallest:,} images in the smallest class ({forecasts})"
    if shared:
        total = sum(images_per_class)
        reason += (
            f"; with a part shared by all classes of weight {shared:g} (--shared-part), the class parts carry "
            f"{by_class / sigma:.3g}× the noise of a release without it, and the mean of all {total:,} images "
            f"forecasts signal-to-noise {signal_to_noise(shape, sigma / shared, total):.2g}"
        )
    return ShapeChoice(shape, reason, shape != shapes[0])


def class_weight(shared: float) -> float:
    """c = √(1 − s²): the class parts' weight beside a part shared by all classes of weight s
    (``lightning_modules.parts.shared_part``)."""
    return math.sqrt(1 - shared**2)


def class_sigma(sigma: float, shared: float) -> float:
    """The noise multiplier of the class parts, decoded, beside a shared part of weight ``shared``: σ / c."""
    return sigma / class_weight(shared)
