"""B2/B4: DP-SGD with per-example clipping (Abadi et al. 2016) on the modules a method declares
private: the released model itself (B4) or a critic/classifier (B2).

Theorem (add/remove-one neighbouring datasets). Each step draws a Poisson sample of the
private records at rate q (``zoo.privacy.sampling``), clips each sampled record's gradient on
all private parameters jointly to L2 norm C, sums, and adds N(0, σ²C²·I) once. Adding or
removing one record changes the sum by at most C, so each step is a Poisson-subsampled
Gaussian mechanism with noise multiplier σ at rate q, and T steps compose in the accountant;
dividing by the public q·N is post-processing. A record may enter one step once: a second
backward pass over the same batch, or clipped sums of two Poisson batches in one step, is
refused (``_ClippedSums``).

Noise multiplicity (DPDM): a module that sets ``rows_per_example = m`` computes m consecutive
rows per record (the record under m noise draws), a record's loss being the mean over its rows
and the batch loss the mean (or sum) over records; the record's gradient is taken over all its
rows before clipping, so its whole contribution is still clipped to C and the theorem holds as is.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from zoo.privacy.barriers import declared_private_modules
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms.base import Sampling, TrainingMechanism
from zoo.privacy.per_example import create_engine
from zoo.privacy.precision import at_least_float32, mechanism_arithmetic, noise_dtype
from zoo.privacy.randomness import DeviceGenerators
from zoo.privacy.sampling import required_poisson_batches
from zoo.privacy.validation import check_private_modules


class PerExampleDPSGD(TrainingMechanism):
    name = "subsampled_gaussian"

    def __init__(
        self,
        pl_module: pl.LightningModule,
        max_grad_norm: float,
        per_example_mode: str,
        loss_reduction: str,
        noise_generator: torch.Generator,
    ) -> None:
        modules = declared_private_modules(pl_module)
        check_private_modules(modules, type(pl_module).__name__)
        self.rows_per_example = _rows_per_example(pl_module)
        self.engine = create_engine(modules, per_example_mode, self.rows_per_example)
        self.max_grad_norm = max_grad_norm
        self.loss_reduction = loss_reduction
        self.noise_generators = DeviceGenerators(noise_generator)
        self.noise_multiplier = 0.0
        self._expected_batch_size = 1.0
        self._pending: _ClippedSums | None = None
        self._private_grads_reset = True
        self._micro_batch: tuple[int, int] = (0, 0)
        self._logical_batch: tuple[int, int] = (0, 0)
        self._fresh_batch = False

    @property
    def per_example_gradients(self) -> str:
        return self.engine.mode

    def sampling(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> Sampling:
        batches = required_poisson_batches(trainer.train_dataloader)
        if batches.micro_batches != trainer.accumulate_grad_batches:
            raise PrivacyConfigError(
                f"the Poisson loader splits each logical batch into {batches.micro_batches} micro-batches but "
                f"the trainer accumulates {trainer.accumulate_grad_batches}; pass "
                "micro_batches=trainer.accumulate_grad_batches to poisson_loader."
            )
        self._expected_batch_size = batches.expected_batch_size
        return Sampling(batches.dataset_size, batches.sample_rate)

    def accounted_noise_multiplier(self, noise_multiplier: float) -> float:
        return noise_multiplier

    def ledger_parameters(self, accounted: float) -> dict[str, Any]:
        return {"rows_per_example": self.rows_per_example} if self.rows_per_example > 1 else {}

    def start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, accounted: float) -> None:
        check_private_optimizers(trainer.optimizers, self.engine.params, pl_module)
        self.noise_multiplier = accounted

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch_idx: int) -> None:
        self._fresh_batch = True
        accumulation = trainer.accumulate_grad_batches if pl_module.automatic_optimization else 1
        self._micro_batch = (trainer.current_epoch, batch_idx)
        self._logical_batch = (trainer.current_epoch, batch_idx // accumulation)

    def on_before_backward(self) -> None:
        self._private_grads_reset = self._pending is None or self._pending.private_grads_were_reset()

    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Clip this micro-batch's per-example gradients and add them to the step's sum.

        The sum of one private step holds each record of one Poisson batch once: a second
        backward pass over the same batch, or a backward pass over another batch before the
        private step, is refused. Zeroing the private gradients in between (a GAN's generator
        pass through a private critic, then ``critic_optimizer.zero_grad()``) discards what came before.
        """
        engine = self.engine
        examples = engine.batch_size()
        if examples is None:
            return  # this backward pass did not reach the private modules
        # Lightning divides the loss by the accumulation factor; a mean loss also by the records
        scale = float(trainer.accumulate_grad_batches if pl_module.automatic_optimization else 1)
        if self.loss_reduction == "mean":
            scale *= examples
        with mechanism_arithmetic():  # the backward pass of manual optimisation may run inside autocast
            if examples == 0:  # an empty Poisson batch: the step's sum is zero, and the noise is still added
                sums = [torch.zeros_like(p, dtype=noise_dtype(p.dtype)) for p in engine.params]
            else:
                norms = engine.squared_norms().sqrt() * scale
                clip = (self.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
                sums = engine.weighted_sum(clip * scale)
        engine.clear()
        pending = None if self._private_grads_reset else self._pending
        if pending is not None:
            self._check_same_step(pending)
            sums = [a + b for a, b in zip(pending.sums, sums, strict=True)]
        self._pending = _ClippedSums(sums, self._micro_batch, self._logical_batch, engine.params)

    def _check_same_step(self, pending: _ClippedSums) -> None:
        if pending.micro_batch == self._micro_batch:
            raise PrivacyConfigError(
                "a second backward pass through the private modules on the same Poisson batch, without zeroing "
                "their gradients in between: each example would enter one private step twice (up to 2·C) while "
                "the accountant counts it once. Add the losses and call backward once, or call "
                "optimizer.zero_grad() on the private optimizer to discard the first pass."
            )
        if pending.logical_batch != self._logical_batch:
            raise PrivacyConfigError(
                "clipped gradients of two Poisson batches would enter one private step, which the accountant "
                "counts as one subsampled step: take a private optimizer step on every batch (for larger "
                "batches use accumulate_grad_batches with poisson_loader(micro_batches=...))."
            )

    def is_private_step(self, optimizer: torch.optim.Optimizer) -> bool:
        held = {p for group in optimizer.param_groups for p in group["params"]}
        return bool(held & set(self.engine.params))  # otherwise a non-private optimizer (a generator) steps

    def privatise_step(self, optimizer: torch.optim.Optimizer) -> None:
        if not self._fresh_batch:
            raise PrivacyConfigError(
                "a second private optimizer step on the same Poisson batch: the accountant counts one "
                "subsampled step per batch. Take one private step per training_step (use "
                "accumulate_grad_batches for larger batches)."
            )
        self._fresh_batch = False
        self._write_noisy_gradients(self.engine.params)

    def _write_noisy_gradients(self, params: list[nn.Parameter]) -> None:
        """Σ clip(g_i) + N(0, σ²C²), once per logical step (on rank 0 only under DDP, then summed
        over ranks), divided by the expected batch size q·N."""
        sums = self._pending.sums if self._pending is not None else [torch.zeros_like(p) for p in params]
        self._pending = None
        flat = torch.cat([at_least_float32(s).reshape(-1) for s in sums])
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        with mechanism_arithmetic():
            if not distributed or torch.distributed.get_rank() == 0:
                generator = self.noise_generators.on(flat.device)
                noise = torch.randn(flat.shape, generator=generator, dtype=flat.dtype, device=flat.device)
                flat = flat + self.noise_multiplier * self.max_grad_norm * noise
            if distributed:
                torch.distributed.all_reduce(flat)  # sum of every rank's clipped sums + one noise draw
            flat = flat / self._expected_batch_size
        offset = 0
        for p in params:
            p.grad = flat[offset : offset + p.numel()].view_as(p).to(p.dtype)
            offset += p.numel()

    def overwritten_gradients(self) -> list[nn.Parameter]:
        """The private parameters: their gradients become the noised clipped sum, all-reduced here."""
        return list(self.engine.params)

    def close(self) -> None:
        self.engine.close()


def _rows_per_example(pl_module: pl.LightningModule) -> int:
    rows = getattr(pl_module, "rows_per_example", 1)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise PrivacyConfigError(f"rows_per_example must be a positive integer, got {rows!r}")
    return rows


class _ClippedSums:
    """The clipped per-example gradient sums waiting for the next private step, where they came
    from, and a mark of each private gradient just after the backward pass that produced them."""

    def __init__(
        self,
        sums: list[Tensor],
        micro_batch: tuple[int, int],
        logical_batch: tuple[int, int],
        params: list[nn.Parameter],
    ) -> None:
        self.sums, self.micro_batch, self.logical_batch = sums, micro_batch, logical_batch
        self._marks = [(p.grad, None if p.grad is None else p.grad._version) for p in params]
        self._params = params

    def private_grads_were_reset(self) -> bool:
        """Whether the private gradients were zeroed (set to None, or zeroed in place) since the mark.

        Read from what happened to the gradient tensors, never from their values alone: a
        micro-batch whose raw gradients cancel to zero was not reset, and its clipped sums stay."""
        for p, (grad, version) in zip(self._params, self._marks, strict=True):
            if p.grad is None:
                continue
            untouched = p.grad is grad and p.grad._version == version
            if untouched or bool(p.grad.any()):
                return False
        return True


def check_private_optimizers(
    optimizers: list[torch.optim.Optimizer], private: list[nn.Parameter], module: nn.Module
) -> None:
    """An optimizer that steps private parameters must hold all of them (they are clipped jointly)
    and nothing else: any other parameter would receive an unclipped, un-noised gradient."""
    private_ids = {id(p) for p in private}
    names = {id(p): name for name, p in module.named_parameters()}
    for optimizer in optimizers:
        held = [p for group in optimizer.param_groups for p in group["params"]]
        held_ids = {id(p) for p in held}
        if not held_ids & private_ids:
            continue
        if not private_ids <= held_ids:
            raise PrivacyConfigError(
                "one optimizer must hold all private parameters (their per-example gradients are clipped jointly)."
            )
        public = [
            names.get(id(p), f"<unnamed {tuple(p.shape)}>")
            for p in held
            if id(p) not in private_ids and p.requires_grad
        ]
        if public:
            raise PrivacyConfigError(
                f"the private optimizer also steps parameters outside private_modules(): {public[:8]}"
                f"{' ...' if len(public) > 8 else ''}. They would receive unclipped, un-noised gradients of the "
                "private data. Give them their own optimizer, or return their module from private_modules()."
            )
