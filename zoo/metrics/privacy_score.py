"""The privacy score of P3DM (PAC Privacy Preserving Diffusion Models, Algorithm 4).

Each sample is paired with its nearest real image in a feature space, and an attribute classifier
labels both: the score is the fraction of pairs whose labels differ (higher: a sample's attribute is
less tied to the real record it resembles most). The paper pairs samples with the training images,
which would read the protected records; the zoo pairs them with the held-out test split instead, and
uses its shipped LeNet (trained on the held-out validation images) for both the features (in place of
Inception-v3) and the attribute (the class), so it reports the number as ``privacy_score_lenet``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from safetensors.torch import load_file
from torch import Tensor

from zoo.data.images import load_images
from zoo.errors import UserError
from zoo.metrics.extractors import FEATURE_LAYER, LeNet, extractor_weights
from zoo.metrics.feature_pass import without_tf32
from zoo.metrics.neighbours import nearest_neighbours


def privacy_score(
    samples: Tensor,
    reference: Tensor,
    features: Callable[[Tensor], Tensor],
    attribute: Callable[[Tensor], Tensor],
    batch_size: int = 1000,
) -> dict[str, Any]:
    """Fraction of ``samples`` whose ``attribute`` differs from that of their nearest ``reference``
    image by L2 distance between ``features`` (N×D); ``attribute`` maps images to N labels."""
    if len(samples) == 0 or len(reference) == 0:
        raise UserError(
            f"the privacy score needs samples and reference images, got {len(samples)} and {len(reference)}"
        )
    if samples.shape[1:] != reference.shape[1:]:
        raise UserError(
            f"samples {tuple(samples.shape[1:])} and reference images {tuple(reference.shape[1:])} differ in shape"
        )
    with torch.no_grad():
        reference_features, reference_labels = _features_and_attributes(reference, features, attribute, batch_size)
        sample_features, sample_labels = _features_and_attributes(samples, features, attribute, batch_size)
    _, nearest = nearest_neighbours(sample_features, reference_features, batch_size)
    differing = int((sample_labels != reference_labels[nearest]).sum())
    return {"value": differing / len(samples), "differing": differing, "pairs": len(samples)}


def _features_and_attributes(
    images: Tensor, features: Callable[[Tensor], Tensor], attribute: Callable[[Tensor], Tensor], batch_size: int
) -> tuple[Tensor, Tensor]:
    batches = images.split(batch_size)
    return torch.cat([features(x).flatten(1) for x in batches]), torch.cat([attribute(x) for x in batches])


def privacy_score_lenet(samples: Tensor, dataset: str, device: str | torch.device = "cpu") -> dict[str, Any]:
    """The privacy score against ``dataset``'s test split, with the shipped LeNet as extractor and classifier,
    run on ``device`` in float32 (TF32 would move features, and so nearest neighbours, by its rounding)."""
    weights = extractor_weights(dataset)
    extractor = weights.stem
    network = LeNet().eval()
    network.load_state_dict(load_file(str(weights)))
    network.to(device)
    reference, _ = load_images(dataset, train=False)
    with without_tf32():
        score = privacy_score(
            samples,
            reference,
            lambda x: network.features(x.to(device)),
            lambda x: network(x.to(device)).argmax(1),
        )
    return {
        **score,
        "unit": "fraction of samples whose nearest test image (L2 in features) has another predicted class",
        "protocol": {
            "feature_extractor": f"{extractor} ({FEATURE_LAYER})",
            "classifier": f"{extractor} class prediction (trained on the held-out validation images)",
            "reference": f"{dataset} official test split ({len(reference)} images)",
            "samples": len(samples),
        },
    }
