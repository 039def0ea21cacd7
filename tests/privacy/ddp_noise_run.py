"""Run by test_ddp.py as a script: Lightning's DDP launcher re-executes it once per rank."""

import sys
import warnings

import pytorch_lightning as pl
import torch
from torch.utils.data import TensorDataset

from tests.toys import GradientRecorder, ToyData, ZeroGradient, tiny_trainer
from zoo.privacy import DPCallback


class IndexRecorder(pl.Callback):
    def __init__(self):
        self.indices = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.indices.append(batch[1].clone())


def main(out_dir: str) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    n = 400
    data = TensorDataset(torch.randn(n, 300, generator=torch.Generator().manual_seed(0)), torch.arange(n))
    dp = DPCallback(noise_multiplier=2.0, max_grad_norm=0.5, accountant="rdp", dataset_id="ddp-toy")
    grads, indices = GradientRecorder(), IndexRecorder()
    trainer = tiny_trainer([dp, grads, indices], max_steps=3, strategy="ddp", devices=2)
    trainer.fit(ZeroGradient(), ToyData(data, 0.25, seed=None))
    torch.save(
        {
            "grads": grads.grads,
            "indices": indices.indices,
            "expected_batch_size": dp.mechanism._expected_batch_size,
            "steps": dp.entry.steps,
            "epsilon": dp.epsilon,
        },
        f"{out_dir}/rank{trainer.global_rank}.pt",
    )


if __name__ == "__main__":
    main(sys.argv[1])
