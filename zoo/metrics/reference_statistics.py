"""Inception statistics of a reference set, stored compactly and used only where they belong.

An FID needs the reference images' feature mean μ and covariance Σ, not the images: dpzoo keeps
them as float32 μ and the upper triangle of Σ (8.4 MB for 2,048 features) with the sha256 of the
uint8 pixels they were computed from and of the extractor's weights (their tensors' contents, so
the digest does not depend on how the file was saved). A statistics file is used only when both
digests match: it cannot stand in for other images or another network.

dpzoo ships the statistics of the reference sets its cards are evaluated against
(``zoo/metrics/statistics/``), computed by ``zoo.metrics.ship_reference_statistics``, and in the same file the
features of the subset of the reference that KID compares with (``zoo.metrics.inception_fid.kid_subset``: 2,000
images, 16.4 MB as float32, named by the digest of their own pixels), so that such an FID, and the KID that comes
beside it below 10,000 samples, cost only the samples' pass; the statistics and KID features of any other reference
are computed on first use and kept under ``DPZOO_CACHE_DIR``. Only references outside every shipped model's
protected records are shipped: a test split, never a training split, and a shipped file holds nothing but
functions of that split (its features' mean and covariance, the features of a subset chosen by a fixed seed).

    python -m zoo.metrics.ship_reference_statistics --dataset cifar10 --split test
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import Tensor

from zoo.data.settings import cache_dir
from zoo.errors import UserError
from zoo.metrics.uint8_images import pixels_sha256

SHIPPED_DIR = Path(__file__).parent / "statistics"
FORMAT = "dpzoo-reference-statistics/1"
#: the optional tensor of a statistics file: the float32 features of the reference's KID subset
KID_FEATURES = "kid_features"


@dataclass(frozen=True)
class ReferenceStatistics:
    """μ (float32, as torch-fidelity computes it) and Σ (float64) of ``count`` images' features."""

    mu: np.ndarray
    sigma: np.ndarray
    count: int
    pixels_sha256: str
    weights_sha256: str
    description: str = ""

    @classmethod
    def of_features(cls, features: Tensor, pixels: str, weights: str, description: str = "") -> ReferenceStatistics:
        array = features.double().numpy()
        mu = array.mean(axis=0).astype(np.float32)
        return cls(mu, np.cov(array, rowvar=False), len(array), pixels, weights, description)

    def save(self, path: Path, kid_features: Tensor | None = None, kid_pixels_sha256: str = "") -> None:
        """Write float32 μ and Σ's upper triangle, with the digests as safetensors metadata, and optionally the
        features of the reference's KID subset with the digest of that subset's pixels."""
        upper = np.triu_indices(len(self.mu))
        metadata = {
            "format": FORMAT,
            "count": str(self.count),
            "pixels_sha256": self.pixels_sha256,
            "weights_sha256": self.weights_sha256,
            "description": self.description,
        }
        tensors = {
            "mu": torch.from_numpy(np.ascontiguousarray(self.mu, dtype=np.float32)),
            "sigma_upper": torch.from_numpy(self.sigma[upper].astype(np.float32)),
        }
        if kid_features is not None:
            if not kid_pixels_sha256:
                raise ValueError("KID features are stored with the digest of their images' pixels")
            tensors[KID_FEATURES] = kid_features.float().contiguous()
            metadata["kid_pixels_sha256"] = kid_pixels_sha256
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        save_file(tensors, str(partial), metadata=metadata)
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> ReferenceStatistics:
        with safe_open(str(path), framework="pt") as stored:
            metadata = stored.metadata() or {}
            if metadata.get("format") != FORMAT:
                raise UserError(f"{path} is not a dpzoo reference statistics file ({FORMAT})")
            mu = stored.get_tensor("mu").numpy()
            upper = stored.get_tensor("sigma_upper").double().numpy()
        sigma = np.zeros((len(mu), len(mu)))
        sigma[np.triu_indices(len(mu))] = upper
        sigma = sigma + np.triu(sigma, 1).T
        return cls(
            mu,
            sigma,
            int(metadata["count"]),
            metadata["pixels_sha256"],
            metadata["weights_sha256"],
            metadata.get("description", ""),
        )


def stored_digests(path: Path) -> tuple[str, str]:
    """(pixels, weights) sha256 of a statistics file, read from its header alone."""
    with safe_open(str(path), framework="pt") as stored:
        metadata = stored.metadata() or {}
    return metadata.get("pixels_sha256", ""), metadata.get("weights_sha256", "")


def shipped_kid_features(pixels: str, weights: str) -> Tensor | None:
    """The shipped float32 features of the KID subset whose uint8 pixels have the digest ``pixels``, computed
    with the weights whose digest is ``weights``; None when no shipped file holds them."""
    for path in sorted(SHIPPED_DIR.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as stored:
            metadata = stored.metadata() or {}
            held = (metadata.get("kid_pixels_sha256"), metadata.get("weights_sha256"))
            if held == (pixels, weights) and KID_FEATURES in stored.keys():
                return stored.get_tensor(KID_FEATURES)
    return None


@functools.cache
def weights_sha256(weights: str | None) -> str:
    """The digest of an extractor's weights file by its tensors' names and contents (torch-fidelity's
    download, which dpzoo does not hold, by its name)."""
    if weights is None:
        return hashlib.sha256(b"torch-fidelity download").hexdigest()
    state = torch.load(weights, map_location="cpu", weights_only=True)
    digest = hashlib.sha256()
    for name in sorted(state):
        digest.update(name.encode())
        digest.update(state[name].contiguous().numpy().tobytes())
    return digest.hexdigest()


def reference_statistics(
    reference: Tensor, weights: str | None, features: Callable[[Tensor], Tensor], description: str = ""
) -> tuple[ReferenceStatistics, str]:
    """The statistics of ``reference`` under ``weights``, and where they came from: shipped with dpzoo,
    cached by an earlier FID, or computed now from ``features(reference)`` (and then cached)."""
    pixels, network = pixels_sha256(reference), weights_sha256(weights)
    for path in sorted(SHIPPED_DIR.glob("*.safetensors")):
        if stored_digests(path) == (pixels, network):
            return ReferenceStatistics.load(path), f"shipped with dpzoo ({path.name})"
    cached = cache_dir() / "fidelity" / f"statistics-{pixels[:16]}-{len(reference)}-weights-{network[:16]}.safetensors"
    if cached.is_file() and stored_digests(cached) == (pixels, network):
        return ReferenceStatistics.load(cached), "computed by an earlier evaluation and cached"
    statistics = ReferenceStatistics.of_features(features(reference), pixels, network, description)
    statistics.save(cached)
    return statistics, "computed from the reference images"
