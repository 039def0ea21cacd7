"""DP-MoG (DP-EM), the DP-NF paper's baseline: accounting, fit on an easy case, an exact density."""

import pytest
import torch

from zoo.baselines import DPGaussianMixture
from zoo.privacy import epsilon_spent


@pytest.fixture(scope="module")
def two_blobs():
    generator = torch.Generator().manual_seed(0)
    centres = torch.tensor([[2.0, 0.0], [-2.0, 0.0]])
    return centres[torch.randint(2, (20_000,), generator=generator)] + 0.3 * torch.randn(20_000, 2, generator=generator)


def test_fit_records_iterations_as_one_calibrated_entry(two_blobs):
    mixture = DPGaussianMixture(components=2, iterations=8, clip_bound=3.0)
    mixture.fit(two_blobs, target_epsilon=1.0, delta=1e-5, dataset_id="blobs")
    (entry,) = mixture.privacy_ledger.entries
    assert entry.steps == 8 and entry.sample_rate == 1.0 and entry.dataset_id == "blobs"
    assert 0.98 < epsilon_spent(entry.history(), 1e-5, "prv") <= 1.0


def test_recovers_well_separated_components_at_a_large_budget(two_blobs):
    mixture = DPGaussianMixture(components=2, iterations=15, clip_bound=3.0)
    mixture.fit(two_blobs, target_epsilon=20.0, delta=1e-5, dataset_id="blobs", accountant="rdp", init_seed=1)
    centres = (mixture.means * 3.0).sort(dim=0).values
    torch.testing.assert_close(centres[:, 0], torch.tensor([-2.0, 2.0], dtype=torch.float64), atol=0.2, rtol=0)
    samples = mixture.sample(4000, seed=0)
    assert samples.shape == (4000, 2) and (samples[:, 0].abs() - 2).abs().median() < 0.3


def test_density_integrates_to_one(two_blobs):
    mixture = DPGaussianMixture(components=2, iterations=3, clip_bound=3.0)
    mixture.fit(two_blobs, target_epsilon=2.0, delta=1e-5, dataset_id="blobs")
    axis = torch.linspace(-8, 8, 401)
    grid = torch.stack(torch.meshgrid(axis, axis, indexing="xy"), -1).reshape(-1, 2)
    mass = mixture.log_prob(grid).double().exp().sum() * (axis[1] - axis[0]) ** 2
    assert mass.item() == pytest.approx(1.0, abs=0.02)


def test_unfitted_or_misconfigured_mixture_is_refused():
    with pytest.raises(RuntimeError, match="fit the mixture first"):
        DPGaussianMixture().log_prob(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="positive"):
        DPGaussianMixture(components=0)
