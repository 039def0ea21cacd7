"""B3 (sanitised output gradients) and B1 (one-shot Gaussian release)."""

import pytest
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.toys import tiny_trainer
from zoo.privacy import (
    DPCallback,
    GradientSanitizer,
    PrivacyConfigError,
    PrivacyLedger,
    epsilon_spent,
    gaussian_release,
)


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
    """Generator output sanitised before a (non-private) critic; γ = 1/K with K critics. The
    critic's weight is zero, so the sanitised gradient that reaches the generator is pure noise."""

    privacy_barrier = "B3"
    sanitizer_sample_rate = 0.01
    sanitized_rows_per_step = 16
    private_dataset_size = 1000

    def __init__(self, rows: int = 16):
        super().__init__()
        self.rows = rows
        self.generator, self.critic = nn.Linear(4, 8), nn.Linear(8, 1)
        nn.init.zeros_(self.critic.weight)
        self.received = []

    def training_step(self, batch, batch_idx):
        output = self.generator(torch.randn(self.rows, 4))
        output.register_hook(lambda grad: self.received.append(grad.detach().clone()))
        return -self.critic(self.gradient_sanitizer(output)).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.generator.parameters(), lr=0.1)


def b3_run(callback: DPCallback, rows: int = 16, max_steps: int = 10_000) -> tuple[pl.Trainer, ToyGSWGAN]:
    model = ToyGSWGAN(rows)
    loader = DataLoader(TensorDataset(torch.zeros(1000, 1)), batch_size=1)
    trainer = tiny_trainer([callback], max_steps=max_steps)
    trainer.fit(model, loader)
    return trainer, model


def test_b3_accounts_one_subsampled_gaussian_per_step_at_sensitivity_2C_sqrt_B():
    callback = DPCallback(target_epsilon=5.0, accountant="rdp", planned_steps=10, dataset_id="toy")
    trainer, _ = b3_run(callback)
    entry = callback.entry
    assert entry.barrier == "B3" and entry.sample_rate == 0.01
    assert entry.steps == trainer.global_step >= 10
    assert entry.parameters["rows_per_step"] == 16 and entry.parameters["l2_sensitivity"] == 2 * 1.0 * 4
    assert entry.parameters["row_noise_multiplier"] == pytest.approx(2 * 4 * entry.noise_multiplier)
    assert epsilon_spent([(entry.noise_multiplier, 0.01, entry.steps)], 1e-5, "rdp") <= 5.0
    assert epsilon_spent([(entry.noise_multiplier, 0.01, entry.steps + 1)], 1e-5, "rdp") > 5.0


def test_b3_epsilon_recomputed_from_first_principles_by_a_second_accountant():
    """From what the run did (B rows per step, clip C, the noise it actually added, γ, T steps)
    and the theorem (every row of a step may move by 2C: L2 sensitivity 2C·√B), Google's PLD
    accountant gives the ε that the ledger reports."""
    import dp_accounting
    from dp_accounting import pld

    sigma_row, clip, rows, gamma = 6.0, 0.5, 16, 0.01
    callback = DPCallback(noise_multiplier=sigma_row, max_grad_norm=clip, accountant="prv", dataset_id="toy")
    trainer, model = b3_run(callback, rows, max_steps=400)
    steps = trainer.global_step
    noise_std = (torch.cat(model.received) * rows).std().item()  # mean reduction divides each row by B
    assert noise_std == pytest.approx(sigma_row * clip, rel=0.03)
    event = dp_accounting.PoissonSampledDpEvent(
        gamma, dp_accounting.GaussianDpEvent(noise_std / (2 * clip * rows**0.5))
    )
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    reference = accountant.get_epsilon(1e-5)
    assert callback.entry.steps == steps == 400
    assert callback.epsilon == pytest.approx(reference, rel=0.05)
    per_row_claim = epsilon_spent([(sigma_row, gamma, steps * rows)], 1e-5, "prv")  # the official code's analysis
    assert per_row_claim < reference / 5


def test_b3_refuses_more_rows_than_declared():
    with pytest.raises(PrivacyConfigError, match="declares sanitized_rows_per_step = 16"):
        b3_run(DPCallback(noise_multiplier=1.0, accountant="rdp", dataset_id="toy"), rows=17, max_steps=2)


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
