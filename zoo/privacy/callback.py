"""DPCallback: turns a LightningModule's privacy declaration into clipping, noise and accounting.

The module declares ``privacy_barrier`` (B2/B4: DP-SGD on ``private_modules()``; B3: a
``GradientSanitizer`` it applies to its generator output). The callback

1. checks the settings and the private modules before training;
2. requires a Poisson train loader (``zoo.privacy.poisson_loader``) for B2/B4 and
   calibrates σ so that the planned steps, composed with what the ledger already spent on
   the same data (a private standardisation, an earlier fine-tune), reach the target ε;
3. after every backward pass, clips each example's gradient on the private parameters
   (``per_example_mode``) and accumulates the clipped sum;
4. before the private optimizer steps, adds N(0, σ²C²) once per logical step (on rank 0
   only under DDP, then all-reduces), divides by the expected batch size q·N and writes
   the result into ``p.grad``;
5. records every step in the privacy ledger (``pl_module.privacy_ledger``, the callback
   state and ``checkpoint["privacy_ledger"]``), logs ε every step and stops training
   before the next step would exceed the target.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor, nn

from zoo.privacy.accounting import calibrate_noise_multiplier, max_steps_within
from zoo.privacy.barriers import DP_SGD_BARRIERS, PrivacyBarrier, declared_barrier, declared_private_modules
from zoo.privacy.errors import PrivacyBudgetExhausted, PrivacyConfigError
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.per_example import PerExampleGradients, create_engine
from zoo.privacy.randomness import private_generator
from zoo.privacy.sampling import poisson_batches_of
from zoo.privacy.sanitizer import (
    GradientSanitizer,
    accounted_noise_multiplier,
    row_noise_multiplier,
    sanitizer_ledger_parameters,
)
from zoo.privacy.validation import (
    check_accountant,
    check_delta,
    check_epsilon,
    check_exactly_one,
    check_positive,
    check_private_modules,
    check_sample_rate,
    warn_if_delta_too_large,
)

CHECKPOINT_KEY = "privacy_ledger"


class PrivacyLedgerMixin:
    """For a LightningModule trained under DPCallback: ``load_from_checkpoint`` brings the
    privacy ledger back with the weights, so further training on the same data composes with
    what was spent instead of starting from ε = 0 (``fit(ckpt_path=...)`` restores it anyway)."""

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        stored = checkpoint.get(CHECKPOINT_KEY)
        if stored is not None:
            self.privacy_ledger = PrivacyLedger.from_dict(stored)


class DPCallback(pl.Callback):
    """Differential privacy for any LightningModule that declares its privacy barrier.

    Args:
        target_epsilon: ε to reach at the end of training; σ is calibrated by the accountant.
        noise_multiplier: σ, when given instead of ``target_epsilon``; ε is then only reported.
        delta: δ of the (ε, δ) guarantee.
        max_grad_norm: clipping bound C on each example's gradient (B2/B4) or on each
            generated sample's upstream gradient (B3).
        accountant: ``"prv"`` (default, tightest), ``"rdp"`` or ``"gdp"`` (Opacus accountants).
        per_example_mode: ``"auto"``, ``"ghost"``, ``"hooks"`` or ``"functorch"``
            (see ``zoo.privacy.per_example``).
        loss_reduction: how the training loss reduces over the batch, ``"mean"`` or ``"sum"``.
        planned_steps: private steps to calibrate σ for; default ``trainer.estimated_stepping_batches``.
        dataset_id: names the private data in the ledger; default: the datamodule's ``dataset_id``.
        noise_seed: seeds the noise generator (tests only). Unset, the noise comes from OS
            entropy, never from the global RNG that ``seed_everything`` makes repeatable: two runs
            seeded alike (one per class, say) would otherwise share noise that cancels in differences.
    """

    def __init__(
        self,
        target_epsilon: float | None = None,
        noise_multiplier: float | None = None,
        delta: float = 1e-5,
        max_grad_norm: float = 1.0,
        accountant: str = "prv",
        per_example_mode: str = "auto",
        loss_reduction: str = "mean",
        planned_steps: int | None = None,
        dataset_id: str | None = None,
        noise_seed: int | None = None,
    ) -> None:
        check_exactly_one(target_epsilon, noise_multiplier)
        self.target_epsilon = None if target_epsilon is None else check_epsilon(target_epsilon)
        self.noise_multiplier = (
            None if noise_multiplier is None else check_positive(noise_multiplier, "noise_multiplier")
        )
        self.delta = check_delta(delta)
        self.max_grad_norm = check_positive(max_grad_norm, "max_grad_norm")
        self.accountant = check_accountant(accountant)
        if accountant == "gdp":
            warnings.warn(
                "the GDP accountant is a CLT approximation that Opacus marks as possibly "
                "underestimating ε; prefer 'prv' or 'rdp' for a released guarantee.",
                UserWarning,
                stacklevel=2,
            )
        if loss_reduction not in ("mean", "sum"):
            raise PrivacyConfigError(f"loss_reduction must be 'mean' or 'sum', got {loss_reduction!r}")
        self.per_example_mode = per_example_mode
        self.loss_reduction = loss_reduction
        if planned_steps is not None and (not isinstance(planned_steps, int) or planned_steps < 1):
            raise PrivacyConfigError(f"planned_steps must be a positive integer, got {planned_steps!r}")
        self.planned_steps = planned_steps
        self.dataset_id = dataset_id
        self._noise_generator = private_generator(noise_seed)

        self.ledger = PrivacyLedger()
        self.entry: LedgerEntry | None = None
        self.allowed_steps: int | None = None
        self.barrier: PrivacyBarrier | None = None
        self.sanitizer: GradientSanitizer | None = None
        self._engine: PerExampleGradients | None = None
        self._pending: _ClippedSums | None = None
        self._private_grads_reset = True
        self._micro_batch: tuple[int, int] = (0, 0)
        self._logical_batch: tuple[int, int] = (0, 0)
        self._restored_state: dict[str, Any] | None = None
        self._fresh_batch = False
        self._rows_at_last_step = 0

    # ------------------------------------------------------------------ set-up
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        if str(trainer.precision).startswith("16"):
            raise PrivacyConfigError(
                "fp16 loss scaling rescales per-example gradients before clipping; use precision='bf16-mixed' or 32."
            )
        self.barrier = declared_barrier(pl_module)
        if self.barrier == PrivacyBarrier.ONE_SHOT_RELEASE:
            raise PrivacyConfigError(
                f"{type(pl_module).__name__} declares B1 (a one-shot release): it needs no DPCallback; "
                "release its statistic with zoo.privacy.gaussian_release, which records the ledger entry."
            )
        if self.barrier in DP_SGD_BARRIERS:
            modules = declared_private_modules(pl_module)
            check_private_modules(modules, type(pl_module).__name__)
            self._engine = create_engine(modules, self.per_example_mode)
        existing = getattr(pl_module, "privacy_ledger", None)
        if isinstance(existing, PrivacyLedger):
            self.ledger = existing  # fine-tuning continues the model's own ledger
        pl_module.privacy_ledger = self.ledger

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._engine is not None:
            check_private_optimizers(trainer.optimizers, self._engine.params, pl_module)
        rows_per_step = None
        if self.barrier == PrivacyBarrier.SANITIZED_OUTPUT_GRADIENT:
            dataset_size, sample_rate, rows_per_step = self._sanitizer_sampling(pl_module)
        else:
            dataset_size, sample_rate = self._poisson_sampling(trainer)
        warn_if_delta_too_large(self.delta, dataset_size)
        dataset_id = self._dataset_id(trainer, dataset_size)
        self._restore_or_open_entry(trainer, dataset_id, dataset_size, sample_rate, rows_per_step)
        assert self.entry is not None
        self.entry.partition_of = self.entry.partition_of or getattr(trainer.datamodule, "partition_of", None)
        if self.target_epsilon is not None:
            prior = self.ledger.history(dataset_id, exclude=self.entry)
            self.allowed_steps = max_steps_within(
                self.target_epsilon, self.delta, self.entry.noise_multiplier, sample_rate, self.accountant, prior
            )
        if rows_per_step is not None:
            row_sigma = row_noise_multiplier(self.entry.noise_multiplier, rows_per_step)
            self.sanitizer = GradientSanitizer(
                row_sigma, self.max_grad_norm, self.loss_reduction, self._noise_generator
            )
            self._rows_at_last_step = 0
            pl_module.gradient_sanitizer = self.sanitizer
        if self._budget_left() == 0:
            rank_zero_warn(f"privacy budget ε={self.target_epsilon} already spent on {dataset_id}; not training.")
            trainer.should_stop = True

    def _poisson_sampling(self, trainer: pl.Trainer) -> tuple[int, float]:
        batches = poisson_batches_of(trainer.train_dataloader)
        if batches is None:
            raise PrivacyConfigError(
                "DPCallback needs a Poisson-sampled train loader (the sampling the accountant assumes); "
                "got a plain DataLoader. Build it with zoo.privacy.poisson_loader(dataset, sample_rate) "
                "or use a zoo.data datamodule."
            )
        if batches.micro_batches != trainer.accumulate_grad_batches:
            raise PrivacyConfigError(
                f"the Poisson loader splits each logical batch into {batches.micro_batches} micro-batches but "
                f"the trainer accumulates {trainer.accumulate_grad_batches}; pass "
                "micro_batches=trainer.accumulate_grad_batches to poisson_loader."
            )
        self._expected_batch_size = batches.expected_batch_size
        return batches.dataset_size, batches.sample_rate

    def _sanitizer_sampling(self, pl_module: pl.LightningModule) -> tuple[int, float, int]:
        try:
            sample_rate = float(pl_module.sanitizer_sample_rate)
            rows = int(pl_module.sanitized_rows_per_step)
            dataset_size = int(pl_module.private_dataset_size)
        except AttributeError as missing:
            raise PrivacyConfigError(
                f"{type(pl_module).__name__} declares B3 and must define sanitizer_sample_rate (γ, the chance "
                "that a step queries the critic holding a given record), sanitized_rows_per_step (B, the most "
                f"rows one step sanitises) and private_dataset_size: {missing}"
            ) from None
        check_sample_rate(sample_rate)
        if rows < 1:
            raise PrivacyConfigError(f"sanitized_rows_per_step must be a positive integer, got {rows}")
        return dataset_size, sample_rate, rows

    def _dataset_id(self, trainer: pl.Trainer, dataset_size: int) -> str:
        dataset_id = self.dataset_id or getattr(trainer.datamodule, "dataset_id", None)
        if dataset_id is None:
            warnings.warn(
                "no dataset_id given (DPCallback(dataset_id=...) or datamodule.dataset_id); the ledger "
                "cannot tell which data this guarantee protects.",
                UserWarning,
                stacklevel=2,
            )
            dataset_id = f"unnamed(N={dataset_size})"
        return dataset_id

    def _restore_or_open_entry(
        self,
        trainer: pl.Trainer,
        dataset_id: str,
        dataset_size: int,
        sample_rate: float,
        rows_per_step: int | None,
    ) -> None:
        """``rows_per_step``: B of a B3 run (its accounted noise multiplier is σ/(2√B)), None for DP-SGD."""
        given_sigma = self.noise_multiplier
        if given_sigma is not None and rows_per_step is not None:
            given_sigma = accounted_noise_multiplier(given_sigma, rows_per_step)
        if self._restored_state is not None:
            self.ledger = PrivacyLedger.from_dict(self._restored_state["ledger"])
            trainer.lightning_module.privacy_ledger = self.ledger
            index = self._restored_state["active_entry"]
            self._restored_state = None
            if index is not None:
                entry = self.ledger.entries[index]
                same_run = (
                    entry.dataset_id == dataset_id
                    and math.isclose(entry.sample_rate, sample_rate)
                    and math.isclose(entry.clip_norm, self.max_grad_norm)
                    and entry.delta == self.delta
                    and entry.accountant == self.accountant
                    and entry.parameters.get("rows_per_step") == rows_per_step
                    and (given_sigma is None or math.isclose(entry.noise_multiplier, given_sigma))
                )
                if same_run:
                    self.entry = entry
                    return
        planned = self.planned_steps or trainer.estimated_stepping_batches
        if self.target_epsilon is not None:
            if not math.isfinite(planned):
                raise PrivacyConfigError(
                    "cannot calibrate σ for an unbounded run: set Trainer(max_steps=...) or "
                    "DPCallback(planned_steps=...)."
                )
            sigma = calibrate_noise_multiplier(
                self.target_epsilon,
                self.delta,
                sample_rate,
                planned,
                self.accountant,
                prior_history=self.ledger.history(dataset_id),
            )
        else:
            sigma = given_sigma
        sanitized = rows_per_step is not None
        self.entry = self.ledger.append(
            LedgerEntry(
                mechanism="sanitized_output_gradient" if sanitized else "subsampled_gaussian",
                barrier=self.barrier.value,  # type: ignore[union-attr]
                dataset_id=dataset_id,
                dataset_size=dataset_size,
                noise_multiplier=sigma,  # type: ignore[arg-type]
                clip_norm=self.max_grad_norm,
                sample_rate=sample_rate,
                delta=self.delta,
                accountant=self.accountant,
                target_epsilon=self.target_epsilon,
                per_example_gradients=None if self._engine is None else self._engine.mode,
                note=f"planned {planned} steps" if math.isfinite(planned) else "",
                parameters=(
                    sanitizer_ledger_parameters(sigma, self.max_grad_norm, rows_per_step)  # type: ignore[arg-type]
                    if sanitized
                    else {}
                ),
            )
        )

    # ----------------------------------------------------------- private steps
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self._fresh_batch = True
        accumulation = trainer.accumulate_grad_batches if pl_module.automatic_optimization else 1
        self._micro_batch = (trainer.current_epoch, batch_idx)
        self._logical_batch = (trainer.current_epoch, batch_idx // accumulation)

    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: Tensor) -> None:
        self._private_grads_reset = self._pending is None or self._pending.private_grads_were_reset()

    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Clip this micro-batch's per-example gradients and add them to the step's sum.

        The sum of one private step holds each example of one Poisson batch once: a second
        backward pass over the same batch, or a backward pass over another batch before the
        private step, is refused. Zeroing the private gradients in between (a GAN's generator
        pass through a private critic, then ``critic_optimizer.zero_grad()``) discards what came before.
        """
        engine = self._engine
        if engine is None:
            return
        batch_size = engine.batch_size()
        if batch_size is None:
            return  # this backward pass did not reach the private modules
        # Lightning divides the loss by the accumulation factor; a mean loss also by the batch
        scale = float(trainer.accumulate_grad_batches if pl_module.automatic_optimization else 1)
        if self.loss_reduction == "mean":
            scale *= batch_size
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

    def on_before_optimizer_step(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        if self.barrier == PrivacyBarrier.SANITIZED_OUTPUT_GRADIENT:
            self._account_sanitized_step()
            return
        engine = self._engine
        if engine is None:
            return
        if not {p for group in optimizer.param_groups for p in group["params"]} & set(engine.params):
            return  # a non-private optimizer (a generator, an encoder) steps
        if not self._fresh_batch:
            raise PrivacyConfigError(
                "a second private optimizer step on the same Poisson batch: the accountant counts one "
                "subsampled step per batch. Take one private step per training_step (use "
                "accumulate_grad_batches for larger batches)."
            )
        self._fresh_batch = False
        self._check_budget_left()
        self._write_noisy_gradients(engine.params)
        self.entry.steps += 1  # type: ignore[union-attr]

    def _check_budget_left(self) -> None:
        if self._budget_left() == 0:
            raise PrivacyBudgetExhausted(
                f"a private step was requested after ε={self.target_epsilon} was spent "
                f"({self.entry.steps} steps); training should have stopped."  # type: ignore[union-attr]
            )

    def _write_noisy_gradients(self, params: list[nn.Parameter]) -> None:
        sums = [torch.zeros_like(p) for p in params] if self._pending is None else self._pending.sums
        self._pending = None
        flat = torch.cat([s.reshape(-1) for s in sums])
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        if not distributed or torch.distributed.get_rank() == 0:
            noise = torch.randn(flat.shape, generator=self._noise_generator, dtype=flat.dtype)
            flat = flat + self.entry.noise_multiplier * self.max_grad_norm * noise.to(flat.device)  # type: ignore[union-attr]
        if distributed:
            torch.distributed.all_reduce(flat)  # sum of every rank's clipped sums + one noise draw
        flat = flat / self._expected_batch_size
        offset = 0
        for p in params:
            p.grad = flat[offset : offset + p.numel()].view_as(p).to(p.dtype)
            offset += p.numel()

    def _account_sanitized_step(self) -> None:
        """One step of a B3 run: the rows sanitised since the last step form one accounted mechanism."""
        if self.sanitizer is None or self.entry is None:
            return
        rows = self.sanitizer.rows_sanitized - self._rows_at_last_step
        if rows == 0:
            return  # an optimizer that no sanitised gradient reached (a critic) steps
        declared = self.entry.parameters["rows_per_step"]
        if rows > declared:
            raise PrivacyConfigError(
                f"{rows} rows were sanitised for one step, but the module declares sanitized_rows_per_step = "
                f"{declared}: the step's sensitivity 2·C·sqrt(rows) would exceed the accounted one."
            )
        self._check_budget_left()
        self._rows_at_last_step = self.sanitizer.rows_sanitized
        self.entry.steps += 1

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        if self.entry is None:
            return
        if self._budget_left() == 0:
            trainer.should_stop = True
        if self._logs_epsilon_now(trainer):
            pl_module.log("epsilon", self.epsilon, prog_bar=True, on_step=True, on_epoch=False, rank_zero_only=True)

    def _logs_epsilon_now(self, trainer: pl.Trainer) -> bool:
        """Every ``log_every_n_steps`` private steps and at the end of each epoch and of training:
        one exact PRV evaluation costs 0.1-0.2 s, a third of a small model's DP step."""
        last_step = trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps
        return (
            self.entry.steps % max(1, trainer.log_every_n_steps) == 0
            or trainer.should_stop
            or trainer.is_last_batch
            or last_step
        )

    def _budget_left(self) -> int | None:
        if self.allowed_steps is None or self.entry is None:
            return None
        return max(0, self.allowed_steps - self.entry.steps)

    @property
    def epsilon(self) -> float:
        """ε spent so far on the current dataset (composing earlier entries on it)."""
        if self.entry is None:
            return 0.0
        return self.ledger.epsilon(self.entry.dataset_id, self.delta, self.accountant)

    @staticmethod
    def of(trainer: pl.Trainer) -> DPCallback:
        """The DPCallback attached to ``trainer``."""
        for callback in trainer.callbacks:  # type: ignore[attr-defined]
            if isinstance(callback, DPCallback):
                return callback
        raise PrivacyConfigError("this trainer has no DPCallback")

    # ---------------------------------------------------------- checkpointing
    def state_dict(self) -> dict[str, Any]:
        active = None if self.entry is None else self.ledger.entries.index(self.entry)
        return {"ledger": self.ledger.to_dict(), "active_entry": active}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restored_state = state_dict

    def on_save_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        checkpoint[CHECKPOINT_KEY] = self.ledger.to_dict()


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
