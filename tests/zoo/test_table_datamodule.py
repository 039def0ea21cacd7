"""Tables for DP-NF: the random 90/10 splits, the private standardisation and its ledger entry."""

import math
import warnings

import pytest
import torch

from lightning_modules import DPNF
from tests.toys import tiny_trainer
from zoo.data import TableDataModule
from zoo.data.standardisation import private_standardisation
from zoo.data.table_datamodule import split_and_validation
from zoo.data.tables import ROW_NORM_BOUNDS, SYNTHETIC
from zoo.privacy import DPBudget, DPCallback, PrivacyConfigError, PrivacyLedger, epsilon_spent
from zoo.release.hub import from_pretrained, save_pretrained
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


def budget(noise_multiplier: float = 1.0) -> DPBudget:
    budget = DPBudget(noise_multiplier=noise_multiplier)
    budget.bind(PrivacyLedger(), "t")
    return budget


def test_splits_are_disjoint_seeded_and_differ_between_indices():
    first = TableDataModule("half_moons", split=0, standardisation="public", validation_fraction=0.1)
    first.setup()
    rows = {tuple(r) for part in (first.train_rows, first.validation_rows, first.test_rows) for r in part.tolist()}
    assert len(first.test_rows) == 3000 and len(first.validation_rows) == 2700 and len(first.train_rows) == 24300
    assert len(rows) == 30000
    again = TableDataModule("half_moons", split=0, standardisation="public", validation_fraction=0.1)
    again.setup()
    torch.testing.assert_close(again.test_rows, first.test_rows)
    other = TableDataModule("half_moons", split=1, standardisation="public")
    other.setup()
    assert not torch.equal(other.test_rows, first.test_rows)
    assert first.dataset_id != other.dataset_id


def test_private_standardisation_is_close_and_accounted():
    table = torch.randn(20000, 3, dtype=torch.float64) * torch.tensor([1.0, 2.0, 1.5]) + torch.tensor([1.0, -2.0, 0.0])
    spend = budget()
    released = private_standardisation(table, 8.0, 20.0, spend)
    # noise std on each mean: 20·sqrt(2)/20000·8 ≈ 0.01
    torch.testing.assert_close(released.mean, torch.tensor([1.0, -2.0, 0.0]), atol=0.1, rtol=0)
    torch.testing.assert_close(released.std, torch.tensor([1.0, 2.0, 1.5]), atol=0.15, rtol=0)
    (entry,) = spend.ledger.entries
    assert entry.clip_norm == pytest.approx(math.sqrt(2)) and entry.noise_multiplier == 20.0
    assert entry.sample_rate == 1.0 and entry.steps == 1 and entry.dataset_id == "t" and entry.barrier == "B1"


def test_private_standardisation_noise_has_the_stated_scale():
    table = torch.zeros(1000, 2, dtype=torch.float64)
    table[0] = 1.0  # std must be positive; the sums are then tiny against the noise
    means = torch.stack([private_standardisation(table, 1.0, 5.0, budget()).mean for _ in range(400)])
    # noise std on Σu is σ·sqrt(2) ≈ 7.07, so on the mean 0.00707 (B = 1)
    assert means.std().item() == pytest.approx(5 * math.sqrt(2) / 1000, rel=0.15)


@pytest.mark.parametrize("accountant", ["prv", "gdp"])
def test_fit_adopts_the_release_and_composes_it_into_the_target(accountant, tmp_path):
    torch.manual_seed(0)
    data = TableDataModule("gaussians", sample_rate=0.01, clip_bound=8.0, standardisation_noise_multiplier=10.0)
    model = DPNF(features=2, blocks=1, hidden=8)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="the GDP accountant")
        budget = DPBudget(target_epsilon=2.0, max_grad_norm=1.0, accountant=accountant)
    train(model, data, budget, max_steps=5, limit_val_batches=0, **QUIET)
    release, training = model.privacy_ledger.entries
    assert release.mechanism == "gaussian" and release.dataset_id == training.dataset_id == data.dataset_id
    assert training.steps == 5
    spent = model.privacy_ledger.epsilon(data.dataset_id, 1e-5, accountant)
    assert 1.9 < spent <= 2.0
    assert spent > epsilon_spent(training.history(), 1e-5, accountant)
    assert model.hparams.standardisation.startswith("private")
    assert model.feature_std.min() > 1.0  # the modes sit on a circle of radius 4
    loaded = from_pretrained(save_pretrained(model, tmp_path / "nf"))
    torch.testing.assert_close(loaded.feature_mean, model.feature_mean)
    torch.testing.assert_close(loaded.log_prob(data.test_rows[:50]), model.log_prob(data.test_rows[:50]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(table="nope"), "unknown table"),
        (dict(table="gaussians", split=10), r"split must be an integer in 0\.\.9"),
        (dict(table="gaussians"), "needs clip_bound"),
        (dict(table="gaussians", standardisation="robust"), "must be one of"),
        (dict(table="gaussians", clip_bound=1.0, test_fraction=1.5), "fractions"),
    ],
)
def test_bad_settings_get_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TableDataModule(**kwargs)


def test_private_actnorm_start_is_released_per_block_and_composed():
    torch.manual_seed(0)
    data = TableDataModule("gaussians", sample_rate=0.01, clip_bound=8.0)
    model = DPNF(features=2, blocks=2, hidden=8, actnorm_init="private")
    budget = DPBudget(target_epsilon=2.0, max_grad_norm=1.0)
    train(model, data, budget, max_steps=1, limit_val_batches=0, **QUIET)
    mechanisms = [e.mechanism for e in model.privacy_ledger.entries]
    assert mechanisms == ["gaussian", "gaussian", "gaussian", "subsampled_gaussian"]
    assert [e.note.split(":")[0] for e in model.privacy_ledger.entries[:3]] == [
        "standardisation",
        "ActNorm 0 initialisation",
        "ActNorm 1 initialisation",
    ]
    assert 1.9 < model.privacy_ledger.epsilon(data.dataset_id) <= 2.0
    actnorm = model.flow.blocks[0].actnorm
    assert actnorm.log_scale.abs().max() > 0  # moved from the identity start


def test_private_actnorm_start_needs_a_table():
    from torch.utils.data import TensorDataset

    from tests.toys import ToyData

    model = DPNF(features=2, blocks=1, hidden=8, actnorm_init="private")
    data = ToyData(TensorDataset(torch.randn(100, 2)), 0.1, "toy")
    with pytest.raises(ValueError, match="TableDataModule"):
        train(model, data, DPBudget(target_epsilon=1.0), max_steps=1, **QUIET)


def test_a_table_of_another_width_is_refused_before_any_release():
    data = TableDataModule("gaussians", sample_rate=0.01, clip_bound=8.0)
    model = DPNF(features=3, blocks=1, hidden=8)
    with pytest.raises(ValueError, match="the model has 3 features, the table 2"):
        train(model, data, DPBudget(target_epsilon=1.0), max_steps=1, **QUIET)
    assert model.privacy_ledger.entries == []


def test_trainer_fit_alone_cannot_skip_the_release_stages():
    data = TableDataModule("gaussians", sample_rate=0.01, clip_bound=8.0)
    with pytest.raises(PrivacyConfigError, match=r"trains in stages \(standardisation, DP-SGD on the flow\)"):
        tiny_trainer([DPCallback(target_epsilon=1.0)], 1).fit(DPNF(features=2, blocks=1, hidden=8), data)


def test_row_scaling_bounds_every_row_norm_by_one():
    """The sensitivity of the standardisation and DP-EM releases rests on this bound."""
    from zoo.privacy.mechanisms import scale_rows_to_unit_ball

    rows = torch.tensor([[300.0, 400.0], [0.3, 0.4], [0.0, 0.0]], dtype=torch.float64)
    scaled = scale_rows_to_unit_ball(rows, 2.0)
    torch.testing.assert_close(scaled.norm(dim=1), torch.tensor([1.0, 0.25, 0.0], dtype=torch.float64))
    torch.testing.assert_close(scaled[1], rows[1] / 2.0)


@pytest.mark.parametrize("table", sorted(SYNTHETIC))
def test_synthetic_row_norm_bounds_hold_on_public_draws_not_read_off_the_protected_rows(table):
    """The bound comes from draws with other seeds of the public generator (seed 0 is the private table)."""
    largest = max(float(SYNTHETIC[table](seed=seed).norm(dim=1).max()) for seed in (1, 2, 3))
    assert largest < ROW_NORM_BOUNDS[table] < 2 * largest


def test_held_out_validation_rows_keep_the_test_rows_of_their_split():
    plain = TableDataModule("half_moons", split=2, standardisation="public")
    held_out = TableDataModule("half_moons", split=2, validation_fraction=0.1, standardisation="public")
    plain.setup(), held_out.setup()
    assert torch.equal(plain.test_rows, held_out.test_rows) and plain.dataset_id != held_out.dataset_id
    assert split_and_validation(held_out.dataset_id) == (plain.dataset_id, 0.1)
    assert split_and_validation(plain.dataset_id) == (plain.dataset_id, 0.0)


def test_every_split_of_a_table_draws_its_records_from_the_one_table():
    """Splits hold out other test rows of one table, so their training rows overlap: one source, other records."""
    tables = [
        TableDataModule("half_moons", split=split, validation_fraction=fraction, standardisation="public")
        for split, fraction in ((0, 0.0), (1, 0.0), (0, 0.1))
    ]
    records = [data.records_identity for data in tables]
    assert all(r.startswith("half_moons/train#") for r in records) and len(set(records)) == 3
    assert tables[0].dataset_id.startswith("half_moons/train[")


def test_a_users_table_file_is_named_by_the_local_index_and_split_row_by_row(tmp_path):
    """A user's CSV: the ledger names its rows by this machine's record index, not by the file's path or a digest
    of the rows, a copy elsewhere is the same data, and removing one row moves no other row's side."""
    import numpy as np

    rows = np.random.default_rng(0).normal(size=(400, 3))
    table = tmp_path / "patients.csv"
    np.savetxt(table, rows, delimiter=",")
    options = dict(standardisation="public", validation_fraction=0.1)
    data = TableDataModule(str(table), **options)
    assert (
        data.dataset_id.startswith("local:")
        and "patients" not in data.dataset_id
        and str(tmp_path) not in (data.dataset_id + data.records_identity)
    )
    copy = tmp_path / "elsewhere.csv"
    copy.write_bytes(table.read_bytes())
    assert TableDataModule(str(copy), **options).records_identity == data.records_identity

    def sides(module):
        module.setup()
        return {side: {tuple(r) for r in getattr(module, f"{side}_rows").double().numpy().round(6)} for side in (
            "train", "validation", "test")}  # fmt: skip

    before = sides(data)
    assert all(before.values())
    np.savetxt(table, rows[1:], delimiter=",")
    after = sides(TableDataModule(str(table), **options))
    removed = tuple(np.float32(rows[0]).astype(np.float64).round(6))
    assert after == {side: kept - {removed} for side, kept in before.items()}


def test_a_file_that_copies_a_named_tables_rows_shares_its_records(tmp_path):
    import numpy as np

    from zoo.data.tables import load_table
    from zoo.privacy.records import shared_records

    named = TableDataModule("half_moons", standardisation="public")
    copy = tmp_path / "moons.csv"
    np.savetxt(copy, load_table("half_moons").numpy(), delimiter=",", fmt="%.17g")
    mine = TableDataModule(str(copy), standardisation="public")
    assert shared_records((named.records_identity, named.dataset_id), (mine.records_identity, mine.dataset_id))
