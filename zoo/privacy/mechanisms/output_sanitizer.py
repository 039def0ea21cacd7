"""B3: sanitise per-sample gradients flowing into a tensor (GS-WGAN's generator output).

The tensor is the identity in the forward pass. In the backward pass the upstream gradient
of each row (one generated sample) is clipped to C and N(0, σ²C²) is added to every entry,
as in the official GS-WGAN code. What the official code accounts is not what holds.

Theorem (add/remove-one neighbouring datasets). The gradients come from a critic trained
without DP on its part of the private data: a private helper
(``zoo.privacy.mechanisms.private_helpers``). A step queries one critic drawn uniformly, so it
touches a given record with probability γ = 1/K, independently across steps; when it does,
every one of its B rows may move by 2C (thesis Theorem 2.4.1), the B×d matrix by 2C·√B. Each
step is one Poisson-subsampled Gaussian at rate γ with noise multiplier z = σC / (2C·√B) =
σ / (2√B), and T steps compose as T such mechanisms: what ``OutputGradientSanitizer`` records.
The official code instead composes T·B mechanisms at rate γ and sensitivity C, which
understates ε by orders of magnitude.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor

from zoo.errors import UserError
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.mechanisms.base import Sampling, TrainingMechanism
from zoo.privacy.mechanisms.private_helpers import step_noise_multiplier, step_sensitivity, term_noise_multiplier
from zoo.privacy.parameters import check_positive, check_sample_rate
from zoo.privacy.precision import at_least_float32, mechanism_arithmetic
from zoo.privacy.randomness import DeviceGenerators, private_generator


def row_noise_multiplier(accounted: float, rows_per_step: int) -> float:
    """σ = 2√B·z: the per-row noise multiplier that gives a step of B rows the accounted multiplier z."""
    return term_noise_multiplier(accounted, rows_per_step, "rows")


class OutputGradientSanitizer(TrainingMechanism):
    """The B3 mechanism under DPCallback. The module declares ``sanitizer_sample_rate`` (γ),
    ``sanitized_rows_per_step`` (B) and ``private_dataset_size``, and passes each generated
    batch through ``self.gradient_sanitizer`` before its critic."""

    name = "sanitized_output_gradient"

    def __init__(
        self,
        pl_module: pl.LightningModule,
        max_grad_norm: float,
        per_example_mode: str,
        loss_reduction: str,
        noise_generator: torch.Generator,
    ) -> None:
        try:
            self.sample_rate = check_sample_rate(float(pl_module.sanitizer_sample_rate))  # type: ignore[arg-type]
            self.rows_per_step = int(pl_module.sanitized_rows_per_step)  # type: ignore[arg-type]
            self.dataset_size = int(pl_module.private_dataset_size)  # type: ignore[arg-type]
        except AttributeError as missing:
            raise PrivacyConfigError(
                f"{type(pl_module).__name__} declares B3 and must define sanitizer_sample_rate (γ, the chance "
                "that a step queries the critic holding a given record), sanitized_rows_per_step (B, the most "
                f"rows one step sanitises) and private_dataset_size: {missing}"
            ) from None
        if self.rows_per_step < 1:
            raise PrivacyConfigError(f"sanitized_rows_per_step must be a positive integer, got {self.rows_per_step}")
        self.max_grad_norm = max_grad_norm
        self.loss_reduction = loss_reduction
        self.noise_generator = noise_generator
        self.sanitizer: GradientSanitizer | None = None
        self._rows_at_last_step = 0

    def sampling(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> Sampling:
        return Sampling(self.dataset_size, self.sample_rate)

    def accounted_noise_multiplier(self, noise_multiplier: float) -> float:
        """z = σ / (2√B) for the per-row noise multiplier σ (GS-WGAN's σ)."""
        return step_noise_multiplier(noise_multiplier, self.max_grad_norm, self.rows_per_step, "rows")

    def ledger_parameters(self, accounted: float) -> dict[str, Any]:
        return {
            "rows_per_step": self.rows_per_step,
            "row_noise_multiplier": row_noise_multiplier(accounted, self.rows_per_step),
            "l2_sensitivity": step_sensitivity(self.max_grad_norm, self.rows_per_step, "rows"),
            "analysis": "one Poisson-subsampled Gaussian per step at the critic sampling rate; every row of the step "
            "may change by 2C when the queried critic holds the record (zoo.privacy.mechanisms.output_sanitizer)",
        }

    def start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, accounted: float) -> None:
        sigma = row_noise_multiplier(accounted, self.rows_per_step)
        self.sanitizer = GradientSanitizer(sigma, self.max_grad_norm, self.loss_reduction, self.noise_generator)
        self._rows_at_last_step = 0
        pl_module.gradient_sanitizer = self.sanitizer  # type: ignore[assignment]

    def is_private_step(self, optimizer: torch.optim.Optimizer) -> bool:
        """A step is private when sanitised rows reached it (a critic's optimizer steps without any)."""
        return self.sanitizer is not None and self.sanitizer.rows_sanitized > self._rows_at_last_step

    def privatise_step(self, optimizer: torch.optim.Optimizer) -> None:
        """The rows were clipped and noised in the backward pass; check there were at most B of them."""
        assert self.sanitizer is not None
        rows = self.sanitizer.rows_sanitized - self._rows_at_last_step
        if rows > self.rows_per_step:
            raise PrivacyConfigError(
                f"{rows} rows were sanitised for one step, but the module declares sanitized_rows_per_step = "
                f"{self.rows_per_step}: the step's sensitivity 2·C·sqrt(rows) would exceed the accounted one."
            )
        self._rows_at_last_step = self.sanitizer.rows_sanitized


def clip_each_row(rows: Tensor, bound: float) -> Tensor:
    """Each row (first dimension) of any shape scaled to L2 norm ≤ ``bound``."""
    norms = rows.flatten(1).norm(dim=1)
    clip = (bound / (norms + 1e-6)).clamp(max=1.0)
    return rows * clip.view(-1, *([1] * (rows.dim() - 1)))


class GradientSanitizer:
    """Identity forward; backward clips each row's upstream gradient to C and adds N(0, σ²C²)."""

    def __init__(
        self,
        noise_multiplier: float,
        max_grad_norm: float,
        loss_reduction: str = "mean",
        generator: torch.Generator | None = None,
    ) -> None:
        self.noise_multiplier = float(noise_multiplier)
        self.max_grad_norm = check_positive(max_grad_norm, "max_grad_norm")
        if loss_reduction not in ("mean", "sum"):
            raise UserError(f"loss_reduction must be 'mean' or 'sum', got {loss_reduction!r}")
        self.loss_reduction = loss_reduction
        self.generators = DeviceGenerators(generator or private_generator())
        self.rows_sanitized = 0

    def __call__(self, tensor: Tensor) -> Tensor:
        if tensor.dim() < 1:
            raise UserError("the sanitised tensor needs a batch dimension (one row per generated sample)")
        return _Sanitize.apply(tensor, self)

    def sanitize_gradient(self, grad: Tensor) -> Tensor:
        """Each row clipped to C and noised, in float32 or wider whatever ``grad``'s dtype (a bf16 generator
        under autocast): autograd rounds the noised rows back to that dtype, which is post-processing."""
        rows = grad.shape[0]
        scale = rows if self.loss_reduction == "mean" else 1
        with mechanism_arithmetic():
            per_row = clip_each_row(at_least_float32(grad) * scale, self.max_grad_norm)
            generator = self.generators.on(per_row.device)
            noise = torch.randn(per_row.shape, generator=generator, dtype=per_row.dtype, device=per_row.device)
            self.rows_sanitized += rows
            return (per_row + self.noise_multiplier * self.max_grad_norm * noise) / scale


class _Sanitize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor: Tensor, sanitizer: GradientSanitizer) -> Tensor:
        ctx.sanitizer = sanitizer
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return ctx.sanitizer.sanitize_gradient(grad), None
