"""DP-NF: a MAF on a table, trained with DP-SGD; exact densities in the table's units."""

import pytest
import torch
from torch.utils.data import TensorDataset

from lightning_modules import DPNF
from tests.toys import ToyData, tiny_trainer
from zoo.data.tables import half_moons
from zoo.privacy import DPCallback
from zoo.release.hub import from_pretrained, save_pretrained


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(0)
    table = half_moons(rows=2000).float()
    mean, std = table.mean(0).tolist(), table.std(0).tolist()
    model = DPNF(features=2, blocks=2, hidden=16, learning_rate=1e-2, feature_mean=mean, feature_std=std)
    before = model.log_prob(table).mean().item()
    callback = DPCallback(target_epsilon=4.0, delta=1e-5, max_grad_norm=1.0, accountant="gdp", planned_steps=40)
    tiny_trainer([callback], 40).fit(model, ToyData(TensorDataset(table), 0.05, "half-moons-train"))
    return model.eval(), table, callback, before


def test_private_training_raises_the_likelihood_and_records_the_guarantee(trained):
    model, table, callback, before = trained
    assert model.log_prob(table).mean().item() > before + 0.3
    (entry,) = model.privacy_ledger.entries
    assert entry.per_example_gradients == "ghost" and entry.accountant == "gdp"
    assert entry.steps == 40 and callback.epsilon <= 4.0


def test_density_in_table_units_integrates_to_one():
    torch.manual_seed(0)
    model = DPNF(features=1, blocks=2, hidden=8, feature_mean=[3.0], feature_std=[0.5]).double()
    grid = torch.linspace(-5, 11, 4001, dtype=torch.double)[:, None]
    mass = model.log_prob(grid).exp().sum() * (grid[1] - grid[0])
    assert mass.item() == pytest.approx(1.0, abs=0.01)


def test_samples_and_round_trip(trained, tmp_path):
    model = trained[0]
    samples = model.sample(300, seed=0)
    assert samples.shape == (300, 2) and torch.isfinite(samples).all()
    loaded = from_pretrained(save_pretrained(model, tmp_path / "nf"))
    torch.testing.assert_close(loaded.sample(300, seed=0), samples)
    torch.testing.assert_close(loaded.log_prob(samples), model.log_prob(samples))


@pytest.mark.parametrize(
    "rows, message",
    [
        (torch.zeros(4, 3), r"shape \(n, 2\); got \(4, 3\)"),
        (torch.zeros(4), r"got \(4,\)"),
        (torch.tensor([[0.0, float("nan")]]), "NaN"),
        ([[0.0, 1.0]], "got list"),
    ],
)
def test_bad_rows_get_clear_errors(trained, rows, message):
    with pytest.raises(ValueError, match=message):
        trained[0].log_prob(rows)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(features=0), "positive integer"),
        (dict(features=2, feature_std=[1.0, 0.0]), "std > 0"),
        (dict(features=2, feature_mean=[1.0]), "2 values"),
    ],
)
def test_bad_settings_get_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DPNF(**kwargs)


@pytest.mark.heavy
def test_cosine_decay_brings_the_learning_rate_to_zero():
    table = half_moons(rows=500).float()
    model = DPNF(features=2, blocks=1, hidden=8, learning_rate=1e-2, cosine_decay=True)
    callback = DPCallback(target_epsilon=4.0, delta=1e-5, max_grad_norm=1.0, planned_steps=10)
    trainer = tiny_trainer([callback], 10)
    trainer.fit(model, ToyData(TensorDataset(table), 0.1, "half-moons-train"))
    (optimizer,) = trainer.optimizers
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-9)
    assert model.privacy_ledger.entries[0].steps == 10
