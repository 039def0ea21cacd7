"""DP-MEPF's feature taps through timm's ``forward_intermediates`` (issue 52): the shipped recipes' features are
bit-identical with the EfficientNet internals they were computed through before (``conv_stem``, ``bn1``,
``blocks``), every stem and block at the larger input sizes has the shape and the per-tap normalisation it should,
and a planted record still moves the release by at most its sensitivity through the new taps."""

import math

import pytest
import torch
from torch import Tensor
from torch.nn import functional

from lightning_modules import DPMEPF
from lightning_modules.nets.perceptual_features import PerceptualFeatures
from lightning_modules.nets.public_networks import public_network
from tests.methods.test_dp_mepf import EXTREMES, QUIET, TINY
from tests.toys import released_statistic
from zoo.errors import UserError
from zoo.methods import toy_images
from zoo.privacy import DPBudget
from zoo.training import train

#: the shipped recipes' feature settings (configs/dp_mepf_*.yaml): (image shape, blocks, input size), and, from the
#: code before the taps on ``torch.rand(3, *shape)`` of seed 0, each block's output sum and the features' sum in
#: float64 (float32 sums, which vary with the thread count at ~1e-7)
SHIPPED = {
    "mnist": ((1, 28, 28), (1, 2, 3, 4), 32),
    "cifar10-32": ((3, 32, 32), (1, 2, 3, 4), 32),
    "cifar10-64": ((3, 32, 32), (0, 1, 2, 3, 4), 64),
}
BEFORE = {
    "mnist": ([2660.290984913707, 2235.381637111306, 531.3504778444767, -345.9272107332945], 7.29353638642907),
    "cifar10-32": ([-4660.1654176265, -360.4135387763381, -98.01961594820023, 106.64637750387192], -4.981792327676175),
    "cifar10-64": (
        [-2188.418416061322, 22889.888286124915, -2516.309262992814, -354.5053074210882, -780.4616135824472],
        4.989124754149568,
    ),
}
#: EfficientNet-Lite0: the stem's channels and stride, then each block's
STEM = (32, 2)
BLOCKS = ((16, 2), (24, 4), (40, 8), (80, 16), (112, 16), (192, 32), (320, 32))


def internals_outputs(features: PerceptualFeatures, images: Tensor) -> list[Tensor]:
    """The taps as dpzoo read them before issue 52, through EfficientNet's own attributes: the reference the
    shipped checkpoints' features were computed with."""
    network = features.network
    if images.shape[1] == 1:
        images = images.expand(-1, 3, -1, -1)
    if images.shape[-2:] != (features.input_size, features.input_size):
        images = functional.interpolate(images, size=features.input_size, mode="bilinear", align_corners=False)
    hidden = network.bn1(network.conv_stem(features.network_spec.normalise(images)))
    outputs = [hidden.flatten(1)] if features.stem else []
    for index, block in enumerate(network.blocks[: max(features.blocks) + 1]):
        hidden = block(hidden)
        if index in features.blocks:
            outputs.append(hidden.flatten(1))
    return outputs


def unit_per_tap(outputs: list[Tensor]) -> Tensor:
    scale = math.sqrt(len(outputs))
    return torch.cat([o / (o.norm(dim=1, keepdim=True).clamp_min(1e-30) * scale) for o in outputs], 1)


@pytest.mark.parametrize("recipe", sorted(SHIPPED))
def test_the_shipped_recipes_features_are_bit_identical_with_the_internals_they_were_computed_through(recipe):
    shape, blocks, size = SHIPPED[recipe]
    features = PerceptualFeatures(shape, blocks=blocks, input_size=size)
    images = torch.rand(3, *shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = internals_outputs(features, images)
        release, loss = features(images.double()), features(images)  # a release's dtype and the loss's
    block_sums, feature_sum = BEFORE[recipe]
    assert [float(o.double().sum()) for o in reference] == pytest.approx(block_sums, rel=1e-5)
    assert torch.equal(release, unit_per_tap([o.double() for o in reference]))
    assert torch.equal(loss, unit_per_tap(reference))
    assert float(release.sum()) == pytest.approx(feature_sum, rel=1e-6)


@pytest.mark.parametrize("size", [64, 96, 128])
def test_the_stem_and_every_block_at_larger_inputs_keep_their_layout_and_the_per_tap_normalisation(size):
    blocks = tuple(range(7))
    features = PerceptualFeatures((3, 32, 32), blocks=blocks, input_size=size, stem=True)
    expected = [STEM[0] * (size // STEM[1]) ** 2] + [c * math.ceil(size / stride) ** 2 for c, stride in BLOCKS]
    assert features.part_sizes == {"mean": sum(expected)}
    images = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1)).double()
    with torch.no_grad():
        embedded = features(images)
        reference = internals_outputs(features, images.float())
    assert torch.equal(embedded, unit_per_tap([o.double() for o in reference]))
    taps = torch.split(embedded, expected, dim=1)
    for tap in taps:  # each tap at norm 1/√8, so the part at norm 1
        assert tap.norm(dim=1) == pytest.approx(torch.full((2,), 1 / math.sqrt(8), dtype=torch.float64), abs=1e-12)
    assert [u.shape[1] for u in features.unit_blocks(images)] == expected


def test_the_stem_alone_is_a_tap_and_blocks_outside_the_network_are_refused():
    assert PerceptualFeatures((1, 8, 8), blocks=(), input_size=16, stem=True).part_sizes == {"mean": 32 * 8 * 8}
    for blocks, stem in (((7,), False), ((-1, 0), False), ((), False)):
        with pytest.raises(UserError, match="blocks 0..6"):
            PerceptualFeatures((1, 8, 8), blocks=blocks, input_size=16, stem=stem)


def test_bf16_autocast_of_the_network_is_a_no_op_on_the_cpu():
    images = torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(2)).double()
    plain, autocast = (
        PerceptualFeatures((1, 8, 8), blocks=(0, 1), input_size=16, network_bf16=bf16) for bf16 in (False, True)
    )
    with torch.no_grad():
        assert torch.equal(autocast(images), plain(images))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="bf16 autocast runs on a CUDA device only")
def test_bf16_autocast_on_the_gpu_keeps_every_norm_within_one_and_the_features_close():
    images = torch.rand(16, 3, 32, 32, generator=torch.Generator().manual_seed(3)).double().cuda()
    plain, autocast = (
        PerceptualFeatures((3, 32, 32), blocks=range(7), input_size=128, stem=True, network_bf16=bf16).cuda()
        for bf16 in (False, True)
    )
    with torch.no_grad():
        exact, rounded = plain(images), autocast(images)
    assert rounded.dtype == torch.float64 and rounded.norm(dim=1).max() <= 1 + 1e-12
    assert functional.cosine_similarity(exact, rounded).min() > 0.99


def test_a_planted_record_moves_the_release_through_the_stem_and_deep_blocks_by_at_most_its_sensitivity():
    model = DPMEPF(**{**TINY, "blocks": (0, 6), "stem": True, "input_size": 64})
    images, labels = toy_images().train_set.tensors
    without, _ = released_statistic(model, images, labels)
    for name, planted in EXTREMES.items():
        with_planted, sensitivity = released_statistic(
            model, torch.cat([images, planted]), torch.cat([labels, torch.tensor([2])])
        )
        assert sensitivity == 1.0
        assert 0 < (with_planted - without).norm() <= sensitivity * (1 + 1e-12), name


def test_the_ledger_and_the_card_name_the_networks_training_data_taps_and_input_size():
    model = DPMEPF(**{**TINY, "stem": True})
    train(model, toy_images(), DPBudget(target_epsilon=1.0), max_steps=1, **QUIET)
    (use,) = model.privacy_ledger.public_data
    spec = public_network("efficientnet_lite0")
    assert use.dataset_id == "imagenet-1k/train (through efficientnet_lite0)"
    assert use.records_identity == f"{spec.training_data_id}#{spec.sha256[:16]}"
    assert use.stage == (
        "feature network of the release: the stem and blocks [0, 1] at 16×16 input (trained at 224×224)"
    )
    config = {"architecture": dict(model.hparams), "privacy_ledger": model.privacy_ledger.to_dict()}
    assert "the outputs of the stem and blocks [0, 1] of the public network" in DPMEPF.card_notes(config)[0]
