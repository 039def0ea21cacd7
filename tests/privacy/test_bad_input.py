"""Every bad privacy setting or declaration fails early with a plain message naming the fix."""

import math
from types import SimpleNamespace

import pytest
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader

from tests.toys import TinyClassifier, ToyData, tiny_trainer, toy_images
from zoo.privacy import DPBudget, DPCallback, PrivacyConfigError


@pytest.mark.parametrize("epsilon", [0, -1.0, math.nan, math.inf, "1"])
def test_bad_epsilon(epsilon):
    with pytest.raises(PrivacyConfigError, match="target_epsilon must be a finite number > 0"):
        DPCallback(target_epsilon=epsilon)


@pytest.mark.parametrize("delta", [0, 1, -1e-5, 1.5, math.nan])
def test_bad_delta(delta):
    with pytest.raises(PrivacyConfigError, match=r"delta must lie in \(0, 1\)"):
        DPCallback(target_epsilon=1.0, delta=delta)


@pytest.mark.parametrize("clip", [0, -0.1, math.inf])
def test_bad_clip(clip):
    with pytest.raises(PrivacyConfigError, match="max_grad_norm must be a finite number > 0"):
        DPCallback(target_epsilon=1.0, max_grad_norm=clip)


@pytest.mark.parametrize("kwargs", [{}, {"target_epsilon": 1.0, "noise_multiplier": 1.0}])
def test_exactly_one_of_epsilon_and_sigma(kwargs):
    with pytest.raises(PrivacyConfigError, match="exactly one of target_epsilon"):
        DPCallback(**kwargs)


def test_unknown_accountant_and_mode():
    with pytest.raises(PrivacyConfigError, match="accountant must be one of"):
        DPCallback(target_epsilon=1.0, accountant="moments")
    with pytest.raises(PrivacyConfigError, match="per_example_mode must be one of"):
        tiny_trainer([DPCallback(noise_multiplier=1.0, per_example_mode="fast")], 1).fit(
            TinyClassifier(), ToyData(toy_images(20), 0.5)
        )


def test_delta_at_least_one_over_n_warns():
    callback = DPCallback(noise_multiplier=1.0, delta=0.1)
    with pytest.warns(UserWarning, match="delta=0.1 is >= 1/N"):
        tiny_trainer([callback], 1).fit(TinyClassifier(), ToyData(toy_images(20), 0.5))


def _fit(module, data=None, **callback_kwargs):
    callback = DPCallback(noise_multiplier=1.0, **callback_kwargs)
    tiny_trainer([callback], 1).fit(module, data or ToyData(toy_images(20), 0.5))


class WithBatchNorm(TinyClassifier):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(144, 3))


def test_batch_norm_in_private_module_is_rejected():
    with pytest.raises(PrivacyConfigError, match="BatchNorm.*GroupNorm"):
        _fit(WithBatchNorm())


class Frozen(TinyClassifier):
    def __init__(self):
        super().__init__()
        self.net.requires_grad_(False)


def test_private_module_without_trainable_parameters_is_rejected():
    with pytest.raises(PrivacyConfigError, match="no trainable parameters"):
        _fit(Frozen())


class Undeclared(TinyClassifier):
    privacy_barrier = None


def test_missing_barrier_declaration():
    with pytest.raises(PrivacyConfigError, match="must declare privacy_barrier"):
        _fit(Undeclared())


class NoPrivateModules(TinyClassifier):
    private_modules = None


def test_missing_private_modules():
    with pytest.raises(PrivacyConfigError, match="must define private_modules"):
        _fit(NoPrivateModules())


class ShuffledLoader(pl.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(toy_images(20), batch_size=5, shuffle=True)


def test_shuffled_epoch_loader_never_reaches_a_private_step():
    with pytest.raises(PrivacyConfigError, match="Poisson-sampled train loader.*poisson_loader"):
        _fit(TinyClassifier(), ShuffledLoader())


def test_accumulation_must_match_micro_batches():
    class SingleChunk(ToyData):
        def train_dataloader(self):
            from zoo.privacy import poisson_loader

            return poisson_loader(self.dataset, self.sample_rate, micro_batches=1)

    callback = DPCallback(noise_multiplier=1.0)
    with pytest.raises(PrivacyConfigError, match="micro_batches=trainer.accumulate_grad_batches"):
        tiny_trainer([callback], 1, accumulate_grad_batches=2).fit(TinyClassifier(), SingleChunk(toy_images(20), 0.5))


def test_optimizer_mixing_private_and_public_parameters_is_rejected():
    class Mixed(TinyClassifier):
        def __init__(self):
            super().__init__()
            self.public = nn.Linear(2, 2)

        def configure_optimizers(self):
            return torch.optim.SGD([*self.public.parameters()] + [next(self.net.parameters())], lr=0.0)

    with pytest.raises(PrivacyConfigError, match="one optimizer must hold all private parameters"):
        _fit(Mixed())


def test_fp16_loss_scaling_is_refused():
    gpu_trainer = SimpleNamespace(precision="16-mixed")  # CPU trainers turn fp16 into bf16 themselves
    with pytest.raises(PrivacyConfigError, match="bf16-mixed"):
        DPCallback(noise_multiplier=1.0).setup(gpu_trainer, TinyClassifier(), "fit")


def test_bf16_autocast_trains():
    callback = DPCallback(noise_multiplier=1.0, accountant="rdp")
    tiny_trainer([callback], 2, precision="bf16-mixed").fit(TinyClassifier(lr=0.1), ToyData(toy_images(20), 0.5))
    assert callback.entry.steps == 2


def test_target_epsilon_needs_a_bounded_run():
    callback = DPCallback(target_epsilon=1.0)
    with pytest.raises(PrivacyConfigError, match="unbounded run"):
        tiny_trainer([callback], -1, max_epochs=-1).fit(TinyClassifier(), ToyData(toy_images(20), 0.5))


def test_public_parameters_in_the_private_optimizer_are_refused_by_name():
    """They would receive the raw, unclipped gradient of the private data."""

    class Extra(TinyClassifier):
        def __init__(self):
            super().__init__()
            self.public = nn.Linear(2, 2)

        def training_step(self, batch, batch_idx):
            return super().training_step(batch, batch_idx) + self.public(torch.ones(1, 2)).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    with pytest.raises(PrivacyConfigError, match=r"outside private_modules\(\): \['public.weight', 'public.bias'\]"):
        _fit(Extra())


def test_a_callback_takes_a_budget_or_its_settings_by_name():
    with pytest.raises(PrivacyConfigError, match=r"DPCallback\(target_epsilon=1.0\)"):
        DPCallback(1.0)
    with pytest.raises(PrivacyConfigError, match="not both"):
        DPCallback(DPBudget(target_epsilon=1.0), delta=1e-6)
