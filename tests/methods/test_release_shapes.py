"""A release sized to the data (issue 65): each shape's pooled or projected taps keep every record's term within norm
1 and a planted record moves the release by at most its sensitivity, the projection is public randomness rebuilt from
its seed, each shape's coordinate count is the one the model builds, the rule picks the richest shape whose forecast
reaches its target (never one given only when asked), and ``--release-size`` is checked before any work."""

import pytest
import torch
import yaml

from lightning_modules import DPMEPF
from lightning_modules.nets.perceptual_features import PerceptualFeatures
from tests.methods.test_dp_mepf import EXTREMES, TINY
from tests.toys import released_statistic
from zoo.errors import UserError
from zoo.forecast import release_sigma
from zoo.front_checks import check_release_size
from zoo.methods import toy_images
from zoo.release_shapes import RECIPE, SHAPES, TARGET, choose_shape, shape_of, signal_to_noise

RECIPES = {3: "configs/dp_mepf_cifar10_eps10.yaml", 1: "configs/dp_mepf_mnist_eps1.yaml"}
IMAGE_SHAPES = {3: (3, 32, 32), 1: (1, 28, 28)}


@pytest.mark.parametrize("pool", [1, 2, 4])
def test_pooled_taps_keep_every_records_term_within_norm_one_at_extreme_inputs(pool):
    features = PerceptualFeatures(
        (1, 8, 8), blocks=(0, 1, 2), input_size=32, second_weight=1.0, pixel_weight=1.0, pool=pool
    )
    inputs = torch.cat([*EXTREMES.values(), torch.rand(20, 1, 8, 8)]).double()
    weighted = features(inputs) * features.part_weights
    assert weighted.norm(dim=1).max() <= 1 + 1e-12
    assert features.part_sizes["mean"] == sum(c * min(pool, s) ** 2 for c, s in ((16, 16), (24, 8), (40, 4)))


def test_projected_taps_keep_every_records_term_within_norm_one_at_extreme_inputs():
    features = PerceptualFeatures(
        (1, 8, 8), blocks=(0, 1, 2), input_size=32, second_weight=1.0, pixel_weight=1.0, project=7
    )
    inputs = torch.cat([*EXTREMES.values(), torch.rand(20, 1, 8, 8)]).double()
    weighted = features(inputs) * features.part_weights
    assert weighted.norm(dim=1).max() <= 1 + 1e-12
    assert features.part_sizes["mean"] == 3 * 7


def test_the_projection_is_public_randomness_rebuilt_from_its_seed_and_never_stored():
    def matrices(seed):
        features = PerceptualFeatures((1, 8, 8), blocks=(0, 1), input_size=16, project=5, seed=seed)
        assert not features.state_dict()  # rebuilt from the config's seed, as the pixel features' frequencies are
        return [getattr(features, name) for name in features.projection_names]

    first, again, other = matrices(0), matrices(0), matrices(1)
    assert [m.shape for m in first] == [(16 * 8 * 8, 5), (24 * 4 * 4, 5)]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not any(torch.equal(a, b) for a, b in zip(first, other, strict=True))
    with pytest.raises(UserError, match="with pool 0"):
        PerceptualFeatures((1, 8, 8), blocks=(0,), input_size=16, project=5, pool=2)


@pytest.mark.parametrize("shape", [{"pool": 1}, {"pool": 2}, {"project": 5}], ids=["pool1", "pool2", "project5"])
@pytest.mark.parametrize("planted", sorted(EXTREMES))
def test_a_planted_record_moves_a_pooled_or_projected_release_by_at_most_its_sensitivity(shape, planted):
    model = DPMEPF(**{**TINY, **shape})
    images, labels = toy_images().train_set.tensors
    without, sensitivity = released_statistic(model, images, labels)
    with_planted, _ = released_statistic(
        model, torch.cat([images, EXTREMES[planted]]), torch.cat([labels, torch.tensor([2])])
    )
    assert sensitivity == 1.0
    assert 0 < (with_planted - without).norm() <= sensitivity * (1 + 1e-12)


@pytest.mark.parametrize("key", [key for key in SHAPES if key[0] == "dp-mepf"])
def test_each_shapes_coordinate_count_is_the_one_the_model_builds_from_its_recipe(key):
    _, channels = key
    recipe = yaml.safe_load(open(RECIPES[channels]))["model"]["init_args"]
    for shape in SHAPES[key]:
        model = DPMEPF(**{**recipe, "image_shape": IMAGE_SHAPES[channels], **shape.changes})
        assert model.features.features == shape.features, shape.name
        assert shape_of("dp-mepf", channels, dict(model.hparams)) == shape


def test_the_rule_takes_the_richest_shape_that_reaches_the_target_else_the_smallest():
    sigma = release_sigma(10.0, 1e-5)
    shapes = SHAPES[("dp-mepf", 3)]
    assert choose_shape("dp-mepf", 3, sigma, [4000] * 5).shape.name == RECIPE
    chosen = choose_shape("dp-mepf", 3, sigma, [100, 100, 300])
    assert signal_to_noise(chosen.shape, sigma, 100) >= TARGET
    ruled = [shape for shape in shapes if shape.ruled]
    richer = ruled[ruled.index(chosen.shape) - 1]
    assert signal_to_noise(richer, sigma, 100) < TARGET
    assert "100 images in the smallest class" in chosen.reason
    few = choose_shape("dp-mepf", 3, release_sigma(1.0, 1e-5), [10] * 5)
    assert few.shape == shapes[-1] and "none reaches" in few.reason
    asked = choose_shape("dp-mepf", 3, sigma, [4000] * 5, asked="pooled")
    assert asked.shape.name == "pooled" and "as asked" in asked.reason
    assert choose_shape("gs-wgan", 1, sigma, [100] * 5) is None
    assert choose_shape("dp-merf", 1, sigma, [100] * 5) is None  # one shape only: nothing to choose


def test_the_rule_never_chooses_a_shape_given_only_when_asked():
    (projected,) = [shape for shape in SHAPES[("dp-mepf", 3)] if not shape.ruled]
    sigma = release_sigma(10.0, 1e-5)
    reaching = [n for n in range(10, 4000, 10) if signal_to_noise(projected, sigma, n) >= TARGET]
    assert all(choose_shape("dp-mepf", 3, sigma, [n] * 5).shape != projected for n in (10, *reaching))
    assert choose_shape("dp-mepf", 3, sigma, [100] * 5, asked="projected").shape == projected


def test_a_shape_the_images_release_lacks_is_refused_with_the_ones_it_has():
    with pytest.raises(UserError, match="grey images.*full, grid2, pooled"):
        choose_shape("dp-mepf", 1, release_sigma(10.0, 1e-5), [100] * 5, asked="grid4")


def test_release_size_names_one_of_the_methods_shapes_before_any_work():
    check_release_size("dp-mepf", "grid2")
    check_release_size("dp-merf", None)
    with pytest.raises(UserError, match="one of full, grid4, grid2, projected, pooled"):
        check_release_size("dp-mepf", "tiny")
    with pytest.raises(UserError, match="not to gs-wgan"):
        check_release_size("gs-wgan", "full")


def test_a_release_of_other_taps_is_none_of_the_shapes_whatever_its_pooling():
    recipe = yaml.safe_load(open(RECIPES[3]))["model"]["init_args"]
    pooled = {**recipe, "pool": 1, "pixel_features": 250, "input_size": 32}
    assert shape_of("dp-mepf", 3, {**pooled, "blocks": (0, 1, 2, 3, 4)}).name == "pooled"  # as a model holds them
    assert shape_of("dp-mepf", 3, {**pooled, "blocks": [0, 1, 2, 3, 4, 5, 6]}) is None


def test_the_card_names_a_projected_release_with_its_coordinates_and_seed():
    model = DPMEPF(**{**TINY, "project": 5, "feature_seed": 3})
    config = {"architecture": dict(model.hparams), "privacy_ledger": {"entries": []}}
    (note,) = DPMEPF.card_notes(config)
    assert "spatial layout kept, each block randomly projected to 5 coordinates (seed 3)" in note
