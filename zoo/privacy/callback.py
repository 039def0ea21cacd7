"""DPCallback: what every private training stage shares, whatever its barrier.

The module declares ``privacy_barrier``; the callback picks the mechanism that privatises
each step behind it (``zoo.privacy.mechanisms``: DP-SGD for B2/B4, the output-gradient
sanitiser for B3) and keeps what is common:

1. checks the settings before any data is touched;
2. calibrates σ so that the planned steps, composed with what the ledger already spent on
   the same data (earlier stages of the plan, an earlier fine-tune), reach the target ε;
3. hands each step to the mechanism once the budget allows it, and stops training before
   the next step would exceed the target;
4. records every step in the privacy ledger (``pl_module.privacy_ledger``, the callback
   state and ``checkpoint["privacy_ledger"]``), logs ε, and resumes without resetting it;
5. releases one-shot statistics (B1) for the Release stages of a plan (:meth:`release`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor

from zoo.privacy.accounting import calibrate_noise_multiplier, epsilon_spent, max_steps_within
from zoo.privacy.barriers import PrivacyBarrier, declared_barrier
from zoo.privacy.errors import PrivacyBudgetExhausted, PrivacyConfigError
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.mechanisms import TrainingMechanism, gaussian_release, training_mechanism
from zoo.privacy.randomness import private_generator
from zoo.privacy.validation import (
    check_accountant,
    check_delta,
    check_epsilon,
    check_exactly_one,
    check_positive,
    warn_if_delta_too_large,
)

CHECKPOINT_KEY = "privacy_ledger"


STAGE_KEY = "dpzoo_stage"


class PrivacyLedgerMixin:
    """For a LightningModule trained in stages: every checkpoint carries the privacy ledger and the
    stage it was written in, and ``load_from_checkpoint`` brings the ledger back with the weights,
    so further training on the same data composes with what was spent instead of starting from
    ε = 0 (``fit(ckpt_path=...)`` restores it too, also for stages without a DPCallback)."""

    #: set by ``zoo.stages.train`` while a stage runs: {"part", "stage", "name"}
    training_stage: dict[str, Any] | None = None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        ledger = getattr(self, "privacy_ledger", None)
        if isinstance(ledger, PrivacyLedger):
            checkpoint.setdefault(CHECKPOINT_KEY, ledger.to_dict())
        if self.training_stage is not None:
            checkpoint[STAGE_KEY] = dict(self.training_stage)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        stored = checkpoint.get(CHECKPOINT_KEY)
        if stored is not None:
            self.privacy_ledger = PrivacyLedger.from_dict(stored)


class DPCallback(pl.Callback):
    """Differential privacy for any LightningModule that declares its privacy barrier.

    Args:
        target_epsilon: ε to reach at the end of training; σ is calibrated by the accountant.
        noise_multiplier: σ, when given instead of ``target_epsilon``; ε is then only reported.
            For B3 it is the per-row σ of the sanitiser (GS-WGAN's σ).
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
        self._settings = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
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
        self.mechanism: TrainingMechanism | None = None
        self._restored_state: dict[str, Any] | None = None

    def copy(self) -> DPCallback:
        """A fresh callback with the same settings (one per training stage or per part of a plan)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="the GDP accountant")  # warned once already
            return DPCallback(**self._settings)

    # ------------------------------------------------------------------ set-up
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        if str(trainer.precision).startswith("16"):
            raise PrivacyConfigError(
                "fp16 loss scaling rescales per-example gradients before clipping; use precision='bf16-mixed' or 32."
            )
        self.barrier = declared_barrier(pl_module)
        mechanism = training_mechanism(self.barrier, pl_module)
        self.mechanism = mechanism(
            pl_module, self.max_grad_norm, self.per_example_mode, self.loss_reduction, self._noise_generator
        )
        existing = getattr(pl_module, "privacy_ledger", None)
        if isinstance(existing, PrivacyLedger):
            self.ledger = existing  # later stages and fine-tuning continue the model's own ledger
        pl_module.privacy_ledger = self.ledger

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self.mechanism is not None:
            self.mechanism.close()

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        assert self.mechanism is not None
        sampling = self.mechanism.sampling(trainer, pl_module)
        warn_if_delta_too_large(self.delta, sampling.dataset_size)
        dataset_id = self._dataset_id(trainer, sampling.dataset_size)
        self._restore_or_open_entry(trainer, dataset_id, sampling.dataset_size, sampling.sample_rate)
        assert self.entry is not None
        self.entry.partition_of = self.entry.partition_of or getattr(trainer.datamodule, "partition_of", None)
        if self.target_epsilon is not None:
            prior = self.ledger.history(dataset_id, exclude=self.entry)
            self.allowed_steps = max_steps_within(
                self.target_epsilon,
                self.delta,
                self.entry.noise_multiplier,
                sampling.sample_rate,
                self.accountant,
                prior,
            )
        self.mechanism.start(trainer, pl_module, self.entry.noise_multiplier)
        if self._budget_left() == 0:
            rank_zero_warn(f"privacy budget ε={self.target_epsilon} already spent on {dataset_id}; not training.")
            trainer.should_stop = True

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
        self, trainer: pl.Trainer, dataset_id: str, dataset_size: int, sample_rate: float
    ) -> None:
        assert self.mechanism is not None
        given = (
            None if self.noise_multiplier is None else self.mechanism.accounted_noise_multiplier(self.noise_multiplier)
        )
        if self._restored_state is not None:
            self.ledger = PrivacyLedger.from_dict(self._restored_state["ledger"])
            trainer.lightning_module.privacy_ledger = self.ledger
            index = self._restored_state["active_entry"]
            self._restored_state = None
            if index is not None:
                entry = self.ledger.entries[index]
                same_run = (
                    entry.dataset_id == dataset_id
                    and entry.mechanism == self.mechanism.name
                    and math.isclose(entry.sample_rate, sample_rate)
                    and math.isclose(entry.clip_norm, self.max_grad_norm)
                    and entry.delta == self.delta
                    and entry.accountant == self.accountant
                    and (given is None or math.isclose(entry.noise_multiplier, given))
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
            sigma = given
        self.entry = self.ledger.append(
            LedgerEntry(
                mechanism=self.mechanism.name,
                barrier=self.barrier.value,  # type: ignore[union-attr]
                dataset_id=dataset_id,
                dataset_size=dataset_size,
                noise_multiplier=sigma,  # type: ignore[arg-type]
                clip_norm=self.max_grad_norm,
                sample_rate=sample_rate,
                delta=self.delta,
                accountant=self.accountant,
                target_epsilon=self.target_epsilon,
                per_example_gradients=self.mechanism.per_example_gradients,
                note=f"planned {planned} steps" if math.isfinite(planned) else "",
                parameters=self.mechanism.ledger_parameters(sigma),  # type: ignore[arg-type]
            )
        )

    # ----------------------------------------------------------- private steps
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self.mechanism.on_train_batch_start(trainer, pl_module, batch_idx)  # type: ignore[union-attr]

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
            self.entry.steps % max(1, trainer.log_every_n_steps) == 0  # type: ignore[union-attr]
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

    # ------------------------------------------------------- one-shot releases
    def release(
        self,
        statistic: Tensor,
        l2_sensitivity: float,
        *,
        ledger: PrivacyLedger,
        dataset_id: str,
        dataset_size: int,
        partition_of: str | None = None,
        noise_multiplier: float | None = None,
        note: str = "",
    ) -> Tensor:
        """B1 for a Release stage: the Gaussian mechanism at ``noise_multiplier`` (or, when None, at the σ
        that brings ``dataset_id`` to the target ε after what ``ledger`` holds), entered in ``ledger``.
        A fixed σ that would overshoot the target is refused before the statistic is noised."""
        target = None if noise_multiplier is not None else self.target_epsilon
        if noise_multiplier is None and target is None:
            raise PrivacyConfigError(
                "this release calibrates σ from the budget: give DPCallback a target_epsilon, not a noise_multiplier."
            )
        if noise_multiplier is not None and self.target_epsilon is not None:
            history = [*ledger.history(dataset_id), (noise_multiplier, 1.0, 1)]
            if epsilon_spent(history, self.delta, self.accountant) > self.target_epsilon:
                raise PrivacyBudgetExhausted(
                    f"{note or 'a release'} at σ = {noise_multiplier:g} would take {dataset_id} past "
                    f"ε = {self.target_epsilon}; raise its σ or the target."
                )
        noisy, _ = gaussian_release(
            statistic,
            l2_sensitivity,
            delta=self.delta,
            dataset_id=dataset_id,
            dataset_size=dataset_size,
            target_epsilon=target,
            noise_multiplier=noise_multiplier,
            accountant=self.accountant,
            ledger=ledger,
            generator=self._noise_generator,
            partition_of=partition_of,
            note=note,
        )
        return noisy

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
