"""Inception FID and KID from features: the samples pass through torch-fidelity's ``inception-v3-compat``
once; the reference enters FID through its stored statistics (``zoo.metrics.reference_statistics``), and
KID through the stored features of a fixed subset of it (shipped beside the statistics, else cached), so
that an FID and its KID against a shipped reference cost only the samples' pass.

The pass runs near the CPU's bound: each batch norm folded into its convolution (``fuse_conv_bn_eval``, the
same function in float32), the network in ``channels_last`` (oneDNN's fast layout) and batches of 128. On 2
shared CPU cores (``python benchmarks/evaluation_time.py --inception-throughput 128``, one run): torch-fidelity's
module as built 3.3 images/s at its batch of 64, channels_last 4.8, folded and channels_last 5.4, at batch 128
5.9; ``torch.inference_mode`` adds nothing. The features differ from the module as built by float32 rounding
(at most 1.4e-5 on 2,000 samples of dp-merf-cifar10-eps10, features being of order 0.1 to 5; batches of 128
give the same bits as batches of 64), the shipped statistics come from this pass, and an FID moves by about
4e-5 (2,000 samples against the CIFAR-10 test split: 228.20928 as built, 228.20932 now).

FID's plug-in estimate is biased upwards at small n (Chong & Forsyth, "Effectively Unbiased FID and
Inception Score and where to find them", CVPR 2020), so below ``SMALL_N`` samples KID, whose estimate
is unbiased, is reported beside it and the FID's protocol says so (``zoo.metrics.fidelity``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch_fidelity
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torch_fidelity.feature_extractor_base import FeatureExtractorBase
from torch_fidelity.feature_extractor_inceptionv3 import BasicConv2d
from torch_fidelity.metric_fid import fid_statistics_to_metric
from torch_fidelity.metric_kid import kid_features_to_metric
from torch_fidelity.utils import create_feature_extractor, get_featuresdict_from_dataset

from zoo.data.settings import cache_dir
from zoo.metrics.feature_pass import device_label, feature_device, feature_pass
from zoo.metrics.reference_statistics import (
    ReferenceStatistics,
    reference_statistics,
    shipped_kid_features,
    weights_sha256,
)
from zoo.metrics.uint8_images import Uint8Images, pixels_sha256

EXTRACTOR = "inception-v3-compat"
FEATURE_LAYER = "2048"
#: below this many samples FID's bias is large enough to report KID beside it
SMALL_N = 10_000
#: reference images whose features KID compares with (a fixed seeded subset of larger references)
KID_REFERENCE = 2_000
KID_SUBSET = 1_000
#: 9% faster than 64 on a CPU, the same features, 0.5 GB more memory at its peak (2.3 GB)
BATCH_SIZE = 128


def inception_extractor(weights: str | None, device: str | torch.device = "cpu") -> FeatureExtractorBase:
    """torch-fidelity's ``inception-v3-compat`` with ``weights`` (None: its download), on ``device`` (its CUDA
    device, else the CPU: ``zoo.metrics.feature_pass``), its batch norms folded and in ``channels_last`` (the
    module docstring)."""
    with feature_pass(feature_device(device)) as cuda:
        extractor = create_feature_extractor(
            EXTRACTOR, [FEATURE_LAYER], cuda=cuda, feature_extractor_weights_path=weights, verbose=False
        )
    return at_the_bound(extractor)


def at_the_bound(extractor: FeatureExtractorBase) -> FeatureExtractorBase:
    """``extractor`` (in eval mode) with each convolution's batch norm folded into it and its weights in
    ``channels_last``, in place: the same function, computed faster on a CPU."""
    for block in extractor.modules():
        if isinstance(block, BasicConv2d) and isinstance(block.bn, nn.BatchNorm2d):
            block.conv = fuse_conv_bn_eval(block.conv, block.bn)
            block.bn = nn.Identity()
    return extractor.to(memory_format=torch.channels_last)


def extractor_device(extractor: FeatureExtractorBase) -> torch.device:
    """Where ``extractor``'s weights are, and so where its feature passes run."""
    return next(extractor.parameters()).device


def inception_features(images: Tensor, extractor: FeatureExtractorBase, progress: bool = True) -> Tensor:
    """The 2,048 pool features of images in [0, 1] (N, C, H, W), as torch-fidelity computes them, on the
    extractor's device with TF32 off."""
    with feature_pass(extractor_device(extractor)) as cuda:
        features = get_featuresdict_from_dataset(
            Uint8Images(images), extractor, batch_size=BATCH_SIZE, cuda=cuda, save_cpu_ram=True, verbose=progress
        )
    return features[FEATURE_LAYER].double()


def inception_fid_kid(
    samples: Tensor,
    reference: Tensor,
    metrics: tuple[str, ...],
    extractor: FeatureExtractorBase,
    weights: str | None,
    weights_label: str,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """``fid`` and/or ``kid`` of ``samples`` against ``reference`` (float images in [0, 1]) with ``extractor``
    (holding ``weights``)."""
    sample_features = inception_features(samples, extractor, progress)
    protocol = {
        "feature_extractor": EXTRACTOR,
        "weights": weights_label,
        "weights_sha256": weights_sha256(weights),
        "samples": len(samples),
        "reference": len(reference),
        "computed_by": f"torch-fidelity {torch_fidelity.__version__} (features, FID and KID formulas)",
        "device": device_label(extractor_device(extractor)),
    }
    results: dict[str, dict[str, Any]] = {}
    extracted: dict[str, Tensor] = {}  # the reference's features, when FID's statistics had to be computed

    def reference_features(real: Tensor) -> Tensor:
        extracted["all"] = inception_features(real, extractor)
        return extracted["all"]

    if "fid" in metrics:
        statistics, _ = reference_statistics(reference, weights, reference_features)
        own = ReferenceStatistics.of_features(sample_features, "", "")
        fid = fid_statistics_to_metric(_as_fidelity(own), _as_fidelity(statistics), verbose=False)
        results["fid"] = {
            "value": float(fid["frechet_inception_distance"]),
            "protocol": {**protocol, "reference_sha256": statistics.pixels_sha256},
        }
    if "kid" in metrics:
        kid_reference = _kid_reference_features(reference, extractor, weights, extracted.get("all"))
        size = min(KID_SUBSET, len(sample_features), len(kid_reference))
        kid = kid_features_to_metric(sample_features.float(), kid_reference, kid_subset_size=size, verbose=False)
        results["kid"] = {
            "value": float(kid["kernel_inception_distance_mean"]),
            "std": float(kid["kernel_inception_distance_std"]),
            "protocol": {
                **protocol,
                "reference": len(kid_reference),
                "estimator": f"unbiased MMD², cubic polynomial kernel, 100 subsets of {size} per set",
            },
        }
    return results


def _as_fidelity(statistics: ReferenceStatistics) -> dict[str, Any]:
    """torch-fidelity's statistics dict: float32 μ and float64 Σ on both sides (its formula asserts equal dtypes)."""
    return {"mu": statistics.mu, "sigma": statistics.sigma}


def small_n_note(samples: int) -> dict[str, str]:
    """The protocol entry that says an FID of ``samples`` samples is biased upwards (none from ``SMALL_N``)."""
    if samples >= SMALL_N:
        return {}
    return {
        "bias": f"FID at {samples} < {SMALL_N:,} samples is biased upwards (Chong & Forsyth 2020): compare only at "
        "equal n, or use KID (unbiased), reported beside it"
    }


def kid_subset(count: int) -> Tensor:
    """The indices (sorted) of the at most ``KID_REFERENCE`` images of a reference of ``count`` that KID compares
    with: a subset seeded by nothing but the count, so a function of the reference alone."""
    return torch.randperm(count, generator=torch.Generator().manual_seed(0))[:KID_REFERENCE].sort().values


def _kid_reference_features(
    reference: Tensor, extractor: FeatureExtractorBase, weights: str | None, extracted: Tensor | None
) -> Tensor:
    """Features of at most ``KID_REFERENCE`` reference images (``kid_subset``): shipped beside the reference's
    statistics, else cached by their pixels, else taken from the ``extracted`` features of the whole reference
    where FID's pass computed them, or extracted now."""
    keep = kid_subset(len(reference))
    subset = reference[keep]
    pixels, network = pixels_sha256(subset), weights_sha256(weights)
    shipped = shipped_kid_features(pixels, network)
    if shipped is not None:
        return shipped
    name = f"kid-features-{pixels[:16]}-{len(subset)}-weights-{network[:16]}"
    path = cache_dir() / "fidelity" / f"{name}.safetensors"
    if path.is_file():
        return load_file(str(path))["features"]
    features = (extracted[keep] if extracted is not None else inception_features(subset, extractor)).float()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"features": features.contiguous()}, str(path))
    return features
