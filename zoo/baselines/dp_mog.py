"""DP-MoG: a Gaussian mixture fitted by DP-EM (Park et al. 2017), the DP-NF paper's baseline.

Rows are scaled to u = x / max(‖x‖, B) with a public bound B, so ‖u‖ ≤ 1. Each EM iteration
releases the M-step's sufficient statistics [Σ r_k, Σ r_k u, Σ r_k u uᵀ] for all K components
at once: since Σ_k r_ik = 1 and ‖u_i‖ ≤ 1, one row moves each of the three blocks by at most 1
in L2 (Frobenius) norm, so the whole vector by sqrt(3). The T releases are T Gaussian
mechanisms composed by the accountant (one ledger entry), σ calibrated from the target ε.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from tqdm.auto import tqdm

from zoo.errors import UserError
from zoo.privacy.accounting import calibrate_noise_multiplier
from zoo.privacy.barriers import PrivacyBarrier
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.mechanisms import scale_rows_to_unit_ball
from zoo.privacy.parameters import check_delta, check_epsilon, check_positive
from zoo.privacy.randomness import private_generator

SENSITIVITY = math.sqrt(3)


class DPGaussianMixture:
    """K full-covariance Gaussians in the table's units, with the ledger of their fit."""

    method = "dp-mog"

    def __init__(self, components: int = 3, iterations: int = 20, clip_bound: float = 1.0, min_variance: float = 1e-3):
        if components < 1 or iterations < 1:
            raise UserError(f"components and iterations must be positive, got {components} and {iterations}")
        self.components = components
        self.iterations = iterations
        self.clip_bound = check_positive(clip_bound, "clip_bound")
        #: eigenvalue floor of each covariance (in scaled units): keeps noisy covariances positive definite
        self.min_variance = min_variance
        self.privacy_ledger = PrivacyLedger()
        self.weights: Tensor | None = None
        self.means: Tensor | None = None
        self.covariances: Tensor | None = None

    def fit(
        self,
        rows: Tensor,
        target_epsilon: float,
        delta: float,
        dataset_id: str,
        accountant: str = "prv",
        init_seed: int = 0,
        progress: bool = False,
    ) -> DPGaussianMixture:
        """DP-EM on ``rows``; the means start at public random points (``init_seed``), never at data."""
        sigma = calibrate_noise_multiplier(
            check_epsilon(target_epsilon), check_delta(delta), 1.0, self.iterations, accountant
        )
        entry = self.privacy_ledger.append(
            LedgerEntry(
                mechanism="gaussian",
                barrier=PrivacyBarrier.ONE_SHOT_RELEASE.value,
                dataset_id=dataset_id,
                dataset_size=len(rows),
                noise_multiplier=sigma,
                clip_norm=SENSITIVITY,
                sample_rate=1.0,
                delta=delta,
                accountant=accountant,
                target_epsilon=target_epsilon,
                note=f"DP-EM: {self.components} components, rows clipped to L2 norm {self.clip_bound:g}",
            )
        )
        u = scale_rows_to_unit_ball(rows.double(), self.clip_bound)
        features = u.shape[1]
        start = torch.Generator().manual_seed(init_seed)
        self.weights = torch.full((self.components,), 1.0 / self.components, dtype=torch.float64)
        self.means = torch.randn(self.components, features, generator=start, dtype=torch.float64) / math.sqrt(features)
        self.covariances = torch.eye(features, dtype=torch.float64).expand(self.components, -1, -1) * 0.1
        noise = private_generator()
        for _ in tqdm(range(self.iterations), desc="DP-EM", disable=not progress):
            responsibilities = self._component_log_probs(u).softmax(1)  # E-step on private rows
            counts = responsibilities.sum(0)
            sums = responsibilities.T @ u
            second = torch.einsum("nk,ni,nj->kij", responsibilities, u, u)
            counts, sums, second = self._noisy(counts, sums, second, sigma, noise)
            entry.steps += 1
            self._m_step(counts, sums, second)
        return self

    def _noisy(self, counts: Tensor, sums: Tensor, second: Tensor, sigma: float, generator: torch.Generator):
        def add_noise(t: Tensor) -> Tensor:
            return t + sigma * SENSITIVITY * torch.randn(t.shape, generator=generator, dtype=t.dtype)

        second = add_noise(second)
        return add_noise(counts), add_noise(sums), (second + second.transpose(1, 2)) / 2

    def _m_step(self, counts: Tensor, sums: Tensor, second: Tensor) -> None:
        counts = counts.clamp(min=1.0)
        self.weights = counts / counts.sum()
        self.means = sums / counts[:, None]
        covariances = second / counts[:, None, None] - torch.einsum("ki,kj->kij", self.means, self.means)
        values, vectors = torch.linalg.eigh(covariances)
        values = values.clamp(min=self.min_variance)
        self.covariances = vectors @ torch.diag_embed(values) @ vectors.transpose(1, 2)

    def _component_log_probs(self, u: Tensor) -> Tensor:
        mixture = torch.distributions.MultivariateNormal(self.means, covariance_matrix=self.covariances)
        return mixture.log_prob(u[:, None, :]) + self.weights.log()

    def log_prob(self, rows: Tensor) -> Tensor:
        """Log-density in the table's units (exact for rows inside the clip bound)."""
        if self.means is None:
            raise RuntimeError("fit the mixture first")
        scaled = rows.double() / self.clip_bound
        return (torch.logsumexp(self._component_log_probs(scaled), 1) - rows.shape[1] * math.log(self.clip_bound)).to(
            rows.dtype
        )

    def sample(self, n: int, seed: int = 0) -> Tensor:
        if self.means is None:
            raise RuntimeError("fit the mixture first")
        generator = torch.Generator().manual_seed(seed)
        component = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        factors = torch.linalg.cholesky(self.covariances)[component]
        z = torch.randn(n, self.means.shape[1], 1, generator=generator, dtype=torch.float64)
        return ((self.means[component] + (factors @ z).squeeze(-1)) * self.clip_bound).float()
