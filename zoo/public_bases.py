"""The public generator bases ``dpzoo train`` proposes for a small folder (issue 65).

A base is a generator fitted without noise to the exact embedding of data declared public, shipped with a card that
needs no guarantee. With a few hundred images per class, the release can only carry a small, noisy signal, and a
base supplies what images of the kind look like; ``dpzoo train`` then fine-tunes it on the one release of the
folder. Where the recipe's own release would be noisy for the folder (its forecast below ``USE_BELOW``),
the base is used if this machine can check that the folder shares no image with the base's public data (its record
index holds that data: the base was pretrained here), and proposed otherwise, with the flags that use it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from zoo.data.conversion import colour_mode, pixels
from zoo.data.folder_check import Fix, Problem
from zoo.release.layout import CONFIG_NAME
from zoo.release.loading import resolve

#: the recipe's own (full-shape) forecast below which a base is used or proposed: the ladder's cells with a base are
#: all below it (full-shape forecasts 0.05-1.5), and in each of the pairs run with and without one (colour 100
#: per class at ε = 10 and 300 at ε = 1, grey 100 at ε = 10), and on a user's folder (docs/own-data.md), the run from
#: the base came nearer
USE_BELOW = 3.0


@dataclass(frozen=True)
class PublicBase:
    model_id: str
    #: what its public data teaches, said plainly beside the proposal and on the card's data table
    knows: str


#: keyed by (method, channels) of the images ``dpzoo train`` reads
BASES = {
    ("dp-mepf", 3): PublicBase(
        "dp-mepf-cifar10-public-base",
        "32×32 colour photographs of airplanes, cars, birds, cats and deer (CIFAR-10 classes 0-4)",
    ),
    ("dp-mepf", 1): PublicBase("dp-mepf-mnist-public-base", "28×28 grey handwritten digits (MNIST)"),
}


def base_for(method: str, channels: int) -> PublicBase | None:
    """The base ``dpzoo train`` would propose for ``method`` on ``channels``-channel images (None: there is none)."""
    return BASES.get((method, channels))


def base_image_shape(init_from: str) -> tuple[int, int, int]:
    """The (channels, height, width) of the images a model (id or folder) takes, from its config.json alone."""
    channels, height, width = json.loads((resolve(init_from) / CONFIG_NAME).read_text())["architecture"]["image_shape"]
    return channels, height, width


def base_shape_problems(init_from: str, size: tuple[int, int], channels: int | None) -> list[Problem]:
    """A base that takes other images than the folder would be read as: a size near enough for the recipe is
    not near enough for the base, whose weights were fitted at its own size."""
    base_channels, height, width = base_image_shape(init_from)
    if tuple(size) == (height, width) and channels in (None, base_channels):
        return []
    read = f"{colour_mode(channels)} {pixels(size)}" if channels else pixels(size)
    fix = (("image_size", height), ("channels", base_channels)) if height == width else ()
    return [
        Problem(
            f"the images would be read as {read}, but the base {Path(init_from).name} "
            f"takes {colour_mode(base_channels)} {pixels((height, width))} images",
            (
                Fix(fix, f"read them as the base's {colour_mode(base_channels)} {pixels((height, width))}"),
                Fix(what="train without --init-from"),
            ),
        )
    ]
