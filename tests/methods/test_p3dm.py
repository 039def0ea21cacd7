"""P3DM's parts: randomized-response targets (DPGEN's rule), the deterministic mechanism the PAC
calibration reruns, and a release that holds only the noised set."""

import math

import pytest
import torch

from lightning_modules import P3DM
from lightning_modules.parts.langevin import FAR_IN_SIGMAS, geometric_sigmas, randomized_response_pairs
from zoo.privacy.summary import PAC_SUBJECT
from zoo.training import train

SIGMAS = geometric_sigmas(1.0, 0.01, 10)


def batch(count: int = 400, seed: int = 0) -> torch.Tensor:
    return torch.rand(count, 1, 6, 6, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rr_epsilon", [0.0, 2.0, 6.0])
def test_each_image_keeps_its_own_target_with_the_randomized_response_probability(rr_epsilon):
    images = batch()
    levels = torch.zeros(len(images), dtype=torch.long)  # σ = 1: no target is "far", so no level moves
    _, targets, _ = randomized_response_pairs(images, levels, SIGMAS, rr_epsilon, torch.Generator().manual_seed(1))
    own = (targets == images).flatten(1).all(dim=1).float().mean().item()
    expected = math.exp(rr_epsilon) / (math.exp(rr_epsilon) + len(images) - 1)
    assert own == pytest.approx(expected, abs=4 * math.sqrt(expected * (1 - expected) / len(images)) + 1e-3)


def test_a_far_target_moves_its_pair_to_a_level_where_it_is_within_five_sigma():
    images = batch(200)
    levels = torch.full((len(images),), len(SIGMAS) - 1)  # σ = 0.01: other images are far
    perturbed, targets, moved = randomized_response_pairs(images, levels, SIGMAS, 0.0, torch.Generator())
    distance = (perturbed - targets).abs().flatten(1).amax(dim=1)
    swapped = ~(targets == images).flatten(1).all(dim=1)
    assert swapped.any()
    assert (distance[swapped] <= FAR_IN_SIGMAS * SIGMAS[moved[swapped]]).all()
    assert (moved[swapped] < len(SIGMAS) - 1).all()
    assert (moved[~swapped] == levels[~swapped]).all()


def tiny_model() -> tuple[P3DM, object]:
    recipe = P3DM.tiny_recipe()
    return P3DM(**recipe.architecture), recipe


def test_the_mechanism_is_deterministic_given_its_data_and_depends_on_it():
    model, recipe = tiny_model()
    data = recipe.data()
    images, labels = data.train_set.tensors
    first = model.mechanism(images[:60], labels[:60])
    assert torch.equal(first, model.mechanism(images[:60], labels[:60]))
    assert not torch.equal(first, model.mechanism(images[60:], labels[60:]))


def test_the_release_is_the_noised_set_and_sampling_repeats_it():
    model, recipe = tiny_model()
    train(model, recipe.data(), recipe.budget(**recipe.privacy), accelerator="cpu", logger=False)
    released, labels = model.released_set_tensors()
    (entry,) = model.privacy_ledger.pac_releases
    assert entry.output_dim == released.numel() and labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert (released < 0).any() or (released > 1).any()  # noised, not yet clipped
    samples = model.sample(6, labels=[0, 0, 0, 1, 2, 2], seed=5)
    assert torch.equal(samples[[0, 1, 2]], released[[0, 1, 0]].clamp(0, 1))
    assert torch.equal(samples, model.sample(6, labels=[0, 0, 0, 1, 2, 2], seed=6))


@pytest.mark.parametrize(
    "bad", [dict(sigma_min=2.0), dict(image_shape=(28, 28)), dict(steps_per_level=0), dict(rr_epsilon=-1.0)]
)
def test_bad_hyperparameters_are_refused(bad):
    with pytest.raises(ValueError):
        P3DM(**bad)


@pytest.mark.parametrize(("noise_std", "says_noise"), [(95.4, True), (0.5, False)])
def test_the_card_says_plainly_when_the_release_is_noise(noise_std, says_noise):
    config = {
        "architecture": {"image_shape": (1, 28, 28), "images_per_class": 10, "rr_epsilon": 10.0},
        "privacy_ledger": {"pac_releases": [{"noise_std": noise_std}]},
    }
    notes = " ".join(P3DM.card_notes(config))
    assert ("At this bound the release is noise" in notes) is says_noise


def test_the_pac_subject_says_what_a_bound_above_ln2_does_not_protect():
    assert "above ln 2 ≈ 0.69 nat does not rule out revealing whether one given record was used" in PAC_SUBJECT
