"""A release kept apart from the private data, for ``benchmarks/gpu/dp_mepf_cifar10.sh``: the machine that holds the
private images draws the one release and writes it as a Lightning checkpoint (:class:`ReleaseCheckpoint`); the GPU
machine, which the images never reach (CIFAR-10's 46 MB of training JPEGs do not fit beside the wheels in what it
receives), resumes the generator's fit from it with ``dpzoo fit --ckpt_path`` and :class:`ReleasedData` as its data.
Only the release, (ε, δ)-DP, travels; a timing run and the training run resume from the same release, never drawing
a second. Both are named on ``dpzoo fit``'s command line, this folder on ``PYTHONPATH``
(``--trainer.callbacks+=released_data.ReleaseCheckpoint``, ``--data released_data.ReleasedData``)."""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl
import torch

from zoo.errors import UserError
from zoo.privacy import LedgerEntry, PrivacyLedger
from zoo.privacy.callback import CHECKPOINT_KEY


class ReleaseCheckpoint(pl.Callback):
    """Writes a Lightning checkpoint to ``path`` as the generator's fit starts, after the one release and before any
    step: the released embedding, the ledger, the stage and the untrained generator (Adam holds no state yet, so
    it is small). ``dpzoo fit --ckpt_path path`` resumes from it without drawing the release again
    (``zoo.training``). ``stop``: end the fit there (all that the machine holding the images need do)."""

    def __init__(self, path: str, stop: bool = False) -> None:
        self.path, self.stop = Path(path), stop

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        ledger = getattr(pl_module, "privacy_ledger", None)
        if ledger is None or not ledger.entries:
            raise UserError(f"no release in the ledger as the fit starts: {self.path} would hold none")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        trainer.save_checkpoint(self.path)
        if self.stop:
            trainer.should_stop = True


class ReleasedData(pl.LightningDataModule):
    """The private data of the release checkpoint ``release`` as its ledger names it, without a record: its dataset
    id, records identity and partition are the release's ledger entry's, its image shape and class count the
    checkpoint's model's. What a resume past the release declares (``zoo.privacy.private_data.PrivateData``) where
    the private images are not; reading a record is refused (only a private stage would, and a resume skips it)."""

    def __init__(self, release: str) -> None:
        super().__init__()
        checkpoint = torch.load(release, map_location="cpu", weights_only=True)
        stored = checkpoint.get(CHECKPOINT_KEY)
        entries = PrivacyLedger.from_dict(stored).entries if stored else []
        if len(entries) != 1 or not isinstance(entries[0], LedgerEntry):
            raise UserError(f"{release} must hold one release in its ledger (ReleaseCheckpoint), got {len(entries)}")
        self.release, self.entry = release, entries[0]
        model = checkpoint["hyper_parameters"]
        self.image_shape = tuple(model["image_shape"])
        self.num_classes = int(model["num_classes"])

    @property
    def dataset_id(self) -> str:
        return self.entry.dataset_id

    @property
    def records_identity(self) -> str | None:
        return self.entry.records_identity

    @property
    def partition_of(self) -> str | None:
        return self.entry.partition_of

    def setup(self, stage: str | None = None) -> None:
        raise UserError(
            f"the private records stayed where {self.release} was drawn: only a fit resumed past the release "
            "(--ckpt_path) runs on ReleasedData"
        )
