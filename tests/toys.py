"""Tiny models and loaders for privacy tests: fast, and each exercising one property."""

from __future__ import annotations

from types import SimpleNamespace

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import TensorDataset

from zoo.privacy import PrivacyLedger, poisson_loader


def tiny_trainer(callbacks: list, max_steps: int, **kwargs) -> pl.Trainer:
    options = dict(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    options.update(kwargs)
    return pl.Trainer(max_steps=max_steps, callbacks=callbacks, **options)


class TinyClassifier(pl.LightningModule):
    """Conv + Linear classifier on 1×8×8 inputs, trained with SGD (lr given)."""

    privacy_barrier = "B4"

    def __init__(self, lr: float = 0.0) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(
            nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3)
        )

    def private_modules(self):
        return [self.net]

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class ZeroGradient(pl.LightningModule):
    """A wide Linear layer whose loss has zero gradient: the update is pure noise."""

    privacy_barrier = "B4"

    def __init__(self, width: int = 300) -> None:
        super().__init__()
        self.layer = nn.Linear(width, width)

    def private_modules(self):
        return [self.layer]

    def training_step(self, batch, batch_idx):
        x, _ = batch
        return 0.0 * self.layer(x.flatten(1)).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.0)


class StopAfter(pl.Callback):
    """Saves a checkpoint after ``steps`` steps and stops, as an interrupted run would."""

    def __init__(self, path, steps):
        self.path, self.steps = path, steps

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.steps:
            trainer.save_checkpoint(self.path)
            trainer.should_stop = True


class GradientRecorder(pl.Callback):
    """Keeps a copy of every private gradient the optimizer receives (after DPCallback)."""

    def __init__(self) -> None:
        self.grads: list[list[torch.Tensor]] = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.grads.append([p.grad.detach().clone() for g in optimizer.param_groups for p in g["params"]])


def toy_images(n: int, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 1, 8, 8, generator=generator), torch.randint(0, 3, (n,), generator=generator))


class ToyData(pl.LightningDataModule):
    def __init__(
        self,
        dataset: TensorDataset,
        sample_rate: float,
        dataset_id: str = "toy",
        seed: int | None = 0,
        partition_of: str | None = None,
    ):
        super().__init__()
        self.dataset, self.sample_rate, self.dataset_id, self.seed = dataset, sample_rate, dataset_id, seed
        self.partition_of = partition_of

    def train_dataloader(self):
        return poisson_loader(
            self.dataset, self.sample_rate, micro_batches=self.trainer.accumulate_grad_batches, seed=self.seed
        )


class RecordingBudget:
    """Stands in for a release's budget: keeps the exact statistic and the sensitivity claimed for it."""

    def __init__(self) -> None:
        self.released: list = []
        self.ledger = PrivacyLedger()

    def release(self, statistic, l2_sensitivity, dataset_size, noise_multiplier=None, note=""):
        self.released.append((statistic.clone(), l2_sensitivity))
        return statistic


def released_statistic(model, images, labels):
    """The exact statistic a one-shot release method (``_release_embedding``) would noise, and its sensitivity."""
    budget = RecordingBudget()
    data = SimpleNamespace(setup=lambda stage: None, train_set=SimpleNamespace(tensors=(images, labels)))
    model._release_embedding(data, budget)
    ((statistic, sensitivity),) = budget.released
    return statistic, sensitivity
