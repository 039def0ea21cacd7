"""DP-MERF: unit-norm features, a release whose sensitivity holds against planted records, and
its ε recomputed by a second accountant."""

import copy
import math

import dp_accounting
import pytest
import torch
from dp_accounting import pld

from lightning_modules import DPMERF
from lightning_modules.nets.random_features import RandomFourierFeatures, labelled_embedding
from tests.toys import released_statistic
from zoo.data import TensorDataModule
from zoo.methods import toy_images
from zoo.privacy import DPBudget
from zoo.release.hub import from_pretrained, save_pretrained
from zoo.training import train

TINY = DPMERF.tiny_recipe().architecture
QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


def test_every_feature_vector_has_norm_one_whatever_the_input():
    features = RandomFourierFeatures(64, 200, width=1.5, seed=3)
    inputs = torch.cat([torch.rand(50, 64), 1e6 * torch.randn(5, 64), torch.zeros(1, 64)])
    torch.testing.assert_close(features(inputs).norm(dim=1), torch.ones(len(inputs)))
    embedded = labelled_embedding(features(inputs), torch.arange(len(inputs)) % 3, 3)
    assert embedded.shape == (200, 3)


def test_in_float64_the_norm_is_one_to_1e12_at_release_scale_and_extreme_inputs():
    """The release embeds in float64: float32 rounding alone puts norms up to 1 + 4e-6 at this scale."""
    features = RandomFourierFeatures(3 * 32 * 32, 10_000, width=math.sqrt(105), seed=0)
    inputs = torch.cat(
        [torch.rand(20, 3072), torch.ones(1, 3072), 1e6 * torch.randn(5, 3072), torch.full((1, 3072), 1e12)]
    ).double()
    norms = features(inputs).norm(dim=1)
    assert features(inputs).dtype == torch.float64
    assert (norms - 1).abs().max() < 1e-12


@pytest.mark.parametrize("planted", ["zeros", "ones", "huge", "random"])
def test_a_planted_record_moves_the_released_sum_by_at_most_its_sensitivity(planted):
    model = DPMERF(**TINY)
    images, labels = toy_images().train_set.tensors
    record = {
        "zeros": torch.zeros(1, 1, 8, 8),
        "ones": torch.ones(1, 1, 8, 8),
        "huge": torch.full((1, 1, 8, 8), 1e4),
        "random": torch.rand(1, 1, 8, 8),
    }[planted]
    without, sensitivity = released_statistic(model, images, labels)
    with_planted, _ = released_statistic(model, torch.cat([images, record]), torch.cat([labels, torch.tensor([2])]))
    assert sensitivity == 1.0
    assert with_planted.dtype == torch.float64
    assert (with_planted - without).norm() <= sensitivity * (1 + 1e-12)


def test_the_release_spends_the_target_and_a_second_accountant_agrees():
    data = toy_images()
    model = DPMERF(**TINY)
    train(model, data, DPBudget(target_epsilon=1.0, accountant="prv"), max_steps=2, **QUIET)
    (entry,) = model.privacy_ledger.entries
    assert entry.barrier == "B1" and entry.clip_norm == 1.0 and entry.sample_rate == 1.0 and entry.steps == 1
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(entry.noise_multiplier))
    assert accountant.get_epsilon(1e-5) == pytest.approx(1.0, abs=0.02)
    assert model.privacy_ledger.epsilon(data.dataset_id) <= 1.0


def test_the_generator_learns_the_released_embedding():
    torch.manual_seed(0)
    model = DPMERF(**{**TINY, "learning_rate": 0.05})
    untrained = copy.deepcopy(model.generator)
    train(model, toy_images(), DPBudget(target_epsilon=50.0), max_steps=200, **QUIET)

    def distance(generator):
        with torch.no_grad():
            labels = torch.arange(300) % 3
            images = generator(torch.randn(300, model.hparams.code_dim), labels)
            fitted = labelled_embedding(model.features(images), labels, 3) / 300
        return (model.released_embedding - fitted).norm().item()

    assert distance(model.generator) < 0.7 * distance(untrained)


@pytest.mark.parametrize("generator", ["dcgan", "resnet"])
def test_gs_wgans_generators_fit_colour_images_and_reload(generator, tmp_path):
    torch.manual_seed(0)
    shape = (3, 24, 24)
    model = DPMERF(**{**TINY, "image_shape": shape, "generator": generator, "generator_width": 4})
    data = TensorDataModule(torch.rand(60, *shape), torch.arange(60) % 3, dataset_id="toy-rgb")
    train(model, data, DPBudget(target_epsilon=5.0), max_steps=3, **QUIET)
    loaded = from_pretrained(save_pretrained(model, tmp_path / "m"))
    labels = torch.arange(6) % 3
    assert torch.equal(loaded.sample(6, labels=labels, seed=1), model.sample(6, labels=labels, seed=1))
    assert loaded.sample(6, labels=labels, seed=1).shape == (6, *shape)


def test_an_unknown_generator_is_refused_before_any_work():
    with pytest.raises(ValueError, match="generator must be one of"):
        DPMERF(**{**TINY, "generator": "unet"})
