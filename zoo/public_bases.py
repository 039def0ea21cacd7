"""The public generator bases ``dpzoo train`` proposes for a small folder (issue 65).

A base is a generator fitted without noise to the exact embedding of data declared public, shipped with a card that
needs no guarantee. With a few hundred images per class, the release can only carry a small, noisy signal, and a
base supplies what images of the kind look like; ``dpzoo train`` then fine-tunes it on the one release of the
folder. Where the recipe's own release would be noisy for the folder (its forecast below ``zoo.forecast.CLEAR``),
the base is used if this machine can check that the folder shares no image with the base's public data (its record
index holds that data: the base was pretrained here), and proposed otherwise, with the flags that use it.
"""

from __future__ import annotations

from dataclasses import dataclass


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
