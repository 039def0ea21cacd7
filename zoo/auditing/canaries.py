"""What every canary audit shares: the canaries' coins, the B1 audit of a one-shot release, and the fit of a canary
module under ``DPCallback`` at a given plan.

- B1 (one Gaussian release of a sum of bounded terms: DP-MERF, DP-MEPF): canary j's term is Δ₂·e_j, a unit
  direction of its own, so the release's coordinate j is N(Δ₂·[j included], (σΔ₂)²) whatever the other records
  are (an adversary who knows them subtracts their sum). Score: the released coordinate j. The audit calls
  ``zoo.privacy.mechanisms.gaussian_release``, as the methods' Release stages do.
- The training barriers have a module each: ``zoo.auditing.dp_sgd_canaries`` (B2, B4),
  ``zoo.auditing.embedding_canaries`` (B1′), ``zoo.auditing.sanitizer_canaries`` (B3).

How tight: every score is the optimal statistic for its canary, so what is lost is the one-run method's own
slack (the m canaries are audited at once, only the most confident guesses count, and at δ = 1e-5 the δ·2m term
caps ε̂ near 5.5) and, for the subsampled barriers, that the score cannot know which steps held its canary: it
is the likelihood ratio of the subsampled Gaussian over the steps (``StepScores``), the most powerful test of one
canary, not the sum of its coordinate (which at q = 0.01 buries the few steps that hold it under the rest's noise).
Measured on the shipped plans by ``python benchmarks/canary_audit.py`` (``docs/guarantees.md``). So the audit
refutes a broken mechanism at small ε and never certifies a sound one; a release taken twice (√2 the signal)
stays below the stated ε at these sizes.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from typing import Any

import numpy as np
import pytorch_lightning as pl
from torch import Tensor

from zoo.auditing.one_run import OneRunBound, one_run_lower_bound

#: a mechanism under audit: the exact statistic in, the released one out
Release = Callable[[Tensor], Tensor]


def canary_coins(canaries: int) -> np.ndarray:
    """Each canary's fair coin, from OS randomness drawn before the mechanism runs."""
    generator = np.random.default_rng(secrets.randbits(128))
    return generator.random(canaries) < 0.5


def audit_one_shot_release(
    release: Release, canaries: int, delta: float, term_norm: float = 1.0, confidence: float = 0.95
) -> OneRunBound:
    """ε̂ of ``release`` over ``canaries`` canaries whose terms are ``term_norm``·e_j (B1)."""
    import torch

    included = canary_coins(canaries)
    statistic = torch.zeros(canaries, dtype=torch.float64)
    statistic[torch.from_numpy(included)] = term_norm
    released = release(statistic)
    return one_run_lower_bound(released.double().numpy(), included, delta, confidence)


def gaussian_release_at(
    epsilon: float | None,
    delta: float,
    sensitivity: float = 1.0,
    accountant: str = "prv",
    noise_multiplier: float | None = None,
) -> Release:
    """The B1 mechanism the methods call, calibrated to ``epsilon`` (or at ``noise_multiplier``) for a statistic of
    sensitivity Δ₂."""
    from zoo.privacy.mechanisms.gaussian_release import gaussian_release

    def release(statistic: Tensor) -> Tensor:
        noisy, _ = gaussian_release(
            statistic,
            sensitivity,
            delta=delta,
            dataset_id="canaries",
            dataset_size=len(statistic),
            target_epsilon=epsilon,
            noise_multiplier=noise_multiplier,
            accountant=accountant,
        )
        return noisy

    return release


def fit_under_dp(
    model: pl.LightningModule,
    data: Any,
    steps: int,
    noise_multiplier: float,
    clip_norm: float,
    delta: float,
    accountant: str = "prv",
) -> float:
    """Train ``model`` on ``data`` (a datamodule or a loader) for ``steps`` steps under ``DPCallback`` at σ and C,
    as the methods are trained; returns the ε its ledger states by ``accountant``."""
    from zoo.privacy import DPCallback
    from zoo.training import QUIET_TRAINER, quiet_lightning

    callback = DPCallback(
        noise_multiplier=noise_multiplier,
        max_grad_norm=clip_norm,
        delta=delta,
        accountant=accountant,
        dataset_id="canaries",
    )
    with quiet_lightning():
        trainer = pl.Trainer(max_steps=steps, callbacks=[callback], accelerator="cpu", devices=1, **QUIET_TRAINER)
        trainer.fit(model, data)
    return callback.epsilon


def audit_dirac_records(
    module_of: Callable[[StepScores], pl.LightningModule],
    canaries: int,
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    clip_norm: float = 1.0,
    record_norm: float | None = None,
    confidence: float = 0.95,
    accountant: str = "prv",
) -> tuple[OneRunBound, float]:
    """ε̂ of the mechanism that ``module_of(scores)`` trains under, over Dirac canaries: the included canaries as
    records norm·e_j (``record_norm``, C by default; one class), Poisson-sampled at q; each step's released
    coordinates go to ``scores`` (signal 1/σ noise units). Returns ε̂ and the ε the run's ledger states (by
    ``accountant``)."""
    import torch

    from zoo.data.tensors import TensorDataModule

    included = canary_coins(canaries)
    records = torch.eye(canaries)[torch.from_numpy(included)] * (record_norm or clip_norm)
    data = TensorDataModule(records, torch.zeros(len(records), dtype=torch.long), "canaries", sample_rate)
    scores = StepScores(canaries, sample_rate, signal=1 / noise_multiplier)
    stated = fit_under_dp(module_of(scores), data, steps, noise_multiplier, clip_norm, delta, accountant)
    return scores.bound(included, delta, confidence), stated


class StepScores:
    """Each canary's log-likelihood ratio, in the data or not, from the steps' released coordinates.

    A step's coordinate j is, in units of its noise, N(μ, 1) when the step sampled canary j (rate q) and N(0, 1)
    otherwise (``signed``: N(−μ, 1) instead of N(0, 1) when canary j is out, B3's extreme critic). The noise unit
    of a step is estimated from its coordinates (their median absolute deviation: most carry no canary), so the
    score needs nothing but the release; the lower bound holds whatever the score is."""

    def __init__(self, canaries: int, sample_rate: float, signal: float, signed: bool = False) -> None:
        import torch

        self.rate, self.signal, self.signed = sample_rate, signal, signed
        self.total = torch.zeros(canaries, dtype=torch.float64)

    def add(self, released: Tensor) -> None:
        """Add one step's released coordinates (one per canary)."""
        import torch

        x = released.detach().double().cpu().flatten()
        unit = 1.4826 * (x - x.median()).abs().median()
        x = x / unit.clamp_min(torch.finfo(torch.float64).tiny)
        self.total += self._log_mixture(x) - (self._log_mixture(-x) if self.signed else 0.0)

    def _log_mixture(self, x: Tensor) -> Tensor:
        """log((1 − q) + q·exp(μx − μ²/2)): the step's likelihood ratio against N(0, 1)."""
        import torch

        if self.rate >= 1:
            return self.signal * x - self.signal**2 / 2
        shifted = math.log(self.rate) + self.signal * x - self.signal**2 / 2
        return torch.logaddexp(torch.full_like(x, math.log1p(-self.rate)), shifted)

    def bound(self, included: np.ndarray, delta: float, confidence: float) -> OneRunBound:
        return one_run_lower_bound(self.total.numpy(), included, delta, confidence)
