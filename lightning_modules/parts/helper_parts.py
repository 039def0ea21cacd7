"""What methods with private helpers share (GS-WGAN's critics, DP²-VAE's encoders): each helper
trains without DP on its own part of the private data, on a public schedule (private step t trains
the m helpers t·m, …, t·m + m − 1 mod K, with randomness seeded from t), and each private step
then queries one helper drawn from secret randomness (``zoo.privacy.mechanisms.private_helpers``
states the theorem and why the schedule must not follow the secret draws).

The mixin keeps the parts, the key that assigns records to them (in Lightning checkpoints, so a
resumed plan keeps each helper on its part: with a fresh key, one helper would depend on two
parts) and the secret draws of the queried helper. It trains on one device: under DDP each
process would query its own helper, and the all-reduced step would combine more terms than the
accounting assumes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from zoo.errors import UserError
from zoo.privacy import PrivacyConfigError, PrivateHelpers
from zoo.privacy.partition import new_partition_key
from zoo.privacy.randomness import private_generator
from zoo.stages import HelperSteps, StepIndexData

#: where a Lightning checkpoint keeps the key that assigns records to helpers
PARTITION_KEY = "dpzoo_helper_partition_key"
#: the public seeds of helper training: stream × step, one stream per stage
PRETRAINING_STREAM, PRIVATE_STREAM = 1, 2


@contextmanager
def public_randomness(stream: int, step: int, device: torch.device) -> Iterator[None]:
    """The global RNG seeded from (stream, step) alone, and restored afterwards: what a helper draws
    inside is public, so its state depends on its part and the released outputs only."""
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(stream * 2**40 + step)
        yield


@contextmanager
def buffers_restored(modules: Iterable[nn.Module]) -> Iterator[None]:
    """Whatever runs inside leaves these modules' buffers as they were. A forward pass in training mode
    moves buffers (spectral norm's power-iteration vectors, batch-norm statistics), so without this a
    query would leave a trace of the secret draw in the queried helper, and a helper's training (or its
    skipping, when its part is empty) would leave one of the data in the released model."""
    buffers = [buffer for module in modules for buffer in module.buffers()]
    saved = [buffer.detach().clone() for buffer in buffers]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, before in zip(buffers, saved, strict=True):
                buffer.copy_(before)


class HelperParts:
    """Mixin (first among the bases) for a LightningModule whose ``helpers`` each read their own part
    of the data. The module defines ``pretraining_step(helper, iteration)``, ``train_helper(helper)``
    (one scheduled update against the current released model), ``private_step(queried)`` and the
    ``pretrain_steps`` hyperparameter; ``check_images(images)`` (``DPGenerativeModel``'s, or its own)
    refuses data its networks cannot take. A helper whose part is empty is never updated (the
    methods skip its data steps), so it stays as initialised."""

    helpers: PrivateHelpers
    #: the name of the HelperSteps stage that pretrains the helpers one after another
    pretraining: ClassVar[str]
    #: the attribute holding the helper networks (a ModuleList, one per part)
    helper_networks: ClassVar[str]

    def init_helper_parts(self, parts: int, per_step: int = 1) -> None:
        """``parts`` helpers, ``per_step`` of them trained by each private step (public schedule)."""
        if not 1 <= per_step <= parts:
            raise UserError(f"between 1 and {parts} helpers can train per step, got {per_step}")
        self.helpers = PrivateHelpers(parts)
        self._helpers_per_step = per_step
        self._parts: list[tuple[Tensor, Tensor]] | None = None
        self._partition_key = new_partition_key()
        self._helper_draws: torch.Generator | None = None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint[PARTITION_KEY] = self._partition_key

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        if PARTITION_KEY in checkpoint:
            self._partition_key, self._parts = checkpoint[PARTITION_KEY], None

    def on_train_start(self) -> None:
        if self.trainer.world_size > 1:
            raise PrivacyConfigError(
                f"{type(self).__name__} trains on one device: under DDP each process would query its own helper and "
                "the all-reduced step would combine more terms than the accounting assumes."
            )
        self._helper_draws = private_generator()

    def pretraining_stage(self) -> HelperSteps:
        """``pretrain_steps`` steps per helper, helper after helper, each step receiving its index."""
        steps = self.helpers.parts * self.hparams.pretrain_steps
        return HelperSteps(self.pretraining, max_steps=steps, through_helpers=True)

    def training_step(self, step: int, batch_idx: int) -> None:
        """A pretraining step goes to helper step // pretrain_steps. A private step t trains its scheduled
        helpers (public schedule and randomness), then queries a helper drawn in secret. Training a helper
        changes that helper only: every other module's buffers are restored around it (``buffers_restored``);
        a method's query must leave the queried helper as it was."""
        step = int(step)
        device = self.device
        if self.training_stage is not None and self.training_stage["name"] == self.pretraining:
            helper, iteration = divmod(step, self.hparams.pretrain_steps)
            with public_randomness(PRETRAINING_STREAM, step, device):
                self.pretraining_step(helper, iteration)
        else:
            helpers = getattr(self, self.helper_networks)
            rest = [module for module in self.children() if module is not helpers]
            with public_randomness(PRIVATE_STREAM, step, device):
                for helper in self.scheduled_helpers(step):
                    with buffers_restored(rest):
                        self.train_helper(helper)
            self.private_step(self.draw_helper())

    @property
    def private_dataset_size(self) -> int:
        return sum(len(images) for images, _ in self.helper_parts())

    def scheduled_helpers(self, step: int) -> list[int]:
        """The helpers private step t trains: t·m, …, t·m + m − 1 (mod K), a function of t alone, so that
        every helper trains once in each run of K / m consecutive steps."""
        first = step * self._helpers_per_step
        return [(first + i) % self.helpers.parts for i in range(self._helpers_per_step)]

    def draw_helper(self) -> int:
        """The helper a private step queries, uniform and from secret randomness."""
        return int(torch.randint(self.helpers.parts, (1,), generator=self._helper_draws))

    def helper_parts(self) -> list[tuple[Tensor, Tensor]]:
        """Each helper's images and labels (a keyed hash of each record decides its part)."""
        if self._parts is None:
            stage_data = self.trainer.datamodule
            if not isinstance(stage_data, StepIndexData):
                raise PrivacyConfigError(
                    f"{type(self).__name__} trains in stages whose helpers read their own parts of the data: run "
                    "zoo.train(model, datamodule, DPBudget(...)) or `dpzoo fit`."
                )
            data = stage_data.private
            data.setup("fit")
            images, labels = data.train_set.tensors
            self.check_images(images)
            self._parts = self.helpers.split(images, labels, self._partition_key)
        return self._parts

    def part_is_empty(self, index: int) -> bool:
        return len(self.helper_parts()[index][0]) == 0

    def batch_of_part(self, index: int, size: int) -> tuple[Tensor, Tensor]:
        """``size`` records of helper ``index``'s part drawn with replacement (fewer when the part is
        smaller, none when it is empty)."""
        images, labels = self.helper_parts()[index]
        chosen = torch.randint(max(len(images), 1), (min(size, len(images)),))
        device = self.device
        return images[chosen].to(device), labels[chosen].to(device)
