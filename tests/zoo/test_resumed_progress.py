"""A fit resumed mid-epoch keeps its progress bar's total, description and ETA (issue 52: a long DP-MEPF fit
resumed from ``--ckpt_path`` showed "Training: 1013/?" with no total)."""

from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint, TQDMProgressBar

from tests.zoo.test_step_indices import IndexRecorder
from zoo.stages import ResumedEpochProgress, step_index_loader


def _fit(steps: int, folder: Path, callbacks: list, ckpt_path: str | None = None) -> TQDMProgressBar:
    bar = TQDMProgressBar()
    trainer = pl.Trainer(
        max_steps=steps,
        callbacks=[*callbacks, bar],
        enable_checkpointing=True,
        default_root_dir=folder,
        logger=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(IndexRecorder(), train_dataloaders=step_index_loader(steps, trainer), ckpt_path=ckpt_path)
    return bar


def test_a_fit_resumed_mid_epoch_shows_the_plan_total_and_counts_on(tmp_path: Path) -> None:
    _fit(6, tmp_path, [ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1)])
    bar = _fit(6, tmp_path, [ResumedEpochProgress()], ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
    assert (bar.train_progress_bar.total, bar.train_progress_bar.n, bar.train_progress_bar.initial) == (6, 6, 3)
    assert bar.train_progress_bar.desc.startswith("Epoch 0")


def test_without_it_lightning_leaves_the_total_unknown(tmp_path: Path) -> None:
    """The defect the callback mends: if Lightning ever calls the epoch hook on a mid-epoch restart, drop it."""
    _fit(6, tmp_path, [ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1)])
    bar = _fit(6, tmp_path, [], ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
    assert bar.train_progress_bar.total is None
