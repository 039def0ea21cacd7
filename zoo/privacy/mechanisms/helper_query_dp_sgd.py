"""B4 through private helpers: per-example DP-SGD on the released model when each example's term is
computed through a helper trained without DP on the queried part (DP²-VAE's decoder under its
encoders).

Theorem (add/remove-one neighbouring datasets). The module draws one of K helpers uniformly at
random (secret randomness, independent of everything else) at every step and computes at most B
per-example gradients of the private modules, each from a record of that helper's part and through
that helper. Each is clipped to C; they are summed and N(0, σ²C²·I) is added once. A record sits
in one part (``zoo.privacy.partition``), so a step depends on it only when it queries that part,
with probability γ = 1/K independently across steps. When it does, the helper was trained on the
part without DP and may change arbitrarily, and with it every one of the B terms, each by at most
2C: the sum moves by at most 2C·B (``step_sensitivity(C, B, "sum")``). Each step is therefore one
Poisson-subsampled Gaussian at rate γ with noise multiplier z = σ / (2B), and T steps compose in the
accountant (``zoo.privacy.mechanisms.private_helpers``). Averaged over B, the noise per coordinate
is 2z·C whatever B is: batching does not dilute it, unlike DP-SGD on independent examples.

The DP²-VAE paper's Theorem 3.1 counts the sensitivity as 2C (one term changes), which ignores the
helper; ``paper_theorem_epsilon`` computes that claim for comparison, never as a guarantee.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch

from zoo.privacy.accounting import epsilon_spent
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms.base import Sampling
from zoo.privacy.mechanisms.dp_sgd import PerExampleDPSGD
from zoo.privacy.mechanisms.private_helpers import (
    PrivateHelpers,
    step_noise_multiplier,
    step_sensitivity,
    term_noise_multiplier,
)
from zoo.privacy.parameters import check_sample_rate


class HelperQueryDPSGD(PerExampleDPSGD):
    """DP-SGD whose private terms come through a queried helper. The module declares
    ``queried_helpers`` (a :class:`PrivateHelpers`), ``helper_terms_per_step`` (B, the most
    per-example terms one step sums) and ``private_dataset_size``."""

    name = "helper_query_subsampled_gaussian"

    def __init__(
        self,
        pl_module: pl.LightningModule,
        max_grad_norm: float,
        per_example_mode: str,
        loss_reduction: str,
        noise_generator: torch.Generator,
    ) -> None:
        super().__init__(pl_module, max_grad_norm, per_example_mode, loss_reduction, noise_generator)
        try:
            helpers: PrivateHelpers = pl_module.queried_helpers  # type: ignore[assignment]
            self.terms_per_step = int(pl_module.helper_terms_per_step)  # type: ignore[arg-type]
            self.dataset_size = int(pl_module.private_dataset_size)  # type: ignore[arg-type]
        except AttributeError as missing:
            raise PrivacyConfigError(
                f"{type(pl_module).__name__} computes its DP-SGD terms through private helpers and must define "
                "queried_helpers, helper_terms_per_step (B, the most terms one step sums) and "
                f"private_dataset_size: {missing}"
            ) from None
        if self.terms_per_step < 1:
            raise PrivacyConfigError(f"helper_terms_per_step must be a positive integer, got {self.terms_per_step}")
        self.sample_rate = check_sample_rate(helpers.sample_rate)
        self._terms = 0

    def sampling(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> Sampling:
        self._expected_batch_size = float(self.terms_per_step)
        return Sampling(self.dataset_size, self.sample_rate)

    def accounted_noise_multiplier(self, noise_multiplier: float) -> float:
        """z = σ / (2B) for the noise σC added to the sum of B clipped terms."""
        return step_noise_multiplier(noise_multiplier, self.max_grad_norm, self.terms_per_step, "sum")

    def ledger_parameters(self, accounted: float) -> dict[str, Any]:
        return {
            "terms_per_step": self.terms_per_step,
            "term_noise_multiplier": term_noise_multiplier(accounted, self.terms_per_step, "sum"),
            "l2_sensitivity": step_sensitivity(self.max_grad_norm, self.terms_per_step, "sum"),
            "analysis": "one Poisson-subsampled Gaussian per step at the helper sampling rate; every clipped term "
            "may change by 2C when the queried helper holds the record (zoo.privacy.mechanisms.helper_query_dp_sgd)",
        }

    def start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, accounted: float) -> None:
        super().start(trainer, pl_module, accounted)
        self.noise_multiplier = term_noise_multiplier(accounted, self.terms_per_step, "sum")
        self._terms = 0

    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._terms += self.engine.batch_size() or 0
        super().on_after_backward(trainer, pl_module)

    def privatise_step(self, optimizer: torch.optim.Optimizer) -> None:
        terms, self._terms = self._terms, 0
        if terms > self.terms_per_step:
            raise PrivacyConfigError(
                f"{terms} per-example terms entered one step, but the module declares helper_terms_per_step = "
                f"{self.terms_per_step}: the step's sensitivity 2·C·terms would exceed the accounted one."
            )
        super().privatise_step(optimizer)


def paper_theorem_epsilon(entry: dict[str, Any]) -> float:
    """What DP²-VAE's Theorem 3.1 would claim for a ledger entry: each step a subsampled Gaussian at
    the helper rate with sensitivity 2C, noise multiplier σ/2 (RDP, as the paper). Not a guarantee."""
    sigma = entry["parameters"]["term_noise_multiplier"]
    return epsilon_spent([(sigma / 2, entry["sample_rate"], entry["steps"])], entry["delta"], "rdp")
