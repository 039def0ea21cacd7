"""DDP around a private stage: no all-reduce of gradients that DP-SGD discards, and buffers synced once.

Under Lightning's DDP every rank clips its share of the Poisson batch, and DP-SGD
(``zoo.privacy.mechanisms.dp_sgd``) all-reduces the ranks' clipped sums with one noise draw and writes
that over the private parameters' gradients before the optimizer step. DDP's own all-reduce of their
raw gradients during the backward pass is then thrown away: as much traffic as the step's real one.
:func:`install_private_bucket_hook` registers a communication hook that keeps a bucket's local
gradients when every parameter in it is private, and averages any bucket holding another parameter (a
generator's, a public module's) as DDP does. A hook the user gave the strategy (``ddp_comm_hook``) is
kept instead.

Buffers: DDP broadcasts every buffer from rank 0 at its start (a Release stage's noisy statistic is
rank 0's on every rank, the only one in the ledger) and again before every forward pass. When no
buffer changes after that first sync (DP-MERF's random frequencies, a release), the per-step broadcast
is wasted; switch it off in the recipe's strategy, on torch 2.13 or later::

    trainer:
      strategy:
        class_path: pytorch_lightning.strategies.DDPStrategy
        init_args:
          forward_sync_buffers: false

(``dpzoo fit ... --trainer.strategy pytorch_lightning.strategies.DDPStrategy
--trainer.strategy.forward_sync_buffers false``). A generator's BatchNorm statistics then stay each
rank's own, and rank 0's are saved, as before. The older ``broadcast_buffers=False`` also skips the first
sync, so that each rank would train on its own draw of a release: :func:`check_buffer_sync` refuses it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytorch_lightning as pl
import torch
import torch.distributed as dist
from pytorch_lightning.strategies import DDPStrategy
from torch import Tensor, nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from zoo.privacy.errors import PrivacyConfigError


@dataclass(frozen=True)
class PrivateBuckets:
    """The hook's state: the ids of the parameters whose gradients the mechanism overwrites, and DDP's group."""

    private: frozenset[int]
    process_group: Any


def skip_private_buckets(state: PrivateBuckets, bucket: dist.GradBucket) -> torch.futures.Future[Tensor]:
    """A bucket of private parameters only keeps its local gradients; any other is averaged over the ranks.
    (DDP checks these annotations as objects: this module has no ``from __future__ import annotations``.)"""
    if all(id(p) in state.private for p in bucket.parameters()):
        local: torch.futures.Future[Tensor] = torch.futures.Future()
        local.set_result(bucket.buffer())
        return local
    return default_hooks.allreduce_hook(state.process_group, bucket)


def install_private_bucket_hook(trainer: pl.Trainer, private: Sequence[nn.Parameter]) -> bool:
    """Register :func:`skip_private_buckets` on the trainer's DDP model, before its first backward pass;
    False (nothing registered) outside DDP, without private parameters, or when the user gave a hook."""
    model = trainer.strategy.model
    if not isinstance(model, DistributedDataParallel) or not private:
        return False
    if getattr(trainer.strategy, "_ddp_comm_hook", None) is not None:
        return False
    model.register_comm_hook(PrivateBuckets(frozenset(map(id, private)), model.process_group), skip_private_buckets)
    return True


def check_buffer_sync(strategy: object) -> None:
    """Refuse DDP's ``broadcast_buffers=False``, which leaves each rank its own buffers from the start."""
    ddp = strategy._ddp_kwargs if isinstance(strategy, DDPStrategy) else {}
    if ddp.get("broadcast_buffers") is False and ddp.get("forward_sync_buffers") is None:
        raise PrivacyConfigError(
            "DDP's broadcast_buffers=False skips the first sync of buffers: each rank would train on its own draw "
            "of a released statistic, which the ledger counts once. Set forward_sync_buffers=False instead "
            "(torch 2.13 or later), which syncs them once at the start."
        )
