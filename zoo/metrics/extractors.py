"""A small feature extractor for 28×28 grayscale data, registered with torch-fidelity.

Metrics computed with it are reported under their own names (``fid_lenet``, ...), never as
``fid``: they are not comparable with Inception-based FID. The weights ship with dpzoo, so they
are trained only on the 10,000 held-out validation images, outside every shipped model's
protected set (``python -m zoo.metrics.train_extractor``; the ``.json`` beside each says so).
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import Tensor, nn
from torch_fidelity.feature_extractor_base import FeatureExtractorBase
from torch_fidelity.registry import FEATURE_EXTRACTORS_REGISTRY, register_feature_extractor

WEIGHTS_DIR = Path(__file__).parent / "weights"
FEATURE_LAYER = "penultimate"


class LeNet(nn.Module):
    """Conv(32)-pool-Conv(64)-pool-FC(128)-FC(classes); ``features`` is the 128-d penultimate layer."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 32, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 5 * 5, 128),
            nn.ReLU(),
        )
        self.head = nn.Linear(128, num_classes)

    def features(self, x: Tensor) -> Tensor:
        return self.body(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


def extractor_weights(dataset: str) -> Path:
    return WEIGHTS_DIR / f"lenet-{dataset.replace('_', '-')}.safetensors"


def _extractor_class(dataset: str) -> type[FeatureExtractorBase]:
    class LeNetFeatures(FeatureExtractorBase):
        def __init__(self, name, features_list, feature_extractor_weights_path=None, **kwargs):
            super().__init__(name, features_list)
            self.net = LeNet()
            path = feature_extractor_weights_path or extractor_weights(dataset)
            self.net.load_state_dict(load_file(str(path)))

        @staticmethod
        def get_provided_features_list():
            return (FEATURE_LAYER, "logits_unbiased")

        @staticmethod
        def get_default_feature_layer_for_metric(metric):
            return {"isc": "logits_unbiased"}.get(metric, FEATURE_LAYER)

        @staticmethod
        def can_be_compiled() -> bool:
            return False

        @staticmethod
        def get_dummy_input_for_compile() -> Tensor:
            return torch.zeros(1, 3, 28, 28, dtype=torch.uint8)

        def forward(self, x: Tensor) -> tuple[Tensor, ...]:
            gray = x.float().mean(1, keepdim=True) / 255.0  # torch-fidelity feeds uint8 RGB
            features = self.net.features(gray)
            outputs = {FEATURE_LAYER: features, "logits_unbiased": self.net.head(features)}
            return tuple(outputs[name] for name in self.features_list)

    return LeNetFeatures


def register_lenet(dataset: str) -> str:
    """Register the extractor for ``dataset`` with torch-fidelity; returns its name."""
    name = f"lenet-{dataset.replace('_', '-')}"
    if name not in FEATURE_EXTRACTORS_REGISTRY:
        register_feature_extractor(name, _extractor_class(dataset))
    return name
