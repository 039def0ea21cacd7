"""DP-MEPF's feature map: each record's perceptual features, in parts that each have L2 norm at most 1.

Parts, in this order (a part of weight 0 is left out):
- ``mean``: the outputs of the chosen taps of a frozen public network (``public_networks``: its stem and any
  of its blocks, read through timm's ``forward_intermediates`` at any input size), their spatial layout
  kept (``pool`` = 0) or each tap average-pooled to a ``pool`` × ``pool`` grid of its channels (fewer
  coordinates, so less noise per class: ``zoo.release_shapes`` sizes a release to the data with it), or each
  tap's flattened output multiplied by a random Gaussian matrix to ``project`` coordinates (a Johnson-Lindenstrauss
  projection: inner products of the layout kept in expectation, with ``project`` coordinates' noise; the matrices
  are public randomness drawn from ``seed`` and the tap's index, rebuilt from them, never stored), each
  tap's flattened output then scaled to norm 1/√L for L taps (DP-MEPF's per-layer normalisation), so the
  part has norm 1;
- ``second``: the same with each output squared elementwise (the second moments' features), normalised
  the same way;
- ``pixels``: DP-MERF's random Fourier features of the pixels (norm 1), which carry variety that
  pooled network features miss.

A block output of norm 0 stays 0, so every part has norm ≤ 1. Pooling and the projection are fixed linear maps of a
tap's output (neither depends on any record) applied before that tap's normalisation, so they leave the bound as
it is: whatever a record's pooled or projected output, its normalised tap has norm 1/√L or 0. ``part_weights``
(w_k, with Σ w_k² = 1, one entry per feature) weight the parts for a release: ‖w ⊙ φ(x)‖ ≤ 1 for every x. The
network runs in float32 (``network_bf16``: under bfloat16 autocast on a CUDA device, a no-op on the CPU); the
normalisation in the input's dtype, so in float64 each norm is ≤ 1 within 1e-12 whatever the network computed. The
bound rests on the normalisation after the network alone, so the network's precision never touches it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional

from lightning_modules.nets.public_networks import PublicNetwork, public_network
from lightning_modules.nets.random_features import RandomFourierFeatures
from zoo.errors import UserError

PARTS = ("mean", "second", "pixels")
#: the projections' seeds lie apart from the pixel features' (``RandomFourierFeatures`` seeds with ``seed`` itself)
PROJECTION_STREAM = 1_000_003


class PerceptualFeatures(nn.Module):
    def __init__(
        self,
        image_shape: Sequence[int],
        network: str = "efficientnet_lite0",
        blocks: Sequence[int] = (1, 2, 3, 4),
        input_size: int = 32,
        stem: bool = False,
        network_bf16: bool = False,
        mean_weight: float = 1.0,
        second_weight: float = 0.0,
        pixel_weight: float = 0.0,
        pixel_features: int = 10_000,
        pixel_kernel_width: float = math.sqrt(20),
        seed: int = 0,
        pool: int = 0,
        project: int = 0,
    ) -> None:
        super().__init__()
        weights = torch.tensor([mean_weight, second_weight, pixel_weight], dtype=torch.float64)
        if (weights < 0).any() or weights.sum() == 0 or weights[:2].sum() == 0:
            raise UserError(
                "the part weights must be >= 0 with a network part (mean or second) weighted > 0, got "
                f"mean {mean_weight}, second {second_weight}, pixels {pixel_weight}"
            )
        self.network_spec: PublicNetwork = public_network(network)
        count = self.network_spec.blocks
        if not (blocks or stem) or not all(0 <= block < count for block in blocks):
            raise UserError(
                f"blocks must be indices of {network}'s blocks 0..{count - 1} (at least one, or the stem), got "
                f"{list(blocks)}"
            )
        if input_size < 1:
            raise UserError(f"input_size must be a positive number of pixels, got {input_size}")
        if pool < 0:
            raise UserError(f"pool is the side of each tap's pooled grid (0: the layout kept), got {pool}")
        if project < 0 or (project and pool):
            raise UserError(
                f"project is the coordinates each tap is projected to (0: none), with pool 0; got project {project}, "
                f"pool {pool}"
            )
        self.image_shape = tuple(image_shape)
        self.blocks = tuple(sorted(set(blocks)))
        self.stem = stem
        self.input_size = input_size
        self.pool = pool
        self.network_bf16 = network_bf16
        self.weights = dict(zip(PARTS, (weights / weights.norm()).tolist(), strict=True))
        self.pixels = (
            RandomFourierFeatures(math.prod(self.image_shape), pixel_features, pixel_kernel_width, seed)
            if pixel_weight > 0
            else None
        )
        self.__dict__["_network"] = None  # loaded on first use, and never part of a state dict (public, rebuilt)
        self.projection_names: list[str] = []  # none until the taps' sizes are known: _tap_outputs reads them
        tap_sizes = self._tap_sizes()
        for index, size in enumerate(tap_sizes if project else []):
            self.register_buffer(f"projection{index}", tap_projection(size, project, seed, index), persistent=False)
            self.projection_names.append(f"projection{index}")
        self.part_sizes = self._part_sizes([project] * len(tap_sizes) if project else tap_sizes)
        self.register_buffer("part_weights", self._weight_per_feature(), persistent=False)

    @property
    def network(self) -> nn.Module:
        if self.__dict__["_network"] is None:
            self.__dict__["_network"] = self.network_spec.load()
        return self.__dict__["_network"]

    def check_available(self) -> None:
        """Raise MissingFeatureNetwork (with the pip command) if the network's weights are not installed."""
        self.network_spec.weights_path()

    def forward(self, images: Tensor) -> Tensor:
        """(n, ...) images in [0, 1] of ``image_shape`` → (n, features), the parts concatenated, unweighted."""
        images = images.reshape(len(images), *self.image_shape)
        outputs = self._tap_outputs(images.float(), self.network)
        parts = []
        if self.weights["mean"] > 0:
            parts.append(_unit_per_block([o.to(images.dtype) for o in outputs]))
        if self.weights["second"] > 0:
            parts.append(_unit_per_block([o.to(images.dtype).square() for o in outputs]))
        if self.pixels is not None:
            parts.append(self.pixels(images.flatten(1)))
        return torch.cat(parts, 1)

    def unit_blocks(self, images: Tensor) -> list[Tensor]:
        """Each chosen tap's flattened output (the stem's first, then the blocks') scaled to norm 1 (0 stays 0):
        the taps of the ``mean`` part one by one, for diagnostics that compare them tap by tap."""
        images = images.reshape(len(images), *self.image_shape).float()
        outputs = [o.float() for o in self._tap_outputs(images, self.network)]
        return [o / o.norm(dim=1, keepdim=True).clamp_min(1e-30) for o in outputs]

    def _tap_outputs(self, images: Tensor, network: nn.Module) -> list[Tensor]:
        """The chosen taps' outputs, pooled to ``pool`` × ``pool`` where asked, flattened: grey repeated to three
        channels, resized to ``input_size``."""
        network = network.to(images.device)
        if images.shape[1] == 1:
            images = images.expand(-1, 3, -1, -1)
        if images.shape[-2:] != (self.input_size, self.input_size):
            images = functional.interpolate(images, size=self.input_size, mode="bilinear", align_corners=False)
        with torch.autocast(images.device.type, dtype=torch.bfloat16, enabled=self.network_bf16 and images.is_cuda):
            outputs = self.network_spec.taps(network, images, self.blocks, self.stem)
        if self.pool:
            outputs = [functional.adaptive_avg_pool2d(o, min(self.pool, *o.shape[-2:])) for o in outputs]
        flat = [o.flatten(1) for o in outputs]
        if self.projection_names:
            matrices = [getattr(self, name) for name in self.projection_names]
            flat = [o @ matrix.to(o.dtype) for o, matrix in zip(flat, matrices, strict=True)]
        return flat

    def _tap_sizes(self) -> list[int]:
        """Each tap's flattened output size, from one pass of a blank image through the network's architecture (no
        weights needed)."""
        blank = torch.zeros(1, *self.image_shape)
        with torch.no_grad():
            return [o.shape[1] for o in self._tap_outputs(blank, self.network_spec.architecture())]

    def _part_sizes(self, tap_sizes: list[int]) -> dict[str, int]:
        """Features per part, from each tap's released size."""
        network_features = sum(tap_sizes)
        sizes = {part: network_features for part in ("mean", "second") if self.weights[part] > 0}
        if self.pixels is not None:
            sizes["pixels"] = self.pixels.features
        return sizes

    def _weight_per_feature(self) -> Tensor:
        """In float64: float32 rounding of the weights alone would put ‖w ⊙ φ(x)‖ up to 1 + 4e-8."""
        sizes = self.part_sizes.items()
        return torch.cat([torch.full((size,), self.weights[part], dtype=torch.float64) for part, size in sizes])

    @property
    def features(self) -> int:
        return int(sum(self.part_sizes.values()))


def taps_description(blocks: Sequence[int], stem: bool) -> str:
    """The taps in words, for the card and the ledger: ``blocks [1, 2]``, ``the stem and blocks [0, 1]``."""
    named = [*(["the stem"] if stem else []), *([f"blocks {list(blocks)}"] if blocks else [])]
    return " and ".join(named)


def tap_projection(size: int, coordinates: int, seed: int, tap: int) -> Tensor:
    """A (size, coordinates) matrix of N(0, 1/coordinates) entries, drawn from ``seed`` and the tap's index: public
    randomness that any holder of the model's config rebuilds."""
    generator = torch.Generator().manual_seed(PROJECTION_STREAM + 1000 * seed + tap)
    return torch.randn(size, coordinates, generator=generator) / math.sqrt(coordinates)


def _unit_per_block(outputs: list[Tensor]) -> Tensor:
    """Each tap's output scaled to norm 1/√L (0 stays 0), concatenated: norm ≤ 1."""
    scale = math.sqrt(len(outputs))
    return torch.cat([o / (o.norm(dim=1, keepdim=True).clamp_min(1e-30) * scale) for o in outputs], 1)
