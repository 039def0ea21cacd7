"""Training logs are local diagnostics: a method's non-private batch losses reach Lightning's logger,
and nothing that ``save_pretrained`` writes mentions them."""

import csv

import pytest
import torch
from pytorch_lightning.loggers import CSVLogger

from lightning_modules.dp2_vae import DP2VAE
from lightning_modules.gs_wgan import GSWGAN
from zoo.privacy import DPBudget
from zoo.release.hub import save_pretrained
from zoo.training import train

LOGGED = {GSWGAN: ("critic_loss", "generator_loss"), DP2VAE: ("train_loss", "pretrain_loss")}


@pytest.mark.parametrize("cls", LOGGED, ids=lambda cls: cls.method)
def test_batch_losses_are_logged_locally_and_never_saved(cls, tmp_path):
    torch.manual_seed(0)
    recipe = cls.tiny_recipe()
    model = cls(**recipe.architecture)
    logger = CSVLogger(tmp_path / "logs")
    train(
        model,
        recipe.data(),
        DPBudget(noise_multiplier=5.0, accountant="rdp"),
        max_steps=2,
        accelerator="cpu",
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
    )
    logged = {name for path in (tmp_path / "logs").rglob("metrics.csv") for name in next(csv.reader(path.open()))}
    assert set(LOGGED[cls]) <= logged
    released = save_pretrained(model, tmp_path / "model")
    written = " ".join(path.read_bytes().decode("utf-8", "replace") for path in released.iterdir())
    assert not [name for name in LOGGED[cls] if name in written]
