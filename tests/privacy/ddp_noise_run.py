"""Run by test_ddp.py as a script: Lightning's DDP launcher re-executes it once per rank. Two runs: pure
noise (ZeroGradient), then real gradients of a private layer behind a public one, each in its own DDP bucket."""

import sys
import warnings

import pytorch_lightning as pl
import torch
from pytorch_lightning.strategies import DDPStrategy
from torch import nn
from torch.utils.data import TensorDataset

from tests.toys import GradientRecorder, ToyData, ZeroGradient, tiny_trainer
from zoo.privacy import DPCallback, PrivacyLedger


class IndexRecorder(pl.Callback):
    def __init__(self):
        self.indices = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.indices.append(batch[1].clone())


class PrivateBehindPublic(pl.LightningModule):
    """A private layer whose raw gradients differ between the ranks' batches, after a public layer that no
    optimizer steps; without biases, each weight fills a DDP bucket of its own (``bucket_cap_mb=0.1``)."""

    privacy_barrier = "B4"

    def __init__(self, width: int = 300) -> None:
        super().__init__()
        self.public = nn.Linear(width, width, bias=False)
        self.layer = nn.Linear(width, width, bias=False)

    def private_modules(self):
        return [self.layer]

    def training_step(self, batch, batch_idx):
        x, _ = batch
        return self.layer(self.public(x)).square().mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.layer.parameters(), lr=0.0)


class RawGradients(pl.Callback):
    """The gradients DDP leaves after the backward pass, before DP-SGD writes its noisy sum."""

    def __init__(self):
        self.private, self.public = [], []

    def on_after_backward(self, trainer, pl_module):
        self.private.append(pl_module.layer.weight.grad.clone())
        self.public.append(pl_module.public.weight.grad.clone())


def count_epsilon_computations() -> list[None]:
    """A list that grows by one at every computation of ε from a ledger, in this process."""
    computed: list[None] = []
    exact = PrivacyLedger.epsilon

    def counted(self, *args, **kwargs):
        computed.append(None)
        return exact(self, *args, **kwargs)

    PrivacyLedger.epsilon = counted
    return computed


def main(out_dir: str) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    n = 400
    data = TensorDataset(torch.randn(n, 300, generator=torch.Generator().manual_seed(0)), torch.arange(n))
    dp = DPCallback(noise_multiplier=2.0, max_grad_norm=0.5, accountant="rdp", dataset_id="ddp-toy")
    grads, indices = GradientRecorder(), IndexRecorder()
    computed = count_epsilon_computations()
    trainer = tiny_trainer([dp, grads, indices], max_steps=3, strategy="ddp", devices=2)
    trainer.fit(ZeroGradient(), ToyData(data, 0.25, seed=None))
    epsilon_computations = len(computed)

    raw, written = RawGradients(), GradientRecorder()
    dp_buckets = DPCallback(noise_multiplier=2.0, max_grad_norm=0.5, accountant="rdp", dataset_id="ddp-toy")
    strategy = DDPStrategy(bucket_cap_mb=0.1)
    tiny_trainer([dp_buckets, raw, written], max_steps=3, strategy=strategy, devices=2).fit(
        PrivateBehindPublic(), ToyData(data, 0.25, seed=None)
    )
    torch.save(
        {
            "grads": grads.grads,
            "indices": indices.indices,
            "expected_batch_size": dp.mechanism._expected_batch_size,
            "steps": dp.entry.steps,
            "epsilon": dp.epsilon,
            "epsilon_computations": epsilon_computations,
            "raw_private": raw.private,
            "raw_public": raw.public,
            "written": written.grads,
        },
        f"{out_dir}/rank{trainer.global_rank}.pt",
    )


if __name__ == "__main__":
    main(sys.argv[1])
