"""DPCallback: the per-step work of one private training stage, whatever its barrier, spending a
:class:`~zoo.privacy.budget.DPBudget`.

The module declares ``privacy_barrier``; the callback picks the mechanism that privatises
each step behind it (``zoo.privacy.mechanisms``: DP-SGD for B2/B4, the output-gradient
sanitiser for B3) and:

1. calibrates σ so that the planned steps, composed with what the ledger already spent on
   the same data (earlier stages of the plan, an earlier fine-tune), reach the target ε;
2. hands each step to the mechanism once the budget allows it, and stops training before
   the next step would exceed the target;
3. records every step in the budget's ledger (also ``pl_module.privacy_ledger``, the callback
   state and ``checkpoint["privacy_ledger"]``), logs ε, and resumes without resetting it.

Under DDP it keeps DDP from all-reducing the raw gradients that DP-SGD overwrites (``zoo.privacy.ddp``),
and only rank 0 computes and logs ε.

Under DP-SGD it also refuses, before the first step and during the first few, an optimizer or a change
of state outside the private modules (``zoo.privacy.private_state``): DP-SGD's theorem covers only them.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor

from zoo.privacy.accounting import calibrate_noise_multiplier, max_steps_within
from zoo.privacy.barriers import PrivacyBarrier, declared_barrier
from zoo.privacy.budget import DPBudget, plan_seeds
from zoo.privacy.ddp import check_buffer_sync, install_private_bucket_hook
from zoo.privacy.epsilon_log import EpsilonLogTimer
from zoo.privacy.errors import PrivacyBudgetExhausted, PrivacyConfigError
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.mechanisms import TrainingMechanism, training_mechanism
from zoo.privacy.precision import refuse_float16_loss_scaling
from zoo.privacy.private_data import DeclaredPrivateData, PrivateData
from zoo.privacy.private_state import PrivateStepGuard, private_step_guard
from zoo.privacy.validation import warn_if_delta_too_large

CHECKPOINT_KEY = "privacy_ledger"


class DPCallback(pl.Callback):
    """Differential privacy for one stage of any LightningModule that declares its privacy barrier.

    ``DPCallback(budget)`` spends the plan's :class:`~zoo.privacy.budget.DPBudget` (``zoo.train`` builds one
    per private stage). ``DPCallback(target_epsilon=..., ...)``, with
    ``DPBudget``'s arguments, holds a budget of its own: for a plain ``Trainer(callbacks=[...])``.
    ``epsilon_log`` times the progress bar's ε computations (a fake clock in tests).
    """

    def __init__(
        self, budget: DPBudget | None = None, *, epsilon_log: EpsilonLogTimer | None = None, **settings: Any
    ) -> None:
        if budget is not None and (settings or not isinstance(budget, DPBudget)):
            raise PrivacyConfigError(
                "DPCallback takes a DPBudget, or DPBudget's settings by name (DPCallback(target_epsilon=1.0)), "
                f"not both; got {budget!r} first"
            )
        self.budget = budget if budget is not None else DPBudget(**settings)
        self.entry: LedgerEntry | None = None
        self.allowed_steps: int | None = None
        self.barrier: PrivacyBarrier | None = None
        self.mechanism: TrainingMechanism | None = None
        self._restored_state: dict[str, Any] | None = None
        self.guard: PrivateStepGuard | None = None
        self.epsilon_log = epsilon_log or EpsilonLogTimer()

    @property
    def ledger(self) -> PrivacyLedger:
        return self.budget.ledger

    @property
    def target_epsilon(self) -> float | None:
        return self.budget.target_epsilon

    @property
    def delta(self) -> float:
        return self.budget.delta

    # ------------------------------------------------------------------ set-up
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        refuse_float16_loss_scaling(trainer.precision)
        check_buffer_sync(trainer.strategy)
        budget = self.budget
        self.barrier = declared_barrier(pl_module)
        mechanism = training_mechanism(self.barrier, pl_module)
        self.mechanism = mechanism(
            pl_module, budget.max_grad_norm, budget.per_example_mode, budget.loss_reduction, budget.noise_generator
        )
        existing = getattr(pl_module, "privacy_ledger", None)
        if isinstance(existing, PrivacyLedger):
            budget.spend_into(existing)  # later stages and fine-tuning continue the model's own ledger
        pl_module.privacy_ledger = budget.ledger  # type: ignore[assignment]

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self.mechanism is not None:
            self.mechanism.close()

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        assert self.mechanism is not None
        sampling = self.mechanism.sampling(trainer, pl_module)
        warn_if_delta_too_large(self.delta, sampling.dataset_size)
        data = DeclaredPrivateData(trainer.datamodule)  # type: ignore[attr-defined]
        dataset_id = self._dataset_id(data, sampling.dataset_size)
        records = data.records_identity
        self.budget.check_records(self.ledger, dataset_id, records)
        self._restore_or_open_entry(trainer, dataset_id, sampling.dataset_size, sampling.sample_rate, data)
        assert self.entry is not None
        self.entry.partition_of = self.entry.partition_of or data.partition_of
        self.entry.records_identity = self.entry.records_identity or records
        self.budget.track(self.entry)
        if self.target_epsilon is not None:
            target, prior = self.ledger.calibration_target(
                self.target_epsilon, dataset_id, records, self.entry.partition_of, exclude=self.entry
            )
            self.allowed_steps = max_steps_within(
                target,
                self.delta,
                self.entry.noise_multiplier,
                sampling.sample_rate,
                self.budget.accountant,
                prior,
            )
        self.mechanism.start(trainer, pl_module, self.entry.noise_multiplier)
        install_private_bucket_hook(trainer, self.mechanism.overwritten_gradients())
        self.epsilon_log.start()
        self.guard = private_step_guard(self.mechanism, pl_module, trainer.optimizers)
        if self._budget_left() == 0:
            rank_zero_warn(f"privacy budget ε={self.target_epsilon} already spent on {dataset_id}; not training.")
            trainer.should_stop = True

    def _dataset_id(self, data: PrivateData, dataset_size: int) -> str:
        dataset_id = self.budget.data_named(data.dataset_id)
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
        self, trainer: pl.Trainer, dataset_id: str, dataset_size: int, sample_rate: float, data: PrivateData
    ) -> None:
        assert self.mechanism is not None
        budget = self.budget
        fixed = budget.noise_multiplier
        given = None if fixed is None else self.mechanism.accounted_noise_multiplier(fixed)
        if self._restored_state is not None:
            budget.ledger = PrivacyLedger.from_dict(self._restored_state["ledger"])
            trainer.lightning_module.privacy_ledger = self.ledger  # type: ignore[assignment]
            index = self._restored_state["active_entry"]
            self._restored_state = None
            if index is not None:
                entry = self.ledger.entries[index]
                same_run = (
                    entry.dataset_id == dataset_id
                    and entry.mechanism == self.mechanism.name
                    and math.isclose(entry.sample_rate, sample_rate)
                    and math.isclose(entry.clip_norm, budget.max_grad_norm)
                    and entry.delta == budget.delta
                    and entry.accountant == budget.accountant
                    and (given is None or math.isclose(entry.noise_multiplier, given))
                )
                if same_run:
                    self.entry = entry
                    return
        planned = budget.planned_steps or trainer.estimated_stepping_batches
        if budget.target_epsilon is not None:
            if not math.isfinite(planned):
                raise PrivacyConfigError(
                    "cannot calibrate σ for an unbounded run: set Trainer(max_steps=...) or "
                    "DPCallback(planned_steps=...)."
                )
            target, prior = self.ledger.calibration_target(
                budget.target_epsilon, dataset_id, data.records_identity, data.partition_of
            )
            sigma = calibrate_noise_multiplier(
                target, budget.delta, sample_rate, int(planned), budget.accountant, prior_history=prior
            )
        else:
            assert given is not None, "a DPBudget without a target ε fixes σ"
            sigma = given
        self.entry = self.ledger.append(
            LedgerEntry(
                mechanism=self.mechanism.name,
                barrier=self.barrier.value,  # type: ignore[union-attr]
                dataset_id=dataset_id,
                dataset_size=dataset_size,
                noise_multiplier=sigma,
                clip_norm=budget.max_grad_norm,
                sample_rate=sample_rate,
                delta=budget.delta,
                accountant=budget.accountant,
                target_epsilon=budget.target_epsilon,
                per_example_gradients=self.mechanism.per_example_gradients,
                seeded=plan_seeds(self.budget, trainer.datamodule),  # type: ignore[attr-defined]
                note=f"planned {planned} steps" if math.isfinite(planned) else "",
                parameters=self.mechanism.ledger_parameters(sigma),
            )
        )

    # ----------------------------------------------------------- private steps
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self.mechanism.on_train_batch_start(trainer, pl_module, batch_idx)  # type: ignore[union-attr]
        if self.guard is not None:
            self.guard.before_step()

    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: Tensor) -> None:
        self.mechanism.on_before_backward()  # type: ignore[union-attr]

    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.mechanism.on_after_backward(trainer, pl_module)  # type: ignore[union-attr]

    def on_before_optimizer_step(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        mechanism = self.mechanism
        if mechanism is None or not mechanism.is_private_step(optimizer):
            return
        if self._budget_left() == 0:
            raise PrivacyBudgetExhausted(
                f"a private step was requested after ε={self.target_epsilon} was spent "
                f"({self.entry.steps} steps); training should have stopped."  # type: ignore[union-attr]
            )
        mechanism.privatise_step(optimizer)
        self.entry.steps += 1  # type: ignore[union-attr]

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, *args: Any) -> None:
        if self.guard is not None:
            self.guard.after_step()
        if self.entry is None:
            return
        if self._budget_left() == 0:
            trainer.should_stop = True
        if trainer.is_global_zero and self._logs_epsilon_now(trainer):
            epsilon = self.epsilon_log.timed(lambda: self.epsilon)
            pl_module.log("epsilon", epsilon, prog_bar=True, on_step=True, on_epoch=False, rank_zero_only=True)

    def _logs_epsilon_now(self, trainer: pl.Trainer) -> bool:
        """At the end of each epoch and of training, and every ``log_every_n_steps`` private steps while
        ε's computations stay within their share of the time (``zoo.privacy.epsilon_log``): on a fast GPU
        they would otherwise outweigh the steps between two logs."""
        last_step = trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps
        if trainer.should_stop or trainer.is_last_batch or last_step:
            return True
        due = self.entry.steps % max(1, trainer.log_every_n_steps) == 0  # type: ignore[union-attr,attr-defined]
        return due and self.epsilon_log.allows_another()

    def _budget_left(self) -> int | None:
        if self.allowed_steps is None or self.entry is None:
            return None
        return max(0, self.allowed_steps - self.entry.steps)

    @property
    def epsilon(self) -> float:
        """ε spent so far on this stage's dataset (composing earlier entries on it)."""
        if self.entry is None:
            return 0.0
        return self.ledger.epsilon(self.entry.dataset_id, self.delta, self.budget.accountant)

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
