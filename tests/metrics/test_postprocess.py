"""Smooth-then-sharpen post-processing: what it does to images, and that checkpoints record it."""

import importlib
import sys

import pytest
import torch

from lightning_modules import DPLFlow
from lightning_modules.parts.postprocess import SmoothSharpen, gaussian_blur
from tests.zoo.test_hub import tiny_private_flow
from zoo.release.hub import from_pretrained, save_pretrained


def test_blur_keeps_constant_images_and_mass():
    flat = torch.full((2, 3, 9, 9), 0.4)
    torch.testing.assert_close(gaussian_blur(flat, 1.5), flat)
    dot = torch.zeros(1, 1, 15, 15)
    dot[..., 7, 7] = 1.0
    blurred = gaussian_blur(dot, 1.0)
    assert blurred.sum().item() == pytest.approx(1.0, abs=1e-5)
    assert blurred[..., 7, 7].item() < 0.2


def test_smoothing_removes_speckle_and_sharpening_steepens_edges():
    generator = torch.Generator().manual_seed(0)
    step = torch.full((1, 1, 16, 16), 0.2)
    step[..., 8:] = 0.8
    soft_edge = gaussian_blur(step, 1.5)
    speckled = soft_edge + 0.05 * torch.randn(soft_edge.shape, generator=generator)
    smoothed = SmoothSharpen(smooth_sigma=0.7, sharpen_amount=0)(speckled)
    sharpened = SmoothSharpen(smooth_sigma=0.7, sharpen_amount=1.5)(speckled)
    background = (slice(None), slice(None), slice(2, 14), slice(0, 4))
    assert smoothed[background].std() < 0.6 * speckled[background].std()
    edge_steepness = lambda images: (images[..., 1:] - images[..., :-1]).mean((0, 1, 2)).max()  # noqa: E731
    assert edge_steepness(sharpened) > 1.15 * edge_steepness(smoothed)
    assert sharpened.shape == speckled.shape and sharpened.min() >= 0 and sharpened.max() <= 1


@pytest.mark.parametrize(
    "settings",
    [{"smooth_sigma": 0}, {"smooth_sigma": 20}, {"sharpen_amount": -1}, {"sharpen_sigma": "1"}, {"strength": 1}],
)
def test_bad_settings_are_rejected(settings):
    with pytest.raises(ValueError, match="smooth|sharpen"):
        SmoothSharpen.from_config(settings)


def test_a_checkpoint_records_its_postprocessing(tmp_path):
    model = tiny_private_flow()
    plain = model.sample(4, seed=1)
    model.hparams.postprocess = {"smooth_sigma": 0.5, "sharpen_amount": 1.0, "sharpen_sigma": 1.0}
    model.postprocess = SmoothSharpen.from_config(model.hparams.postprocess)
    processed = model.sample(4, seed=1)
    torch.testing.assert_close(processed, model.postprocess(plain))
    loaded = from_pretrained(save_pretrained(model, tmp_path / "post"))
    assert isinstance(loaded, DPLFlow) and loaded.postprocess == model.postprocess
    torch.testing.assert_close(loaded.sample(4, seed=1), processed)


def test_the_old_import_path_still_works_and_says_where_it_moved(monkeypatch):
    monkeypatch.delitem(sys.modules, "lightning_modules.postprocess", raising=False)
    with pytest.warns(FutureWarning, match="moved to lightning_modules.parts.postprocess"):
        old = importlib.import_module("lightning_modules.postprocess")
    assert old.SmoothSharpen is SmoothSharpen
