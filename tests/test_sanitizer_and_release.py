"""B3 (sanitised output gradients) and B1 (one-shot Gaussian release)."""

import pytest
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.toys import tiny_trainer
from zoo.privacy import DPCallback, GradientSanitizer, PrivacyLedger, epsilon_spent, gaussian_release


def upstream_gradient(sanitizer: GradientSanitizer, grad: torch.Tensor) -> torch.Tensor:
    x = torch.zeros_like(grad, requires_grad=True)
    (sanitizer(x) * grad).sum().backward()
    return x.grad


def test_each_row_is_clipped_to_C():
    sanitizer = GradientSanitizer(noise_multiplier=0.0, max_grad_norm=1.0, loss_reduction="sum")
    grad = torch.randn(6, 3, 4, 4) * torch.tensor([1e-3, 1e3, 1, 5, 0.1, 100]).view(-1, 1, 1, 1)
    out = upstream_gradient(sanitizer, grad)
    norms, original = out.flatten(1).norm(dim=1), grad.flatten(1).norm(dim=1)
    assert (norms <= 1.0 + 1e-5).all()
    torch.testing.assert_close(norms, original.clamp(max=1.0), rtol=1e-4, atol=1e-6)
    assert sanitizer.rows_sanitized == 6


def test_each_row_gets_noise_of_std_sigma_C_scaled_by_the_mean_reduction():
    rows = 50
    sanitizer = GradientSanitizer(noise_multiplier=2.0, max_grad_norm=0.5, generator=torch.Generator().manual_seed(0))
    noise = upstream_gradient(sanitizer, torch.zeros(rows, 2000))
    assert noise.std().item() == pytest.approx(2.0 * 0.5 / rows, rel=0.02)


class ToyGSWGAN(pl.LightningModule):
    """Generator output sanitised before a (non-private) critic; γ = 1/K with K critics."""

    privacy_barrier = "B3"
    sanitizer_sample_rate = 0.01
    sanitized_rows_per_step = 16
    private_dataset_size = 1000

    def __init__(self):
        super().__init__()
        self.generator, self.critic = nn.Linear(4, 8), nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        fake = self.gradient_sanitizer(self.generator(torch.randn(self.sanitized_rows_per_step, 4)))
        return -self.critic(fake).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.generator.parameters(), lr=0.1)


def test_b3_accounts_one_mechanism_per_sanitised_row_and_stops_at_the_target():
    callback = DPCallback(target_epsilon=5.0, accountant="rdp", planned_steps=10, dataset_id="toy")
    loader = DataLoader(TensorDataset(torch.zeros(1000, 1)), batch_size=1)
    trainer = tiny_trainer([callback], max_steps=10_000)
    trainer.fit(ToyGSWGAN(), loader)
    entry = callback.entry
    assert entry.barrier == "B3" and entry.sample_rate == 0.01
    assert entry.steps == 16 * trainer.global_step
    assert epsilon_spent([(entry.noise_multiplier, 0.01, entry.steps)], 1e-5, "rdp") <= 5.0
    assert epsilon_spent([(entry.noise_multiplier, 0.01, entry.steps + 16)], 1e-5, "rdp") > 5.0


def test_gaussian_release_noise_and_ledger_entry():
    ledger = PrivacyLedger()
    statistic = torch.zeros(20_000)
    noisy, entry = gaussian_release(
        statistic,
        0.5,
        target_epsilon=1.0,
        delta=1e-5,
        dataset_id="toy",
        dataset_size=1000,
        accountant="rdp",
        ledger=ledger,
        generator=torch.Generator().manual_seed(0),
    )
    assert ledger.entries == [entry] and entry.barrier == "B1" and entry.steps == 1
    assert noisy.std().item() == pytest.approx(entry.noise_multiplier * 0.5, rel=0.02)
    assert 0.97 <= ledger.epsilon("toy") <= 1.0
