"""FID, KID, IS and precision/recall through torch-fidelity.

``fid``/``kid``/``isc`` use torch-fidelity's Inception-v3 (``prc`` its VGG-16), downloaded by
torch-fidelity on first use or read from a local file; ``*_lenet`` use dpzoo's small
extractor and are named so that they are never mistaken for Inception FID.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch_fidelity
from torch import Tensor
from torch.utils.data import Dataset

from zoo.metrics.extractors import FEATURE_LAYER, register_lenet

WEIGHTS_ENV = "DPZOO_INCEPTION_WEIGHTS"
INCEPTION_METRICS = {"fid": "fid", "kid": "kid", "isc": "isc", "prc": "prc"}
LENET_METRICS = {"fid_lenet": "fid", "kid_lenet": "kid", "isc_lenet": "isc"}
FIDELITY_METRICS = (*INCEPTION_METRICS, *LENET_METRICS)
_RESULT_KEYS = {
    "fid": ("frechet_inception_distance",),
    "kid": ("kernel_inception_distance_mean", "kernel_inception_distance_std"),
    "isc": ("inception_score_mean", "inception_score_std"),
    "prc": ("precision", "recall"),
}


class FeatureWeightsUnavailable(RuntimeError):
    """Inception (or VGG) weights could not be downloaded and no local file was given."""


class Uint8Images(Dataset):
    """Float images in [0, 1] as the uint8 RGB tensors torch-fidelity reads (grey repeated)."""

    def __init__(self, images: Tensor) -> None:
        self.images = (images.clamp(0, 1) * 255).round().to(torch.uint8)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> Tensor:
        image = self.images[index]
        return image.expand(3, *image.shape[1:]) if image.shape[0] == 1 else image


def fidelity_metrics(
    samples: Tensor,
    reference: Tensor,
    metrics: tuple[str, ...],
    dataset: str,
    weights_path: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Compare ``samples`` with ``reference`` (both float in [0, 1], N×C×H×W)."""
    unknown = set(metrics) - set(FIDELITY_METRICS)
    if unknown:
        raise ValueError(f"unknown torch-fidelity metrics {sorted(unknown)}; known: {FIDELITY_METRICS}")
    results: dict[str, dict[str, Any]] = {}
    lenet = [m for m in metrics if m in LENET_METRICS]
    inception = [m for m in metrics if m in INCEPTION_METRICS]
    if lenet:
        extractor = register_lenet(dataset)
        results.update(
            _run(samples, reference, lenet, LENET_METRICS, extractor, None, f"{extractor} ({FEATURE_LAYER})")
        )
    if inception:
        weights = weights_path or os.environ.get(WEIGHTS_ENV)
        for metric in inception:
            extractor = "vgg16" if metric == "prc" else "inception-v3-compat"
            results.update(_run(samples, reference, [metric], INCEPTION_METRICS, extractor, weights, extractor))
    return results


def _run(
    samples: Tensor,
    reference: Tensor,
    names: list[str],
    kinds: dict[str, str],
    extractor: str,
    weights: str | None,
    extractor_label: str,
) -> dict[str, dict[str, Any]]:
    flags = {kinds[name]: True for name in names}
    kid_size = min(1000, len(samples), len(reference))
    try:
        raw = torch_fidelity.calculate_metrics(
            input1=Uint8Images(samples),
            input2=Uint8Images(reference),
            cuda=torch.cuda.is_available(),
            feature_extractor=extractor,
            feature_extractor_weights_path=weights,
            kid_subset_size=kid_size,
            cache=False,
            save_cpu_ram=True,  # no loader workers: the images are already in memory
            verbose=False,  # its printout calls every FID "Frechet Inception Distance"
            **flags,
        )
    except (OSError, RuntimeError) as error:  # urllib errors are OSErrors
        if extractor.startswith("lenet"):
            raise
        raise FeatureWeightsUnavailable(
            f"torch-fidelity could not load the {extractor} weights ({error}). On a machine with internet it "
            f"downloads them itself; offline, pass feature_extractor_weights_path=... or set {WEIGHTS_ENV} to "
            "the weights file (for Inception: pt_inception-2015-12-05-6726825d.pth), or use the '*_lenet' metrics."
        ) from None
    results = {}
    for name in names:
        keys = _RESULT_KEYS[kinds[name]]
        results[name] = {
            "value": float(raw[keys[0]]),
            **({"std": float(raw[keys[1]])} if kinds[name] in ("kid", "isc") else {}),
            **({"recall": float(raw[keys[1]])} if kinds[name] == "prc" else {}),
            "protocol": {
                "feature_extractor": extractor_label,
                "samples": len(samples),
                "reference": len(reference),
                "computed_by": f"torch-fidelity {torch_fidelity.__version__}",
            },
        }
    return results
