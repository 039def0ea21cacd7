"""A stage that serves step indices (public steps, GS-WGAN's helper steps) continues them on resume (issue 51):
a method drawing its public schedule or helper randomness from the index must not repeat the steps it ran."""

from pathlib import Path

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.stages import step_index_loader


class IndexRecorder(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.seen: list[int] = []

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        self.seen.append(int(batch))
        return (self.weight - 1).square().sum()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(model: IndexRecorder, steps: int, folder: Path, callbacks: list, ckpt_path: str | None = None) -> None:
    quiet = dict(logger=False, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    trainer = pl.Trainer(
        max_steps=steps, callbacks=callbacks, enable_checkpointing=bool(callbacks), default_root_dir=folder, **quiet
    )
    trainer.fit(model, train_dataloaders=step_index_loader(steps, trainer), ckpt_path=ckpt_path)


def test_a_resumed_fit_serves_the_indices_it_has_not_run(tmp_path: Path) -> None:
    first = IndexRecorder()
    _fit(first, 6, tmp_path, [ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1)])
    assert first.seen == [0, 1, 2, 3, 4, 5]
    resumed = IndexRecorder()
    _fit(resumed, 6, tmp_path, [], ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
    assert resumed.seen == [3, 4, 5]
