"""DP-Kernel's B1′ release (zoo.privacy.mechanisms.kernel_embedding), probed from outside: a planted
record's reach, the GP noise's covariance, the ledger's ε from first principles, what is released."""

import json

import dp_accounting
import pytest
import torch
from dp_accounting import pld
from safetensors.torch import load_file
from torch.utils.data import DataLoader, TensorDataset

import zoo
from lightning_modules.dp_kernel import DPKernel
from lightning_modules.nets.random_features import fourier_features, mixture_frequencies
from zoo.data import TensorDataModule
from zoo.privacy import DPBudget, DPCallback, PrivacyConfigError
from zoo.privacy.mechanisms import NoisedEmbedding
from zoo.release.hub import save_pretrained
from zoo.release.registry import checkpoints_dir
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


def tiny_model(**changes) -> DPKernel:
    return DPKernel(**{**DPKernel.tiny_recipe().architecture, **changes})


def toy_data(records: int = 120) -> TensorDataModule:
    images = torch.rand(records, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    return TensorDataModule(images, torch.arange(records) % 3, "toy-images", sample_rate=0.25)


def released(features: torch.Tensor, labels: torch.Tensor, noise_seed: int = 7, **settings) -> torch.Tensor:
    settings = {"noise_multiplier": 2.0, "max_norm": 1.0, "expected_batch_size": 10.0, **settings}
    release = NoisedEmbedding(**settings, generator=torch.Generator().manual_seed(noise_seed))
    return release(features, labels, 3)


@pytest.mark.parametrize("planted", [1e6, -1e6, 0.0, float(2**20)])
def test_a_planted_extreme_record_moves_the_embedding_by_at_most_C(planted):
    """Through DP-Kernel's own feature map: the planted image's term has norm ≤ C whatever its pixels,
    and the same noise draw on the two neighbours leaves a difference of at most C (times 1/(qN))."""
    model = tiny_model()
    frequencies = model.step_frequencies(0)
    images = torch.rand(9, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    labels = torch.arange(9) % 3
    with_planted = torch.cat([images, torch.full((1, 1, 8, 8), planted)])
    for clip in (1.0, 0.3):
        without = released(fourier_features(images.double(), frequencies), labels, max_norm=clip)
        plus = released(
            fourier_features(with_planted.double(), frequencies), torch.cat([labels, labels[:1]]), max_norm=clip
        )
        assert ((plus - without) * 10.0).norm() <= clip * (1 + 1e-9)


def test_unnormalised_features_are_clipped_to_C():
    rows = torch.randn(5, 16, dtype=torch.float64) * 1e3
    labels = torch.zeros(5, dtype=torch.long)
    alone = released(rows[:4], labels[:4], max_norm=0.5) * 10.0
    assert (released(rows, labels, max_norm=0.5) * 10.0 - alone).norm() == pytest.approx(0.5)


def test_the_noise_is_the_stated_gaussian_process():
    """Evaluated at generated points, the released function's noise has covariance (σC/qN)²·k_t(Y, Y')·[c = c']."""
    sigma, clip, batch = 1.5, 0.8, 4.0
    frequencies = mixture_frequencies(12, 8, (0.5, 2.0), torch.Generator().manual_seed(3))
    points = torch.randn(4, 12, dtype=torch.float64)
    point_labels = torch.tensor([0, 0, 1, 1])
    phi = fourier_features(points, frequencies)  # (4, 16)
    data = fourier_features(torch.randn(6, 12, dtype=torch.float64), frequencies)
    data_labels = torch.arange(6) % 3
    release = NoisedEmbedding(sigma, clip, batch, torch.Generator().manual_seed(0))
    draws = torch.stack([release(data, data_labels, 3) for _ in range(20_000)])  # (draws, 16, 3)
    values = torch.einsum("nd,tdn->tn", phi, draws[:, :, point_labels])
    empirical = torch.cov(values.T)
    kernel = (phi @ phi.T) * (point_labels[:, None] == point_labels[None, :])
    stated = (sigma * clip / batch) ** 2 * kernel
    assert torch.allclose(empirical, stated, atol=0.05 * stated.diagonal().max().item())
    assert release.releases == 20_000


def test_non_finite_features_are_refused_never_released_unnoised():
    with pytest.raises(ValueError, match="not all finite"):
        released(torch.tensor([[float("nan"), 1.0]]), torch.tensor([0]))


def test_epsilon_recomputed_from_first_principles_by_a_second_accountant():
    """One Poisson-subsampled Gaussian per step at (σ, q): Google's PLD accountant agrees with the ledger."""
    model = tiny_model()
    privacy = DPBudget(noise_multiplier=3.0, max_grad_norm=1.0, accountant="prv")
    train(model, toy_data(), privacy, max_steps=12, **QUIET)
    (entry,) = model.privacy_ledger.entries
    assert entry.mechanism == "subsampled_kernel_embedding" and entry.barrier == "B1'"
    assert entry.steps == 12 == model.embedding_release.releases and entry.sample_rate == 0.25
    event = dp_accounting.PoissonSampledDpEvent(0.25, dp_accounting.GaussianDpEvent(3.0))
    accountant = pld.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, 12))
    reference = accountant.get_epsilon(1e-5)
    assert model.privacy_ledger.epsilon(entry.dataset_id, 1e-5, "prv") == pytest.approx(reference, rel=0.03)


def test_training_calibrates_sigma_to_the_target_and_releases_only_the_generator(tmp_path):
    model = tiny_model()
    train(model, toy_data(), DPBudget(target_epsilon=2.0), max_steps=5, **QUIET)
    assert 1.9 < model.privacy_ledger.epsilon("toy-images", 1e-5, "prv") <= 2.0
    keys = load_file(str(save_pretrained(model, tmp_path / "m") / "model.safetensors")).keys()
    assert keys and all(k.startswith("generator.") for k in keys)


@pytest.mark.heavy
def test_fine_tuning_on_new_data_adds_an_entry_and_keeps_the_old_one():
    model = tiny_model()
    train(model, toy_data(), DPBudget(target_epsilon=2.0), max_steps=3, **QUIET)
    new_images = torch.rand(80, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    new_data = TensorDataModule(new_images, torch.arange(80) % 3, "new-images", sample_rate=0.25)
    zoo.finetune(model, new_data, target_epsilon=3.0, max_steps=3, **QUIET)  # the card composes both: ε = 3
    old, new = model.privacy_ledger.entries
    assert (old.dataset_id, new.dataset_id) == ("toy-images", "new-images") and new.steps == 3
    assert model.privacy_ledger.guarantees()["new-images"]["epsilon"] <= 3.0


def test_step_frequencies_are_public_functions_of_seed_and_step():
    model = tiny_model()
    assert torch.equal(model.step_frequencies(4), tiny_model().step_frequencies(4))
    assert not torch.equal(model.step_frequencies(4), model.step_frequencies(5))
    assert not torch.equal(model.step_frequencies(4), tiny_model(feature_seed=1).step_frequencies(4))


def test_a_step_that_releases_twice_is_refused():
    class Twice(DPKernel):
        def training_step(self, batch, batch_idx):
            super().training_step(batch, batch_idx)
            return super().training_step(batch, batch_idx)

    with pytest.raises(PrivacyConfigError, match="2 times"):
        train(
            Twice(**DPKernel.tiny_recipe().architecture),
            toy_data(),
            DPBudget(noise_multiplier=2.0),
            max_steps=2,
            **QUIET,
        )


def test_a_plain_loader_and_training_without_the_callback_are_refused():
    import pytorch_lightning as pl

    images = torch.rand(20, 1, 8, 8)
    loader = DataLoader(TensorDataset(images, torch.arange(20) % 3), batch_size=5)
    trainer = pl.Trainer(max_steps=1, callbacks=[DPCallback(noise_multiplier=2.0)], **QUIET)
    with pytest.raises(PrivacyConfigError, match="Poisson"):
        trainer.fit(tiny_model(), loader)
    with pytest.raises(PrivacyConfigError, match="only under a DPCallback"):
        pl.Trainer(max_steps=1, **QUIET).fit(tiny_model(), loader)


def test_bad_settings_fail_before_training():
    with pytest.raises(ValueError, match="even number"):
        tiny_model(features=7)
    with pytest.raises(ValueError, match="kernel_widths"):
        tiny_model(kernel_widths=(1.0, -2.0))
    with pytest.raises(ValueError, match="generator must be one of"):
        tiny_model(generator="vae")


DP_KERNEL_CHECKPOINTS = sorted(p.parent.name for p in checkpoints_dir().glob("dp-kernel-*/config.json"))


@pytest.mark.parametrize("model_id", DP_KERNEL_CHECKPOINTS)
def test_shipped_checkpoints_epsilon_recomputes_from_the_ledger(model_id):
    """From config.json alone: each entry one Poisson-subsampled Gaussian per step, composed by Google's PLD."""
    ledger = json.loads((checkpoints_dir() / model_id / "config.json").read_text())["privacy_ledger"]
    (entry,) = ledger["entries"]
    assert entry["mechanism"] == "subsampled_kernel_embedding" and entry["clip_norm"] == 1.0
    event = dp_accounting.PoissonSampledDpEvent(
        entry["sample_rate"], dp_accounting.GaussianDpEvent(entry["noise_multiplier"])
    )
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(event, entry["steps"])
    independent = accountant.get_epsilon(entry["delta"])
    card = zoo.load(model_id).privacy_ledger.guarantees()[entry["dataset_id"]]["epsilon"]
    assert independent <= card * (1 + 1e-3) and card <= independent * 1.02
    assert card <= entry["target_epsilon"]
