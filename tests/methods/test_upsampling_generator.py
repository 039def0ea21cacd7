"""DP-MEPF's upsampling ResNet generator: the official shape at 32×32, any side by cropping, pixels in [0, 1],
and no transposed convolution (the source of the DCGAN generator's hatch)."""

import pytest
import torch
from torch import nn

from lightning_modules.nets.generators import build_generator


def upsampling(shape, width=32):
    return build_generator(
        kind="upsampling",
        code_dim=32,
        num_classes=10,
        image_shape=shape,
        hidden=0,
        channels=(),
        kernel_size=0,
        batch_norm=False,
        width=width,
    )


def test_at_32_pixels_it_has_the_official_widths_and_size():
    generator = upsampling((3, 32, 32))
    assert generator.grid == (4, 4)
    assert [block.body[3].out_channels for block in generator.blocks] == [128, 64, 32]
    assert sum(p.numel() for p in generator.parameters()) == pytest.approx(0.80e6, rel=0.01)
    assert not any(isinstance(m, nn.ConvTranspose2d) for m in generator.modules())


@pytest.mark.parametrize("shape", [(3, 32, 32), (1, 28, 28), (3, 48, 40), (1, 8, 8)])
def test_it_draws_images_of_any_side_in_the_unit_interval(shape):
    generator = upsampling(shape, width=4)
    images = generator(torch.randn(5, 32), torch.arange(5))
    assert images.shape == (5, *shape)
    assert 0 <= images.min() and images.max() <= 1
