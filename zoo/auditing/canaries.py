"""White-box canaries that run a mechanism's own code and score each canary where it can only show itself.

- B1 (one Gaussian release of a sum of bounded terms: DP-MERF, DP-MEPF): canary j's term is Δ₂·e_j, a unit
  direction of its own, so the release's coordinate j is N(Δ₂·[j included], (σΔ₂)²) whatever the other records
  are (an adversary who knows them subtracts their sum). Score: the released coordinate j. The audit calls
  ``zoo.privacy.mechanisms.gaussian_release`` at the stated ε, as the methods' Release stages do.
- B4 (DP-SGD: DP-LFlow, DP-NF, DP²-VAE's decoder, Private Set): Dirac canaries. The private module is a linear
  score w·x whose per-record gradient is the record itself; canary j is the record C·e_j. The audit trains it
  under ``DPCallback`` (Poisson sampling, per-example clipping, noise, accounting: the methods' own path) at the
  given σ, q and steps, and scores canary j by the sum over steps of its coordinate of the privatised gradient.

How tight: the scores are the optimal statistics for one canary, so what is lost is the one-run method's own
slack (the m canaries are audited at once, only the most confident guesses count, and at δ = 1e-5 the δ·2m term
caps ε̂ near 5.5). Measured with 2,000 canaries at the shipped plans (``python benchmarks/canary_audit.py
--canaries 2000``): B1 at ε = 0.99 gives ε̂ 0.13-0.32 (2.1-2.8 with a quarter of the noise, 3.9 with a canary
ten times its bound), B1 at ε = 10 gives 3.7-3.9, DP-LFlow's DP-SGD at ε = 10 gives 2.5-2.8 (5.1 with a quarter
of the noise). So the audit refutes a broken mechanism at small ε and never certifies a sound one; a release
taken twice (√2 the signal) stays below the stated ε at these sizes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn

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
    included = canary_coins(canaries)
    statistic = torch.zeros(canaries, dtype=torch.float64)
    statistic[torch.from_numpy(included)] = term_norm
    released = release(statistic)
    return one_run_lower_bound(released.double().numpy(), included, delta, confidence)


def gaussian_release_at(epsilon: float, delta: float, sensitivity: float = 1.0, accountant: str = "prv") -> Release:
    """The B1 mechanism the methods call, calibrated to ``epsilon`` for a statistic of sensitivity Δ₂."""
    from zoo.privacy.mechanisms.gaussian_release import gaussian_release

    def release(statistic: Tensor) -> Tensor:
        noisy, _ = gaussian_release(
            statistic,
            sensitivity,
            delta=delta,
            dataset_id="canaries",
            dataset_size=len(statistic),
            target_epsilon=epsilon,
            accountant=accountant,
        )
        return noisy

    return release


class DiracCanaries(pl.LightningModule):
    """A linear score w·x, trained by DP-SGD: a record's gradient is the record, so canary C·e_j moves only w_j."""

    privacy_barrier = "B4"

    def __init__(self, canaries: int) -> None:
        super().__init__()
        self.score = nn.Linear(canaries, 1, bias=False)
        nn.init.zeros_(self.score.weight)
        self.gradient_sum = torch.zeros(canaries, dtype=torch.float64)

    def private_modules(self) -> list[nn.Module]:
        return [self.score]

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        records, _ = batch
        return self.score(records).sum()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        grad = self.score.weight.grad
        if grad is not None:  # the privatised gradient DPCallback left for this step
            self.gradient_sum += grad.detach().double().flatten()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.0)  # w stays 0: every step queries the same score


def audit_dp_sgd(
    canaries: int,
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    clip_norm: float = 1.0,
    record_norm: float | None = None,
    confidence: float = 0.95,
) -> tuple[OneRunBound, float]:
    """ε̂ of DP-SGD over Dirac canaries of norm ``record_norm`` (C by default), and the ε its ledger states."""
    from zoo.data.tensors import TensorDataModule
    from zoo.privacy import DPCallback
    from zoo.training import QUIET_TRAINER

    included = canary_coins(canaries)
    records = torch.eye(canaries)[torch.from_numpy(included)] * (record_norm or clip_norm)
    data = TensorDataModule(records, torch.zeros(len(records), dtype=torch.long), "canaries", sample_rate)
    model = DiracCanaries(canaries)
    callback = DPCallback(
        noise_multiplier=noise_multiplier, max_grad_norm=clip_norm, delta=delta, dataset_id="canaries"
    )
    trainer = pl.Trainer(max_steps=steps, callbacks=[callback], accelerator="cpu", devices=1, **QUIET_TRAINER)
    trainer.fit(model, data)
    bound = one_run_lower_bound(model.gradient_sum.numpy(), included, delta, confidence)
    return bound, callback.epsilon
