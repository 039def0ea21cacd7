"""The mechanism plug-ins: noise multiplicity in DP-SGD, the private-helper accounting, B1 outside steps."""

import dp_accounting
import pytest
import pytorch_lightning as pl
import torch
from dp_accounting import pld
from torch import nn
from torch.utils.data import TensorDataset

from tests.toys import GradientRecorder, ToyData, tiny_trainer
from zoo.privacy import DPCallback, PrivacyBarrier, PrivacyConfigError, epsilon_spent
from zoo.privacy.mechanisms import PrivateHelpers, step_noise_multiplier, step_sensitivity, training_mechanism
from zoo.privacy.per_example import create_engine

MULTIPLICITY = 3


class NoisyCopies(pl.LightningModule):
    """DPDM's noise multiplicity: each record is seen as MULTIPLICITY noisy rows, consecutive in the batch."""

    privacy_barrier = "B4"
    rows_per_example = MULTIPLICITY

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(48, 2))

    def private_modules(self):
        return [self.net]

    @staticmethod
    def rows(x):
        """Record i becomes rows i·m .. i·m + m - 1, each a fixed distortion of it (a stand-in for noise draws)."""
        copies = [x * (1 + 0.5 * j) + 0.1 * j for j in range(MULTIPLICITY)]
        return torch.stack(copies, 1).reshape(-1, *x.shape[1:])

    def per_row_loss(self, x):
        return self.net(self.rows(x)).square().sum(1)

    def training_step(self, batch, batch_idx):
        return self.per_row_loss(batch[0]).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


def per_example_gradients(model, x):
    """Brute force: example i's gradient is that of the mean loss over its own rows."""
    grads = []
    for i in range(len(x)):
        model.zero_grad()
        model.per_row_loss(x[i : i + 1]).mean().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    return torch.stack(grads)


@pytest.mark.parametrize("mode", ["ghost", "hooks", "functorch"])
def test_noise_multiplicity_clips_each_record_once_over_all_its_rows(mode):
    x = torch.randn(6, 1, 4, 4, generator=torch.Generator().manual_seed(1)) * torch.arange(1, 7).view(-1, 1, 1, 1)
    reference = per_example_gradients(NoisyCopies(), x)
    clip = 0.5 * reference.norm(dim=1).median().item()
    expected = (reference * (clip / reference.norm(dim=1, keepdim=True)).clamp(max=1)).sum(0)

    recorder = GradientRecorder()
    dp = DPCallback(noise_multiplier=1e-13, max_grad_norm=clip, per_example_mode=mode, noise_seed=0)
    tiny_trainer([dp, recorder], 1).fit(NoisyCopies(), ToyData(TensorDataset(x), sample_rate=1.0))
    released = torch.cat([g.flatten() for g in recorder.grads[0]]) * len(x)
    torch.testing.assert_close(released, expected, rtol=1e-4, atol=1e-5)
    assert dp.entry.parameters == {"rows_per_example": MULTIPLICITY}


def test_a_batch_that_is_not_whole_records_is_refused():
    engine = create_engine([nn.Linear(3, 1)], "ghost", rows_per_example=2)
    layer = engine.layers[0]
    layer(torch.randn(5, 3)).sum().backward()
    with pytest.raises(PrivacyConfigError, match="not a whole number of examples"):
        engine.batch_size()


def test_helper_step_sensitivity_rows_and_sums():
    assert step_sensitivity(1.0, 16, "rows") == 8.0 and step_sensitivity(0.5, 16, "sum") == 16.0
    assert step_noise_multiplier(4.0, 1.0, 16, "rows") == 0.5
    assert step_noise_multiplier(64.0, 1.0, 16, "sum") == 2.0
    with pytest.raises(PrivacyConfigError, match="combination"):
        step_sensitivity(1.0, 4, "mean")


def test_helper_accounting_matches_a_second_accountant():
    """T steps that each query one of K helpers: a Poisson-subsampled Gaussian at rate 1/K per step,
    with the noise multiplier over the 2C·B sensitivity of a sum (DP²-VAE's decoder step)."""
    helpers = PrivateHelpers(parts=100)
    z = step_noise_multiplier(noise_multiplier=200.0, clip=1.0, terms=32, combination="sum")
    ours = epsilon_spent([(z, helpers.sample_rate, 2000)], 1e-5, "prv")
    event = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(200.0 / (2 * 32)))
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, 2000))
    assert ours == pytest.approx(accountant.get_epsilon(1e-5), rel=0.03)


def test_helpers_assign_records_by_record_alone():
    records = torch.rand(300, 5, generator=torch.Generator().manual_seed(0))
    helpers = PrivateHelpers(parts=7)
    key = b"k" * 16
    assert torch.equal(helpers.assign(records[1:], key), helpers.assign(records, key)[1:])
    with pytest.raises(PrivacyConfigError, match="positive integer"):
        PrivateHelpers(parts=0)


def test_one_shot_releases_are_not_training_mechanisms():
    with pytest.raises(PrivacyConfigError, match="released once, in a Release stage"):
        training_mechanism(PrivacyBarrier.ONE_SHOT_RELEASE)
